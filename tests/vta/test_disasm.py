"""Disassembler: readable lines, reference-named JSON, kernels, and the `vta disasm` command."""

from __future__ import annotations

import json

import numpy as np

from vta.builder import ProgramBuilder
from vta.cli import main
from vta.config import VTAConfig
from vta.disasm import disassemble, format_insn, insn_json
from vta.isa import AluInsn, AluOp, FinishInsn, GemmInsn, MemInsn, MemType, Module

PYNQ = VTAConfig.load("pynq")
REFERENCE_FIELDS = {
    "mem": "opcode pop_prev_dep pop_next_dep push_prev_dep push_next_dep memory_type sram_base "
    "dram_base y_size x_size x_stride y_pad_0 y_pad_1 x_pad_0 x_pad_1",
    "gemm": "opcode pop_prev_dep pop_next_dep push_prev_dep push_next_dep reset_reg uop_bgn "
    "uop_end iter_out iter_in dst_factor_out dst_factor_in src_factor_out src_factor_in "
    "wgt_factor_out wgt_factor_in",
    "alu": "opcode pop_prev_dep pop_next_dep push_prev_dep push_next_dep reset_reg uop_bgn "
    "uop_end iter_out iter_in dst_factor_out dst_factor_in src_factor_out src_factor_in "
    "alu_opcode use_imm imm",
    "finish": "opcode pop_prev_dep pop_next_dep push_prev_dep push_next_dep",
}


def test_load_line_matches_the_documented_form():
    insn = MemInsn(
        memory_type=MemType.INP,
        sram_base=0x10,
        dram_base=0x400,
        y_size=4,
        x_size=16,
        x_stride=64,
        y_pad_0=1,
        y_pad_1=1,
        x_pad_0=1,
        x_pad_1=1,
        pop_next_dep=True,
        push_next_dep=True,
    )
    assert format_insn(insn, 12) == (
        "  12 LOAD  INP  sram=0x0010 dram=0x00000400 y=4 x=16 stride=64 pad=1,1,1,1  "
        "[pop_next push_next]"
    )


def test_nop_gemm_alu_finish_lines():
    assert format_insn(MemInsn(is_store=True, push_prev_dep=True), 3).endswith("nop  [push_prev]")
    gemm = GemmInsn(reset_reg=True, uop_bgn=2, uop_end=5, iter_out=4, iter_in=8, dst_factor_out=16)
    line = format_insn(gemm, 0)
    assert "GEMM" in line and "RESET" in line and "uop=[2,5)" in line and "iter=4x8" in line
    assert "dst=(16,0)" in line and "wgt=(0,0)" in line
    alu = AluInsn(alu_opcode=AluOp.SHR, use_imm=True, imm=-3, uop_end=1)
    assert "ALU   SHR  imm=-3 uop=[0,1)" in format_insn(alu, 1)
    assert "src=acc" in format_insn(alu.replace(use_imm=False), 1)
    req = AluInsn(alu_opcode=AluOp.REQ, imm=0x28, uop_end=1)
    assert "ALU   REQ  src=acc shr=8 relu uop=[0,1)" in format_insn(req, 1)
    assert "ALU   REQ  shr=31 uop=[0,1)" in format_insn(req.replace(use_imm=True, imm=31), 1)
    assert format_insn(FinishInsn(pop_prev_dep=True), 7) == "   7 FINISH  [pop_prev]"


def test_json_uses_exactly_the_reference_field_names():
    cases = {
        "mem": MemInsn(is_store=True, memory_type=MemType.OUT, x_size=3),
        "gemm": GemmInsn(uop_end=1, wgt_factor_in=7),
        "alu": AluInsn(alu_opcode=AluOp.MAX, use_imm=True, imm=-5, uop_end=1),
        "finish": FinishInsn(),
    }
    for family, insn in cases.items():
        obj = insn_json(insn, 9)
        assert set(obj) == set(REFERENCE_FIELDS[family].split()) | {"index"}
        assert obj["index"] == 9
        assert json.loads(json.dumps(obj)) == obj
    assert insn_json(cases["mem"], 0)["opcode"] == "STORE"
    assert insn_json(cases["alu"], 0)["alu_opcode"] == "MAX"
    assert insn_json(cases["alu"], 0)["imm"] == -5


def small_program():
    b = ProgramBuilder(PYNQ)
    b.buffer("a", (2, 1, 16), "int32", "input", np.arange(32, dtype=np.int32).reshape(2, 1, 16))
    b.buffer("c", (2, 1, 16), "int8", "output")
    b.load("acc", 0, "a", 0, 1, 2, 2)
    b.alu("shr", [(0, 0, 0), (1, 1, 0)], use_imm=True, imm=0)
    b.dep_push(Module.COMPUTE, Module.STORE)
    b.dep_pop(Module.COMPUTE, Module.STORE)
    b.store(0, "c", 0, 1, 2, 2)
    b.finish()
    return b.build()


def test_program_listing_has_buffers_instructions_and_kernels():
    program = small_program()
    text = disassemble(program, PYNQ)
    lines = text.splitlines()
    assert f"{len(program)} instructions" in lines[0]
    for spec in program.buffers:
        assert any(spec.name in line and spec.role in line for line in lines)
    for index, insn in enumerate(program.instructions):
        assert format_insn(insn, index) in lines
    assert "; micro-op kernels:" in lines
    assert any("dst=1 src=1 wgt=0" in line for line in lines)


def test_bare_stream_lists_micro_op_ranges():
    program = small_program()
    text = disassemble(program.instructions, PYNQ)
    assert "uop=[0,2) used by 1 instruction(s)" in text


def test_vta_disasm_command(tmp_path, capsys):
    program = small_program()
    path = tmp_path / "p.npz"
    program.save(path)
    assert main(["disasm", str(path)]) == 0
    assert capsys.readouterr().out.strip() == disassemble(program, PYNQ)
    assert main(["disasm", "--json", str(path)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["index"] for r in rows] == list(range(len(program)))
    assert rows == [insn_json(insn, i) for i, insn in enumerate(program.instructions)]
    raw = tmp_path / "p.bin"
    program.insns.tofile(raw)
    assert main(["disasm", "--raw", str(raw)]) == 0
    assert "FINISH" in capsys.readouterr().out
