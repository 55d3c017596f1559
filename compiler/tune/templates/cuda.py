"""GPU (target "cuda") templates on compiler.topi.cuda, with AutoTVM's GPU knobs: four-way
splits of the output axes (blocks, virtual threads, threads, per-thread register tile), the
reduction step staged in shared memory, fetch vector width, unrolling, shared staging.

* `matmul` (M, N, K): C = A @ B, float32.
* `conv2d_nchw` (C, H, W, F, KH, KW, stride, pad): batch-1 direct convolution (ResNet-18's
  layers C1..C12 on this target).
* `depthwise_conv2d_nchw` (C, H, W, K, stride, pad): a depthwise layer (MobileNet's).
* `softmax` (N, C): row softmax, the reduction template.

Filters keep threads per block in [32, 1024] (within the architecture's per-axis limits),
shared memory within 48 KiB and the register tile modest. `default_config` picks the valid
config nearest a hand-set target (what `vta build` uses without records).
"""

from __future__ import annotations

import math

import numpy as np

from ... import te
from ...codegen.nvptx_arch import get_arch
from ...driver import build
from ...errors import TuningError
from ...topi import cuda, nn, testing
from ..space import ConfigEntity, ConfigSpace, SplitKnob
from ..task import Task, register_reference, register_template

ARCH = get_arch("sm_80")  # the limits sm_80 and sm_90 share
MAX_REGISTER_TILE = 64  # accumulators per thread
DEFAULTS: dict[str, dict[str, tuple]] = {}  # op -> knob -> target value (0: any)


def _tile(cfg, name: str, extent: int, thread_limit: int) -> None:
    cfg.define_split(
        name,
        extent,
        num_outputs=4,
        policy="power2",
        filter=lambda e: e.size[1] <= 4 and e.size[2] <= thread_limit and e.size[3] <= 8,
    )


def _threads(cfg, *names: str) -> int:
    return math.prod(cfg[n].size[2] for n in names)


def _register_tile(cfg, *names: str) -> int:
    return math.prod(cfg[n].size[1] * cfg[n].size[3] for n in names)


def _block(cfg, name: str) -> int:
    return math.prod(cfg[name].size[1:])


def _fits(threads: int, shared_elems: int, register_tile: int) -> bool:
    return (
        32 <= threads <= ARCH.max_threads_per_block
        and shared_elems * 4 <= ARCH.max_shared_per_block
        and register_tile <= MAX_REGISTER_TILE
    )


# ------------------------------------------------------------------------------------ matmul
@register_template("matmul", "cuda", extents=("m", "n", "k"))
def matmul(cfg, m: int, n: int, k: int):
    """C[m, n] = A[m, k] @ B[k, n] (float32)."""
    _tile(cfg, "tile_y", m, 32)
    _tile(cfg, "tile_x", n, 64)
    cfg.define_split("tile_k", k, num_outputs=2, policy="power2", max_factor=32)
    cfg.define_knob("vector", [1, 2, 4])
    cfg.define_knob("unroll_k", [True, False])
    cfg.multi_filter(
        lambda e: (
            _fits(
                _threads(e, "tile_y", "tile_x"),
                e["tile_k"].size[1] * (_block(e, "tile_y") + _block(e, "tile_x")),
                _register_tile(e, "tile_y", "tile_x"),
            )
            and e["tile_k"].size[1] % e["vector"].val == 0
        )
    )
    cfg.add_flop(2 * m * n * k)
    a = te.placeholder((m, k), "float32", "A")
    b = te.placeholder((k, n), "float32", "B")
    c = cuda.matmul(a, b)
    s = cuda.schedule_matmul(
        c,
        cfg["tile_y"].size,
        cfg["tile_x"].size,
        cfg["tile_k"].size[1],
        cfg["vector"].val,
        cfg["unroll_k"].val,
    )
    return s, [a, b, c]


DEFAULTS["matmul"] = {
    "tile_y": (0, 1, 16, 4),
    "tile_x": (0, 1, 16, 4),
    "tile_k": (0, 8),
    "vector": 4,
    "unroll_k": True,
}


# ------------------------------------------------------------------------------------ conv2d
def _out(size: int, k: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - k) // stride + 1


@register_template("conv2d_nchw", "cuda", extents=("c", "h", "w", "f", "kh", "kw", "stride"))
def conv2d_nchw(cfg, c: int, h: int, w: int, f: int, kh: int, kw: int, stride: int, pad: int):
    """Batch-1 float32 direct convolution, padding `pad` on every side."""
    oh, ow = _out(h, kh, stride, pad), _out(w, kw, stride, pad)
    _tile(cfg, "tile_f", f, 64)
    _tile(cfg, "tile_y", oh, 32)
    _tile(cfg, "tile_x", ow, 64)
    cfg.define_split("tile_rc", c, num_outputs=2, max_factor=64)
    cfg.define_split("tile_ry", kh, num_outputs=2)
    cfg.define_split("tile_rx", kw, num_outputs=2)
    cfg.define_knob("unroll", [True, False])

    def shared(e: ConfigEntity) -> int:
        rc, ry, rx = (e[n].size[1] for n in ("tile_rc", "tile_ry", "tile_rx"))
        rows = (_block(e, "tile_y") - 1) * stride + ry
        cols = (_block(e, "tile_x") - 1) * stride + rx
        return rc * (rows * cols + _block(e, "tile_f") * ry * rx)

    cfg.multi_filter(
        lambda e: _fits(
            _threads(e, "tile_f", "tile_y", "tile_x"),
            shared(e),
            _register_tile(e, "tile_f", "tile_y", "tile_x"),
        )
    )
    cfg.add_flop(2 * f * oh * ow * c * kh * kw)
    data = te.placeholder((1, c, h, w), "float32", "data")
    kernel = te.placeholder((f, c, kh, kw), "float32", "kernel")
    out = nn.conv2d_nchw(data, kernel, stride, pad)
    s = cuda.schedule_conv2d_nchw(
        out,
        cfg["tile_f"].size,
        cfg["tile_y"].size,
        cfg["tile_x"].size,
        cfg["tile_rc"].size[1],
        cfg["tile_ry"].size[1],
        cfg["tile_rx"].size[1],
        cfg["unroll"].val,
    )
    return s, [data, kernel, out]


DEFAULTS["conv2d_nchw"] = {
    "tile_f": (0, 1, 8, 4),
    "tile_y": (0, 1, 4, 1),
    "tile_x": (0, 1, 8, 2),
    "tile_rc": (0, 4),
    "tile_ry": (0, 3),
    "tile_rx": (0, 3),
    "unroll": False,  # unrolled reduction steps can spill (stride-2 windows reach 255 regs)
}


@register_reference("conv2d_nchw")
def conv2d_nchw_reference(inputs, c, h, w, f, kh, kw, stride, pad):
    data, kernel = inputs
    out = testing.conv2d_nchw_python(
        data.astype(np.float64), kernel.astype(np.float64), stride, pad
    )
    return [out.astype(np.float32)]


# ---------------------------------------------------------------------------------- depthwise
@register_template("depthwise_conv2d_nchw", "cuda", extents=("c", "h", "w", "k", "stride"))
def depthwise_conv2d_nchw(cfg, c: int, h: int, w: int, k: int, stride: int, pad: int):
    """Batch-1 float32 depthwise convolution (channel multiplier 1), k x k filters."""
    oh, ow = _out(h, k, stride, pad), _out(w, k, stride, pad)
    _tile(cfg, "tile_f", c, 64)
    _tile(cfg, "tile_y", oh, 32)
    _tile(cfg, "tile_x", ow, 64)
    cfg.define_knob("stage_shared", [True, False])
    cfg.define_knob("unroll", [True, False])

    def shared(e: ConfigEntity) -> int:
        if not e["stage_shared"].val:
            return 0
        rows = (_block(e, "tile_y") - 1) * stride + k
        cols = (_block(e, "tile_x") - 1) * stride + k
        return _block(e, "tile_f") * (rows * cols + k * k)

    cfg.multi_filter(
        lambda e: _fits(
            _threads(e, "tile_f", "tile_y", "tile_x"),
            shared(e),
            _register_tile(e, "tile_f", "tile_y", "tile_x"),
        )
    )
    cfg.add_flop(2 * c * oh * ow * k * k)
    data = te.placeholder((1, c, h, w), "float32", "data")
    kernel = te.placeholder((c, 1, k, k), "float32", "kernel")
    out = nn.depthwise_conv2d_nchw(data, kernel, stride, pad)
    s = cuda.schedule_depthwise_conv2d_nchw(
        out,
        cfg["tile_f"].size,
        cfg["tile_y"].size,
        cfg["tile_x"].size,
        cfg["stage_shared"].val,
        cfg["unroll"].val,
    )
    return s, [data, kernel, out]


DEFAULTS["depthwise_conv2d_nchw"] = {
    "tile_f": (0, 1, 4, 1),
    "tile_y": (0, 1, 4, 2),
    "tile_x": (0, 1, 16, 2),
    "stage_shared": True,
    "unroll": True,
}


@register_reference("depthwise_conv2d_nchw")
def depthwise_reference(inputs, c, h, w, k, stride, pad):
    data, kernel = inputs
    out = testing.depthwise_conv2d_python_nchw(
        data.astype(np.float64), kernel.astype(np.float64), stride, pad
    )
    return [out.astype(np.float32)]


# ----------------------------------------------------------------------------------- softmax
@register_template("softmax", "cuda", extents=("n", "c"))
def softmax(cfg, n: int, c: int):
    """Softmax over the last axis of an [n, c] float32 tensor."""
    cfg.define_knob("rows_per_block", [32, 64, 128, 256])
    cfg.define_knob("stage_shared", [True, False])
    cfg.define_knob("unroll", [1, 2, 4, 8])
    cfg.multi_filter(
        lambda e: (
            (
                not e["stage_shared"].val
                or e["rows_per_block"].val * c * 4 <= ARCH.max_shared_per_block
            )
            and c % e["unroll"].val == 0
        )
    )
    cfg.add_flop(5 * n * c)
    x = te.placeholder((n, c), "float32", "x")
    out = nn.softmax(x)
    s = cuda.schedule_softmax(
        out, cfg["rows_per_block"].val, cfg["stage_shared"].val, cfg["unroll"].val
    )
    return s, [x, out]


DEFAULTS["softmax"] = {"rows_per_block": 32, "stage_shared": True, "unroll": 4}


@register_reference("softmax")
def softmax_reference(inputs, n, c):
    return [testing.softmax_python(inputs[0].astype(np.float64)).astype(np.float32)]


# ---------------------------------------------------------------------------- default config
def _distance(knob, value, target) -> float:
    if isinstance(knob, SplitKnob):
        return sum(
            abs(math.log2(v) - math.log2(t)) for v, t in zip(value, target, strict=True) if t
        )
    return 0.0 if value == target else 1.0


def _nearest(task: Task, samples: int, seed: int) -> list[ConfigEntity]:
    """Valid configs by distance to the template's target: each knob's closest candidate
    first (when that combination is valid), then `samples` random valid ones, nearest first."""
    space: ConfigSpace = task.config_space
    target = DEFAULTS.get(task.op, {})

    def score(e: ConfigEntity) -> float:
        return sum(
            _distance(k, e[name].size if isinstance(k, SplitKnob) else e[name].val, target[name])
            for name, k in space.knobs.items()
            if name in target
        )

    greedy = [
        int(
            np.argmin(
                [_distance(k, c, target[name]) if name in target else 0 for c in k.candidates]
            )
        )
        for name, k in space.knobs.items()
    ]
    index = int(space.indices(np.array([greedy]))[0])
    picks = [space.get(int(i)) for i in space.sample(np.random.default_rng(seed), samples)]
    first = [space.get(index)] if space.is_valid(index) else []
    return first + sorted(picks, key=lambda e: (score(e), e.index))


def default_config(task: Task, samples: int = 4096, seed: int = 0) -> ConfigEntity:
    """The template's default: the valid config nearest its hand-set target."""
    return _nearest(task, samples, seed)[0]


def default_build(task: Task, tries: int = 8, samples: int = 4096, seed: int = 0):
    """(config, GPUModule) of the nearest configs to the target whose kernels ptxas accepts
    (no spills, within limits): what `vta build` uses when there is no record."""
    problems = []
    for cfg in _nearest(task, samples, seed)[:tries]:
        schedule, tensors = task.instantiate(cfg)
        module = build(schedule, tensors, target=task.target)
        if not module.problems():
            return cfg, module
        problems += module.problems()
    raise TuningError(
        f"{task.workload_key}: none of the {tries} configs nearest the default builds cleanly "
        f"({problems[0] if problems else 'no valid config'})"
    )
