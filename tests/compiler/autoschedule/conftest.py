import pytest

from compiler.tune.measure import random_arrays


@pytest.fixture
def task_inputs():
    """Random arrays for a search task's inputs (its placeholders, in order)."""

    def make(task):
        n_in = len(task.tensors) - len(task.outputs)
        return random_arrays([(t.shape, t.dtype) for t in task.tensors[:n_in]])

    return make
