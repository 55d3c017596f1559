"""Accelerator operators: packed conv2d and dense with fused ALU epilogues, and their schedule
templates (knobs tile_b/h/w/ci/co, oc_nthread/h_nthread)."""

from .conv2d import Conv2DKnobs, Conv2DWorkload, conv2d_packed, schedule_conv2d_packed
from .dense import DenseKnobs, dense_packed, schedule_dense_packed

__all__ = [
    "Conv2DKnobs",
    "Conv2DWorkload",
    "DenseKnobs",
    "conv2d_packed",
    "dense_packed",
    "schedule_conv2d_packed",
    "schedule_dense_packed",
]
