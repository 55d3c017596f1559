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

import numpy as np

from vta.builder import ProgramBuilder
from vta.config import VTAConfig
from vta.isa import AluOp, Insn, MemType, requant_bounds, requant_imm
from vta.program import Program

from ...errors import LoweringError
from ...vta.kernel import Kernel
from ...vta.ops import Alu, Gemm, Load, Store
from ...vta.tokens import emit, insert_tokens
from ...vta.unroll import Entry, Streams
from .conv2d import RESNET18, Conv2DKnobs, Conv2DWorkload
from .reference import conv2d_packed_acc

MAX_RESIDUAL_SHIFT = 6  # the identity weight 2^k is an int8


@dataclasses.dataclass(frozen=True)
class Epilogue:
    """What follows the convolution: int32 bias per output channel, arithmetic shift right,
    ReLU (clip to [0, 127]) or the int8 clip; before the shift, an optional residual int8
    tensor added as residual << k (k = `residual_shift`, None: none) and an optional shortcut
    convolution (a second input and weight, e.g. ResNet's 1x1 downsampling conv, whose
    products accumulate into the same rows: its workload `shortcut`, same outputs). With a
    residual, `pre_shift` shifts the products right first (one ALU op per row), so that a
    residual much coarser than the products still enters through 2^k with k <= 6. With a
    shortcut, `sc_shift` > 0 shifts its products left (one ALU op per row) before the main
    conv's accumulate: each weight set keeps its own exponent when the shortcut's products are
    coarser than the main conv's. With `batch_weights` each batch element has weights and bias
    of its own (an attention product's heads, whose weights are activations): tiles take one
    batch element each and load its weight blocks and bias rows."""

    bias: bool = True
    shift: int = 0
    relu: bool = False
    residual_shift: int | None = None
    shortcut: Conv2DWorkload | None = None
    pre_shift: int = 0
    sc_shift: int = 0
    batch_weights: bool = False

    def structure(self) -> Epilogue:
        """The epilogue with its immediates in one canonical form (shift 0, ReLU, residual,
        pre-shift and shortcut shift 1 where present): what decides a Program's cycles."""
        k = None if self.residual_shift is None else 1
        pre, sc = int(self.pre_shift > 0), int(self.sc_shift > 0)
        return dataclasses.replace(self, shift=0, relu=True, residual_shift=k, pre_shift=pre,
                                   sc_shift=sc)  # fmt: skip

    def __post_init__(self):
        for what, v in (("shift", self.shift), ("pre_shift", self.pre_shift),
                        ("sc_shift", self.sc_shift)):  # fmt: skip
            if not 0 <= v <= 31:
                raise LoweringError(f"epilogue {what} {v} is out of range (valid: 0..31)")
        if self.sc_shift and self.shortcut is None:
            raise LoweringError("epilogue sc_shift without a shortcut conv")
        if self.batch_weights and (self.shortcut or self.residual_shift is not None):
            raise LoweringError("epilogue: weights per batch element take no residual or shortcut")
        k = self.residual_shift
        if k is not None and not 0 <= k <= MAX_RESIDUAL_SHIFT:
            raise LoweringError(
                f"residual shift {k} is out of range (valid: 0..{MAX_RESIDUAL_SHIFT}: the "
                "residual is added through an int8 identity weight 2^k)"
            )


@dataclasses.dataclass(frozen=True)
class _Source:
    """One convolution feeding the accumulator: DRAM names, workload, input-channel blocks per
    weight step (`tci`) and per input tile (`blocks`: `tci`, or a depthwise conv's tile_co, its
    output blocks' own inputs), and the input tile's geometry (a strided 1x1 conv loads only
    the rows it reads)."""

    data: str
    kernel: str
    wl: Conv2DWorkload
    tci: int
    blocks: int
    ih: int  # input rows per tile in SRAM
    iw: int
    row_step: int  # SRAM rows between output rows' first input rows
    dram_rows: int  # DRAM image rows between SRAM rows

    @property
    def rows(self) -> int:
        return self.blocks * self.ih * self.iw

    @property
    def steps(self) -> int:
        """Input-channel steps a tile accumulates (one for a depthwise conv)."""
        return 1 if self.wl.depthwise else self.wl.ci // self.tci

    @property
    def wgt_rows(self) -> int:
        return self.tci * self.wl.kh * self.wl.kw


def _sources(wl: Conv2DWorkload, k: Conv2DKnobs, ep: Epilogue) -> list[_Source]:
    out = []
    for data, kernel, w, tci in (
        ("data", "kernel", wl, k.tile_ci),
        ("sc_data", "sc_kernel", ep.shortcut, 1),
    ):
        if w is None:
            continue
        s = w.stride
        if w.kh == 1 and w.pad == 0:  # read rows y * s only
            ih, step, dram = k.tile_h, 1, s
        else:
            ih, step, dram = (k.tile_h - 1) * s + w.kh, s, 1
        iw = (k.tile_w - 1) * s + w.kw
        blocks = k.tile_co if w.depthwise else tci
        out.append(_Source(data, kernel, w, tci, blocks, ih, iw, step, dram))
    return out


def _acc_rows(k: Conv2DKnobs) -> int:
    return k.tile_b * k.tile_co * k.tile_h * k.tile_w


def _bias_rows(wl: Conv2DWorkload, ep: Epilogue) -> int:
    """Accumulator rows the bias takes (one per output block, per batch element with
    `batch_weights`)."""
    return (wl.n if ep.batch_weights else 1) * wl.co if ep.bias else 0


def regions(wl: Conv2DWorkload, k: Conv2DKnobs, ep: Epilogue, cfg: VTAConfig) -> int | None:
    """Accumulator regions (threads + 1 when they fit, else threads; with `sc_shift` first
    2 threads + 1 or 2 threads, for the next tiles' shortcut products) or None if the tiles of
    every thread do not fit the buffers."""
    if (wl.depthwise and k.tile_ci != 1) or (ep.batch_weights and k.tile_b != 1):
        return None
    threads = k.oc_nthread * k.h_nthread
    depth = cfg.depth
    srcs = _sources(wl, k, ep)
    inp = threads * k.tile_b * max(src.rows for src in srcs)
    res = residual_blocks(cfg) if ep.residual_shift is not None else 0
    inp += threads * _acc_rows(k) * res
    wgt = threads * k.tile_co * max(src.wgt_rows for src in srcs) + res
    if inp > depth[MemType.INP] or wgt > depth[MemType.WGT]:
        return None
    free = depth[MemType.ACC] - _bias_rows(wl, ep)
    ahead = (2 * threads + 1, 2 * threads) if ep.sc_shift else ()
    for r in (*ahead, threads + 1, threads):
        if r * _acc_rows(k) <= free:
            return r
    return None


def residual_blocks(cfg: VTAConfig) -> int:
    """Input elements (and identity weights) per accumulator row of a residual: its BLOCK_OUT
    channels in BLOCK_IN lanes, BLOCK_OUT / BLOCK_IN of them where BLOCK_OUT is wider, else one
    whose lanes past BLOCK_OUT the identity weight ignores."""
    return max(1, cfg.block_out // cfg.block_in)


def fused_knob_space(wl: Conv2DWorkload, ep: Epilogue, cfg: VTAConfig) -> tuple[Conv2DKnobs, ...]:
    """Every knob setting whose tiles divide the workload and fit the buffers."""
    return tuple(Conv2DKnobs(*row) for row in _space(wl, ep, cfg).tolist())


@functools.lru_cache(maxsize=256)  # a co-design search asks for many configurations
def _space(wl: Conv2DWorkload, ep: Epilogue, cfg: VTAConfig) -> np.ndarray:
    """`regions`'s test over every setting at once: the settings that pass, one row of knobs
    (`Conv2DKnobs`' fields) each, in `itertools.product` order."""

    def divisors(n: int) -> list[int]:
        return [d for d in range(1, n + 1) if n % d == 0]

    tci_axis = [1] if wl.depthwise else divisors(wl.ci)
    axes = (divisors(wl.n), divisors(wl.oh), divisors(wl.ow), tci_axis, divisors(wl.co),
            [1, 2], [1, 2])  # fmt: skip
    tb, th, tw, tci, tco, oc_t, h_t = (
        a.ravel() for a in np.meshgrid(*map(np.asarray, axes), indexing="ij")
    )
    threads = oc_t * h_t
    rows = wgt_rows = 0
    for w, ci in ((wl, tci), (ep.shortcut, 1)):  # as `_sources`
        if w is None:
            continue
        s = w.stride
        ih = th if (w.kh == 1 and w.pad == 0) else (th - 1) * s + w.kh
        blocks = tco if w.depthwise else ci
        rows = np.maximum(rows, blocks * ih * ((tw - 1) * s + w.kw))
        wgt_rows = np.maximum(wgt_rows, ci * w.kh * w.kw)
    acc_rows = tb * tco * th * tw
    res = residual_blocks(cfg) if ep.residual_shift is not None else 0
    inp = threads * tb * rows + threads * acc_rows * res
    wgt = threads * tco * wgt_rows + res
    depth = cfg.depth
    free = depth[MemType.ACC] - _bias_rows(wl, ep)
    ok = (
        ((wl.co // tco) % oc_t == 0)
        & ((wl.oh // th) % h_t == 0)
        & ((tb == 1) | (not ep.batch_weights))
        & (inp <= depth[MemType.INP])
        & (wgt <= depth[MemType.WGT])
        & (threads * acc_rows <= free)  # `regions`' fewest regions: one per thread
    )
    space = np.stack([tb, th, tw, tci, tco, oc_t, h_t], axis=1)[ok]
    space.flags.writeable = False  # cached: shared by every caller
    return space


def estimate_cycles(wl: Conv2DWorkload, k: Conv2DKnobs, ep: Epilogue, cfg: VTAConfig) -> float:
    """A quick model of a knob setting's cycles (`estimate_space` of that one setting)."""
    return float(_estimate(wl, ep, cfg, np.array([dataclasses.astuple(k)]))[0])


def estimate_space(wl: Conv2DWorkload, ep: Epilogue, cfg: VTAConfig) -> np.ndarray:
    """The cycle estimate of every setting of `fused_knob_space`, in its order, at once."""
    return _estimate(wl, ep, cfg, _space(wl, ep, cfg))


def _estimate(wl: Conv2DWorkload, ep: Epilogue, cfg: VTAConfig, knobs: np.ndarray) -> np.ndarray:
    """A quick model of knob settings' cycles (`knobs`: one row of `Conv2DKnobs`' fields per
    setting): compute-module work (GEMM micro-ops, the epilogue per row, per-instruction
    overhead) or load traffic, whichever is larger; with one virtual thread a tile's loads wait
    for the GEMMs that read its buffers and overlap only the epilogue, so a tile takes its
    GEMMs plus the longer of its loads and its epilogue. Plus the first tile's load (nothing
    overlaps it) and the last store. Per source as `_sources` lays it out."""
    tb, th, tw, tci, tco, oc_t, h_t = knobs.T
    tiles = (wl.n // tb) * (wl.oh // th) * (wl.ow // tw) * (wl.co // tco)
    rows = tb * tco * th * tw  # `_acc_rows`
    extra = residual_blocks(cfg) if ep.residual_shift is not None else 0  # its GEMMs per row
    epi = rows * (1 + (cfg.alu_ii_tensor if ep.bias else cfg.alu_ii_imm) + extra)
    epi = epi + rows * cfg.alu_ii_imm * ((ep.pre_shift > 0) + (ep.sc_shift > 0))
    compute = load = stall = 0.0
    first = None
    lat = cfg.dram_latency
    for w, ci, shortcut in ((wl, tci, False), (ep.shortcut, 1, True)):
        if w is None:
            continue
        s = w.stride
        pointwise = w.kh == 1 and w.pad == 0  # reads rows y * s only
        ih = th if pointwise else (th - 1) * s + w.kh
        blocks = tco if w.depthwise else ci  # as `_Source`
        src_rows = blocks * ih * ((tw - 1) * s + w.kw)
        wgt_rows = ci * w.kh * w.kw
        steps = 1 if w.depthwise else w.ci // ci
        work = steps * (rows * wgt_rows + cfg.gemm_pipeline_depth + 1)
        inp = tb * src_rows * cfg.elem_bytes[MemType.INP]
        wgt = tco * wgt_rows * cfg.elem_bytes[MemType.WGT]
        loads = tb * blocks * (ih if pointwise and s > 1 else 1) + 1
        per_step = (inp + wgt) / cfg.bus_bytes + loads * lat / cfg.max_outstanding
        if ep.sc_shift and shortcut:  # its own phase: loads hide only under it
            stall = np.maximum(0.0, (steps - 1) * per_step - work)
        compute = compute + work
        load = load + steps * per_step
        first = per_step + lat if first is None else first
    gemm, fixed = compute + stall, epi + (3 + extra) * (cfg.gemm_pipeline_depth + 1)
    overlapped = np.maximum(tiles * (gemm + fixed), tiles * load)
    serial = tiles * (gemm + np.maximum(load, fixed))
    store = rows * cfg.elem_bytes[MemType.OUT] / cfg.bus_bytes + lat
    return np.where(oc_t * h_t == 1, serial, overlapped) + first + store


def default_fused_knobs(wl: Conv2DWorkload, ep: Epilogue, cfg: VTAConfig) -> Conv2DKnobs:
    """The knob setting `estimate_cycles` likes best (two virtual threads where possible)."""
    space = fused_knob_space(wl, ep, cfg)
    if not space:
        raise LoweringError(f"conv2d {wl}: no tiling fits the configuration's buffers")
    cycles = estimate_space(wl, ep, cfg)
    two = [i for i, k in enumerate(space) if k.oc_nthread * k.h_nthread == 2]
    pool = two or range(len(space))
    return space[min(pool, key=lambda i: (cycles[i], -space[i].tile_w, -space[i].tile_ci))]


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
    """SRAM rows of every buffer: per thread an input tile and weights for each source (its
    own when both sources' fit, so a shortcut conv's loads do not wait for the main conv's
    products; else one shared by them), a residual tile, the rotating accumulator regions, the
    bias rows and the identity weight. `inp[t][s]`, `wgt[t][s]`: thread t, source s."""

    def __init__(self, wl: Conv2DWorkload, k: Conv2DKnobs, ep: Epilogue, cfg: VTAConfig):
        threads = k.oc_nthread * k.h_nthread
        srcs = _sources(wl, k, ep)
        self.acc_rows = _acc_rows(k)
        eye = residual_blocks(cfg) if ep.residual_shift is not None else 0
        res = self.acc_rows * eye
        inp = _split([k.tile_b * src.rows for src in srcs], threads, res, cfg.depth[MemType.INP])
        wgt = _split([k.tile_co * src.wgt_rows for src in srcs], threads, eye,
                     cfg.depth[MemType.WGT])  # fmt: skip
        self.inp = [[t * inp[-1] + off for off in inp[:-1]] for t in range(threads)]
        self.res = [threads * inp[-1] + t * res for t in range(threads)]
        self.wgt = [[t * wgt[-1] + off for off in wgt[:-1]] for t in range(threads)]
        self.eye = threads * wgt[-1]
        self.bias = 0
        nreg = regions(wl, k, ep, cfg)
        first = _bias_rows(wl, ep)
        self.acc = [first + r * self.acc_rows for r in range(nreg)]


def _split(rows: list[int], threads: int, extra: int, depth: int) -> list[int]:
    """Each source's offset in a thread's part of a buffer, then the part's size: the sources
    side by side when they fit (with `extra` rows per thread after the parts), else on top of
    each other."""
    if threads * (sum(rows) + extra) <= depth:
        return [*itertools.accumulate([0, *rows[:-1]]), sum(rows)]
    return [0] * len(rows) + [max(rows)]


def conv2d_fused(
    wl: Conv2DWorkload,
    ep: Epilogue,
    knobs: Conv2DKnobs | None = None,
    config: VTAConfig | str | None = None,
    validate: bool = True,
) -> Program:
    """The Program of conv2d + epilogue (validated unless told otherwise). DRAM buffers: data
    (N/b, C/c, H, W, b, c) int8, kernel (O/o, C/c, KH, KW, o, c) int8, [bias (O/o, b, o)
    int32], [residual (N/b, O/o, OH, OW, [r,] b, c) int8 (each block of o output channels in
    r = o/c input elements, or in one whose lanes past o are ignored) and eye (1, r, 1, 1, o, c)
    int8 = 2^k * I], [sc_data, sc_kernel of the shortcut conv], out (N/b, O/o, OH, OW, b, o)
    int8 (c: BLOCK_IN, o: BLOCK_OUT); with `batch_weights`, N/b kernels and biases one after
    another along their first axis."""
    return fused_builder(wl, ep, knobs, config).build(validate)


def fused_stream(
    wl: Conv2DWorkload, ep: Epilogue, knobs: Conv2DKnobs, config: VTAConfig
) -> list[Insn]:
    """The instructions of `conv2d_fused`'s Program, neither encoded nor validated: what a knob
    search times (on `sim`'s `stream_cycles`) for candidates it does not keep."""
    return fused_builder(wl, ep, knobs, config).stream()


def fused_builder(
    wl: Conv2DWorkload, ep: Epilogue, knobs: Conv2DKnobs | None, config: VTAConfig | str | None
) -> ProgramBuilder:
    """The builder holding conv2d + epilogue's buffers and instructions: its `stream()` is
    `fused_stream`, its `build()` `conv2d_fused` (a search times one and keeps the other)."""
    cfg = VTAConfig.load(config)
    if wl.depthwise:
        _check_depthwise(wl, ep, cfg)
    k = knobs or default_fused_knobs(wl, ep, cfg)
    sc = ep.shortcut
    if sc is not None and (sc.n, sc.co, sc.oh, sc.ow) != (wl.n, wl.co, wl.oh, wl.ow):
        raise LoweringError(f"shortcut conv {sc} does not produce the outputs of {wl}")
    for axis, total, tile in (
        ("b", wl.n, k.tile_b),
        ("h", wl.oh, k.tile_h),
        ("w", wl.ow, k.tile_w),
        ("ci", wl.ci, k.tile_ci),
        ("co", wl.co, k.tile_co),
    ):
        if tile < 1 or total % tile:
            raise LoweringError(f"conv2d {wl}: tile_{axis} {tile} does not divide {total}")
    if regions(wl, k, ep, cfg) is None:
        raise LoweringError(f"conv2d {wl}: knobs {k} do not fit the configuration's buffers")
    b = ProgramBuilder(cfg)
    bn, bc, bo = cfg.batch, cfg.block_in, cfg.block_out
    sets = wl.n if ep.batch_weights else 1  # weight sets (and biases)
    for src in _sources(wl, k, ep):
        w = src.wl
        b.buffer(src.data, (w.n, w.ci, w.h, w.w, bn, bc), "int8", "input")
        b.buffer(src.kernel, (sets * w.co, w.weight_ci, w.kh, w.kw, bo, bc), "int8", "weight")
    if ep.bias:
        b.buffer("bias", (sets * wl.co, bn, bo), "int32", "input")
    if ep.residual_shift is not None:
        r = residual_blocks(cfg)
        blocks = (r,) if r > 1 else ()  # input elements per output position
        b.buffer("residual", (wl.n, wl.co, wl.oh, wl.ow, *blocks, bn, bc), "int8", "input")
        b.buffer("eye", (1, r, 1, 1, bo, bc), "int8", "weight")
    b.buffer("out", (wl.n, wl.co, wl.oh, wl.ow, bn, bo), "int8", "output")
    stream = _ops(wl, k, ep, cfg, _Layout(wl, k, ep, cfg))
    emit(insert_tokens(stream.entries, cfg.depth), b)
    return b


def _check_depthwise(wl: Conv2DWorkload, ep: Epilogue, cfg: VTAConfig) -> None:
    """Refuse what a depthwise conv's Program does not do."""
    if wl.ci != wl.co:
        raise LoweringError(f"depthwise conv2d {wl}: input and output blocks differ")
    if cfg.block_in != cfg.block_out:
        raise LoweringError("depthwise conv2d: its diagonal weight blocks need BLOCK_IN == "
                            f"BLOCK_OUT ({cfg.block_in}, {cfg.block_out})")  # fmt: skip
    if ep.residual_shift is not None or ep.shortcut is not None:
        raise LoweringError("depthwise conv2d: no residual or shortcut conv")


def _gemm_kernel(src: _Source, k: Conv2DKnobs, cfg: VTAConfig) -> Kernel:
    """GEMM micro-ops of one step: per output row and tap one micro-op per input-channel
    block (a depthwise conv's channel loop advances its input rows with the others)."""
    w, th, tw, hw = src.wl, k.tile_h, k.tile_w, k.tile_h * k.tile_w
    taps = w.kh * w.kw
    own = src.ih * src.iw if w.depthwise else 0  # input rows per output channel block
    return _plan(
        [
            (k.tile_b, [k.tile_co * hw, src.rows, 0]),
            (k.tile_co, [hw, own, src.tci * taps]),
            (src.tci, [0, src.ih * src.iw, taps]),
            (w.kh, [0, src.iw, w.kw]),
            (w.kw, [0, 1, 1]),
            (th, [tw, src.row_step * src.iw, 0]),
            (tw, [1, w.stride, 0]),
        ],
        cfg,
        gemm=True,
    )


def _steps(sources: list, ep: Epilogue) -> list[tuple[int, int]]:
    """(source, input-channel tile) in the order a tile accumulates them: each source's tiles
    spread evenly over the whole sequence, so a shortcut conv's steps (little compute for
    their loads) fall between the main conv's (much compute) and their loads hide under it;
    with `sc_shift`, the shortcut's steps first (its products are shifted before the main
    conv's accumulate)."""
    counts = [src.steps for src, _ in sources]
    steps = [(s, c) for s, n in enumerate(counts) for c in range(n)]
    if ep.sc_shift:
        return sorted(steps, key=lambda sc: (-sc[0], sc[1]))
    return sorted(steps, key=lambda sc: ((2 * sc[1] + 1) / counts[sc[0]], sc[0]))


def _ops(wl: Conv2DWorkload, k: Conv2DKnobs, ep: Epilogue, cfg: VTAConfig, lay: _Layout) -> _Stream:
    st = _Stream()
    threads = k.oc_nthread * k.h_nthread
    th, tw, tco, tb = k.tile_h, k.tile_w, k.tile_co, k.tile_b
    hw = th * tw
    if ep.bias:
        rows = _bias_rows(wl, ep)
        st.add(0, Load(MemType.ACC, None, lay.bias, "bias", 0, 1, rows, rows))
    r = residual_blocks(cfg)
    if ep.residual_shift is not None:
        st.add(0, Load(MemType.WGT, None, lay.eye, "eye", 0, 1, r, r))
    # micro-op kernels from base 0 (rows relative to each buffer's tile)
    acc_loops = [(tb, [tco * hw]), (tco, [hw]), (th, [tw]), (tw, [1])]
    reset = _plan([(n, [f[0], 0, 0]) for n, f in acc_loops], cfg, gemm=True)
    sources = [(src, _gemm_kernel(src, k, cfg)) for src in _sources(wl, k, ep)]
    # the residual: per accumulator row, r input elements times r identity weights
    sub = [(r, [0, 1, 1])] if r > 1 else []
    residual = _plan([*sub, *((n, [f[0], r * f[0], 0]) for n, f in acc_loops)], cfg, gemm=True)
    bias_src = [(tb, [tco * hw, 0]), (tco, [hw, 1]), (th, [tw, 0]), (tw, [1, 0])]
    epi = _plan(bias_src, cfg, gemm=False)
    epi_block = _plan(bias_src[2:], cfg, gemm=False)
    epi_own = _plan([(n, [f[0], f[0]]) for n, f in acc_loops], cfg, gemm=False)

    tiles = list(
        itertools.product(
            range(wl.n // tb), range(wl.oh // th), range(wl.ow // tw), range(wl.co // tco)
        )
    )

    def own(tile) -> int:  # the tile's first weight (and bias) block of its own
        return tile[0] * wl.co if ep.batch_weights else 0

    def reset_(group) -> None:
        for t, _, acc in group:
            for u, f in _instances(reset, [acc, 0, 0]):
                st.add(t, Gemm(u, f, True))

    def shift_left(group) -> None:  # the shortcut's products into the main conv's exponent
        for t, _, acc in group:
            for u, f in _instances(epi_own, [acc, acc]):
                st.add(t, Alu(AluOp.SHR, u, f, True, -ep.sc_shift))

    def step_(group, s: int, c0: int, first: bool, reset: bool = False) -> None:
        """One input-channel step of the group's tiles; with `reset`, each thread's
        accumulator reset just before its products, so a thread whose rows are still being
        stored does not hold up the next one's products (the compute module runs in order)."""
        src, kernel = sources[s]
        for t, tile, _ in group:
            _load_inputs(st, t, src, k, lay.inp[t][s], lay.wgt[t][s], (*tile, c0), own(tile))
            if ep.residual_shift is not None and first:
                _load_residual(st, t, wl, k, lay.res[t], tile, r)
        for t, tile, acc in group:
            if reset:
                reset_([(t, tile, acc)])
            for u, f in _instances(kernel, [acc, lay.inp[t][s], lay.wgt[t][s]]):
                st.add(t, Gemm(u, f, False))

    groups = []
    for step in range(0, len(tiles), threads):
        group = [(t, tiles[step + t], lay.acc[(step + t) % len(lay.acc)]) for t in range(threads)]
        groups.append([g for g in group if step + g[0] < len(tiles)])
    # with sc_shift and room for two groups' accumulators, a group's shortcut steps run during
    # the previous group's main steps, so their loads hide under its products
    ahead = ep.sc_shift > 0 and len(lay.acc) >= 2 * threads
    # with no spare accumulator region, a thread's rows are reused while still being stored
    tight = len(lay.acc) == threads > 1
    counts = [src.steps for src, _ in sources]
    for gi, group in enumerate(groups):
        step = gi * threads
        if not ahead:
            if not tight:
                reset_(group)
            for i, (s, c0) in enumerate(_steps(sources, ep)):
                if ep.sc_shift and s == 0 and c0 == 0:
                    shift_left(group)
                step_(group, s, c0, i == 0, reset=tight and i == 0)
        else:
            if gi == 0:
                reset_(group)
                for c0 in range(counts[1]):
                    step_(group, 1, c0, False)
            shift_left(group)
            nxt = groups[gi + 1] if gi + 1 < len(groups) else None
            for c0 in range(counts[0]):
                step_(group, 0, c0, c0 == 0)
                for j in range(counts[1]) if nxt else ():
                    if (2 * j + 1) * counts[0] // (2 * counts[1]) == c0:  # spread evenly
                        if j == 0:
                            reset_(nxt)
                        step_(nxt, 1, j, False)
        if ep.pre_shift:
            for t, _, acc in group:
                for u, f in _instances(epi_own, [acc, acc]):
                    st.add(t, Alu(AluOp.SHR, u, f, True, ep.pre_shift))
        if ep.residual_shift is not None:
            for t, _, acc in group:
                for u, f in _instances(residual, [acc, lay.res[t], lay.eye]):
                    st.add(t, Gemm(u, f, False))
        last = step + threads >= len(tiles)
        for t, tile, acc in group:
            if not last:  # one epilogue per tile, the stores after every thread's epilogue
                _epilogue(st, t, epi, ep, cfg, acc, lay.bias + own(tile) + tile[3] * tco)
                continue
            # the Program's end: epilogue and store block by block, so stores overlap the ALU
            for nb, cb in itertools.product(range(tb), range(tco)):
                row = (nb * tco + cb) * hw
                bias = lay.bias + own(tile) + tile[3] * tco + cb
                _epilogue(st, t, epi_block, ep, cfg, acc + row, bias)
                _store(st, t, wl, k, acc, tile, nb * tco + cb)
        for t, tile, acc in group if not last else ():
            _store(st, t, wl, k, acc, tile)
    return st


def _epilogue(st: _Stream, t: int, kernel: Kernel, ep: Epilogue, cfg: VTAConfig, acc, bias):
    """REQ (or ADD, SHR, MAX, MIN) over a tile's rows, the bias rows as tensor operand."""
    lo, hi = requant_bounds(cfg.out_width, ep.relu)
    for u, f in _instances(kernel, [acc, bias if ep.bias else acc]):
        if cfg.alu_requant:
            st.add(t, Alu(AluOp.REQ, u, f, not ep.bias, requant_imm(ep.shift, ep.relu)))
            continue
        if ep.bias:
            st.add(t, Alu(AluOp.ADD, u, f, False, 0))
        for op, imm in ((AluOp.SHR, ep.shift), (AluOp.MAX, lo), (AluOp.MIN, hi)):
            st.add(t, Alu(op, u, f, True, imm))


def _load_inputs(
    st, t, src: _Source, k: Conv2DKnobs, inp: int, wgt: int, tile, own: int = 0
) -> None:
    """LOAD INP of a source's input tile (zero padding at the image border) and LOAD WGT of
    its weights for output-channel tile o0 and input-channel tile c0 (a depthwise conv: the
    input blocks of tile o0), from output block `own` on (`Epilogue.batch_weights`)."""
    n0, y0, x0, o0, c0 = tile
    w = src.wl
    first = o0 * k.tile_co if w.depthwise else c0 * src.tci  # the tile's first input block
    ys, xs = y0 * k.tile_h * w.stride - w.pad, x0 * k.tile_w * w.stride - w.pad
    span = (src.ih - 1) * src.dram_rows + 1  # image rows the tile covers
    top, left = max(0, -ys), max(0, -xs)
    bottom, right = max(0, ys + span - w.h), max(0, xs + src.iw - w.w)
    ysize, xsize = src.ih - top - bottom, src.iw - left - right
    for nb in range(k.tile_b):
        for cb in range(src.blocks):
            n, c = n0 * k.tile_b + nb, first + cb
            row = inp + (nb * src.blocks + cb) * src.ih * src.iw
            off = ((n * w.ci + c) * w.h + ys + top) * w.w + xs + left
            stride = w.w * src.dram_rows
            st.add(t, Load(MemType.INP, None, row, src.data, off, ysize, xsize, stride,
                           (top, bottom, left, right)))  # fmt: skip
    taps = w.kh * w.kw
    off = ((own + o0 * k.tile_co) * w.weight_ci + c0 * src.tci) * taps
    st.add(t, Load(MemType.WGT, None, wgt, src.kernel, off, k.tile_co, src.tci * taps,
                   w.weight_ci * taps))  # fmt: skip


def _blocks(
    wl: Conv2DWorkload, k: Conv2DKnobs, tile, split: bool = False
) -> list[tuple[int, int, int, int, int]]:
    """(row in the tile, DRAM element, rows, columns, stride) of the output-shaped tile's 2-D
    transfers (one per batch and channel block, or, unless `split`, one for all the channel
    blocks of a batch block when they are contiguous)."""
    n0, y0, x0, o0 = tile
    th, tw = k.tile_h, k.tile_w
    out = []
    for nb in range(k.tile_b):
        n = n0 * k.tile_b + nb
        base = ((n * wl.co + o0 * k.tile_co) * wl.oh + y0 * th) * wl.ow + x0 * tw
        row = nb * k.tile_co * th * tw
        if th == wl.oh and tw == wl.ow and not split:
            out.append((row, base, 1, k.tile_co * th * tw, 1))
            continue
        for cb in range(k.tile_co):
            out.append((row + cb * th * tw, base + cb * wl.oh * wl.ow, th, tw, wl.ow))
    return out


def _load_residual(st, t, wl, k, row0, tile, r: int) -> None:
    """LOADs of the tile's residual, `r` input elements per output position."""
    for row, off, y, x, stride in _blocks(wl, k, tile):
        load = Load(MemType.INP, None, row0 + r * row, "residual", r * off, y, r * x, r * stride)
        st.add(t, load)


def _store(st, t, wl, k, acc, tile, block: int | None = None) -> None:
    """STORE of the tile (or of its `block`-th batch and channel block) from OUT rows."""
    blocks = _blocks(wl, k, tile, split=block is not None)
    for row, off, y, x, stride in blocks if block is None else blocks[block : block + 1]:
        st.add(t, Store(None, acc + row, "out", off, y, x, stride))


def fused_reference(
    data: np.ndarray,
    kernel: np.ndarray,
    wl: Conv2DWorkload,
    ep: Epilogue,
    bias: np.ndarray | None = None,
    residual: np.ndarray | None = None,
    shortcut: tuple[np.ndarray, np.ndarray] | None = None,
    identity: np.ndarray | None = None,
) -> np.ndarray:
    """The Program's result in int64 numpy (packed layouts); `shortcut` = (sc_data, sc_kernel),
    `identity` the residual's weight block (default 2^k * I); a depthwise conv's kernel
    (co, 1, kh, kw, o, i) is the block-diagonal dense kernel it stands for; with
    `batch_weights` each batch element by its own kernel and bias."""
    if ep.batch_weights:
        one, plain = dataclasses.replace(wl, n=1), dataclasses.replace(ep, batch_weights=False)
        co = wl.co
        return np.concatenate([
            fused_reference(data[b : b + 1], kernel[b * co : (b + 1) * co], one, plain,
                            None if bias is None else bias[b * co : (b + 1) * co])
            for b in range(wl.n)])  # fmt: skip
    if wl.depthwise:
        dense = np.zeros((wl.co, wl.co, *kernel.shape[2:]), kernel.dtype)
        dense[np.arange(wl.co), np.arange(wl.co)] = kernel[:, 0]
        kernel = dense
    acc = conv2d_packed_acc(data, kernel, wl.stride, wl.pad)
    if ep.shortcut is not None:
        sc = ep.shortcut
        acc = acc + (conv2d_packed_acc(*shortcut, sc.stride, sc.pad) << ep.sc_shift)
    acc = acc >> ep.pre_shift
    if ep.bias:
        acc = acc + bias.astype(np.int64)[None, :, None, None, :, :]
    if ep.residual_shift is not None:
        if residual.ndim == 7:  # (..., r, b, c): r input elements per output position
            n, c, h, w, r, bn, bc = residual.shape
            residual = residual.transpose(0, 1, 2, 3, 5, 4, 6).reshape(n, c, h, w, bn, r * bc)
        if identity is None:  # the residual's first BLOCK_OUT lanes
            acc = acc + (residual[..., : acc.shape[-1]].astype(np.int64) << ep.residual_shift)
        else:  # (1, r, 1, 1, o, c) -> (o, r * c)
            w = identity[0, :, 0, 0].transpose(1, 0, 2).reshape(identity.shape[-2], -1)
            w = w.astype(np.int64)
            acc = acc + np.einsum("nchwbk,jk->nchwbj", residual.astype(np.int64), w)
    lo, hi = (0, 127) if ep.relu else (-128, 127)
    return np.clip(acc >> ep.shift, lo, hi).astype(np.int8)


# ResNet-18's offloaded convolutions as fused kernels, in network order with their counts (names
# as `vta tune NAME --target vta` takes them; plain C2..C12 name conv2d_packed kernels): every
# conv with bias + requant + ReLU; the second conv of a basic block also adds the residual
# (identity weight 2^RESIDUAL_SHIFT) or, in a downsampling block, accumulates the 1x1 stride-2
# shortcut conv (C5, C8, C11) into the same rows.
RESIDUAL_SHIFT, SHIFT = 2, 8
RESNET18_NETWORK: tuple[tuple[str, str, Epilogue, int], ...] = (
    ("C2+relu", "C2", Epilogue(True, SHIFT, True), 2),
    ("C2+res", "C2", Epilogue(True, SHIFT, True, RESIDUAL_SHIFT), 2),
    ("C4+relu", "C4", Epilogue(True, SHIFT, True), 1),
    ("C6+C5", "C6", Epilogue(True, SHIFT, True, None, RESNET18["C5"]), 1),
    ("C6+relu", "C6", Epilogue(True, SHIFT, True), 1),
    ("C6+res", "C6", Epilogue(True, SHIFT, True, RESIDUAL_SHIFT), 1),
    ("C7+relu", "C7", Epilogue(True, SHIFT, True), 1),
    ("C9+C8", "C9", Epilogue(True, SHIFT, True, None, RESNET18["C8"]), 1),
    ("C9+relu", "C9", Epilogue(True, SHIFT, True), 1),
    ("C9+res", "C9", Epilogue(True, SHIFT, True, RESIDUAL_SHIFT), 1),
    ("C10+relu", "C10", Epilogue(True, SHIFT, True), 1),
    ("C12+C11", "C12", Epilogue(True, SHIFT, True, None, RESNET18["C11"]), 1),
    ("C12+relu", "C12", Epilogue(True, SHIFT, True), 1),
    ("C12+res", "C12", Epilogue(True, SHIFT, True, RESIDUAL_SHIFT), 1),
)
