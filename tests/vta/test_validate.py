"""One test per validator finding: each bad Program is rejected with a message naming the
instruction index (and field) at fault."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from vta.builder import ProgramBuilder
from vta.config import VTAConfig
from vta.errors import ProgramError, ValidationError
from vta.isa import (
    INSN_BYTES,
    AluInsn,
    AluOp,
    FinishInsn,
    GemmInsn,
    Insn,
    MemInsn,
    MemType,
    Module,
    encode_stream,
    encode_uops,
    layouts,
)
from vta.program import Program
from vta.validate import find_problems, validate_program

PYNQ = VTAConfig.load("pynq")
LOAD, COMPUTE, STORE = Module.LOAD, Module.COMPUTE, Module.STORE


def small_gemm(config: VTAConfig = PYNQ) -> Program:
    """A valid Program: LOAD INP/WGT, GEMM reset + accumulate, ALU copy, STORE, FINISH."""
    c = config
    b = ProgramBuilder(c)
    rng = np.random.default_rng(0)
    b.buffer(
        "a",
        (1, c.batch, c.block_in),
        "int8",
        "input",
        rng.integers(-9, 9, (1, c.batch, c.block_in)),
    )
    b.buffer("w", (2, c.block_out, c.block_in), "int8", "weight")
    b.buffer("c", (2, c.batch, c.block_out), "int8", "output")
    b.load("inp", 0, "a", 0, 1, 1, 1)
    b.load("wgt", 0, "w", 0, 1, 2, 2)
    b.dep_push(LOAD, COMPUTE)
    b.dep_pop(LOAD, COMPUTE)
    b.gemm([(0, 0, 0), (1, 0, 0)], reset=True)
    b.gemm([(0, 0, 0), (1, 0, 1)])
    b.alu("shr", [(0, 0, 0)], loops=[(2, 1, 1, 0)], use_imm=True, imm=0)
    b.dep_push(COMPUTE, STORE)
    b.dep_pop(COMPUTE, STORE)
    b.store(0, "c", 0, 1, 2, 2)
    b.finish()
    return b.build()


def with_insns(program: Program, insns: list[Insn], config: VTAConfig | None = None) -> Program:
    config = config or program.config
    return Program(config, encode_stream(insns, config), program.dram, program.buffers)


def index_of(insns: list[Insn], pred) -> int:
    return next(i for i, insn in enumerate(insns) if pred(insn))


def is_gemm(insn: Insn, reset: bool = False) -> bool:
    return isinstance(insn, GemmInsn) and insn.reset_reg == reset


def is_mem(insn: Insn, mem: MemType, store: bool = False) -> bool:
    return isinstance(insn, MemInsn) and insn.memory_type == mem and insn.is_store == store


def is_load_stage(insn: Insn) -> bool:
    return (
        isinstance(insn, MemInsn)
        and not insn.is_store
        and insn.memory_type
        in (
            MemType.INP,
            MemType.WGT,
        )
    )


def is_mem_stage(insn: Insn) -> bool:
    """Executed by the load or store module (not compute)."""
    return is_load_stage(insn) or (isinstance(insn, MemInsn) and insn.is_store)


def problems_of(program: Program) -> list[str]:
    problems = find_problems(program)
    assert problems, "expected the validator to reject this program"
    with pytest.raises(ValidationError) as err:
        validate_program(program)
    assert err.value.problems == problems
    return problems


def assert_finding(program: Program, index: int, *words: str) -> None:
    """Some finding names instruction `index` and contains every word."""
    problems = problems_of(program)
    hits = [p for p in problems if f"instruction {index}" in p and all(w in p for w in words)]
    assert hits, f"no finding for instruction {index} with {words}: {problems}"


@pytest.fixture(scope="module")
def base() -> Program:
    return small_gemm()


def mutate(program: Program, pred, **changes) -> tuple[Program, int]:
    insns = program.instructions
    i = index_of(insns, pred)
    insns = list(insns)
    insns[i] = insns[i].replace(**changes)
    return with_insns(program, insns), i


def test_base_program_is_valid(base):
    assert find_problems(base) == []
    validate_program(base)


# ----------------------------------------------------------------------------- ranges
def test_sram_out_of_range_load(base):
    depth = PYNQ.depth[MemType.INP]
    prog, i = mutate(base, lambda x: is_mem(x, MemType.INP), sram_base=depth - 1, y_size=2)
    assert_finding(prog, i, "SRAM", "INP", "sram_base")


def test_sram_out_of_range_through_padding(base):
    depth = PYNQ.depth[MemType.INP]
    prog, i = mutate(base, lambda x: is_mem(x, MemType.INP), sram_base=depth - 1, x_pad_1=1)
    assert_finding(prog, i, "SRAM", "INP")


def test_sram_out_of_range_store(base):
    depth = PYNQ.depth[MemType.OUT]
    prog, i = mutate(base, lambda x: is_mem(x, MemType.OUT, store=True), sram_base=depth - 1)
    assert_finding(prog, i, "SRAM", "OUT")


def test_dram_out_of_range(base):
    prog, i = mutate(base, lambda x: is_mem(x, MemType.WGT), dram_base=10**6)
    assert_finding(prog, i, "DRAM", "dram_base")


def test_dram_out_of_range_by_stride(base):
    prog, i = mutate(base, lambda x: is_mem(x, MemType.INP), y_size=3, x_stride=10**4)
    assert_finding(prog, i, "DRAM", "x_stride")


def test_micro_op_index_out_of_range_over_loops(base):
    depth = PYNQ.depth[MemType.ACC]
    prog, i = mutate(base, is_gemm, iter_out=2, dst_factor_out=depth - 1)
    assert_finding(prog, i, "dst_idx", "ACC", "dst_factor_out")


def test_micro_op_wgt_index_out_of_range(base):
    depth = PYNQ.depth[MemType.WGT]
    prog, i = mutate(base, is_gemm, iter_in=3, wgt_factor_in=depth // 2)
    assert_finding(prog, i, "wgt_idx", "WGT")


def test_uop_range_beyond_buffer(base):
    depth = PYNQ.depth[MemType.UOP]
    prog, i = mutate(base, is_gemm, uop_bgn=depth - 1, uop_end=depth + 1)
    assert_finding(prog, i, "uop_end", "UOP")


def test_empty_uop_range_and_zero_iterations(base):
    prog, i = mutate(base, is_gemm, uop_end=0, uop_bgn=0)
    assert_finding(prog, i, "uop_end", "uop_bgn")
    prog, i = mutate(base, lambda x: isinstance(x, AluInsn), iter_in=0)
    assert_finding(prog, i, "iter_in = 0")


# ----------------------------------------------------------------------------- memory types
def test_store_only_takes_out(base):
    prog, i = mutate(base, lambda x: is_mem(x, MemType.OUT, store=True), memory_type=MemType.ACC)
    assert_finding(prog, i, "STORE", "memory_type", "OUT")


def test_store_takes_no_padding(base):
    prog, i = mutate(base, lambda x: is_mem(x, MemType.OUT, store=True), y_pad_0=1)
    assert_finding(prog, i, "STORE", "padding")


def test_acc_8bit_unsupported(base):
    prog, i = mutate(base, lambda x: is_mem(x, MemType.INP), memory_type=MemType.ACC_8BIT)
    assert_finding(prog, i, "ACC_8BIT", "not supported")


def test_load_out_unsupported(base):
    prog, i = mutate(base, lambda x: is_mem(x, MemType.INP), memory_type=MemType.OUT)
    assert_finding(prog, i, "LOAD memory_type OUT")


def test_wgt_load_takes_no_padding(base):
    prog, i = mutate(base, lambda x: is_mem(x, MemType.WGT), x_pad_0=1)
    assert_finding(prog, i, "LOAD WGT", "padding")


def test_uop_load_y_size_one(base):
    prog, i = mutate(base, lambda x: is_mem(x, MemType.UOP) and not x.is_nop, y_size=2)
    assert_finding(prog, i, "LOAD UOP", "y_size")


def test_uop_load_takes_no_padding(base):
    prog, i = mutate(base, lambda x: is_mem(x, MemType.UOP) and not x.is_nop, y_pad_1=1)
    assert_finding(prog, i, "LOAD UOP", "padding")


# ----------------------------------------------------------------------------- ALU / GEMM
def test_mul_needs_alu_mul(base):
    prog, i = mutate(base, lambda x: isinstance(x, AluInsn), alu_opcode=AluOp.MUL)
    assert_finding(prog, i, "MUL", "alu_mul")
    tiny = small_gemm(VTAConfig.load("tiny"))
    prog, _ = mutate(tiny, lambda x: isinstance(x, AluInsn), alu_opcode=AluOp.MUL)
    assert find_problems(prog) == []


def test_req_needs_alu_requant(base):
    tiny = small_gemm(VTAConfig.load("tiny"))
    prog, i = mutate(tiny, lambda x: isinstance(x, AluInsn), alu_opcode=AluOp.REQ, imm=8)
    assert_finding(prog, i, "REQ", "alu_requant")
    prog, _ = mutate(base, lambda x: isinstance(x, AluInsn), alu_opcode=AluOp.REQ, imm=8)
    assert find_problems(prog) == []


@pytest.mark.parametrize("imm", [64, 0x128, -1, -(2**15)])
def test_req_immediate_holds_only_shift_and_relu(base, imm):
    prog, i = mutate(base, lambda x: isinstance(x, AluInsn), alu_opcode=AluOp.REQ, imm=imm)
    assert_finding(prog, i, "REQ", f"imm {imm} sets bits other than the shift")


def gemm_with_kernel(uops, loops=()) -> Program:
    """small_gemm with its accumulating GEMM replaced by `uops` (loaded from a fresh region)."""
    b = ProgramBuilder(PYNQ)
    c = PYNQ
    b.buffer("a", (4, c.batch, c.block_in), "int8", "input")
    b.buffer("w", (4, c.block_out, c.block_in), "int8", "weight")
    b.load("inp", 0, "a", 0, 1, 4, 4)
    b.load("wgt", 0, "w", 0, 1, 4, 4)
    b.dep_push(LOAD, COMPUTE)
    b.dep_pop(LOAD, COMPUTE)
    b.gemm([(d, 0, 0) for d in range(4)], reset=True)
    b.gemm(uops, loops=loops)
    b.finish()
    return b.build(validate=False)


def test_gemm_hazard_consecutive_uops():
    prog = gemm_with_kernel([(0, 0, 0), (1, 1, 1), (1, 2, 2)])
    i = index_of(prog.instructions, is_gemm)
    assert_finding(prog, i, "ACC row 1", "consecutive")


def test_gemm_hazard_across_loop_iterations():
    # one micro-op, inner loop with dst_factor 0: every iteration rewrites ACC row 0
    prog = gemm_with_kernel([(0, 0, 0)], loops=[(1, 0, 0, 0), (4, 0, 1, 1)])
    i = index_of(prog.instructions, is_gemm)
    assert_finding(prog, i, "ACC row 0", "back to back")
    ok = gemm_with_kernel([(0, 0, 0), (1, 0, 1)], loops=[(2, 2, 1, 2)])
    assert find_problems(ok) == []


def test_alu_micro_op_wgt_must_be_zero(base):
    words = encode_uops([[0, 0, 3]], PYNQ)
    alu = index_of(base.instructions, lambda x: isinstance(x, AluInsn))
    load_uop = base.instructions[alu - 1]
    assert is_mem(load_uop, MemType.UOP) and load_uop.x_size == 1
    dram = base.dram.copy()
    dram[load_uop.dram_base * 4 : load_uop.dram_base * 4 + 4] = words.view(np.uint8)
    prog = Program(PYNQ, base.insns, dram, base.buffers)
    assert_finding(prog, alu, "wgt_idx", "ALU")


# ----------------------------------------------------------------------------- unwritten reads
def test_gemm_reads_unloaded_inp(base):
    prog, i = mutate(base, lambda x: is_mem(x, MemType.INP), sram_base=5)
    assert_finding(prog, index_of(prog.instructions, is_gemm), "src_idx", "INP", "never written")


def test_alu_reads_acc_never_written():
    b = ProgramBuilder(PYNQ)
    b.buffer("c", (4, 1, 16), "int8", "output")
    b.alu("add", [(0, 2, 0)], loops=[(2, 1, 1, 0)])
    b.dep_push(COMPUTE, STORE)
    b.dep_pop(COMPUTE, STORE)
    b.store(0, "c", 0, 1, 2, 2)
    b.finish()
    prog = b.build(validate=False)
    i = index_of(prog.instructions, lambda x: isinstance(x, AluInsn))
    assert_finding(prog, i, "ACC", "never written")


def test_gemm_uses_uop_entries_never_loaded(base):
    insns = [x for x in base.instructions if not (is_mem(x, MemType.UOP) and not x.is_nop)]
    prog = with_insns(base, insns)
    assert_finding(prog, index_of(insns, lambda x: is_gemm(x, True)), "UOP entry", "LOAD UOP")


def test_store_of_out_never_computed():
    b = ProgramBuilder(PYNQ)
    b.buffer("a", (2, 1, 16), "int32", "input")
    b.buffer("c", (2, 1, 16), "int8", "output")
    b.load("acc", 0, "a", 0, 1, 2, 2)
    b.dep_push(COMPUTE, STORE)
    b.dep_pop(COMPUTE, STORE)
    i = b.store(0, "c", 0, 1, 2, 2)
    b.finish()
    assert_finding(b.build(validate=False), i, "STORE", "OUT", "ALU")


# ----------------------------------------------------------------------------- races
def two_gemms(war_token: bool, raw_token: bool = True, out_token: bool = True) -> Program:
    """Two rounds of load INP/WGT -> GEMM -> ALU -> store reusing the same SRAM entries; each
    flag keeps or drops one of the dependence tokens that order the rounds."""
    c = PYNQ
    b = ProgramBuilder(c)
    b.buffer("a", (2, c.batch, c.block_in), "int8", "input")
    b.buffer("w", (2, c.block_out, c.block_in), "int8", "weight")
    b.buffer("c", (2, 2, c.batch, c.block_out), "int8", "output")
    for k in range(2):
        if k and war_token:
            b.dep_pop(COMPUTE, LOAD)
        b.load("inp", 0, "a", k, 1, 1, 1)
        b.load("wgt", 0, "w", k, 1, 1, 1)
        if raw_token:
            b.dep_push(LOAD, COMPUTE)
            b.dep_pop(LOAD, COMPUTE)
        if k and out_token:
            b.dep_pop(STORE, COMPUTE)
        b.gemm([(0, 0, 0), (1, 0, 0)], reset=True)
        b.gemm([(0, 0, 0), (1, 0, 0)])
        if not k and war_token:
            b.dep_push(COMPUTE, LOAD)
        b.alu("shr", [(0, 0, 0)], loops=[(2, 1, 1, 0)], use_imm=True, imm=0)
        b.dep_push(COMPUTE, STORE)
        b.dep_pop(COMPUTE, STORE)
        b.store(0, "c", 2 * k, 1, 2, 2)
        if not k and out_token:
            b.dep_push(STORE, COMPUTE)
    b.finish()
    return b.build(validate=False)


def test_ordered_rounds_are_race_free():
    assert find_problems(two_gemms(war_token=True)) == []


def test_race_read_after_write_across_modules():
    prog = two_gemms(war_token=True, raw_token=False)
    gemm = index_of(prog.instructions, is_gemm)
    assert_finding(prog, gemm, "reads INP entries that instruction 0 (LOAD INP) writes", "race")


def test_race_load_overwrites_what_compute_still_reads():
    prog = two_gemms(war_token=False)
    insns = prog.instructions
    reload = [i for i, x in enumerate(insns) if is_mem(x, MemType.INP) and not x.is_nop][1]
    gemm = index_of(insns, is_gemm)
    assert_finding(prog, reload, f"overwrites INP entries that instruction {gemm} (GEMM)", "race")


def test_race_compute_overwrites_what_store_still_reads():
    prog = two_gemms(war_token=True, out_token=False)
    insns = prog.instructions
    store = index_of(insns, lambda x: is_mem(x, MemType.OUT, store=True))
    second_reset = [i for i, x in enumerate(insns) if is_gemm(x, reset=True)][1]
    assert_finding(prog, second_reset, f"overwrites OUT entries that instruction {store}", "race")


# ----------------------------------------------------------------------------- tokens
def test_load_may_not_use_prev_flags(base):
    prog, i = mutate(base, lambda x: is_mem(x, MemType.INP), pop_prev_dep=True)
    assert_finding(prog, i, "pop_prev_dep must be 0")


def test_store_may_not_use_next_flags(base):
    prog, i = mutate(base, lambda x: is_mem(x, MemType.OUT, store=True), push_next_dep=True)
    assert_finding(prog, i, "push_next_dep must be 0")


def test_unbalanced_push(base):
    prog, _ = mutate(base, lambda x: is_mem(x, MemType.INP), push_next_dep=True)
    pushes = [i for i, x in enumerate(prog.instructions) if x.push_next_dep and is_load_stage(x)]
    # tokens are anonymous: the surplus is reported at the last push
    assert_finding(prog, pushes[-1], "l2g", "unbalanced", "never popped")


def test_unbalanced_pop_is_a_deadlock(base):
    prog, _ = mutate(base, lambda x: isinstance(x, AluInsn), pop_prev_dep=True)
    pops = [i for i, x in enumerate(prog.instructions) if x.pop_prev_dep and not is_mem_stage(x)]
    last = pops[-1]  # the pop left without a token: the final synchronization NOP
    problems = problems_of(prog)
    assert any(f"instruction {last}" in p and "no matching push" in p for p in problems)
    assert any(p.startswith("deadlock") and f"compute at instruction {last}" in p for p in problems)


def test_deadlock_with_balanced_tokens():
    # compute waits for store (s2g) before giving store the token it waits for (g2s)
    insns = [
        MemInsn(is_store=True, memory_type=MemType.UOP, pop_prev_dep=True),  # store pops g2s
        MemInsn(memory_type=MemType.UOP, pop_next_dep=True),  # compute pops s2g
        MemInsn(memory_type=MemType.UOP, push_next_dep=True),  # compute pushes g2s
        MemInsn(is_store=True, memory_type=MemType.UOP, push_prev_dep=True),  # store pushes s2g
        FinishInsn(),
    ]
    prog = Program(PYNQ, encode_stream(insns, PYNQ), np.zeros(64, np.uint8))
    problems = problems_of(prog)
    dead = [p for p in problems if p.startswith("deadlock")]
    assert dead and "store at instruction 0" in dead[0] and "compute at instruction 1" in dead[0]
    assert "g2s" in dead[0] and "s2g" in dead[0]


def test_deadlock_behind_a_full_command_queue():
    cfg = PYNQ.replace(cmd_queue_depth=2)
    nop = MemInsn(memory_type=MemType.UOP)
    insns = [
        nop.replace(pop_prev_dep=True),  # compute waits for the load at the end
        nop,
        nop,
        nop,
        MemInsn(memory_type=MemType.INP, push_next_dep=True),  # never dispatched
        FinishInsn(),
    ]
    prog = Program(cfg, encode_stream(insns, cfg), np.zeros(64, np.uint8))
    dead = [p for p in problems_of(prog) if p.startswith("deadlock")][0]
    assert "compute at instruction 0" in dead and "l2g" in dead
    assert "fetch at instruction 2" in dead and "command queue" in dead


def test_token_queue_overflow():
    cfg = PYNQ.replace(token_queue_depth=4)
    insns = [MemInsn(memory_type=MemType.INP, push_next_dep=True) for _ in range(5)]
    insns += [MemInsn(memory_type=MemType.UOP, pop_prev_dep=True) for _ in range(5)]
    insns.append(FinishInsn())
    prog = Program(cfg, encode_stream(insns, cfg), np.zeros(64, np.uint8))
    assert_finding(prog, 4, "l2g", "token_queue_depth")
    roomy = Program(PYNQ, encode_stream(insns, PYNQ), np.zeros(64, np.uint8))
    assert find_problems(roomy) == []


# ----------------------------------------------------------------------------- stream shape
def test_missing_finish(base):
    insns = base.instructions[:-1]
    assert_finding(with_insns(base, insns), len(insns), "missing FINISH")


def test_finish_not_last(base):
    insns = [*base.instructions, MemInsn(memory_type=MemType.UOP)]
    assert_finding(with_insns(base, insns), len(insns) - 2, "FINISH is followed by 1")


def test_unknown_opcode_and_fields(base):
    raw = base.insns.reshape(-1, INSN_BYTES).copy()
    raw[0, 0] |= 0x7  # opcode 7
    prog = Program(PYNQ, raw.reshape(-1), base.dram, base.buffers)
    assert_finding(prog, 0, "unknown opcode 7")
    raw = base.insns.reshape(-1, INSN_BYTES).copy()
    word = int.from_bytes(raw[0].tobytes(), "little") | (7 << 7)  # memory_type 7
    raw[0] = np.frombuffer(word.to_bytes(16, "little"), np.uint8)
    prog = Program(PYNQ, raw.reshape(-1), base.dram, base.buffers)
    assert_finding(prog, 0, "unknown memory_type 7")


def test_validation_error_is_a_program_error(base):
    prog, _ = mutate(base, lambda x: is_mem(x, MemType.WGT), dram_base=10**6)
    with pytest.raises(ProgramError):
        validate_program(prog)


def test_many_findings_are_summarized(base):
    insns = list(base.instructions[:-1])
    bad = MemInsn(memory_type=MemType.INP, sram_base=PYNQ.depth[MemType.INP], x_size=1, y_size=1)
    insns = insns + [bad] * 50 + [FinishInsn()]
    problems = problems_of(with_insns(base, insns))
    assert any("and 30 more" in p for p in problems)


def test_validation_accepts_large_programs():
    """A valid program of tens of thousands of instructions has no findings (its speed is
    measured by scripts/bench_sim.py)."""
    from testkit.examples import blocked_gemm

    ex = blocked_gemm("pynq", 128, 1024, 512, block=(16, 64, 16), threads=2)
    assert len(ex.program) > 10_000
    assert find_problems(ex.program) == []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.binary(min_size=INSN_BYTES, max_size=INSN_BYTES), max_size=24),
    st.integers(0, 4096),
    st.sampled_from(["pynq", "tiny"]),
)
def test_arbitrary_streams_give_findings_not_crashes(raw, dram_size, config):
    """Bad input is reported, never crashes: random instructions with decodable opcodes."""
    cfg = VTAConfig.load(config)
    alu_op = next(f for f in layouts(cfg)["alu"] if f.name == "alu_opcode")

    def decodable(chunk: bytes) -> bytes:
        """Opcode, memory_type and alu_opcode made valid; every other field stays random."""
        word = int.from_bytes(chunk, "little")
        for lsb, count in ((0, 5), (7, 6), (alu_op.lsb, 5)):
            word = word & ~(7 << lsb) | ((word >> lsb & 7) % count) << lsb
        return word.to_bytes(INSN_BYTES, "little")

    data = b"".join(decodable(chunk) for chunk in raw)
    program = Program(cfg, np.frombuffer(data, np.uint8), np.zeros(dram_size, np.uint8))
    problems = find_problems(program)
    assert all(isinstance(p, str) and p for p in problems)


_STAGE_FLAGS = {
    "load": ("pop_next_dep", "push_next_dep"),
    "compute": ("pop_prev_dep", "pop_next_dep", "push_prev_dep", "push_next_dep"),
    "store": ("pop_prev_dep", "push_prev_dep"),
}
_NOPS = {
    "load": MemInsn(memory_type=MemType.INP),
    "compute": MemInsn(memory_type=MemType.UOP),
    "store": MemInsn(is_store=True, memory_type=MemType.OUT),
}


@st.composite
def token_streams(draw) -> list[Insn]:
    """NOP streams with random legal dependence flags, ending in FINISH."""
    insns = []
    for _ in range(draw(st.integers(0, 24))):
        stage = draw(st.sampled_from(sorted(_STAGE_FLAGS)))
        flags = {  # pops rarer than pushes, so that about half the streams can finish
            f: draw(st.booleans() if f.startswith("push") else st.sampled_from([0, 0, 0, 1]))
            for f in _STAGE_FLAGS[stage]
        }
        insns.append(_NOPS[stage].replace(**flags))
    return [*insns, FinishInsn()]


@settings(max_examples=150, deadline=None)
@given(token_streams(), st.sampled_from([2, 4, 512]), st.sampled_from([1, 2, 1024]))
@example(  # the second push never finds room: load stays blocked although FINISH ran
    [_NOPS["load"].replace(push_next_dep=True)] * 2 + [FinishInsn()], 2, 1
)
def test_deadlock_verdict_agrees_with_the_cycle_simulator(insns, cmd_depth, token_depth):
    """The static deadlock check and the cycle simulator's token/queue model must agree."""
    from vta.device import get_device
    from vta.errors import DeadlockError

    cfg = PYNQ.replace(cmd_queue_depth=cmd_depth, token_queue_depth=token_depth)
    program = Program(cfg, encode_stream(insns, cfg), np.zeros(64, np.uint8))
    static = [p for p in find_problems(program) if p.startswith("deadlock")]
    try:
        get_device("sim").execute(program, program.dram.copy())
        simulated = False
    except DeadlockError:
        simulated = True
    assert bool(static) == simulated, static
