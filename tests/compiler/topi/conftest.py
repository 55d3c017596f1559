import numpy as np
import pytest

import compiler


@pytest.fixture
def run():
    """run(schedule, placeholders, out_tensor, *input arrays) -> the output array."""

    def go(s, inputs, out, *arrays):
        mod = compiler.build(s, [*inputs, out])
        result = np.zeros(out.shape, out.dtype)
        mod(*arrays, result)
        return result

    return go
