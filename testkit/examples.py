"""The reference VTA unit tests (load/store, padded load, GEMM, ALU per opcode, blocked GEMM)
re-created with the builder.

Each function returns an `Example`: a Program whose DRAM image already holds seeded random inputs,
and the expected output buffers computed independently with numpy. Devices are tested by running
the Program and comparing every output buffer bit for bit.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from vta.builder import ProgramBuilder
from vta.config import VTAConfig
from vta.errors import ProgramError
from vta.isa import ALU_OP_GATES, AluOp, MemType, Module, available_alu_ops
from vta.program import Program

LOAD, COMPUTE, STORE = Module.LOAD, Module.COMPUTE, Module.STORE
INT8_MIN, INT8_MAX = -128, 127


@dataclasses.dataclass
class Example:
    """A Program and the output buffers it must produce (in the buffers' packed shapes)."""

    name: str
    program: Program
    expected: dict[str, np.ndarray]


# Configurations whose BLOCK_OUT differs from BLOCK_IN, for differential tests: a preset with
# one block changed, and buffer sizes that keep every ISA field within its bits.
UNEQUAL_BLOCKS: dict[str, tuple[str, dict[str, int]]] = {
    "tiny-4x8": ("tiny", {"log_block_out": 3}),
    "tiny-8x4": ("tiny", {"log_block": 3, "log_block_out": 2}),
    "pynq-16x8": ("pynq", {"log_block_out": 3, "log_wgt_buff_size": 17, "log_acc_buff_size": 16}),
    "pynq-8x16": (
        "pynq",
        {"log_block": 3, "log_block_out": 4, "log_inp_buff_size": 14, "log_wgt_buff_size": 17},
    ),
}


def unequal_blocks(name: str) -> VTAConfig:
    """The `UNEQUAL_BLOCKS` configuration `name` (BATCH x BLOCK_IN x BLOCK_OUT in its name)."""
    preset, changes = UNEQUAL_BLOCKS[name]
    return VTAConfig.load(preset).replace(name=name, **changes)


def _config(config: VTAConfig | str | None) -> VTAConfig:
    return VTAConfig.load(config)


def _acc_shape(cfg: VTAConfig, rows: int) -> tuple[int, int, int]:
    """Packed shape of `rows` ACC/OUT tensors: (rows, BATCH, BLOCK_OUT)."""
    return (rows, cfg.batch, cfg.block_out)


def _copy_rows(b: ProgramBuilder, rows: int, op: AluOp | str = AluOp.SHR, imm: int = 0) -> None:
    """ALU op with an immediate over ACC rows [0, rows) (SHR 0 is the reference's copy)."""
    b.alu(op, [(0, 0)], loops=[(rows, 1, 1)], use_imm=True, imm=imm)


def _store_rows(b: ProgramBuilder, out: str, rows: int) -> None:
    """Hand OUT rows [0, rows) to the store stage and store them contiguously."""
    b.dep_push(COMPUTE, STORE)
    b.dep_pop(COMPUTE, STORE)
    b.store(0, out, 0, 1, rows, rows)


def _wrap_int32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.int64).astype(np.int32)


def save_load_out(config: VTAConfig | str | None = None, rows: int = 36, seed: int = 0) -> Example:
    """LOAD ACC, ALU SHR by 0 (copy into OUT), STORE as int8 (low 8 bits)."""
    cfg = _config(config)
    rng = np.random.default_rng(seed)
    a = rng.integers(-(2**31), 2**31, _acc_shape(cfg, rows), dtype=np.int64).astype(np.int32)
    b = ProgramBuilder(cfg)
    b.buffer("a", a.shape, "int32", "input", a)
    b.buffer("out", a.shape, "int8", "output")
    b.load(MemType.ACC, 0, "a", 0, 1, rows, rows)
    _copy_rows(b, rows)
    _store_rows(b, "out", rows)
    b.finish()
    return Example("save_load_out", b.build(), {"out": a.astype(np.int8)})


def padded_load(
    config: VTAConfig | str | None = None,
    pad: tuple[int, int, int, int] = (1, 1, 1, 1),
    shape: tuple[int, int] = (3, 5),
    seed: int = 0,
) -> Example:
    """A 2-D ACC load with zero padding (y0, y1, x0, x1), copied through the ALU and stored."""
    cfg = _config(config)
    y0, y1, x0, x1 = pad
    ys, xs = shape
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (ys, xs, cfg.batch, cfg.block_out)).astype(np.int32)
    padded = np.pad(a, ((y0, y1), (x0, x1), (0, 0), (0, 0)))
    rows = padded.shape[0] * padded.shape[1]
    b = ProgramBuilder(cfg)
    b.buffer("a", a.shape, "int32", "input", a)
    b.buffer("out", padded.shape, "int8", "output")
    b.load(MemType.ACC, 0, "a", 0, ys, xs, xs, pad=pad)
    _copy_rows(b, rows)
    _store_rows(b, "out", rows)
    b.finish()
    name = "padded_load_y{}{}_x{}{}".format(*pad)
    return Example(name, b.build(), {"out": padded.astype(np.int8)})


def _shift(x: np.ndarray, amount: np.ndarray | int, width: int) -> np.ndarray:
    """SHR as specified: signed amount, >= 0 arithmetic right, < 0 left; |amount| <= width - 1."""
    x = np.asarray(x, dtype=np.int64)
    amount = np.clip(np.asarray(amount, dtype=np.int64), -(width - 1), width - 1)
    return _wrap_int32(
        np.where(amount >= 0, x >> np.maximum(amount, 0), x << np.maximum(-amount, 0))
    )


def alu_reference(
    op: AluOp, a: np.ndarray, b: np.ndarray | int, acc_width: int = 32, imm: int = 0
) -> np.ndarray:
    """The ALU's int32 semantics in numpy (wrap-around, signed shifts). For REQ, `b` is the
    addend (ACC[src], or 0 with an immediate) and `imm` holds the shift (bits 4:0) and relu
    (bit 5): clip((a + b) >> shift) to int8, or to [0, 127] with relu."""
    x, y = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if op == AluOp.REQ:
        lo = 0 if imm & 0x20 else INT8_MIN
        return np.clip(_wrap_int32(x + y).astype(np.int64) >> (imm & 0x1F), lo, INT8_MAX)
    if op == AluOp.MIN:
        return _wrap_int32(np.minimum(x, y))
    if op == AluOp.MAX:
        return _wrap_int32(np.maximum(x, y))
    if op == AluOp.ADD:
        return _wrap_int32(x + y)
    if op == AluOp.MUL:
        return _wrap_int32(x * y)
    return _shift(x, y, acc_width)


def alu(
    config: VTAConfig | str | None = None,
    op: AluOp | str = AluOp.ADD,
    use_imm: bool = False,
    imm: int | None = None,
    rows: int = 64,
    seed: int = 0,
) -> Example:
    """One ALU op over ACC rows, with an immediate or a second ACC tensor as operand."""
    cfg = _config(config)
    op = AluOp[op.upper()] if isinstance(op, str) else AluOp(op)
    if op not in available_alu_ops(cfg):
        field = ALU_OP_GATES[op]
        raise ProgramError(f"configuration {cfg.name!r} has no ALU {op.name} ({field} is false)")
    rng = np.random.default_rng(seed)
    shape = _acc_shape(cfg, rows)
    if op == AluOp.SHR:
        a = rng.integers(-(2**20), 2**20, shape).astype(np.int32)
        operand = rng.integers(-8, 9, shape).astype(np.int32)
        default_imm = int(rng.integers(-5, 6))
    elif op == AluOp.REQ:  # full-range values: the add wraps, the clip saturates
        a = rng.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)
        operand = rng.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)
        default_imm = int(rng.integers(0, 64))
    else:
        a = rng.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)
        operand = rng.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)
        default_imm = int(rng.integers(-(2**15), 2**15))
    imm = default_imm if imm is None else imm
    b = ProgramBuilder(cfg)
    b.buffer("a", shape, "int32", "input", a)
    b.buffer("out", shape, "int8", "output")
    b.load(MemType.ACC, 0, "a", 0, 1, rows, rows)
    if use_imm:
        b.alu(op, [(0, 0)], loops=[(rows, 1, 1)], use_imm=True, imm=imm)
        y = 0 if op == AluOp.REQ else imm
        result = alu_reference(op, a, y, cfg.acc_width, imm)
    else:
        b.buffer("b", shape, "int32", "input", operand)
        b.load(MemType.ACC, rows, "b", 0, 1, rows, rows)
        b.alu(op, [(0, rows)], loops=[(rows, 1, 1)], imm=imm if op == AluOp.REQ else 0)
        result = alu_reference(op, a, operand, cfg.acc_width, imm)
    _store_rows(b, "out", rows)
    b.finish()
    operand_name = f"imm{imm}" if use_imm else "tensor"
    name = f"alu_{op.name.lower()}_{operand_name}"
    return Example(name, b.build(), {"out": result.astype(np.int8)})


def relu(config: VTAConfig | str | None = None, rows: int = 80, seed: int = 0) -> Example:
    """relu as a clip: MAX 0 then MIN 127, stored as int8."""
    cfg = _config(config)
    rng = np.random.default_rng(seed)
    a = rng.integers(-256, 256, _acc_shape(cfg, rows)).astype(np.int32)
    b = ProgramBuilder(cfg)
    b.buffer("a", a.shape, "int32", "input", a)
    b.buffer("out", a.shape, "int8", "output")
    b.load(MemType.ACC, 0, "a", 0, 1, rows, rows)
    _copy_rows(b, rows, AluOp.MAX, 0)
    _copy_rows(b, rows, AluOp.MIN, INT8_MAX)
    _store_rows(b, "out", rows)
    b.finish()
    return Example("relu", b.build(), {"out": np.clip(a, 0, INT8_MAX).astype(np.int8)})


def shift_and_scale(
    config: VTAConfig | str | None = None,
    rows: int = 16,
    shift: int = 7,
    scale: int = 3,
    seed: int = 0,
) -> Example:
    """(a + shift) >> scale: ALU ADD imm then SHR imm."""
    cfg = _config(config)
    rng = np.random.default_rng(seed)
    a = rng.integers(-1000, 1000, _acc_shape(cfg, rows)).astype(np.int32)
    b = ProgramBuilder(cfg)
    b.buffer("a", a.shape, "int32", "input", a)
    b.buffer("out", a.shape, "int8", "output")
    b.load(MemType.ACC, 0, "a", 0, 1, rows, rows)
    _copy_rows(b, rows, AluOp.ADD, shift)
    _copy_rows(b, rows, AluOp.SHR, scale)
    _store_rows(b, "out", rows)
    b.finish()
    return Example("shift_and_scale", b.build(), {"out": ((a + shift) >> scale).astype(np.int8)})


# --------------------------------------------------------------------------------- blocked GEMM
@dataclasses.dataclass(frozen=True)
class _GemmTiling:
    """Tile sizes in tensors: tb INP rows, ti reduction blocks, to output blocks per tile."""

    tb: int
    ti: int
    to: int
    n_b: int  # tiles along batch
    n_i: int  # reduction steps
    n_o: int  # tiles along output channels
    in_blocks: int  # total reduction blocks (DRAM row stride of A and W)
    out_blocks: int  # total output blocks (DRAM row stride of C)


def _tiling(
    cfg: VTAConfig, batch: int, cin: int, cout: int, block: tuple[int, int, int], threads: int
) -> _GemmTiling:
    bb, bi, bo = block
    for what, size, unit in (
        ("batch", batch, cfg.batch),
        ("in_channels", cin, cfg.block_in),
        ("out_channels", cout, cfg.block_out),
    ):
        if size % unit:
            raise ProgramError(f"blocked_gemm: {what} = {size} is not a multiple of {unit}")
    for what, size, blk, unit in (
        ("batch", batch, bb, cfg.batch),
        ("in_channels", cin, bi, cfg.block_in),
        ("out_channels", cout, bo, cfg.block_out),
    ):
        if blk % unit or size % blk:
            raise ProgramError(
                f"blocked_gemm: block {blk} for {what} must be a multiple of {unit} dividing {size}"
            )
    t = _GemmTiling(
        bb // cfg.batch,
        bi // cfg.block_in,
        bo // cfg.block_out,
        batch // bb,
        cin // bi,
        cout // bo,
        cin // cfg.block_in,
        cout // cfg.block_out,
    )
    if (t.n_b * t.n_o) % threads:
        raise ProgramError(
            f"blocked_gemm: {t.n_b * t.n_o} output tiles do not split over {threads} threads"
        )
    for mem, need in (
        (MemType.INP, t.tb * t.ti),
        (MemType.WGT, t.to * t.ti),
        (MemType.ACC, t.tb * t.to),
    ):
        have = cfg.depth[mem] // threads
        if need > have:
            raise ProgramError(
                f"blocked_gemm: a tile needs {need} {mem.name} entries; {threads} thread(s) "
                f"get {have}"
            )
    if t.tb * t.to == 1 and t.ti > 1:
        raise ProgramError(
            "blocked_gemm: a 1-row output tile would write the same ACC row on consecutive "
            "micro-ops; use a larger batch or out_channels block"
        )
    return t


def _gemm_thread_phases(b: ProgramBuilder, t: _GemmTiling, thread: int, threads: int, shift: int):
    """The phases (callables) of one virtual thread: per output tile reset, (load, gemm) per
    reduction step, ALU epilogue, store. Every thread has the same phase structure, so the
    interleaved stream pairs each token with the same thread's producer (FIFO distance)."""
    cfg = b.config
    inp0 = thread * (cfg.depth[MemType.INP] // threads)
    wgt0 = thread * (cfg.depth[MemType.WGT] // threads)
    acc0 = thread * (cfg.depth[MemType.ACC] // threads)
    rows = t.tb * t.to
    rb, ro = np.divmod(np.arange(rows), t.to)
    reset_uops = np.stack([acc0 + rb * t.to + ro, np.zeros(rows, int), np.zeros(rows, int)], 1)
    gemm_uops = np.stack([acc0 + rb * t.to + ro, inp0 + rb * t.ti, wgt0 + ro * t.ti], 1)
    acc_loop = [(rows, 1, 1)]
    phases = []
    for tile in range(thread, t.n_b * t.n_o, threads):
        tile_b, tile_o = divmod(tile, t.n_o)

        def reset() -> None:
            b.dep_pop(STORE, COMPUTE)  # WAR: the store of this thread's last tile read OUT
            b.gemm(reset_uops, reset=True)

        phases.append(reset)
        for step in range(t.n_i):

            def load(tile_b=tile_b, tile_o=tile_o, step=step) -> None:
                b.dep_pop(COMPUTE, LOAD)  # WAR: compute finished with this thread's INP/WGT
                a_off = tile_b * t.tb * t.in_blocks + step * t.ti
                w_off = tile_o * t.to * t.in_blocks + step * t.ti
                b.load(MemType.INP, inp0, "a", a_off, t.tb, t.ti, t.in_blocks)
                b.load(MemType.WGT, wgt0, "w", w_off, t.to, t.ti, t.in_blocks)
                b.dep_push(LOAD, COMPUTE)

            def gemm() -> None:
                b.dep_pop(LOAD, COMPUTE)  # RAW: INP/WGT loaded
                b.gemm(gemm_uops, loops=[(t.ti, 0, 1, 1)])
                b.dep_push(COMPUTE, LOAD)

            phases += [load, gemm]

        def epilogue() -> None:
            b.alu(AluOp.SHR, [(acc0, acc0)], acc_loop, use_imm=True, imm=shift)
            b.alu(AluOp.MIN, [(acc0, acc0)], acc_loop, use_imm=True, imm=INT8_MAX)
            b.alu(AluOp.MAX, [(acc0, acc0)], acc_loop, use_imm=True, imm=INT8_MIN)
            b.dep_push(COMPUTE, STORE)

        def store(tile_b=tile_b, tile_o=tile_o) -> None:
            b.dep_pop(COMPUTE, STORE)  # RAW: OUT written
            c_off = tile_b * t.tb * t.out_blocks + tile_o * t.to
            b.store(acc0, "c", c_off, t.tb, t.to, t.out_blocks)
            b.dep_push(STORE, COMPUTE)

        phases += [epilogue, store]
    return phases


def blocked_gemm(
    config: VTAConfig | str | None = None,
    batch: int = 16,
    in_channels: int = 64,
    out_channels: int = 64,
    block: tuple[int, int, int] | None = None,
    threads: int = 1,
    shift: int = 8,
    seed: int = 0,
) -> Example:
    """C = clip((A @ W.T) >> shift, int8) with tiled loads; `threads=2` interleaves two virtual
    threads with double-buffered SRAM so one thread's loads overlap the other's GEMMs.

    Buffers use the packed layouts: A (batch/BATCH, in/BLOCK_IN, BATCH, BLOCK_IN), W (out/BLOCK_OUT,
    in/BLOCK_IN, BLOCK_OUT, BLOCK_IN), C (batch/BATCH, out/BLOCK_OUT, BATCH, BLOCK_OUT). `block`
    is (batch, in, out) elements per tile (default: the whole problem split once per thread).
    """
    cfg = _config(config)
    if threads not in (1, 2):
        raise ProgramError(f"blocked_gemm: threads = {threads} (valid: 1, 2)")
    if block is None:
        block = (batch, in_channels, out_channels // threads)
    t = _tiling(cfg, batch, in_channels, out_channels, block, threads)
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (batch, in_channels), dtype=np.int64).astype(np.int8)
    w = rng.integers(-128, 128, (out_channels, in_channels), dtype=np.int64).astype(np.int8)
    # float64 BLAS is exact here (|sum| <= 2**14 * in_channels << 2**53) and far faster than int64
    acc = _wrap_int32((a.astype(np.float64) @ w.astype(np.float64).T).astype(np.int64))
    c = np.clip(acc >> shift, INT8_MIN, INT8_MAX).astype(np.int8)

    def pack(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
        r, k = x.shape
        return x.reshape(r // rows, rows, k // cols, cols).transpose(0, 2, 1, 3).copy()

    b = ProgramBuilder(cfg)
    b.buffer(
        "a",
        pack(a, cfg.batch, cfg.block_in).shape,
        "int8",
        "input",
        pack(a, cfg.batch, cfg.block_in),
    )
    b.buffer(
        "w",
        pack(w, cfg.block_out, cfg.block_in).shape,
        "int8",
        "weight",
        pack(w, cfg.block_out, cfg.block_in),
    )
    c_packed = pack(c, cfg.batch, cfg.block_out)
    b.buffer("c", c_packed.shape, "int8", "output")

    per_thread = [_gemm_thread_phases(b, t, k, threads, shift) for k in range(threads)]
    for _ in range(threads):  # CoProcSync prologue: each thread's buffers start free
        b.dep_push(COMPUTE, LOAD)
        b.dep_push(STORE, COMPUTE)
    for step in zip(*per_thread, strict=True):
        for phase in step:
            phase()
    for _ in range(threads):  # epilogue: drain the tokens of the last iteration
        b.dep_pop(COMPUTE, LOAD)
        b.dep_pop(STORE, COMPUTE)
    b.finish()
    name = f"blocked_gemm_{batch}x{in_channels}x{out_channels}_t{threads}"
    return Example(name, b.build(), {"c": c_packed})


def all_examples(config: VTAConfig | str | None = None) -> list[Example]:
    """Small instances of every example, for differential testing across devices."""
    cfg = _config(config)
    ops = available_alu_ops(cfg)
    examples = [save_load_out(cfg)]
    examples += [
        padded_load(cfg, pad)
        for pad in ((2, 0, 0, 0), (0, 2, 0, 0), (0, 0, 2, 0), (0, 0, 0, 2), (1, 1, 1, 1))
    ]
    examples += [alu(cfg, op, use_imm) for op in ops for use_imm in (True, False)]
    examples.append(alu(cfg, AluOp.SHR, True, imm=-3, seed=1))
    examples += [relu(cfg), shift_and_scale(cfg)]
    bi, bo = 2 * cfg.block_in, 2 * cfg.block_out
    dims = dict(batch=4 * cfg.batch, in_channels=4 * cfg.block_in, out_channels=4 * cfg.block_out)
    examples += [
        blocked_gemm(cfg, **dims, block=(2 * cfg.batch, bi, bo), threads=threads)
        for threads in (1, 2)
    ]
    return examples
