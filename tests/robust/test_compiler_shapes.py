"""Tensor declarations refuse shapes and dtypes that are not static, non-negative integers and
known dtypes, naming the tensor and the axis."""

from __future__ import annotations

import re

import numpy as np
import pytest

from compiler import te
from compiler.errors import OperatorError


@pytest.mark.parametrize(
    "shape, message",
    [
        ((-1, 4), "extent -1 of axis 0 is negative"),
        ((4, 2.5), "extent 2.5 of axis 1 is not an integer"),
        ((True, 4), "extent True of axis 0 is not an integer"),
        (("8",), "extent '8' of axis 0 is not an integer"),
        ((2**40, 2**40), "2**62 or more elements"),
        (None, "shape None is not a sequence"),
        (5, "shape 5 is not a sequence"),
    ],
)
def test_bad_placeholder_shapes(shape, message):
    with pytest.raises(OperatorError, match=re.escape(message)) as info:
        te.placeholder(shape, name="A")
    assert str(info.value).startswith("placeholder A: ")


def test_bad_compute_shape_names_the_compute():
    with pytest.raises(OperatorError, match="compute B: extent -3 of axis 0 is negative"):
        te.compute((-3,), lambda i: i, name="B")


@pytest.mark.parametrize("dtype", ["float33", "object", None, 5])
def test_bad_dtypes(dtype):
    with pytest.raises(OperatorError, match="dtype"):
        te.placeholder((2,), dtype)


def test_numpy_integers_and_empty_axes_are_shapes():
    assert te.placeholder((np.int64(3), 0)).shape == (3, 0)
