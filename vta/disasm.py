"""Disassembler: instructions as readable text lines, or as JSON with the reference field names.

`vta disasm` prints `disassemble(...)`; `vta disasm --json` prints one `insn_json` object per line.
"""

from __future__ import annotations

from collections.abc import Sequence

from .config import VTAConfig
from .isa import (
    DEP_FIELDS,
    AluInsn,
    AluOp,
    FinishInsn,
    GemmInsn,
    Insn,
    MemInsn,
    MemType,
    decode_stream,
    decode_uops,
    requant_fields,
)
from .program import Program

_FLAG_NAMES = {name: name.removesuffix("_dep") for name in DEP_FIELDS}


def _flags(insn: Insn) -> str:
    names = [short for name, short in _FLAG_NAMES.items() if getattr(insn, name)]
    return f"  [{' '.join(names)}]" if names else ""


def _loops(insn: GemmInsn | AluInsn, factors: Sequence[str]) -> str:
    """'iter=4x8 dst=(16,1) src=(4,0)': loop extents (out x in) and (out, in) factors."""
    parts = [f"iter={insn.iter_out}x{insn.iter_in}"]
    for name in factors:
        parts.append(
            f"{name}=({getattr(insn, name + '_factor_out')},{getattr(insn, name + '_factor_in')})"
        )
    return " ".join(parts)


def format_insn(insn: Insn, index: int) -> str:
    """One line, e.g. '  12 LOAD  INP  sram=0x0010 dram=0x00000400 y=4 x=16 stride=64 ...'."""
    head = f"{index:>4} {insn.opcode.name:<5}"
    if isinstance(insn, MemInsn):
        head += f" {insn.memory_type.name:<4}"
        if insn.is_nop:
            body = " nop"
        else:
            body = (
                f" sram=0x{insn.sram_base:04x} dram=0x{insn.dram_base:08x} y={insn.y_size} "
                f"x={insn.x_size} stride={insn.x_stride}"
            )
            pads = (insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1)
            if any(pads):
                body += " pad=" + ",".join(str(p) for p in pads)
    elif isinstance(insn, GemmInsn):
        body = (
            f" {'RESET' if insn.reset_reg else '':<5} uop=[{insn.uop_bgn},{insn.uop_end}) "
            + _loops(insn, ("dst", "src", "wgt"))
        )
    elif isinstance(insn, AluInsn):
        operand = f"imm={insn.imm}" if insn.use_imm else "src=acc"
        if insn.alu_opcode == AluOp.REQ:
            shift, relu = requant_fields(insn.imm)
            operand = ("" if insn.use_imm else "src=acc ") + f"shr={shift}" + " relu" * relu
        body = (
            f" {insn.alu_opcode.name:<4} {operand} uop=[{insn.uop_bgn},{insn.uop_end}) "
            + _loops(insn, ("dst", "src"))
        )
    elif isinstance(insn, FinishInsn):
        body = ""
    else:
        raise TypeError(f"not an instruction: {insn!r}")
    return (head + body).rstrip() + _flags(insn)


def insn_json(insn: Insn, index: int) -> dict:
    """The instruction as a dict keyed by the reference field names, plus its index."""
    return {"index": index, **insn.to_dict()}


def _kernel_lines(program: Program, insns: Sequence[Insn]) -> list[str]:
    """The micro-op kernels the stream loads (LOAD UOP), decoded from the DRAM image."""
    words = program.dram[: program.dram.size // 4 * 4].view("<u4")
    lines, seen = [], set()
    for index, insn in enumerate(insns):
        if not (
            isinstance(insn, MemInsn) and insn.memory_type == MemType.UOP and not insn.is_store
        ):
            continue
        key = (insn.dram_base, insn.x_size)
        if insn.is_nop or key in seen:
            continue
        seen.add(key)
        lo, hi = insn.dram_base, insn.dram_base + insn.x_size
        lines.append(
            f"kernel dram=0x{lo:08x} ({insn.x_size} uops, first loaded by instruction {index})"
        )
        if hi > words.size:
            lines.append("  (outside the DRAM image)")
            continue
        for k, (dst, src, wgt) in enumerate(decode_uops(words[lo:hi], program.config)):
            lines.append(f"  {k:>4} dst={dst} src={src} wgt={wgt}")
    return lines


def _range_lines(insns: Sequence[Insn]) -> list[str]:
    """Without a DRAM image: the uop SRAM ranges the GEMM/ALU instructions execute."""
    ranges: dict[tuple[int, int], int] = {}
    for insn in insns:
        if isinstance(insn, GemmInsn | AluInsn):
            key = (insn.uop_bgn, insn.uop_end)
            ranges[key] = ranges.get(key, 0) + 1
    return [f"uop=[{b},{e}) used by {n} instruction(s)" for (b, e), n in sorted(ranges.items())]


def disassemble(program_or_insns: Program | Sequence[Insn], config: VTAConfig) -> str:
    """The whole stream as text; a Program also lists its buffers and micro-op kernels."""
    if isinstance(program_or_insns, Program):
        program = program_or_insns
        same = program.config == config
        insns = program.instructions if same else decode_stream(program.insns, config)
        lines = [
            f"; {len(insns)} instructions, config {config.name}, "
            f"DRAM image {program.dram.size} bytes",
            "; buffers:",
        ]
        for spec in program.buffers:
            lines.append(
                f";   {spec.name:<12} {spec.role:<8} offset=0x{spec.offset:08x} "
                f"shape={spec.shape} {spec.dtype}"
            )
        kernels = _kernel_lines(program, insns)
    else:
        program, insns = None, list(program_or_insns)
        lines = [f"; {len(insns)} instructions, config {config.name}"]
        kernels = _range_lines(insns)
    lines += [format_insn(insn, index) for index, insn in enumerate(insns)]
    if kernels:
        lines += ["", "; micro-op kernels:"] + ["; " + line for line in kernels]
    return "\n".join(lines)
