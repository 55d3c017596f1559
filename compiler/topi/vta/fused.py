"""conv2d (and dense, as a 1x1 conv) with its whole epilogue in one accelerator Program: bias,
requantizing shift, clip/ReLU and an optional residual add, generated directly as the backend's
operation stream (`compiler.vta.ops`) and passed through its token and emit passes.

Why not a tensor expression: the residual add accumulates a second product (the residual tile
times a power-of-two identity weight, 1 GEMM micro-op per output row) into the convolution's
accumulator rows, which one reduction cannot express. Per output tile and virtual thread:

    GEMM reset                                  acc = 0
    per input-channel tile: LOAD INP, LOAD WGT; GEMM   acc += data * kernel
    [LOAD INP residual; GEMM with 2^k * I]      acc += residual << k
    REQ (bias row, shift, relu)                 acc = clip((acc + bias) >> shift)
    STORE

The bias (all output channels) and the identity weight are loaded once per Program. Tiles go to
the virtual threads round robin; each tile's accumulator rows rotate over `threads + 1` regions
when they fit, so a thread's next reset does not wait for its previous store. Where the
configuration lacks REQ the epilogue is ADD (bias), SHR, MAX, MIN.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import numpy as np

from vta.builder import ProgramBuilder
from vta.config import VTAConfig
from vta.isa import AluOp, MemType, requant_bounds, requant_imm
from vta.program import Program

from ...errors import LoweringError
from ...vta.kernel import Kernel
from ...vta.ops import Alu, Gemm, Load, Store
from ...vta.tokens import emit, insert_tokens
from ...vta.unroll import Entry, Streams
from .conv2d import Conv2DKnobs, Conv2DWorkload
from .reference import conv2d_packed_acc

MAX_RESIDUAL_SHIFT = 6  # the identity weight 2^k is an int8


@dataclasses.dataclass(frozen=True)
class Epilogue:
    """What follows the convolution: int32 bias per output channel, arithmetic shift right,
    ReLU (clip to [0, 127]) or the int8 clip, and a residual int8 tensor added as residual << k
    before the shift (k = `residual_shift`, None: no residual)."""

    bias: bool = True
    shift: int = 0
    relu: bool = False
    residual_shift: int | None = None

    def __post_init__(self):
        if not 0 <= self.shift <= 31:
            raise LoweringError(f"epilogue shift {self.shift} is out of range (valid: 0..31)")
        k = self.residual_shift
        if k is not None and not 0 <= k <= MAX_RESIDUAL_SHIFT:
            raise LoweringError(
                f"residual shift {k} is out of range (valid: 0..{MAX_RESIDUAL_SHIFT}: the "
                "residual is added through an int8 identity weight 2^k)"
            )


def _acc_rows(k: Conv2DKnobs) -> int:
    return k.tile_b * k.tile_co * k.tile_h * k.tile_w


def _inp_rows(wl: Conv2DWorkload, k: Conv2DKnobs) -> int:
    ih, iw = (k.tile_h - 1) * wl.stride + wl.kh, (k.tile_w - 1) * wl.stride + wl.kw
    return k.tile_b * k.tile_ci * ih * iw


def regions(wl: Conv2DWorkload, k: Conv2DKnobs, ep: Epilogue, cfg: VTAConfig) -> int | None:
    """Accumulator regions (threads + 1 when they fit, else threads) or None if the tiles of
    every thread do not fit the buffers."""
    threads = k.oc_nthread * k.h_nthread
    depth = cfg.depth
    inp = threads * _inp_rows(wl, k)
    if ep.residual_shift is not None:
        inp += threads * _acc_rows(k)
    wgt = threads * k.tile_co * k.tile_ci * wl.kh * wl.kw + (ep.residual_shift is not None)
    if inp > depth[MemType.INP] or wgt > depth[MemType.WGT]:
        return None
    free = depth[MemType.ACC] - (wl.co if ep.bias else 0)
    for r in (threads + 1, threads):
        if r * _acc_rows(k) <= free:
            return r
    return None


def fused_knob_space(wl: Conv2DWorkload, ep: Epilogue, cfg: VTAConfig) -> tuple[Conv2DKnobs, ...]:
    """Every knob setting whose tiles divide the workload and fit the buffers."""
    return _space(wl, ep, cfg)


@functools.cache
def _space(wl: Conv2DWorkload, ep: Epilogue, cfg: VTAConfig) -> tuple[Conv2DKnobs, ...]:
    def divisors(n: int) -> list[int]:
        return [d for d in range(1, n + 1) if n % d == 0]

    out = []
    for tb, th, tw, tci, tco, oc_t, h_t in itertools.product(
        divisors(wl.n),
        divisors(wl.oh),
        divisors(wl.ow),
        divisors(wl.ci),
        divisors(wl.co),
        (1, 2),
        (1, 2),
    ):
        k = Conv2DKnobs(tb, th, tw, tci, tco, oc_t, h_t)
        if (wl.co // tco) % oc_t or (wl.oh // th) % h_t or regions(wl, k, ep, cfg) is None:
            continue
        out.append(k)
    return tuple(out)


def estimate_cycles(wl: Conv2DWorkload, k: Conv2DKnobs, ep: Epilogue, cfg: VTAConfig) -> float:
    """A quick model of a knob setting's cycles: compute-module work (GEMM micro-ops, the
    epilogue per row, per-instruction overhead) or load traffic, whichever is larger, plus the
    first tile's load (nothing overlaps it)."""
    tiles = (wl.n // k.tile_b) * (wl.oh // k.tile_h) * (wl.ow // k.tile_w) * (wl.co // k.tile_co)
    ci_tiles = wl.ci // k.tile_ci
    rows = _acc_rows(k)
    gemm = rows * k.tile_ci * wl.kh * wl.kw
    epi = rows * (1 + cfg.alu_ii_tensor + (ep.residual_shift is not None))
    overhead = (2 + ci_tiles + (ep.residual_shift is not None)) * (cfg.gemm_pipeline_depth + 1)
    compute = tiles * (ci_tiles * gemm + epi + overhead)
    inp_bytes = _inp_rows(wl, k) * cfg.elem_bytes[MemType.INP]
    wgt_bytes = k.tile_co * k.tile_ci * wl.kh * wl.kw * cfg.elem_bytes[MemType.WGT]
    per_load = (inp_bytes + wgt_bytes) / cfg.bus_bytes + 2 * cfg.dram_latency / cfg.max_outstanding
    load = tiles * ci_tiles * per_load
    first = per_load + cfg.dram_latency
    store = rows * cfg.elem_bytes[MemType.OUT] / cfg.bus_bytes + cfg.dram_latency
    return max(compute, load) + first + store


def default_fused_knobs(wl: Conv2DWorkload, ep: Epilogue, cfg: VTAConfig) -> Conv2DKnobs:
    """The knob setting `estimate_cycles` likes best (two virtual threads where possible)."""
    space = _space(wl, ep, cfg)
    if not space:
        raise LoweringError(f"conv2d {wl}: no tiling fits the configuration's buffers")
    pool = [k for k in space if k.oc_nthread * k.h_nthread == 2] or list(space)
    return min(pool, key=lambda k: (estimate_cycles(wl, k, ep, cfg), -k.tile_w, -k.tile_ci))


class _Stream:
    """Operations in order with their virtual thread, as the token pass takes them."""

    def __init__(self):
        self.entries = Streams()

    def add(self, thread: int, op) -> None:
        self.entries.append(Entry((), (thread,), op))


def _plan(loops: list[tuple[int, list[int]]], cfg: VTAConfig, gemm: bool) -> Kernel:
    ld = cfg.log_depth
    widths = (
        [ld[MemType.ACC], ld[MemType.INP], ld[MemType.WGT]]
        if gemm
        else [ld[MemType.ACC], ld[MemType.ACC]]
    )
    return Kernel.plan(loops, widths, cfg.depth[MemType.UOP] // 8, gemm=gemm)


def _instances(kernel: Kernel, base: list[int]) -> list[tuple[np.ndarray, tuple]]:
    return [(u, kernel.folded) for u in kernel.instances(base)]


class _Layout:
    """SRAM rows of every buffer: per thread an input tile (and residual tile), weights, the
    rotating accumulator regions, the bias rows and the identity weight."""

    def __init__(self, wl: Conv2DWorkload, k: Conv2DKnobs, ep: Epilogue, nreg: int):
        threads = k.oc_nthread * k.h_nthread
        self.inp_rows, self.acc_rows = _inp_rows(wl, k), _acc_rows(k)
        self.wgt_rows = k.tile_co * k.tile_ci * wl.kh * wl.kw
        self.inp = [t * self.inp_rows for t in range(threads)]
        self.res = [threads * self.inp_rows + t * self.acc_rows for t in range(threads)]
        self.wgt = [t * self.wgt_rows for t in range(threads)]
        self.eye = threads * self.wgt_rows
        self.bias = 0
        first = wl.co if ep.bias else 0
        self.acc = [first + r * self.acc_rows for r in range(nreg)]


def conv2d_fused(
    wl: Conv2DWorkload,
    ep: Epilogue,
    knobs: Conv2DKnobs | None = None,
    config: VTAConfig | str | None = None,
) -> Program:
    """The Program of conv2d + epilogue. DRAM buffers: data (N/b, C/c, H, W, b, c) int8,
    kernel (O/c, C/c, KH, KW, c, c) int8, [bias (O/c, b, c) int32], [residual and eye
    (1, 1, 1, 1, c, c) int8 = 2^k * I], out (N/b, O/c, OH, OW, b, c) int8."""
    cfg = VTAConfig.load(config)
    k = knobs or default_fused_knobs(wl, ep, cfg)
    nreg = regions(wl, k, ep, cfg)
    if nreg is None:
        raise LoweringError(f"conv2d {wl}: knobs {k} do not fit the configuration's buffers")
    for axis, total, tile in (
        ("b", wl.n, k.tile_b),
        ("h", wl.oh, k.tile_h),
        ("w", wl.ow, k.tile_w),
        ("ci", wl.ci, k.tile_ci),
        ("co", wl.co, k.tile_co),
    ):
        if tile < 1 or total % tile:
            raise LoweringError(f"conv2d {wl}: tile_{axis} {tile} does not divide {total}")
    b = ProgramBuilder(cfg)
    bn, bc, bo = cfg.batch, cfg.block_in, cfg.block_out
    b.buffer("data", (wl.n, wl.ci, wl.h, wl.w, bn, bc), "int8", "input")
    b.buffer("kernel", (wl.co, wl.ci, wl.kh, wl.kw, bo, bc), "int8", "weight")
    if ep.bias:
        b.buffer("bias", (wl.co, bn, bo), "int32", "input")
    if ep.residual_shift is not None:
        b.buffer("residual", (wl.n, wl.co, wl.oh, wl.ow, bn, bo), "int8", "input")
        b.buffer("eye", (1, 1, 1, 1, bo, bc), "int8", "weight")
    b.buffer("out", (wl.n, wl.co, wl.oh, wl.ow, bn, bo), "int8", "output")
    stream = _ops(wl, k, ep, cfg, _Layout(wl, k, ep, nreg), nreg)
    emit(insert_tokens(stream.entries, cfg.depth), b)
    return b.build()


def eye(shift: int, config: VTAConfig | str | None = None) -> np.ndarray:
    """The identity weight 2^shift * I that adds a residual tile into the accumulator."""
    cfg = VTAConfig.load(config)
    return (np.eye(cfg.block_out, cfg.block_in, dtype=np.int8) << shift).reshape(
        1, 1, 1, 1, cfg.block_out, cfg.block_in
    )


def _ops(
    wl: Conv2DWorkload, k: Conv2DKnobs, ep: Epilogue, cfg: VTAConfig, lay: _Layout, nreg: int
) -> _Stream:
    st = _Stream()
    threads = k.oc_nthread * k.h_nthread
    th, tw, tco, tci, tb = k.tile_h, k.tile_w, k.tile_co, k.tile_ci, k.tile_b
    s = wl.stride
    ih, iw = (th - 1) * s + wl.kh, (tw - 1) * s + wl.kw
    hw = th * tw
    if ep.bias:
        st.add(0, Load(MemType.ACC, None, lay.bias, "bias", 0, 1, wl.co, wl.co))
    if ep.residual_shift is not None:
        st.add(0, Load(MemType.WGT, None, lay.eye, "eye", 0, 1, 1, 1))
    # micro-op kernels from base 0 (rows relative to each buffer's tile)
    acc_loops = [(tb, [tco * hw]), (tco, [hw]), (th, [tw]), (tw, [1])]
    reset = _plan([(n, [f[0], 0, 0]) for n, f in acc_loops], cfg, gemm=True)
    gemm = _plan(
        [
            (tb, [tco * hw, tci * ih * iw, 0]),
            (tco, [hw, 0, tci * wl.kh * wl.kw]),
            (tci, [0, ih * iw, wl.kh * wl.kw]),
            (wl.kh, [0, iw, wl.kw]),
            (wl.kw, [0, 1, 1]),
            (th, [tw, s * iw, 0]),
            (tw, [1, s, 0]),
        ],
        cfg,
        gemm=True,
    )
    residual = _plan([(n, [f[0], f[0], 0]) for n, f in acc_loops], cfg, gemm=True)
    bias_src = [(tb, [tco * hw, 0]), (tco, [hw, 1]), (th, [tw, 0]), (tw, [1, 0])]
    epi = _plan(bias_src, cfg, gemm=False)
    lo, hi = requant_bounds(cfg.out_width, ep.relu)

    tiles = list(
        itertools.product(
            range(wl.n // tb), range(wl.oh // th), range(wl.ow // tw), range(wl.co // tco)
        )
    )
    for step in range(0, len(tiles), threads):
        group = [(t, tiles[step + t], lay.acc[(step + t) % nreg]) for t in range(threads)]
        group = [g for g in group if step + g[0] < len(tiles)]
        for t, _, acc in group:
            for u, f in _instances(reset, [acc, 0, 0]):
                st.add(t, Gemm(u, f, True))
        for c0 in range(wl.ci // tci):
            for t, (n0, y0, x0, o0), _ in group:
                _load_inputs(st, t, wl, k, lay, (n0, y0, x0, o0, c0), ih, iw)
                if ep.residual_shift is not None and c0 == 0:
                    _load_residual(st, t, wl, k, lay.res[t], (n0, y0, x0, o0))
            for t, _, acc in group:
                for u, f in _instances(gemm, [acc, lay.inp[t], lay.wgt[t]]):
                    st.add(t, Gemm(u, f, False))
        if ep.residual_shift is not None:
            for t, _, acc in group:
                for u, f in _instances(residual, [acc, lay.res[t], lay.eye]):
                    st.add(t, Gemm(u, f, False))
        for t, (_, _, _, o0), acc in group:
            src = lay.bias + o0 * tco if ep.bias else acc
            for u, f in _instances(epi, [acc, src]):
                if cfg.alu_requant:
                    imm = requant_imm(ep.shift, ep.relu)
                    st.add(t, Alu(AluOp.REQ, u, f, not ep.bias, imm))
                    continue
                if ep.bias:
                    st.add(t, Alu(AluOp.ADD, u, f, False, 0))
                for op, imm in ((AluOp.SHR, ep.shift), (AluOp.MAX, lo), (AluOp.MIN, hi)):
                    st.add(t, Alu(op, u, f, True, imm))
        for t, (n0, y0, x0, o0), acc in group:
            _store(st, t, wl, k, acc, (n0, y0, x0, o0))
    return st


def _load_inputs(st, t, wl, k, lay, tile, ih, iw) -> None:
    """LOAD INP of the input tile (zero padding at the image border), LOAD WGT of the weights."""
    n0, y0, x0, o0, c0 = tile
    s, pad = wl.stride, wl.pad
    ys, xs = y0 * k.tile_h * s - pad, x0 * k.tile_w * s - pad
    top, left = max(0, -ys), max(0, -xs)
    bottom, right = max(0, ys + ih - wl.h), max(0, xs + iw - wl.w)
    ysize, xsize = ih - top - bottom, iw - left - right
    for nb in range(k.tile_b):
        for cb in range(k.tile_ci):
            n, c = n0 * k.tile_b + nb, c0 * k.tile_ci + cb
            row = lay.inp[t] + (nb * k.tile_ci + cb) * ih * iw
            off = ((n * wl.ci + c) * wl.h + ys + top) * wl.w + xs + left
            st.add(t, Load(MemType.INP, None, row, "data", off, ysize, xsize, wl.w,
                           (top, bottom, left, right)))  # fmt: skip
    taps = wl.kh * wl.kw
    off = (o0 * k.tile_co * wl.ci + c0 * k.tile_ci) * taps
    st.add(t, Load(MemType.WGT, None, lay.wgt[t], "kernel", off, k.tile_co, k.tile_ci * taps,
                   wl.ci * taps))  # fmt: skip


def _blocks(wl: Conv2DWorkload, k: Conv2DKnobs, tile) -> list[tuple[int, int, int, int, int]]:
    """(row in the tile, DRAM element, rows, columns, stride) of the output-shaped tile's 2-D
    transfers (one per batch and channel block, or one for all when they are contiguous)."""
    n0, y0, x0, o0 = tile
    th, tw = k.tile_h, k.tile_w
    out = []
    for nb in range(k.tile_b):
        n = n0 * k.tile_b + nb
        base = ((n * wl.co + o0 * k.tile_co) * wl.oh + y0 * th) * wl.ow + x0 * tw
        row = nb * k.tile_co * th * tw
        if th == wl.oh and tw == wl.ow:
            out.append((row, base, 1, k.tile_co * th * tw, 1))
            continue
        for cb in range(k.tile_co):
            out.append((row + cb * th * tw, base + cb * wl.oh * wl.ow, th, tw, wl.ow))
    return out


def _load_residual(st, t, wl, k, row0, tile) -> None:
    for row, off, y, x, stride in _blocks(wl, k, tile):
        st.add(t, Load(MemType.INP, None, row0 + row, "residual", off, y, x, stride))


def _store(st, t, wl, k, acc, tile) -> None:
    for row, off, y, x, stride in _blocks(wl, k, tile):
        st.add(t, Store(None, acc + row, "out", off, y, x, stride))


def fused_reference(
    data: np.ndarray,
    kernel: np.ndarray,
    wl: Conv2DWorkload,
    ep: Epilogue,
    bias: np.ndarray | None = None,
    residual: np.ndarray | None = None,
) -> np.ndarray:
    """The Program's result in int64 numpy (packed layouts)."""
    acc = conv2d_packed_acc(data, kernel, wl.stride, wl.pad)
    if ep.bias:
        acc = acc + bias.astype(np.int64)[None, :, None, None, :, :]
    if ep.residual_shift is not None:
        acc = acc + (residual.astype(np.int64) << ep.residual_shift)
    lo, hi = (0, 127) if ep.relu else (-128, 127)
    return np.clip(acc >> ep.shift, lo, hi).astype(np.int8)


def macs(wl: Conv2DWorkload, cfg: VTAConfig) -> int:
    return (
        wl.n
        * wl.co
        * wl.ci
        * wl.oh
        * wl.ow
        * wl.kh
        * wl.kw
        * math.prod((cfg.batch, cfg.block_in, cfg.block_out))
    )
