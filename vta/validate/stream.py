"""The decoded instruction stream every validation phase reads, and the findings it writes.

Fields are decoded for the whole stream at once (one int64 column per field and instruction
family), so the phases' checks are vectorized; per-instruction walks do small constant work.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..isa import DEP_FIELDS, AluOp, MemType, Module, Opcode, layouts, route_array

if TYPE_CHECKING:
    from ..program import Program

MAX_PER_CHECK = 20  # findings reported per kind of check before summarizing the rest


def decode_columns(program: Program) -> dict[str, dict[str, np.ndarray]]:
    """Every field of every instruction family, decoded for the whole stream (int64 arrays)."""
    words = np.frombuffer(program.insns.tobytes(), dtype="<u8").reshape(-1, 2)
    columns: dict[str, dict[str, np.ndarray]] = {}
    for family, fields in layouts(program.config).items():
        cols = {}
        for f in fields:
            word = words[:, f.lsb // 64]
            value = ((word >> np.uint64(f.lsb % 64)) & np.uint64((1 << f.width) - 1)).astype(
                np.int64
            )
            if f.signed:
                value = np.where(value >> (f.width - 1), value - (1 << f.width), value)
            cols[f.name] = value
        columns[family] = cols
    return columns


class Stream:
    """A Program's instructions as columns: opcode, memory type, module, dependence flags, and
    every field by family (`mem`, `gemm`, `alu`, `finish`; GEMM and ALU share word 0)."""

    def __init__(self, program: Program):
        self.program = program
        self.config = program.config
        self.n = len(program)
        self.words = np.frombuffer(program.insns.tobytes(), dtype="<u8").reshape(-1, 2)
        self.cols = decode_columns(program)
        mem = self.cols["mem"]
        self.opcode = mem["opcode"]
        self.mem_type = mem["memory_type"]
        self.flags = {name: mem[name].astype(bool) for name in DEP_FIELDS}
        self.is_load = self.opcode == Opcode.LOAD
        self.is_store = self.opcode == Opcode.STORE
        self.is_mem = self.is_load | self.is_store
        self.is_gemm = self.opcode == Opcode.GEMM
        self.is_alu = self.opcode == Opcode.ALU
        self.nop = self.is_mem & (mem["x_size"] == 0)
        self.active_mem = self.is_mem & ~self.nop

    @cached_property
    def module(self) -> np.ndarray:
        """The module (a `Module` value) that runs each instruction."""
        return route_array(self.opcode, self.mem_type)

    def name(self, i: int) -> str:
        """'LOAD INP', 'GEMM', 'ALU MIN', ... for instruction i."""
        op = Opcode(int(self.opcode[i]))
        if op in (Opcode.LOAD, Opcode.STORE):
            return f"{op.name} {MemType(int(self.mem_type[i])).name}"
        if op == Opcode.ALU:
            return f"ALU {AluOp(int(self.cols['alu']['alu_opcode'][i])).name}"
        return op.name

    def module_name(self, i: int) -> str:
        return Module(int(self.module[i])).label


class Findings(list):
    """Messages, one per problem; per-instruction checks are capped at MAX_PER_CHECK each."""

    def __init__(self, stream: Stream):
        super().__init__()
        self.stream = stream
        self._capped: dict[str, int] = {}

    def each(self, mask: np.ndarray, message: Callable[[int], str]) -> None:
        """One finding per instruction in `mask` (capped, then summarized)."""
        indices = np.flatnonzero(mask)
        for i in indices[:MAX_PER_CHECK]:
            self.append(message(int(i)))
        if indices.size > MAX_PER_CHECK:
            self.append(
                f"... and {indices.size - MAX_PER_CHECK} more instruction(s) with the problem "
                f"of instruction {int(indices[0])}"
            )

    def capped(self, kind: str, message: str) -> None:
        """A finding of a walk over the stream; after MAX_PER_CHECK of `kind`, one summary."""
        count = self._capped[kind] = self._capped.get(kind, 0) + 1
        if count <= MAX_PER_CHECK:
            self.append(message)
        elif count == MAX_PER_CHECK + 1:
            self.append(f"... further {kind} findings omitted")
