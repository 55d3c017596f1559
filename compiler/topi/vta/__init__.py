"""Accelerator operators: packed conv2d and dense with fused ALU epilogues, and their schedule
templates (knobs tile_b/h/w/ci/co, oc_nthread/h_nthread); standalone elementwise ALU operators."""

from .conv2d import Conv2DKnobs, Conv2DWorkload, conv2d_packed, schedule_conv2d_packed
from .dense import DenseKnobs, dense_packed, schedule_dense_packed
from .elemwise import (
    add,
    elemwise,
    maximum,
    minimum,
    multiply,
    schedule_elemwise,
    shift_left,
    shift_right,
)

__all__ = [
    "Conv2DKnobs",
    "Conv2DWorkload",
    "DenseKnobs",
    "add",
    "conv2d_packed",
    "dense_packed",
    "elemwise",
    "maximum",
    "minimum",
    "multiply",
    "schedule_conv2d_packed",
    "schedule_dense_packed",
    "schedule_elemwise",
    "shift_left",
    "shift_right",
]
