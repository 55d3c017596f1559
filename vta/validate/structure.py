"""Phase 1, structure: every instruction decodes, runs on a module that has its dependence
flags, uses a memory type its module executes in the form the ISA allows, and FINISH ends the
stream."""

from __future__ import annotations

import numpy as np

from ..isa import LOAD_ROUTES, MODULE_FLAGS, STORE_TYPES, AluOp, MemType, Module, Opcode
from .stream import Findings, Stream

PADS = ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")


def check_decoding(s: Stream) -> Findings:
    """Opcodes, memory types and ALU opcodes the ISA defines (later phases rely on them)."""
    out = Findings(s)
    bad_op = s.opcode > max(Opcode)
    out.each(bad_op, lambda i: f"instruction {i}: unknown opcode {s.opcode[i]} (valid: 0..4)")
    bad_mem = s.is_mem & (s.mem_type > max(MemType))
    out.each(
        bad_mem,
        lambda i: f"instruction {i}: unknown memory_type {s.mem_type[i]} (valid: 0..5)",
    )
    alu_op = s.cols["alu"]["alu_opcode"]
    out.each(
        s.is_alu & (alu_op > max(AluOp)),
        lambda i: f"instruction {i}: unknown alu_opcode {alu_op[i]} (valid: 0..{int(max(AluOp))})",
    )
    return out


def check_dependence_flags(s: Stream) -> Findings:
    """A module may only use the flags of the token queues it is an end of."""
    out = Findings(s)
    for module in Module:
        valid = ", ".join(MODULE_FLAGS[module])
        on_module = s.module == module
        for flag, column in s.flags.items():
            if flag in MODULE_FLAGS[module]:
                continue
            out.each(
                on_module & column,
                lambda i, f=flag, m=module, v=valid: (
                    f"instruction {i} ({s.name(i)}): {f} must be 0 (the {m.label} module has "
                    f"no such token queue; its flags: {v})"
                ),
            )
    return out


def padding(s: Stream) -> np.ndarray:
    """Does each LOAD/STORE have any padding field set?"""
    mem = s.cols["mem"]
    padded = np.zeros(s.n, dtype=bool)
    for p in PADS:
        padded |= mem[p] != 0
    return padded


def check_memory_types(s: Stream) -> Findings:
    """LOAD fills the types of `LOAD_ROUTES`, STORE reads `STORE_TYPES` unpadded; WGT loads
    take no padding; UOP loads are contiguous (y_size 1) and unpadded. NOPs are exempt."""
    out = Findings(s)
    mem = s.cols["mem"]
    padded = padding(s)

    def pad_text(i: int) -> str:
        return ",".join(str(mem[p][i]) for p in PADS)

    def names(types) -> str:
        return ", ".join(m.name for m in types)

    store = s.active_mem & s.is_store
    out.each(
        store & ~np.isin(s.mem_type, STORE_TYPES),
        lambda i: (
            f"instruction {i}: STORE memory_type {MemType(int(s.mem_type[i])).name} "
            f"(valid: {names(STORE_TYPES)})"
        ),
    )
    out.each(
        store & padded,
        lambda i: (
            f"instruction {i}: STORE has padding {pad_text(i)} "
            "(y_pad_0,y_pad_1,x_pad_0,x_pad_1 must be 0)"
        ),
    )
    load = s.active_mem & s.is_load
    out.each(
        load & ~np.isin(s.mem_type, list(LOAD_ROUTES)),
        lambda i: (
            f"instruction {i}: LOAD memory_type {MemType(int(s.mem_type[i])).name} is not "
            f"supported (valid: {names(LOAD_ROUTES)})"
        ),
    )
    out.each(
        load & (s.mem_type == MemType.WGT) & padded,
        lambda i: (
            f"instruction {i}: LOAD WGT has padding {pad_text(i)} (WGT loads take no padding)"
        ),
    )
    uop = load & (s.mem_type == MemType.UOP)
    out.each(
        uop & (mem["y_size"] != 1),
        lambda i: (
            f"instruction {i}: LOAD UOP y_size = {mem['y_size'][i]} (UOP loads are contiguous: "
            "y_size must be 1)"
        ),
    )
    out.each(
        uop & padded,
        lambda i: (
            f"instruction {i}: LOAD UOP has padding {pad_text(i)} (UOP loads take no padding)"
        ),
    )
    return out


def check_finish(s: Stream) -> Findings:
    """Exactly one FINISH, at the end (a device runs to the first one)."""
    out = Findings(s)
    finish = np.flatnonzero(s.opcode == Opcode.FINISH)
    if not finish.size:
        out.append(f"instruction {s.n}: missing FINISH (a Program must end with FINISH)")
    elif finish[0] != s.n - 1:
        f = int(finish[0])
        out.append(
            f"instruction {f}: FINISH is followed by {s.n - 1 - f} instruction(s) that never "
            "run (FINISH must be the last instruction)"
        )
    return out
