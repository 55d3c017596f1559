"""GPU schedules (TVM's topi.cuda): block/thread tiling with virtual threads, shared-memory
staging with cooperative fetching, register tiles in `local` memory, unrolling. Each takes the
tiling as plain sizes so templates (compiler.tune.templates.cuda) and direct callers share it."""

from .conv2d import schedule_conv2d_nchw
from .dense import matmul, schedule_matmul
from .depthwise_conv2d import schedule_depthwise_conv2d_nchw
from .softmax import schedule_softmax
from .utils import Tile, bind_tile, cooperative_fetch

__all__ = [
    "Tile",
    "bind_tile",
    "cooperative_fetch",
    "matmul",
    "schedule_conv2d_nchw",
    "schedule_depthwise_conv2d_nchw",
    "schedule_matmul",
    "schedule_softmax",
]
