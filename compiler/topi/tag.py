"""Operator tags: what kind of computation an op is, so schedules can find and fuse them."""

ELEMWISE = "elemwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
COMM_REDUCE = "comm_reduce"
DENSE_PACK = "dense_pack"
MATMUL = "matmul"
CONV2D_NCHW = "conv2d_nchw"
CONV2D_NCHWC = "conv2d_NCHWc"
CONV2D_1X1 = "conv2d_1x1_NCHWc"  # the partial sums over input-channel chunks added up
CONV2D_1X1_PARTIAL = "conv2d_1x1_partial"
DEPTHWISE_CONV2D_NCHW = "depthwise_conv2d_nchw"
DEPTHWISE_CONV2D_NCHWC = "depthwise_conv2d_NCHWc"
POOL = "pool"
SOFTMAX = "softmax_output"
ATTENTION = "attention"  # softmax(q k * scale + mask) v
NORMALIZE = "normalize"  # a row's 1 / sqrt(variance + epsilon), beside its mean (nn.layer_norm)
WINOGRAD_TRANSFORM = "winograd_transform"  # the input tiles' B^T d B
WINOGRAD_GEMM = "winograd_gemm"
CONV2D_WINOGRAD = "conv2d_winograd"  # the output tiles' A^T M A

_INJECTIVE = (ELEMWISE, BROADCAST, INJECTIVE)


def is_injective(tag: str) -> bool:
    """Elementwise, broadcast and other injective ops can be inlined into their consumers."""
    return tag in _INJECTIVE
