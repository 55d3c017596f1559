"""testkit.program_fuzz: every generated Program validates, seeds are deterministic, and across
seeds the Programs cover every opcode, memory type, ALU op and operand kind, padding direction, loop
nesting and token queue, with virtual threads that really overlap."""

from collections import Counter

import numpy as np
import pytest

from testkit.program_fuzz import FuzzKnobs, random_program
from vta.config import VTAConfig
from vta.isa import AluInsn, FinishInsn, GemmInsn, MemInsn, Module, TokenQueue, insn_module
from vta.program import Program
from vta.validate import find_problems

CONFIGS = ("tiny", "pynq")
SEEDS = range(150)
PADS = ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")


def _loops(insn: GemmInsn | AluInsn) -> int:
    return (insn.iter_out > 1 or insn.dst_factor_out > 0) + (
        insn.iter_in > 1 or insn.dst_factor_in > 0
    )


def features(program: Program) -> Counter:
    """What a Program exercises, by name (static: from its instruction stream)."""
    seen: Counter = Counter()
    insns = program.instructions
    for insn in insns:
        seen[insn.opcode.name] += 1
        if isinstance(insn, MemInsn) and not insn.is_nop:
            what = f"{insn.opcode.name} {insn.memory_type.name}"
            seen[what] += 1
            seen.update(f"{what} {p}" for p in PADS if getattr(insn, p))
            if insn.y_size == 0:
                seen[f"{what} padding only"] += 1
            if insn.y_size > 1:
                stride = np.sign(insn.x_stride - insn.x_size)
                seen[f"{what} stride {('<', '=', '>')[stride + 1]} x_size"] += 1
        elif isinstance(insn, GemmInsn):
            seen[f"GEMM reset={int(insn.reset_reg)} loops={_loops(insn)}"] += 1
            seen[f"GEMM uops>1={int(insn.uop_end - insn.uop_bgn > 1)}"] += 1
        elif isinstance(insn, AluInsn):
            operand = "imm" if insn.use_imm else "tensor"
            seen[f"ALU {insn.alu_opcode.name} {operand}"] += 1
            seen[f"ALU loops={_loops(insn)}"] += 1
            if insn.use_imm and insn.imm < 0:
                seen[f"ALU {insn.alu_opcode.name} imm<0"] += 1
    for q in TokenQueue:
        name = q.name.lower()
        pushes = [getattr(i, q.push_flag) and insn_module(i) == q.producer for i in insns]
        pops = [getattr(i, q.pop_flag) and insn_module(i) == q.consumer for i in insns]
        seen[f"token {name}"] += sum(pushes)
        # tokens in flight in program order: >= 2 means producer runs ahead (threads overlap)
        depth = np.cumsum(np.array(pushes, int) - np.array(pops, int))
        seen[f"token {name} in flight>=2"] += int(depth.max() >= 2)
    first = insns[0]
    if insn_module(first) == Module.COMPUTE and first.push_prev_dep:
        seen["prologue tokens"] += 1
    return seen


@pytest.fixture(scope="module", params=CONFIGS)
def programs(request) -> list[Program]:
    return [random_program(seed, request.param) for seed in SEEDS]


def test_every_program_validates(programs):
    for seed, program in zip(SEEDS, programs, strict=True):
        assert find_problems(program) == [], f"seed {seed}"
        assert isinstance(program.instructions[-1], FinishInsn)
        assert 8 <= len(program) <= 120, f"seed {seed}: {len(program)} instructions"


def test_programs_cover_the_isa(programs):
    cfg = programs[0].config
    seen = sum((features(p) for p in programs), Counter())
    ops = ["MIN", "MAX", "ADD", "SHR"] + ["MUL"] * cfg.alu_mul + ["REQ"] * cfg.alu_requant
    want = ["LOAD", "STORE", "GEMM", "ALU", "FINISH", "LOAD UOP", "LOAD WGT", "STORE OUT"]
    want += [f"LOAD {m} {p}" for m in ("INP", "ACC") for p in (*PADS, "padding only")]
    want += [f"LOAD {m} stride {c} x_size" for m in ("INP", "WGT", "ACC") for c in "<=>"]
    want += [f"STORE OUT stride {c} x_size" for c in "<=>"]
    want += [f"GEMM reset={r} loops={n}" for r in (0, 1) for n in (0, 1, 2)]
    want += ["GEMM uops>1=1", "ALU loops=0", "ALU loops=1", "ALU loops=2", "ALU SHR imm<0"]
    want += [f"ALU {op} {operand}" for op in ops for operand in ("imm", "tensor")]
    want += [f"token {q.name.lower()}" for q in TokenQueue]
    want += [f"token {q} in flight>=2" for q in ("l2g", "g2l", "g2s", "s2g")]
    want.append("prologue tokens")
    missing = [name for name in want if not seen[name]]
    assert not missing, f"never generated on {cfg.name}: {missing}"
    assert ("ALU MUL imm" in seen) == cfg.alu_mul
    assert ("ALU REQ imm" in seen) == cfg.alu_requant
    assert not any(key.startswith("LOAD WGT ") and "pad" in key for key in seen)
    # padding, both operand kinds and every token queue are common, not one-off
    assert min(seen[f"LOAD INP {p}"] for p in PADS) >= 10
    assert min(seen[f"token {q.name.lower()}"] for q in TokenQueue) >= len(SEEDS)


def test_prologue_and_plain_token_styles_both_occur(programs):
    styles = Counter(features(p)["prologue tokens"] > 0 for p in programs)
    assert styles[True] >= len(SEEDS) // 4 and styles[False] >= len(SEEDS) // 4


def test_a_seed_is_deterministic_and_seeds_differ():
    for cfg in CONFIGS:
        a, b = random_program(7, cfg), random_program(7, cfg)
        assert np.array_equal(a.insns, b.insns) and np.array_equal(a.dram, b.dram)
        assert a.buffers == b.buffers
    streams = {random_program(seed, "tiny").insns.tobytes() for seed in range(50)}
    assert len(streams) == 50


def test_programs_stay_in_the_sram_windows_of_small_knobs():
    knobs = FuzzKnobs(max_threads=1, max_rounds=1, window=4, dram_elems=8)
    cfg = VTAConfig.load("tiny")
    for seed in range(50):
        program = random_program(seed, cfg, knobs)
        assert find_problems(program) == []
        assert len(program) <= 30
