"""Schedule helpers: vector widths and padding tuples."""

import pytest

from compiler.topi.nn import get_pad_tuple
from compiler.topi.utils import largest_divisor, vector_width


@pytest.mark.parametrize("n,lanes,want", [(56, 16, 8), (14, 16, 2), (48, 16, 16), (7, 16, 1)])
def test_vector_width_is_a_power_of_two_dividing_n(n, lanes, want):
    assert vector_width(n, lanes) == want


def test_largest_divisor():
    assert (largest_divisor(56, 14), largest_divisor(13, 14), largest_divisor(17, 14)) == (
        14,
        13,
        1,
    )


def test_get_pad_tuple():
    assert get_pad_tuple("SAME", (3, 4)) == (1, 1, 1, 2)
    assert get_pad_tuple((1, 2), (3, 3)) == (1, 2, 1, 2)
    with pytest.raises(ValueError, match="1, 2 or 4"):
        get_pad_tuple((1, 2, 3), (3, 3))
