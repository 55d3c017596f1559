"""Default x86 schedules (derived from the target's facts: AVX-512, AVX2), and the
packed-layout computes they are built for."""

from .attention import (
    ATTENTION_PARALLEL,
    default_attention_knobs,
    schedule_attention,
    schedule_attention_knobs,
)
from .conv2d import (
    PARALLEL,
    channel_block,
    conv_tile,
    pointwise_chunk,
    pointwise_pays,
    schedule_conv2d_1x1_NCHWc,
    schedule_conv2d_nchw,
    schedule_conv2d_NCHWc,
    schedule_conv2d_NCHWc_knobs,
    tile_columns,
    tile_rows,
)
from .dense import (
    dense_pack,
    matmul_pack,
    matmul_packed,
    pack_weight,
    panel_width,
    reduction_streams,
    schedule_dense,
    schedule_dense_pack,
    schedule_dense_pack_knobs,
)
from .depthwise_conv2d import schedule_depthwise_conv2d_nchw, schedule_depthwise_conv2d_NCHWc
from .injective import schedule_injective, schedule_injective_from_existing
from .normalize import schedule_normalize
from .pooling import schedule_pool
from .softmax import schedule_softmax
from .winograd import schedule_conv2d_winograd_NCHWc

__all__ = [
    "ATTENTION_PARALLEL",
    "default_attention_knobs",
    "schedule_attention",
    "schedule_attention_knobs",
    "schedule_normalize",
    "schedule_conv2d_winograd_NCHWc",
    "PARALLEL",
    "schedule_conv2d_NCHWc_knobs",
    "matmul_packed",
    "pack_weight",
    "panel_width",
    "reduction_streams",
    "channel_block",
    "tile_columns",
    "tile_rows",
    "conv_tile",
    "pointwise_chunk",
    "pointwise_pays",
    "schedule_conv2d_1x1_NCHWc",
    "schedule_depthwise_conv2d_NCHWc",
    "dense_pack",
    "matmul_pack",
    "schedule_conv2d_NCHWc",
    "schedule_conv2d_nchw",
    "schedule_dense",
    "schedule_dense_pack",
    "schedule_dense_pack_knobs",
    "schedule_depthwise_conv2d_nchw",
    "schedule_injective",
    "schedule_injective_from_existing",
    "schedule_pool",
    "schedule_softmax",
]
