"""Default x86 (AVX-512) schedules, and the packed-layout computes they are built for."""

from .conv2d import schedule_conv2d_nchw, schedule_conv2d_NCHWc
from .dense import dense_pack, matmul_pack, schedule_dense, schedule_dense_pack
from .depthwise_conv2d import schedule_depthwise_conv2d_nchw
from .injective import schedule_injective, schedule_injective_from_existing
from .pooling import schedule_pool
from .softmax import schedule_softmax

__all__ = [
    "dense_pack",
    "matmul_pack",
    "schedule_conv2d_NCHWc",
    "schedule_conv2d_nchw",
    "schedule_dense",
    "schedule_dense_pack",
    "schedule_depthwise_conv2d_nchw",
    "schedule_injective",
    "schedule_injective_from_existing",
    "schedule_pool",
    "schedule_softmax",
]
