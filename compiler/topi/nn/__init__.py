"""Neural-network operators as tensor expressions (TVM's topi.nn)."""

from .batch_norm import batch_norm
from .conv2d import conv2d_nchw, conv2d_NCHWc
from .conv2d_transpose import conv2d_transpose_nchw, group_conv2d_nchw
from .dense import dense, matmul
from .depthwise_conv2d import depthwise_conv2d_nchw, depthwise_conv2d_NCHWc
from .elemwise import bias_add, leaky_relu, relu
from .pad import pad, pad_mode
from .pooling import global_pool, pool2d
from .reduce import reduce
from .resize import resize
from .softmax import log_softmax, softmax
from .transform import (
    clip,
    concatenate,
    pack_nchwc,
    repack_nchwc,
    reshape,
    strided_slice,
    transpose,
    unpack_nchwc,
)
from .utils import get_pad_tuple

__all__ = [
    "clip",
    "concatenate",
    "pack_nchwc",
    "repack_nchwc",
    "reshape",
    "strided_slice",
    "transpose",
    "unpack_nchwc",
    "batch_norm",
    "bias_add",
    "conv2d_NCHWc",
    "conv2d_nchw",
    "conv2d_transpose_nchw",
    "group_conv2d_nchw",
    "dense",
    "depthwise_conv2d_NCHWc",
    "depthwise_conv2d_nchw",
    "get_pad_tuple",
    "global_pool",
    "leaky_relu",
    "log_softmax",
    "matmul",
    "pad",
    "pad_mode",
    "pool2d",
    "reduce",
    "resize",
    "relu",
    "softmax",
]
