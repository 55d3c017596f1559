"""Typed accelerator operations: what the backend's passes hand each other.

An operation is one LOAD, STORE, GEMM or ALU instruction to be. Before SRAM allocation its
on-chip operands are `Slot`s (a buffer of one virtual thread) plus a row offset; the
`allocate_sram` pass turns them into absolute rows. Each operation knows the module that runs it
(from the contract's routing table), the SRAM rows it reads and writes (for dependence tokens),
how it prints, and how it is emitted through the `ProgramBuilder`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from vta.builder import ProgramBuilder
from vta.isa import AluOp, MemType, Module, Opcode, route

from ..tir import stmt as S


class Slot(NamedTuple):
    """An on-chip buffer of one virtual thread (`thread`: its virtual-thread indices).
    Buffers compare by identity, so two slots are equal when buffer and thread are."""

    buffer: S.Buffer
    thread: tuple[int, ...]

    def __str__(self) -> str:
        suffix = "".join(f"[{t}]" for t in self.thread)
        return f"{self.buffer.name}{suffix}"


Rows = tuple[MemType, int, int]  # (memory, first row, end row)
UopLoop = tuple[int, ...]  # (extent, factor per micro-op column)


def _where(slot: Slot | None, row: int) -> str:
    return f"{slot}+{row}" if slot is not None else str(row)


def _spans(uops: np.ndarray, loops: Sequence[UopLoop]) -> list[tuple[int, int]]:
    """First and end row each micro-op column reaches under the loops (factors >= 0)."""
    if len(uops) == 1:  # the common single micro-op kernel, without numpy reductions
        lows = highs = uops[0].tolist()
    else:
        lows, highs = uops.min(axis=0).tolist(), uops.max(axis=0).tolist()
    return [
        (lo, hi + 1 + sum((loop[0] - 1) * loop[1 + col] for loop in loops))
        for col, (lo, hi) in enumerate(zip(lows, highs, strict=True))
    ]


@dataclasses.dataclass(frozen=True)
class Load:
    """2-D strided LOAD from DRAM buffer `dram` (element `offset`) into `memory` rows, with
    zero padding (y0, y1, x0, x1) around the rectangle."""

    memory: MemType
    slot: Slot | None
    row: int
    dram: str
    offset: int
    y_size: int
    x_size: int
    x_stride: int
    pad: tuple[int, int, int, int] = (0, 0, 0, 0)

    @functools.cached_property
    def module(self) -> Module:
        return route(Opcode.LOAD, self.memory)

    @property
    def rows(self) -> int:
        y0, y1, x0, x1 = self.pad
        return (y0 + self.y_size + y1) * (x0 + self.x_size + x1)

    def reads(self) -> list[Rows]:
        return []

    def writes(self) -> list[Rows]:
        return [(self.memory, self.row, self.row + self.rows)]

    def resolve(self, rows: dict[Slot, int]) -> Load:
        row = rows[self.slot] + self.row
        y, x, stride = self.y_size, self.x_size, self.x_stride
        return Load(self.memory, None, row, self.dram, self.offset, y, x, stride, self.pad)

    def slots(self) -> list[Slot]:
        return [self.slot]

    def emit(self, b: ProgramBuilder) -> None:
        b.load(
            self.memory,
            self.row,
            self.dram,
            self.offset,
            self.y_size,
            self.x_size,
            self.x_stride,
            self.pad,
        )

    def __str__(self) -> str:
        pad = "" if not any(self.pad) else f" pad={self.pad}"
        return (
            f"LOAD {self.memory.name} {_where(self.slot, self.row)} <- {self.dram}[{self.offset}]"
            f" {self.y_size}x{self.x_size} stride {self.x_stride}{pad}"
        )


@dataclasses.dataclass(frozen=True)
class Store:
    """2-D strided STORE of OUT rows to DRAM buffer `dram` (element `offset`)."""

    slot: Slot | None
    row: int
    dram: str
    offset: int
    y_size: int
    x_size: int
    x_stride: int

    module = Module.STORE

    def reads(self) -> list[Rows]:
        return [(MemType.OUT, self.row, self.row + self.y_size * self.x_size)]

    def writes(self) -> list[Rows]:
        return []

    def resolve(self, rows: dict[Slot, int]) -> Store:
        row = rows[self.slot] + self.row
        return Store(None, row, self.dram, self.offset, self.y_size, self.x_size, self.x_stride)

    def slots(self) -> list[Slot]:
        return [self.slot]

    def emit(self, b: ProgramBuilder) -> None:
        b.store(self.row, self.dram, self.offset, self.y_size, self.x_size, self.x_stride)

    def __str__(self) -> str:
        return (
            f"STORE OUT {_where(self.slot, self.row)} -> {self.dram}[{self.offset}] "
            f"{self.y_size}x{self.x_size} stride {self.x_stride}"
        )


def _kernel_text(uops: np.ndarray, loops: Sequence[UopLoop]) -> str:
    first = ",".join(str(int(v)) for v in uops[0])
    loop_text = "".join(f" x{loop[0]}({','.join(map(str, loop[1:]))})" for loop in loops)
    return f"{len(uops)} uop(s) from ({first}){loop_text}"


class _KernelOp:
    """What GEMM and ALU share: micro-ops (dst column first) relative to their slots' rows,
    folded loops, and the OUT rows they write."""

    uops: np.ndarray
    loops: tuple[UopLoop, ...]
    slots_: tuple[Slot | None, ...]
    module = Module.COMPUTE

    @functools.cached_property
    def spans(self) -> list[tuple[int, int]]:
        """The rows each micro-op column reaches (`_spans`), computed once."""
        return _spans(self.uops, self.loops)

    def writes(self) -> list[Rows]:
        return [(MemType.OUT, *self.spans[0])]

    def resolve(self, rows: dict[Slot, int]):
        base = [0 if s is None else rows[s] for s in self.slots_]
        none = (None,) * len(self.slots_)
        return dataclasses.replace(self, uops=self.uops + np.array(base), slots_=none)

    def slots(self) -> list[Slot]:
        return [s for s in self.slots_ if s is not None]

    def _where(self) -> str:
        names = ",".join("-" if s is None else str(s) for s in self.slots_)
        return "" if not any(self.slots_) else f" in ({names})"


@dataclasses.dataclass(frozen=True)
class Gemm(_KernelOp):
    """GEMM over micro-ops (dst ACC row, src INP row, wgt WGT row) under up to two loops
    (extent, dst, src, wgt factors), outer first; `slots` are the three operands' buffers."""

    uops: np.ndarray
    loops: tuple[UopLoop, ...]
    reset: bool
    slots_: tuple[Slot | None, Slot | None, Slot | None] = (None, None, None)

    def reads(self) -> list[Rows]:
        if self.reset:
            return []
        return [(MemType.INP, *self.spans[1]), (MemType.WGT, *self.spans[2])]

    def emit(self, b: ProgramBuilder) -> None:
        b.gemm(self.uops, list(self.loops), reset=self.reset)

    def __str__(self) -> str:
        reset = " reset" if self.reset else ""
        return f"GEMM{reset} {_kernel_text(self.uops, self.loops)}{self._where()}"


@dataclasses.dataclass(frozen=True)
class Alu(_KernelOp):
    """ALU `op` over micro-ops (dst ACC row, src ACC row) under up to two loops (extent, dst,
    src factors), with the immediate `imm` or (use_imm False) the src rows as operand."""

    op: AluOp
    uops: np.ndarray
    loops: tuple[UopLoop, ...]
    use_imm: bool
    imm: int
    slots_: tuple[Slot | None, Slot | None] = (None, None)

    def reads(self) -> list[Rows]:
        return []  # ACC only: no module but compute touches it

    def emit(self, b: ProgramBuilder) -> None:
        b.alu(self.op, self.uops, list(self.loops), use_imm=self.use_imm, imm=self.imm)

    def __str__(self) -> str:
        operand = f"imm {self.imm}" if self.use_imm else "tensor"
        return f"ALU {self.op.name} {operand} {_kernel_text(self.uops, self.loops)}{self._where()}"


Op = Load | Store | Gemm | Alu


def out_copy(first: int, end: int) -> Alu:
    """An ALU shift by 0 of ACC rows [first, end): writes their low bits to OUT for a STORE."""
    return Alu(AluOp.SHR, np.array([[first, first]]), ((end - first, 1, 1),), True, 0)
