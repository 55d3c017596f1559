"""Each validation phase on its own: what it reads, what it finds, what it hands the next one."""

from __future__ import annotations

import numpy as np

from vta.builder import ProgramBuilder
from vta.config import VTAConfig
from vta.isa import MemInsn, MemType, Module, encode_stream
from vta.program import Program
from vta.validate.accesses import trace_accesses
from vta.validate.hazards import check_gemm_hazards, check_races
from vta.validate.initialisation import check_initialisation
from vta.validate.ranges import check_ranges
from vta.validate.stream import Stream
from vta.validate.structure import (
    check_decoding,
    check_dependence_flags,
    check_finish,
    check_memory_types,
)
from vta.validate.tokens import check_tokens

PYNQ = VTAConfig.load("pynq")
LOAD, COMPUTE, STORE = Module.LOAD, Module.COMPUTE, Module.STORE


def gemm_round(tokens: bool = True, alu_copy: bool = True) -> Program:
    """LOAD INP/WGT -> GEMM reset + accumulate -> ALU copy -> STORE, with or without tokens."""
    c = PYNQ
    b = ProgramBuilder(c)
    b.buffer("a", (1, c.batch, c.block_in), "int8", "input")
    b.buffer("w", (2, c.block_out, c.block_in), "int8", "weight")
    b.buffer("c", (2, c.batch, c.block_out), "int8", "output")
    b.load("inp", 0, "a", 0, 1, 1, 1)
    b.load("wgt", 0, "w", 0, 1, 2, 2)
    if tokens:
        b.dep_push(LOAD, COMPUTE)
        b.dep_pop(LOAD, COMPUTE)
    b.gemm([(0, 0, 0), (1, 0, 0)], reset=True)
    b.gemm([(0, 0, 0), (1, 0, 1)])
    if alu_copy:
        b.alu("shr", [(0, 0, 0)], loops=[(2, 1, 1, 0)], use_imm=True, imm=0)
    if tokens:
        b.dep_push(COMPUTE, STORE)
        b.dep_pop(COMPUTE, STORE)
    b.store(0, "c", 0, 1, 2, 2)
    b.finish()
    return b.build(validate=False)


def with_insns(program: Program, insns) -> Program:
    return Program(program.config, encode_stream(insns, program.config), program.dram)


def test_stream_routes_and_names_every_instruction():
    s = Stream(gemm_round())
    names = [s.name(i) for i in range(s.n)]
    assert names[:4] == ["LOAD INP", "LOAD WGT", "LOAD UOP", "GEMM"]
    assert "ALU SHR" in names and "STORE OUT" in names and names[-1] == "FINISH"
    assert s.module.tolist()[:2] == [LOAD, LOAD]
    assert s.module_name(names.index("STORE OUT")) == "store"


def test_structure_phase_finds_only_structure():
    good = Stream(gemm_round())
    assert not check_decoding(good) and not check_dependence_flags(good)
    assert not check_memory_types(good) and not check_finish(good)
    insns = gemm_round().instructions
    insns[0] = insns[0].replace(pop_prev_dep=True)  # load has no previous module
    insns[1] = insns[1].replace(x_pad_0=1)  # WGT loads take no padding
    s = Stream(with_insns(gemm_round(), insns[:-1]))  # and no FINISH
    assert any("instruction 0" in f and "pop_prev_dep" in f for f in check_dependence_flags(s))
    assert any("instruction 1" in f and "LOAD WGT has padding" in f for f in check_memory_types(s))
    assert check_finish(s) and "missing FINISH" in check_finish(s)[0]
    assert not check_decoding(s)


def test_ranges_phase_hands_on_the_in_range_instructions():
    program = gemm_round()
    insns = program.instructions
    insns[0] = insns[0].replace(sram_base=PYNQ.depth[MemType.INP])  # past the INP buffer
    s = Stream(with_insns(program, insns))
    findings, extents = check_ranges(s)
    assert len(findings) == 1 and "instruction 0 (LOAD INP)" in findings[0]
    assert not extents.mem_ok[0] and extents.mem_ok[1]
    gemms = np.flatnonzero(s.is_gemm)
    assert extents.compute_ok[gemms].all()
    assert extents.footprint[1] == 2  # the WGT load: one row of two elements


def test_accesses_phase_gives_each_instruction_its_rows():
    s = Stream(gemm_round())
    findings, accesses = trace_accesses(s, check_ranges(s)[1])
    assert not findings
    inp_load = accesses[0]
    assert inp_load.writes == [(MemType.INP, slice(0, 1))] and not inp_load.reads
    gemm = accesses[int(np.flatnonzero(s.is_gemm)[1])]
    reads = {(mem, field): rows for mem, field, rows in gemm.reads}
    assert reads[(MemType.INP, "src_idx")] == slice(0, 1)
    assert reads[(MemType.WGT, "wgt_idx")] == slice(0, 2)
    assert (MemType.OUT, slice(0, 2)) in gemm.writes
    store = accesses[int(np.flatnonzero(s.active_mem & s.is_store)[0])]
    assert store.reads == [(MemType.OUT, "data", slice(0, 2))]


def test_initialisation_phase_finds_unwritten_reads():
    s = Stream(gemm_round(alu_copy=False))
    _, accesses = trace_accesses(s, check_ranges(s)[1])
    assert not check_initialisation(s, accesses)  # GEMM wrote OUT rows 0-1
    program = gemm_round()
    insns = [
        x
        for x in program.instructions
        if not (isinstance(x, MemInsn) and x.y_size and x.memory_type == MemType.INP)
    ]
    s = Stream(with_insns(program, insns))
    _, accesses = trace_accesses(s, check_ranges(s)[1])
    findings = check_initialisation(s, accesses)
    assert len(findings) == 1 and "reads INP entries never written" in findings[0]


def test_tokens_phase_orders_modules_or_reports_deadlock():
    s = Stream(gemm_round())
    findings, order = check_tokens(s)
    assert not findings
    gemm = int(np.flatnonzero(s.is_gemm)[1])
    assert order.clock[gemm][LOAD] == 1  # both loads finished before the GEMM starts
    store = int(np.flatnonzero(s.active_mem & s.is_store)[0])
    assert order.clock[store][COMPUTE] >= order.pos[gemm]
    insns = gemm_round().instructions
    insns = [
        x.replace(push_next_dep=False) if s.module[i] == LOAD else x for i, x in enumerate(insns)
    ]
    s = Stream(with_insns(gemm_round(), insns))
    findings, order = check_tokens(s)
    assert order is None and any(f.startswith("deadlock") for f in findings)


def test_hazard_phase_finds_races_and_same_row_writes():
    s = Stream(gemm_round(tokens=False))
    _, accesses = trace_accesses(s, check_ranges(s)[1])
    _, order = check_tokens(s)
    races = check_races(s, accesses, order)
    assert any("reads INP entries that instruction 0 (LOAD INP) writes" in f for f in races)
    assert any("race" in f and "STORE OUT" in f for f in races)
    assert not check_gemm_hazards(s, accesses)
    b = ProgramBuilder(PYNQ)
    b.gemm([(0, 0, 0), (0, 0, 0)], reset=True)
    b.finish()
    s = Stream(b.build(validate=False))
    _, accesses = trace_accesses(s, check_ranges(s)[1])
    hazards = check_gemm_hazards(s, accesses)
    assert len(hazards) == 1 and "both write ACC row 0" in hazards[0]
