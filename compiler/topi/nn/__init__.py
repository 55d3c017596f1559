"""Neural-network operators as tensor expressions (TVM's topi.nn)."""

from ..window import get_pad_tuple
from .attention import attention
from .batch_norm import batch_norm
from .conv2d import conv2d_1x1_NCHWc, conv2d_nchw, conv2d_NCHWc
from .dense import dense, matmul
from .depthwise_conv2d import depthwise_conv2d_nchw, depthwise_conv2d_NCHWc
from .elemwise import bias_add, leaky_relu, relu
from .pad import pad
from .pooling import global_pool, pool2d
from .rows import layer_norm, row_reduce
from .softmax import log_softmax, softmax
from .transform import (
    clip,
    concatenate,
    pack_nchwc,
    repack_nchwc,
    reshape,
    transpose,
    unpack_nchwc,
)
from .winograd import conv2d_winograd_NCHWc, winograd_weight

__all__ = [
    "attention",
    "layer_norm",
    "row_reduce",
    "conv2d_winograd_NCHWc",
    "winograd_weight",
    "clip",
    "concatenate",
    "pack_nchwc",
    "repack_nchwc",
    "reshape",
    "transpose",
    "unpack_nchwc",
    "batch_norm",
    "bias_add",
    "conv2d_NCHWc",
    "conv2d_1x1_NCHWc",
    "conv2d_nchw",
    "dense",
    "depthwise_conv2d_NCHWc",
    "depthwise_conv2d_nchw",
    "get_pad_tuple",
    "global_pool",
    "leaky_relu",
    "matmul",
    "pad",
    "pool2d",
    "relu",
    "log_softmax",
    "softmax",
]
