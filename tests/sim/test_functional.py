"""fsim semantics against independent numpy / pure-Python references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim import _gemm, functional
from sim.functional import UNDEFINED_BYTE, FunctionalCore, FunctionalSimulator
from vta.config import VTAConfig
from vta.device import get_device
from vta.errors import DeviceError
from vta.isa import (
    AluInsn,
    AluOp,
    FinishInsn,
    GemmInsn,
    MemInsn,
    MemType,
    encode_stream,
    encode_uops,
    requant_imm,
)
from vta.program import BufferSpec, Program
from vta.stats import Stats

PYNQ = VTAConfig.load("pynq")
TINY = VTAConfig.load("tiny")
TINY_REQ = TINY.replace(name="tiny-req", alu_requant=True)  # every ALU op: MUL and REQ


# ---------------------------------------------------------------------------------- helpers
def wrap32(value: int) -> int:
    return (value + (1 << 31)) % (1 << 32) - (1 << 31)


def new_core(cfg: VTAConfig, dram_bytes: int = 1 << 16) -> FunctionalCore:
    stats = Stats(device="fsim", clock_mhz=cfg.clock_mhz, macs_per_cycle=cfg.macs_per_cycle)
    return FunctionalCore(cfg, np.zeros(dram_bytes, dtype=np.uint8), stats)


def load(mem: MemType, sram: int, dram: int, y: int, x: int, stride: int, pad=(0, 0, 0, 0)):
    return MemInsn(
        memory_type=mem,
        sram_base=sram,
        dram_base=dram,
        y_size=y,
        x_size=x,
        x_stride=stride,
        y_pad_0=pad[0],
        y_pad_1=pad[1],
        x_pad_0=pad[2],
        x_pad_1=pad[3],
    )


def store(sram: int, dram: int, y: int, x: int, stride: int) -> MemInsn:
    return MemInsn(
        is_store=True,
        memory_type=MemType.OUT,
        sram_base=sram,
        dram_base=dram,
        y_size=y,
        x_size=x,
        x_stride=stride,
    )


def put_uops(core: FunctionalCore, uops, sram_base: int = 0) -> None:
    """Place micro-ops in DRAM at byte 0 and LOAD them (the real path, decode included)."""
    words = encode_uops(uops, core.config)
    core.dram[: words.nbytes] = words.view(np.uint8)
    core.execute(load(MemType.UOP, sram_base, 0, 1, len(words), len(words)), 0)


def run_program(cfg: VTAConfig, insns, dram: np.ndarray, buffers=()) -> tuple[np.ndarray, Stats]:
    program = Program(cfg, encode_stream([*insns, FinishInsn()], cfg), dram, list(buffers))
    return FunctionalSimulator().execute(program, program.dram)


def loop_indices(insn, n_uops: int):
    """(i, j, k) in the ISA's loop order."""
    for i in range(insn.iter_out):
        for j in range(insn.iter_in):
            for k in range(insn.uop_bgn, insn.uop_bgn + n_uops):
                yield i, j, k


def reference_gemm(core_inp, core_wgt, acc, out, uops, insn):
    """Straightforward GEMM semantics, one micro-op at a time, on copies of the SRAMs."""
    acc, out = acc.astype(np.int64), out.copy()
    for i, j, k in loop_indices(insn, insn.uop_end - insn.uop_bgn):
        u = uops[k - insn.uop_bgn]
        d = u[0] + i * insn.dst_factor_out + j * insn.dst_factor_in
        s = u[1] + i * insn.src_factor_out + j * insn.src_factor_in
        w = u[2] + i * insn.wgt_factor_out + j * insn.wgt_factor_in
        if insn.reset_reg:
            acc[d] = 0
        else:
            dot = core_inp[s].astype(np.int64) @ core_wgt[w].astype(np.int64).T
            acc[d] = [wrap32(int(v)) for v in (acc[d] + dot.reshape(-1))]
        out[d] = [((int(v) + 128) % 256) - 128 for v in acc[d]]
    return acc.astype(np.int32), out


def ref_lane(op: AluOp, x: int, y: int, imm: int = 0) -> int:
    """One lane of the ALU; REQ adds y (0 in immediate mode), shifts by imm[4:0] and clips to
    int8, or to [0, 127] when imm[5] (relu) is set."""
    if op == AluOp.REQ:
        return min(max(wrap32(x + y) >> (imm & 31), 0 if imm & 32 else -128), 127)
    if op == AluOp.MIN:
        return min(x, y)
    if op == AluOp.MAX:
        return max(x, y)
    if op == AluOp.ADD:
        return wrap32(x + y)
    if op == AluOp.MUL:
        return wrap32(x * y)
    if y >= 0:
        return x >> min(y, 31)
    return wrap32(x << min(-y, 31))


def reference_alu(acc, uops, insn):
    acc = acc.copy()
    for i, j, k in loop_indices(insn, insn.uop_end - insn.uop_bgn):
        u = uops[k - insn.uop_bgn]
        d = u[0] + i * insn.dst_factor_out + j * insn.dst_factor_in
        s = u[1] + i * insn.src_factor_out + j * insn.src_factor_in
        imm = 0 if insn.alu_opcode == AluOp.REQ else insn.imm
        ys = [imm] * acc.shape[1] if insn.use_imm else [int(v) for v in acc[s]]
        acc[d] = [
            ref_lane(insn.alu_opcode, int(x), y, insn.imm) for x, y in zip(acc[d], ys, strict=True)
        ]
    return acc


# ---------------------------------------------------------------------------------- loads
@pytest.mark.parametrize(
    "pad", [(2, 0, 0, 0), (0, 2, 0, 0), (0, 0, 2, 0), (0, 0, 0, 2), (1, 3, 2, 1)]
)
@pytest.mark.parametrize("mem", [MemType.INP, MemType.ACC])
def test_padded_strided_load(mem: MemType, pad) -> None:
    core = new_core(PYNQ)
    eb = core.elem_bytes[mem]
    rows, cols, stride, base = 3, 4, 7, 5
    rng = np.random.default_rng(1)
    core.dram[:] = rng.integers(0, 256, core.dram.size, dtype=np.uint8)
    elems = core.dram.view(np.uint8).reshape(-1, eb)
    data = np.stack([elems[base + y * stride : base + y * stride + cols] for y in range(rows)])
    expected = np.pad(data, ((pad[0], pad[1]), (pad[2], pad[3]), (0, 0)))
    core.execute(load(mem, 10, base, rows, cols, stride, pad), 0)
    footprint = expected.shape[0] * expected.shape[1]
    got = core.sram[mem][10 : 10 + footprint].reshape(expected.shape)
    np.testing.assert_array_equal(got, expected)
    assert np.all(core.sram[mem][:10] == UNDEFINED_BYTE)
    assert np.all(core.sram[mem][10 + footprint :] == UNDEFINED_BYTE)
    assert core.stats.bytes_loaded == {mem.name.lower(): rows * cols * eb}


def test_store_through_alu_copy_with_strides() -> None:
    """LOAD ACC, ALU SHR 0 (copy to OUT), STORE rows strided: DRAM gets the low 8 bits."""
    cfg, rows, cols = PYNQ, 3, 4
    lanes = cfg.batch * cfg.block_out
    rng = np.random.default_rng(2)
    acc = rng.integers(-(2**31), 2**31, (rows * cols, lanes), dtype=np.int64).astype(np.int32)
    acc_off, out_off = 256, 256 + acc.nbytes
    stride = cols + 2
    dram = np.zeros(out_off + rows * stride * lanes, dtype=np.uint8)
    dram[:4] = encode_uops([(0, 0, 0)], cfg).view(np.uint8)
    dram[acc_off : acc_off + acc.nbytes] = acc.view(np.uint8).reshape(-1)
    insns = [
        load(MemType.UOP, 0, 0, 1, 1, 1),
        load(MemType.ACC, 0, acc_off // 64, 1, rows * cols, rows * cols),
        AluInsn(
            uop_end=1,
            iter_out=rows * cols,
            dst_factor_out=1,
            src_factor_out=1,
            alu_opcode=AluOp.SHR,
            use_imm=True,
            imm=0,
        ),
        store(0, out_off // lanes, rows, cols, stride),
    ]
    final, stats = run_program(cfg, insns, dram)
    got = final[out_off:].view(np.int8).reshape(rows, stride, lanes)
    np.testing.assert_array_equal(got[:, :cols], acc.astype(np.int8).reshape(rows, cols, lanes))
    assert np.all(got[:, cols:] == 0)  # the stride gap is untouched
    assert stats.bytes_stored == rows * cols * lanes
    assert stats.bytes_loaded == {"uop": 4, "acc": acc.nbytes}
    assert stats.instructions == {"LOAD": 2, "ALU": 1, "STORE": 1, "FINISH": 1}
    assert stats.alu_uops == rows * cols and stats.cycles is None


def test_store_reads_out_buffer_not_acc() -> None:
    """A STORE right after LOAD ACC sees OUT as it was (undefined), not the loaded data."""
    cfg = TINY
    lanes = cfg.batch * cfg.block_out
    dram = np.zeros(4 * lanes * 4, dtype=np.uint8)
    dram[: 2 * lanes * 4] = np.arange(2 * lanes, dtype=np.int32).view(np.uint8)
    insns = [load(MemType.ACC, 0, 0, 1, 2, 2), store(0, 2 * 4, 1, 2, 2)]
    final, _ = run_program(cfg, insns, dram)
    assert np.all(final[2 * 4 * lanes : 2 * 4 * lanes + 2 * lanes] == UNDEFINED_BYTE)


# ---------------------------------------------------------------------------------- GEMM
def test_blocked_gemm_program_with_reset_and_two_loops() -> None:
    cfg = PYNQ
    m, k, n = 3, 4, 2  # blocks
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (m, k, cfg.batch, cfg.block_in), dtype=np.int64).astype(np.int8)
    w = rng.integers(-128, 128, (n, k, cfg.block_out, cfg.block_in), dtype=np.int64)
    w = w.astype(np.int8)
    inp_off, wgt_off = 1024, 4096
    out_off = wgt_off + w.nbytes
    dram = np.zeros(out_off + m * n * cfg.elem_bytes[MemType.OUT], dtype=np.uint8)
    dram[:16] = encode_uops([(0, kk, kk) for kk in range(k)], cfg).view(np.uint8)
    dram[inp_off : inp_off + x.nbytes] = x.view(np.uint8).reshape(-1)
    dram[wgt_off : wgt_off + w.nbytes] = w.view(np.uint8).reshape(-1)
    loops = dict(iter_out=m, iter_in=n, dst_factor_out=n, dst_factor_in=1)
    insns = [
        load(MemType.UOP, 0, 0, 1, k, k),
        load(MemType.INP, 0, inp_off // cfg.elem_bytes[MemType.INP], 1, m * k, m * k),
        load(MemType.WGT, 0, wgt_off // cfg.elem_bytes[MemType.WGT], 1, n * k, n * k),
        GemmInsn(reset_reg=True, uop_bgn=0, uop_end=1, **loops),
        GemmInsn(uop_bgn=0, uop_end=k, src_factor_out=k, wgt_factor_in=k, **loops),
        store(0, out_off // cfg.elem_bytes[MemType.OUT], 1, m * n, m * n),
    ]
    spec = BufferSpec("c", out_off, (m, n, cfg.batch, cfg.block_out), "int8", "output")
    final, stats = run_program(cfg, insns, dram, [spec])
    acc = np.einsum("mkbi,nkoi->mnbo", x.astype(np.int64), w.astype(np.int64))
    got = final[out_off:].view(np.int8).reshape(spec.shape)
    np.testing.assert_array_equal(got, acc.astype(np.int32).astype(np.int8))
    assert stats.gemm_uops == m * n + m * n * k
    assert stats.macs == m * n * k * cfg.macs_per_cycle


def test_gemm_reset_zeroes_acc_and_out() -> None:
    core = new_core(TINY)
    put_uops(core, [(5, 0, 0)])
    core.execute(GemmInsn(reset_reg=True, uop_end=1, iter_out=3, dst_factor_out=2), 1)
    for row in (5, 7, 9):
        assert np.all(core.acc[row] == 0) and np.all(core.out[row] == 0)
    assert np.all(core.sram[MemType.ACC][6] == UNDEFINED_BYTE)
    assert core.stats.gemm_uops == 3 and core.stats.macs == 0


@pytest.mark.parametrize(
    "wgt_idx",
    [
        np.repeat(np.arange(8), 6),  # equal groups
        np.r_[np.zeros(9, int), np.arange(1, 6)],  # unequal groups, padded
        np.r_[np.zeros(40, int), np.arange(1, 40)],  # too skewed: one tile per micro-op
    ],
    ids=["grouped", "padded", "ungrouped"],
)
def test_tile_products_every_layout(wgt_idx: np.ndarray) -> None:
    rng = np.random.default_rng(4)
    inp = rng.integers(-128, 128, (64, 2, 8), dtype=np.int64).astype(np.int8)
    wgt = rng.integers(-128, 128, (64, 8, 8), dtype=np.int64).astype(np.int8)
    wgt_idx = rng.permutation(wgt_idx)
    src = rng.integers(0, 64, wgt_idx.size)
    owner, prod = _gemm.tile_products(inp, wgt, src, wgt_idx)
    expected = np.einsum("nbi,noi->nbo", inp[src].astype(np.int64), wgt[wgt_idx].astype(np.int64))
    real = owner >= 0
    assert sorted(owner[real]) == list(range(src.size))
    np.testing.assert_array_equal(prod[real], expected[owner[real]].reshape(real.sum(), -1))
    assert np.all(prod[~real] == 0)


def _random_sram(core: FunctionalCore, rng: np.random.Generator) -> None:
    core.inp[:] = rng.integers(-128, 128, core.inp.shape)
    core.wgt[:] = rng.integers(-128, 128, core.wgt.shape)
    core.acc[:] = rng.integers(-(2**31), 2**31, core.acc.shape)


@st.composite
def compute_insns(draw, kind: str):
    """A GEMM or ALU instruction whose indices stay in range on the tiny config."""
    n_uops = draw(st.integers(1, 6))
    iter_out, iter_in = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    factor = st.integers(0, 6)
    fo = {f: draw(factor) for f in ("dst", "src", "wgt")}
    fi = {f: draw(factor) for f in ("dst", "src", "wgt")}
    depth = {
        "dst": TINY.depth[MemType.ACC],
        "src": TINY.depth[MemType.ACC],
        "wgt": TINY.depth[MemType.WGT],
    }
    if kind == "gemm":
        depth["src"] = TINY.depth[MemType.INP]
    # Narrow index windows make repeated and overlapping rows (the hard cases) common.
    window = draw(st.sampled_from([4, 16, 64]))
    uops = []
    for _ in range(n_uops):
        uop = []
        for f in ("dst", "src", "wgt"):
            top = depth[f] - 1 - (iter_out - 1) * fo[f] - (iter_in - 1) * fi[f]
            uop.append(draw(st.integers(0, min(window, top))))
        uops.append(tuple(uop))
    base = draw(st.integers(0, 3))
    common = dict(uop_bgn=base, uop_end=base + n_uops, iter_out=iter_out, iter_in=iter_in)
    for f in ("dst", "src"):
        common[f"{f}_factor_out"], common[f"{f}_factor_in"] = fo[f], fi[f]
    if kind == "gemm":
        insn = GemmInsn(
            reset_reg=draw(st.booleans()),
            wgt_factor_out=fo["wgt"],
            wgt_factor_in=fi["wgt"],
            **common,
        )
    else:
        insn = AluInsn(
            alu_opcode=draw(st.sampled_from(list(AluOp))),
            use_imm=draw(st.booleans()),
            imm=draw(
                st.one_of(
                    st.integers(-40, 40), st.integers(0, 63), st.integers(-(2**15), 2**15 - 1)
                )
            ),
            **common,
        )
    return insn, uops


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(case=compute_insns("gemm"), seed=st.integers(0, 2**32 - 1), batch=st.sampled_from([0, 5]))
def test_random_gemm_matches_reference(case, seed: int, batch: int) -> None:
    insn, uops = case
    core = new_core(TINY)
    _random_sram(core, np.random.default_rng(seed))
    put_uops(core, uops, insn.uop_bgn)
    acc, out = reference_gemm(core.inp, core.wgt, core.acc, core.out, uops, insn)
    with pytest.MonkeyPatch.context() as patch:
        if batch:  # split the micro-ops across small batches too
            patch.setattr(functional, "BATCH_UOPS", batch)
        core.execute(insn, 1)
    np.testing.assert_array_equal(core.acc, acc)
    np.testing.assert_array_equal(core.out, out)
    n = insn.iter_out * insn.iter_in * len(uops)
    assert core.stats.gemm_uops == n
    assert core.stats.macs == (0 if insn.reset_reg else n * TINY.macs_per_cycle)


@SETTINGS
@given(case=compute_insns("alu"), seed=st.integers(0, 2**32 - 1), batch=st.sampled_from([0, 5]))
def test_random_alu_matches_reference(case, seed: int, batch: int) -> None:
    insn, uops = case
    core = new_core(TINY_REQ)
    rng = np.random.default_rng(seed)
    _random_sram(core, rng)
    small = rng.random(core.acc.shape) < 0.5  # shift amounts in and beyond [-31, 31]
    core.acc[small] = rng.integers(-40, 41, int(small.sum()))
    expected = reference_alu(core.acc, uops, insn)
    rows = sorted(
        {
            uops[k - insn.uop_bgn][0] + i * insn.dst_factor_out + j * insn.dst_factor_in
            for i, j, k in loop_indices(insn, len(uops))
        }
    )
    out_before = core.out.copy()
    put_uops(core, uops, insn.uop_bgn)
    with pytest.MonkeyPatch.context() as patch:
        if batch:
            patch.setattr(functional, "BATCH_UOPS", batch)
        core.execute(insn, 1)
    np.testing.assert_array_equal(core.acc, expected)
    np.testing.assert_array_equal(core.out[rows], expected[rows].astype(np.int8))
    others = np.setdiff1d(np.arange(core.out.shape[0]), rows)
    np.testing.assert_array_equal(core.out[others], out_before[others])
    assert core.stats.alu_uops == insn.iter_out * insn.iter_in * len(uops)


# ---------------------------------------------------------------------------------- ALU
EDGE = np.array([-(2**31), -(2**31) + 1, -300, -1, 0, 1, 7, 300, 2**31 - 1], dtype=np.int64)


@pytest.mark.parametrize("op", [AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR, AluOp.MUL])
@pytest.mark.parametrize("imm", [None, -40, -31, -3, 0, 3, 31, 32, 100, -(2**15), 2**15 - 1])
def test_alu_op_edge_values(op: AluOp, imm: int | None) -> None:
    """Each op on int32 extremes: wrap-around, negative and saturating shifts (tiny has MUL)."""
    core = new_core(TINY)
    lanes = core.acc.shape[1]
    x = np.resize(EDGE, (8, lanes))
    y = np.resize(np.r_[EDGE, -33, -32, 31, 32, 64], (8, lanes))[::-1]
    core.acc[:8] = x
    core.acc[8:16] = y
    put_uops(core, [(0, 8, 0)])
    use_imm = imm is not None
    core.execute(
        AluInsn(
            uop_end=1,
            iter_out=8,
            dst_factor_out=1,
            src_factor_out=1,
            alu_opcode=op,
            use_imm=use_imm,
            imm=imm or 0,
        ),
        1,
    )
    ys = np.full_like(x, imm) if use_imm else y
    expected = [
        [ref_lane(op, int(a), int(b)) for a, b in zip(r, s, strict=True)]
        for r, s in zip(x, ys, strict=True)
    ]
    np.testing.assert_array_equal(core.acc[:8], expected)
    np.testing.assert_array_equal(core.out[:8], np.array(expected).astype(np.int8))


@pytest.mark.parametrize("use_imm", [True, False])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("amount", [0, 1, 8, 31])
def test_req_edge_values(amount: int, relu: bool, use_imm: bool) -> None:
    """REQ on int32 extremes: the add wraps before the shift, the clip saturates, relu clips at
    0; in immediate mode the addend is 0 (the immediate holds the shift and relu)."""
    core = new_core(PYNQ)
    lanes = core.acc.shape[1]
    x = np.resize(EDGE, (8, lanes))
    y = np.resize(np.r_[EDGE, 1, -1, 255, -256], (8, lanes))[::-1]
    x[0, 0], y[0, 0] = 2**31 - 1, 1  # the sum wraps to -2**31
    core.acc[:8] = x
    core.acc[8:16] = y
    put_uops(core, [(0, 8, 0)])
    imm = requant_imm(amount, relu)
    insn = AluInsn(
        uop_end=1,
        iter_out=8,
        dst_factor_out=1,
        src_factor_out=1,
        alu_opcode=AluOp.REQ,
        use_imm=use_imm,
        imm=imm,
    )
    core.execute(insn, 1)
    ys = np.zeros_like(x) if use_imm else y
    expected = np.array(
        [
            [ref_lane(AluOp.REQ, int(a), int(b), imm) for a, b in zip(r, s, strict=True)]
            for r, s in zip(x, ys, strict=True)
        ]
    )
    if not use_imm:
        assert expected[0, 0] == (0 if relu else -128 if amount < 31 else -1)
    np.testing.assert_array_equal(core.acc[:8], expected)
    np.testing.assert_array_equal(core.out[:8], expected.astype(np.int8))


def test_alu_chain_reads_values_written_earlier() -> None:
    """Prefix sum: micro-op k reads the row micro-op k-1 wrote in the same instruction."""
    core = new_core(TINY)
    core.acc[:10] = np.arange(10)[:, None]
    put_uops(core, [(1, 0, 0)])
    core.execute(
        AluInsn(uop_end=1, iter_out=9, dst_factor_out=1, src_factor_out=1, alu_opcode=AluOp.ADD), 1
    )
    np.testing.assert_array_equal(core.acc[:10, 0], np.cumsum(np.arange(10)))


@pytest.mark.parametrize(("cfg", "op"), [(PYNQ, AluOp.MUL), (TINY, AluOp.REQ)])
def test_gated_op_rejected_when_disabled(cfg: VTAConfig, op: AluOp) -> None:
    core = new_core(cfg)
    with pytest.raises(DeviceError, match=rf"instruction 7: ALU field 'alu_opcode' = {op.name}"):
        core.execute(AluInsn(uop_end=1, alu_opcode=op, use_imm=True, imm=2), 7)


# ---------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("insn", "pattern"),
    [
        (load(MemType.INP, 2047, 0, 1, 2, 2), r"instruction 3: LOAD INP field 'sram_base'"),
        (load(MemType.ACC, 2000, 0, 1, 40, 40, (1, 1, 0, 0)), r"ACC field 'sram_base' = 2000"),
        (load(MemType.INP, 0, 4095, 1, 2, 2), r"instruction 3: LOAD INP field 'dram_base'"),
        (load(MemType.INP, 0, 0, 2, 1, 4096), r"field 'dram_base' = 0 with y_size 2"),
        (store(0, 4095, 1, 2, 2), r"instruction 3: STORE OUT field 'dram_base'"),
        (load(MemType.OUT, 0, 0, 1, 1, 1), r"LOAD field 'memory_type' = OUT"),
        (load(MemType.UOP, 0, 0, 2, 1, 1), r"LOAD UOP field 'y_size' = 2"),
        (load(MemType.UOP, 0, 0, 1, 1, 1, (0, 0, 1, 0)), r"LOAD UOP field 'x_pad_0'"),
        (load(MemType.WGT, 0, 0, 1, 1, 1, (1, 0, 0, 0)), r"LOAD WGT field 'y_pad_0'"),
        (GemmInsn(uop_end=1, iter_out=3, dst_factor_out=1024), r"GEMM dst index .* = 2048"),
        (GemmInsn(uop_end=1, iter_in=3, src_factor_in=1024), r"GEMM src index .* INP buffer"),
        (GemmInsn(uop_end=1, iter_in=2, wgt_factor_in=1024), r"GEMM wgt index .* WGT buffer"),
        (GemmInsn(uop_end=9000), r"GEMM field 'uop_end' = 9000"),
        (AluInsn(uop_end=1, iter_out=2, src_factor_out=2048), r"ALU src index .* ACC buffer"),
    ],
)
def test_out_of_range_names_instruction_and_field(insn, pattern: str) -> None:
    core = new_core(PYNQ, 1 << 16)  # 4096 INP and OUT elements, 1024 ACC elements
    put_uops(core, [(0, 0, 0)])
    before = {mem: sram.copy() for mem, sram in core.sram.items()}
    with pytest.raises(DeviceError, match=pattern):
        core.execute(insn, 3)
    for mem, sram in core.sram.items():  # nothing executed
        np.testing.assert_array_equal(sram, before[mem])


# ---------------------------------------------------------------------------------- device
def test_device_runs_until_finish_and_keeps_input() -> None:
    cfg = TINY
    lanes = cfg.batch * cfg.block_out  # OUT element bytes
    dram = np.full(64, 7, dtype=np.uint8)
    dram[:4] = encode_uops([(0, 0, 0)], cfg).view(np.uint8)
    insns = [
        load(MemType.UOP, 0, 0, 1, 1, 1),
        GemmInsn(reset_reg=True, uop_end=1),
        store(0, 1, 1, 1, 1),
        FinishInsn(),
        store(0, 2, 1, 1, 1),  # after FINISH: never runs
    ]
    program = Program(cfg, encode_stream(insns, cfg), dram)
    device = get_device("fsim")
    assert isinstance(device, FunctionalSimulator)
    final, stats = device.execute(program, program.dram)
    assert np.all(final[lanes : 2 * lanes] == 0)
    assert np.all(final[2 * lanes :] == 7)
    assert np.all(program.dram[4:] == 7)  # the input image is not mutated
    assert stats.instructions == {"LOAD": 1, "GEMM": 1, "STORE": 1, "FINISH": 1}


def test_stream_without_finish_is_rejected() -> None:
    program = Program(TINY, encode_stream([load(MemType.INP, 0, 0, 0, 0, 0)], TINY), np.zeros(8))
    with pytest.raises(DeviceError, match="without FINISH"):
        FunctionalSimulator().execute(program, program.dram)


def test_reference_examples_when_available() -> None:
    examples = pytest.importorskip("testkit.examples")
    for cfg in ("pynq", "tiny"):
        for example in examples.all_examples(cfg):
            outputs, _ = FunctionalSimulator().run(example.program)
            for name, expected in example.expected.items():
                np.testing.assert_array_equal(outputs[name], expected, err_msg=example.name)
