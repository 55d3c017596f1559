"""Templates used by the tuner's tests, importable in worker processes as `tune_templates`.

* `tiled_matmul` on target `analytic`: a tiled matmul loop nest with a deterministic analytic
  cost (cache traffic + compute); a test bed for the search, not a real measurement.
  `blocked_matmul` on `analytic`: the same without loop orders and annotations (a small space).
* `conv2d` on target `analytic`: a tiled conv2d loop nest, for feature-extraction speed.
* `blocked_matmul` on target `numpy`: a real CPU kernel (numpy over blocks), measured for real.
* `faulty` on target `numpy`: one config per failure kind, to test isolation and classification.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from compiler.tune import (
    Loop,
    LoopNest,
    MeasureOption,
    Record,
    register_reference,
    register_template,
)
from compiler.tune.measure import BuildResult

# ------------------------------------------------------------------------- analytic tiled matmul


@register_template("tiled_matmul", "analytic")
def tiled_matmul(cfg, n, m, k):
    cfg.define_split("tile_i", n, num_outputs=3)
    cfg.define_split("tile_j", m, num_outputs=3)
    cfg.define_split("tile_k", k, num_outputs=2)
    cfg.define_reorder("order", 3)  # order of the middle (cache-level) loops
    cfg.define_annotate("inner", 1, "try_vec")
    cfg.define_annotate("outer", 1, "try_parallel")
    cfg.add_flop(2 * n * m * k)
    i0, i1, i2 = cfg["tile_i"].size
    j0, j1, j2 = cfg["tile_j"].size
    k0, k1 = cfg["tile_k"].size
    # strides of each loop variable into C[i, j], B[k, j], A[i, k] (row-major)
    middle = [("i1", i1, (m * i2, 0, k * i2)), ("j1", j1, (j2, j2, 0)), ("k0", k0, (0, m * k1, k1))]
    middle = [middle[p] for p in cfg["order"].perm]
    loops = [("i0", i0, (m * i1 * i2, 0, k * i1 * i2)), ("j0", j0, (j1 * j2, j1 * j2, 0))]
    loops += middle + [("i2", i2, (m, 0, k)), ("k1", k1, (0, m, 1)), ("j2", j2, (1, 1, 0))]
    anns = {"i0": cfg["outer"].anns[0], "j2": cfg["inner"].anns[0]}
    return LoopNest(
        [Loop(name, ext, anns.get(name, "none")) for name, ext, _ in loops],
        {buf: [s[b] for _, _, s in loops] for b, buf in enumerate(("C", "B", "A"))},
    )


@register_template("blocked_matmul", "analytic")
def analytic_blocked_matmul(cfg, n):
    """tiled_matmul's loops without reordering or annotations: few loop structures, so the
    program features of its whole space take a moment."""
    for axis in "ijk":
        cfg.define_split(f"tile_{axis}", n, num_outputs=2)
    cfg.add_flop(2 * n**3)
    (i0, i1), (j0, j1), (k0, k1) = (cfg[f"tile_{axis}"].size for axis in "ijk")
    # strides of each loop variable into C[i, j], B[k, j], A[i, k] (row-major)
    loops = [
        ("i0", i0, (n * i1, 0, n * i1)),
        ("j0", j0, (j1, j1, 0)),
        ("k0", k0, (0, n * k1, k1)),
        ("i1", i1, (n, 0, n)),
        ("k1", k1, (0, n, 1)),
        ("j1", j1, (1, 1, 0)),
    ]
    return LoopNest(
        [Loop(name, ext) for name, ext, _ in loops],
        {buf: [s[b] for _, _, s in loops] for b, buf in enumerate(("C", "B", "A"))},
    )


def analytic_cost(nest: LoopNest, flop: float) -> float:
    """Seconds on a toy machine: compute at a vector/parallel-dependent rate plus cache misses.

    For each cache (4 KiB, 256 KiB) the outermost loop whose footprint fits is found; every
    iteration of the loops outside it refills the footprint.
    """
    ext = np.array([lp.extent for lp in nest.loops], dtype=np.float64)
    inner = nest.loops[-1]
    rate = 1e9 * (8 if inner.annotation == "vec" and inner.extent % 8 == 0 else 1)
    rate *= 2 if nest.loops[0].annotation == "parallel" and nest.loops[0].extent >= 2 else 1
    seconds = flop / rate
    for size, bandwidth in ((4096, 50e9), (262144, 10e9)):
        for level in range(len(ext)):
            footprint = 4 * sum(
                np.prod(ext[level:][np.asarray(s[level:]) != 0]) for s in nest.strides.values()
            )
            if footprint <= size:
                break
        seconds += np.prod(ext[:level]) * footprint / bandwidth
    return float(seconds)


class AnalyticMeasure:
    """A MeasureOption stand-in that 'measures' tiled_matmul configs with analytic_cost."""

    cost_unit = "s"

    def measure(self, inputs):
        return [
            Record.of(i, [analytic_cost(i.task.instantiate(i.config), i.task.flop)]) for i in inputs
        ]

    def close(self):
        pass


class AnalyticBuilder:
    """Instantiates analytic configs in this process: the 'artifact' is the loop nest."""

    def build(self, inputs):
        return [BuildResult(i.task.instantiate(i.config)) for i in inputs]

    def close(self):
        pass


class AnalyticRunner:
    """analytic_cost of built loop nests, in this process; deterministic like simulated cycles,
    so a MeasureOption measures each config once."""

    cost_unit = "s"
    deterministic = True
    threads = None  # its costs depend on no thread count

    def host(self, task):
        return None  # nor on a host

    def run(self, inputs, builds):
        return [
            Record.of(i, [analytic_cost(b.artifact, i.task.flop)])
            for i, b in zip(inputs, builds, strict=True)
        ]

    def close(self):
        pass


def analytic_option() -> MeasureOption:
    """A real MeasureOption (reuse of deterministic results included) over the analytic cost."""
    return MeasureOption(AnalyticBuilder(), AnalyticRunner())


# ------------------------------------------------------------------------------ analytic conv2d


@register_template("conv2d", "analytic")
def conv2d(cfg, c, h, w, f, kh, kw):
    """NCHW conv2d, batch 1, stride 1, 'same' padding: tiles f, y, x, rc; ry, rx whole."""
    for name, extent in (("tile_f", f), ("tile_y", h), ("tile_x", w)):
        cfg.define_split(name, extent, num_outputs=3)
    cfg.define_split("tile_rc", c, num_outputs=2)
    cfg.define_reorder("order", 4)
    cfg.define_annotate("inner", 1, "try_vec")
    cfg.define_knob("unroll", [0, 16, 64])
    cfg.add_flop(2 * c * h * w * f * kh * kw)
    f0, f1, f2 = cfg["tile_f"].size
    y0, y1, y2 = cfg["tile_y"].size
    x0, x1, x2 = cfg["tile_x"].size
    c0, c1 = cfg["tile_rc"].size
    wp = w + kw - 1
    hp = h + kh - 1
    # strides into (out[f, y, x], data[c, y+ry, x+rx], kernel[f, c, ry, rx])
    loops = [
        ("f0", f0, (h * w * f1 * f2, 0, c * kh * kw * f1 * f2)),
        ("y0", y0, (w * y1 * y2, wp * y1 * y2, 0)),
        ("x0", x0, (x1 * x2, x1 * x2, 0)),
    ]
    middle = [
        ("f1", f1, (h * w * f2, 0, c * kh * kw * f2)),
        ("y1", y1, (w * y2, wp * y2, 0)),
        ("x1", x1, (x2, x2, 0)),
        ("c0", c0, (0, hp * wp * c1, kh * kw * c1)),
    ]
    loops += [middle[p] for p in cfg["order"].perm]
    loops += [
        ("c1", c1, (0, hp * wp, kh * kw)),
        ("ry", kh, (0, wp, kw)),
        ("rx", kw, (0, 1, 1)),
        ("f2", f2, (h * w, 0, c * kh * kw)),
        ("y2", y2, (w, wp, 0)),
        ("x2", x2, (1, 1, 0)),
    ]
    unrolled = "unroll" if cfg["unroll"].val else "none"
    anns = {"x2": cfg["inner"].anns[0], "rx": unrolled, "ry": unrolled}
    return LoopNest(
        [Loop(name, ext, anns.get(name, "none")) for name, ext, _ in loops],
        {buf: [s[b] for _, _, s in loops] for b, buf in enumerate(("out", "data", "kernel"))},
    )


# ------------------------------------------------------------------------ real numpy CPU kernel


@dataclass
class BlockedMatmul:
    """C = A @ B computed block by block with numpy: block sizes change the real run time."""

    n: int
    bi: int
    bj: int
    bk: int
    n_outputs: int = 1
    wrong: bool = False

    @property
    def arg_specs(self):
        return [((self.n, self.n), "float32")] * 3

    def __call__(self, a, b, c):
        n = self.n
        c[:] = 0
        for i in range(0, n, self.bi):
            for j in range(0, n, self.bj):
                for k in range(0, n, self.bk):
                    c[i : i + self.bi, j : j + self.bj] += (
                        a[i : i + self.bi, k : k + self.bk] @ b[k : k + self.bk, j : j + self.bj]
                    )
        if self.wrong:
            c[0, 0] += 1


@register_template("blocked_matmul", "numpy")
def blocked_matmul(cfg, n):
    for axis in "ijk":
        cfg.define_split(f"tile_{axis}", n, num_outputs=2)
    cfg.add_flop(2 * n**3)
    return {axis: cfg[f"tile_{axis}"].size[1] for axis in "ijk"}


def build_blocked_matmul(task, blocks):
    return BlockedMatmul(task.args[0], blocks["i"], blocks["j"], blocks["k"])


@register_reference("blocked_matmul")
def matmul_reference(inputs, n):
    a, b = inputs
    return [a @ b]


@dataclass
class Sleep:
    """Copies its input after sleeping `ms`: a call lasts at least that long, whatever the load."""

    n: int
    ms: float
    n_outputs: int = 1

    @property
    def arg_specs(self):
        return [((self.n,), "float32")] * 2

    def __call__(self, x, out):
        time.sleep(self.ms / 1e3)
        out[:] = x


@register_template("sleep", "numpy")
def sleep_template(cfg, n):
    cfg.define_knob("ms", [1, 30])
    return cfg["ms"].val


def build_sleep(task, ms):
    return Sleep(task.args[0], ms)


@register_reference("sleep")
def copy_reference(inputs, n):
    return [inputs[0]]


# ----------------------------------------------------------------------------- failure kinds

FAULTS = [
    "ok",
    "instantiate",
    "compile",
    "compile_crash",
    "compile_hang",
    "run_error",
    "run_crash",
    "run_hang",
    "wrong",
]


@register_template("faulty", "numpy")
def faulty(cfg, n):
    cfg.define_knob("mode", FAULTS)
    cfg.add_flop(2 * n**3)
    if cfg["mode"].val == "instantiate":
        raise ValueError("template rejects this config")
    return cfg["mode"].val


@dataclass
class FaultyKernel(BlockedMatmul):
    mode: str = "ok"

    def __call__(self, a, b, c):
        if self.mode == "run_error":
            raise RuntimeError("kernel failed")
        if self.mode == "run_crash":
            os.abort()
        if self.mode == "run_hang":
            time.sleep(600)
        super().__call__(a, b, c)


def build_faulty(task, mode):
    if mode == "compile":
        raise SyntaxError("codegen failed")
    if mode == "compile_crash":
        os._exit(3)
    if mode == "compile_hang":
        time.sleep(600)
    n = task.args[0]
    return FaultyKernel(n, n, n, n, wrong=mode == "wrong", mode=mode)


@register_reference("faulty")
def faulty_reference(inputs, n):
    return [inputs[0] @ inputs[1]]


# --------------------------------------------------------------- accelerator GEMM (vta, cycles)


@register_template("vta_gemm", "vta")
def vta_gemm(cfg, batch, in_channels, out_channels):
    """Blocked int8 GEMM on the accelerator: tile sizes and virtual threads are the knobs."""
    cfg.define_split("tile_b", batch, num_outputs=2)
    cfg.define_split("tile_i", in_channels, num_outputs=2, filter=lambda e: e.size[1] >= 16)
    cfg.define_split("tile_o", out_channels, num_outputs=2, filter=lambda e: e.size[1] >= 16)
    cfg.define_knob("threads", [1, 2])
    cfg.add_flop(2 * batch * in_channels * out_channels)
    return {
        "block": (cfg["tile_b"].size[1], cfg["tile_i"].size[1], cfg["tile_o"].size[1]),
        "threads": cfg["threads"].val,
    }


def build_vta_gemm(task, params):
    from testkit.examples import blocked_gemm

    batch, in_channels, out_channels = task.args
    return blocked_gemm("pynq", batch, in_channels, out_channels, **params).program


@register_reference("vta_gemm")
def vta_gemm_reference(inputs, batch, in_channels, out_channels, shift=8):
    a, w = inputs  # packed (b/B, i/I, B, I) and (o/O, i/I, O, I)
    a2 = a.transpose(0, 2, 1, 3).reshape(batch, in_channels).astype(np.int64)
    w2 = w.transpose(0, 2, 1, 3).reshape(out_channels, in_channels).astype(np.int64)
    acc = (a2 @ w2.T).astype(np.int32)
    c = np.clip(acc >> shift, -128, 127).astype(np.int8)
    rows, cols = a.shape[2], w.shape[2]
    return [c.reshape(batch // rows, rows, out_channels // cols, cols).transpose(0, 2, 1, 3)]


# ------------------------------------------------------------------------- pool test jobs


def boom(kind):
    """Return kind*2, or raise, abort or hang as `kind` says."""
    if kind == "raise":
        raise ValueError("bad")
    if kind == "crash":
        os.abort()
    if kind == "hang":
        time.sleep(60)
    return kind * 2


def _loaded_slowly(seconds, value):
    time.sleep(seconds)
    return value


@dataclass
class SlowToLoad:
    """Unpickles into `value` after `seconds`: a job whose worker-side loading is slow."""

    seconds: float
    value: str

    def __reduce__(self):
        return _loaded_slowly, (self.seconds, self.value)


def where(_):
    from distributed import get_worker

    return get_worker().address
