"""ProgramBuilder: buffers, addressing, micro-op kernel cache, reference token rules."""

import numpy as np
import pytest

from vta.builder import ProgramBuilder
from vta.errors import ProgramError, ValidationError
from vta.isa import AluInsn, AluOp, FinishInsn, GemmInsn, MemInsn, MemType, Module, decode_uops

LOAD, COMPUTE, STORE = Module.LOAD, Module.COMPUTE, Module.STORE


def nop(stage, **flags):
    """The reference NOP encodings (runtime PushNoop: memory_type INP for load, else UOP)."""
    if stage == STORE:
        return MemInsn(is_store=True, memory_type=MemType.UOP, **flags)
    return MemInsn(memory_type=MemType.INP if stage == LOAD else MemType.UOP, **flags)


def test_buffers_are_aligned_for_every_memory_type():
    b = ProgramBuilder("pynq")
    first = b.buffer("x", (3,), "int8", "input")
    second = b.buffer("y", (5, 16), "int32", "scratch")
    assert b.alignment == 256  # the largest element: a 16x16 int8 weight tile
    assert first.offset == 0 and second.offset == 256
    assert ProgramBuilder("tiny").alignment == 64  # 64-byte minimum


def test_buffer_data_lands_in_the_image():
    b = ProgramBuilder("tiny")
    data = np.arange(12, dtype=np.int32).reshape(3, 4)
    b.buffer("pad", (1,), "int8", "scratch")
    b.buffer("x", (3, 4), "int32", "input", data)
    b.finish()
    np.testing.assert_array_equal(b.build().view("x"), data)


def test_buffer_errors():
    b = ProgramBuilder()
    b.buffer("x", (4,), "int8", "input")
    with pytest.raises(ProgramError, match="already defined"):
        b.buffer("x", (4,), "int8", "input")
    with pytest.raises(ProgramError, match="role 'bogus'"):
        b.buffer("z", (4,), "int8", "bogus")
    with pytest.raises(ProgramError, match="shape"):
        b.buffer("w", (4,), "int8", "input", np.zeros(5))
    with pytest.raises(ProgramError, match="float64 data given for int8"):
        b.buffer("f", (4,), "int8", "input", np.zeros(4))
    with pytest.raises(ProgramError, match="no buffer 'q'"):
        b.load("inp", 0, "q", 0, 1, 1, 1)
    with pytest.raises(ProgramError, match="ACC_8BIT.*not supported"):
        b.load(MemType.ACC_8BIT, 0, "x", 0, 1, 1, 1)
    with pytest.raises(ProgramError, match="'bogus' is not supported"):
        b.load("bogus", 0, "x", 0, 1, 1, 1)


def test_load_addresses_in_elements_of_the_memory_type():
    b = ProgramBuilder("pynq")
    b.buffer("pad", (1,), "int8", "scratch")
    spec = b.buffer("x", (64, 16), "int32", "input")
    i = b.load(MemType.ACC, 3, spec, 5, 2, 4, 8, pad=(1, 0, 2, 0))
    j = b.load("inp", 0, "x", 1, 1, 1, 1)
    acc, inp = b.insns[i], b.insns[j]
    assert acc.dram_base == spec.offset // 64 + 5 and inp.dram_base == spec.offset // 16 + 1
    assert (acc.sram_base, acc.y_size, acc.x_size, acc.x_stride) == (3, 2, 4, 8)
    assert (acc.y_pad_0, acc.y_pad_1, acc.x_pad_0, acc.x_pad_1) == (1, 0, 2, 0)
    k = b.store(7, spec, 2, 1, 3, 3)
    assert b.insns[k].is_store and b.insns[k].memory_type == MemType.OUT
    assert b.insns[k].dram_base == spec.offset // 16 + 2


def test_pop_attaches_to_the_next_instruction_of_its_stage():
    b = ProgramBuilder()
    b.buffer("x", (16,), "int8", "input")
    b.dep_pop(LOAD, COMPUTE)
    b.load("inp", 0, "x", 0, 1, 1, 1)  # load stage: does not take the compute pop
    b.alu("add", [(0, 0)], use_imm=True, imm=1)
    assert not b.insns[0].pop_prev_dep
    assert b.insns[1].memory_type == MemType.UOP and b.insns[1].pop_prev_dep  # LOAD UOP first
    assert not b.insns[2].pop_prev_dep


def test_second_pending_pop_commits_the_first_as_a_nop():
    b = ProgramBuilder()
    b.dep_pop(LOAD, COMPUTE)
    b.dep_pop(LOAD, COMPUTE)
    b.dep_pop(STORE, COMPUTE)  # a different flag joins the pending one
    assert b.insns == [nop(COMPUTE, pop_prev_dep=True)]
    b.gemm([(0, 0, 0)], reset=True)
    assert b.insns[1].pop_prev_dep and b.insns[1].pop_next_dep


def test_push_sets_the_flag_on_the_last_instruction_of_its_stage():
    b = ProgramBuilder()
    b.buffer("x", (16,), "int8", "input")
    b.load("inp", 0, "x", 0, 1, 1, 1)
    b.dep_push(LOAD, COMPUTE)
    assert len(b.insns) == 1 and b.insns[0].push_next_dep
    b.dep_push(LOAD, COMPUTE)  # the flag is taken: a NOP carries the second push
    assert b.insns[1] == nop(LOAD, push_next_dep=True)
    b.dep_push(COMPUTE, LOAD)  # the last instruction is a load: a compute NOP
    assert b.insns[2] == nop(COMPUTE, push_prev_dep=True)
    b.dep_push(COMPUTE, STORE)  # same NOP, other flag
    assert len(b.insns) == 3 and b.insns[2].push_next_dep


def test_push_first_commits_pending_pops_of_its_stage():
    b = ProgramBuilder()
    b.dep_pop(STORE, COMPUTE)
    b.dep_push(COMPUTE, STORE)
    assert b.insns == [nop(COMPUTE, pop_next_dep=True, push_next_dep=True)]


def test_illegal_token_pairs():
    b = ProgramBuilder()
    for pair in ((LOAD, STORE), (STORE, LOAD), (COMPUTE, COMPUTE)):
        with pytest.raises(ProgramError, match="no token queue"):
            b.dep_push(*pair)
        with pytest.raises(ProgramError, match="no token queue"):
            b.dep_pop(*pair)
    with pytest.raises(ProgramError, match="unknown module"):
        b.dep_pop("fetch", "load")


def test_finish_is_the_reference_synchronize():
    b = ProgramBuilder()
    b.finish()
    assert b.insns == [
        nop(STORE, push_prev_dep=True),
        nop(LOAD, push_next_dep=True),
        nop(COMPUTE, pop_prev_dep=True, pop_next_dep=True),
        FinishInsn(),
    ]
    b.build()  # balanced and valid


def test_kernels_are_cached_and_stored_in_the_uop_region():
    b = ProgramBuilder("pynq")
    uops = [(0, 0, 0), (1, 0, 1)]
    b.gemm(uops, reset=True)
    b.gemm(uops, reset=True)  # resident: no second LOAD UOP
    b.alu("max", [(0, 0), (1, 1)], use_imm=True)
    b.finish()
    program = b.build()
    loads = [
        i
        for i in program.instructions
        if isinstance(i, MemInsn) and i.x_size and i.memory_type == MemType.UOP
    ]
    assert len(loads) == 2
    assert [(i.sram_base, i.x_size, i.y_size) for i in loads] == [(0, 2, 1), (2, 2, 1)]
    spec = program.buffer("uops")
    assert spec.role == "uop"
    words = program.dram.view("<u4")[loads[0].dram_base : loads[0].dram_base + 2]
    np.testing.assert_array_equal(decode_uops(words, program.config), uops)
    gemms = [i for i in program.instructions if isinstance(i, GemmInsn)]
    assert [(g.uop_bgn, g.uop_end) for g in gemms] == [(0, 2), (0, 2)]


def test_ring_allocation_evicts_and_reloads():
    b = ProgramBuilder("tiny")
    depth = b.config.depth[MemType.UOP]
    size = depth // 2 + 1
    k1 = [(i % 4, 0, 0) for i in range(size)]
    k2 = [((i + 1) % 4, 0, 0) for i in range(size)]
    for kernel in (k1, k2, k2, k1):
        b.gemm(kernel, reset=True)
    loads = [i for i in b.insns if isinstance(i, MemInsn)]
    assert [ld.sram_base for ld in loads] == [0, 0, 0]  # k2 evicts k1, k1 evicts k2
    assert loads[0].dram_base == loads[2].dram_base  # k1's DRAM copy is reused
    with pytest.raises(ProgramError, match="exceeds"):
        b.gemm([(0, 0, 0)] * (depth + 1))


def test_loops_map_to_iter_out_and_iter_in():
    b = ProgramBuilder()
    i = b.gemm([(0, 0, 0)], loops=[(4, 1, 2, 3)])
    g = b.insns[i]
    assert (g.iter_out, g.dst_factor_out, g.src_factor_out, g.wgt_factor_out) == (4, 1, 2, 3)
    assert (g.iter_in, g.dst_factor_in) == (1, 0)
    i = b.alu(AluOp.ADD, [(0, 1)], loops=[(5, 1, 1)])
    a = b.insns[i]
    assert isinstance(a, AluInsn)
    assert (a.iter_out, a.iter_in, a.dst_factor_in, a.src_factor_in) == (1, 5, 1, 1)
    i = b.gemm([(0, 0, 0)], loops=[(2, 8, 0, 0), (3, 1, 1, 1)])
    g2 = b.insns[i]
    assert (g2.iter_out, g2.dst_factor_out, g2.iter_in, g2.wgt_factor_in) == (2, 8, 3, 1)
    with pytest.raises(ProgramError, match="at most two"):
        b.gemm([(0, 0, 0)], loops=[(2, 1, 0, 0)] * 3)


def test_build_validates_unless_told_not_to():
    b = ProgramBuilder()
    b.gemm([(0, 0, 0)], reset=True)
    with pytest.raises(ValidationError, match="FINISH"):
        b.build()
    assert len(b.build(validate=False)) == 2
