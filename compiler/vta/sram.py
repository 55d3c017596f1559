"""Passes `allocate_sram` and `insert_out_copies`: on-chip rows for every buffer of every
virtual thread, and the ALU copies a STORE of loaded accumulators needs.

A buffer gets rows at its first use (first fit over its scope, checked against capacity) and
gives them back at the end of its scope. A virtual thread inherits the rows its enclosing
thread already holds. An ALU stage's output lives in its input's rows (`Alias`), after which the
input may not be read again.
"""

from __future__ import annotations

import math

import numpy as np

from vta.isa import MemType

from ..errors import LoweringError
from .environment import Environment
from .ops import Slot, out_copy
from .template import Alias, Free
from .unroll import Entry, Streams


class SramAllocator:
    """Live allocations per scope as (first row, rows, name); rows are scope elements."""

    def __init__(self, env: Environment):
        self.env = env
        self.live: dict[str, list[tuple[int, int, str]]] = {}
        self.high_water: dict[str, int] = {}

    def alloc(self, scope: str, rows: int, name: str) -> int:
        """The first row of `rows` free rows of `scope`; an error names what does not fit."""
        depth = self.env.capacity(scope) // self.env.elem_bytes(scope)
        live = sorted(self.live.setdefault(scope, []))
        start = 0
        for first, n, _ in live:
            if start + rows <= first:
                break
            start = max(start, first + n)
        if start + rows > depth:
            elem = self.env.elem_bytes(scope)
            used = sum(n for _, n, _ in live)
            held = ", ".join(f"{nm} ({n * elem} B)" for _, n, nm in live) or "nothing"
            raise LoweringError(
                f"scope {scope}: buffer '{name}' needs {rows * elem} bytes but only "
                f"{(depth - used) * elem} of {depth * elem} bytes are available (live: {held}); "
                "choose smaller tiles or fewer virtual threads"
            )
        self.live[scope].append((start, rows, name))
        self.high_water[scope] = max(self.high_water.get(scope, 0), start + rows)
        return start

    def free(self, scope: str, first: int) -> None:
        self.live[scope] = [a for a in self.live[scope] if a[0] != first]


class _Rows:
    """The rows each slot holds, which slots own theirs, and which are dead (aliased away)."""

    def __init__(self, env: Environment):
        self.env = env
        self.sram = SramAllocator(env)
        self.rows: dict[Slot, int] = {}
        self.owned: set[Slot] = set()
        self.dead: set[Slot] = set()

    def _inherited(self, slot: Slot, table) -> Slot | None:
        """`slot`, or the slot of the same buffer in the nearest enclosing thread, in table."""
        if slot in table:
            return slot
        for k in range(len(slot.thread) - 1, -1, -1):
            outer = Slot(slot.buffer, slot.thread[:k])
            if outer in table:
                return outer
        return None

    def row(self, slot: Slot) -> int:
        """The first row of `slot` (allocated at its first use)."""
        if self.dead and self._inherited(slot, self.dead) is not None:
            raise LoweringError(
                f"'{slot.buffer.name}' is read after an alu stage updated its rows in place; "
                "read the alu stage's output instead"
            )
        held = self._inherited(slot, self.rows)
        if held is not None:
            return self.rows[held]
        buf = slot.buffer
        rows = math.ceil(buf.shape[0].value / self.env.lanes(buf.scope))
        self.rows[slot] = self.sram.alloc(buf.scope, rows, buf.name)
        self.owned.add(slot)
        return self.rows[slot]

    def alias(self, a: Alias) -> None:
        if a.dst.buffer is a.src.buffer:
            if a.offset:
                raise LoweringError(f"alu into '{a.dst.buffer.name}' must update elements in place")
            return
        row = self.row(a.src) + a.offset
        held = self._inherited(a.dst, self.rows)
        if held is not None and self.rows[held] != row:
            raise LoweringError(
                f"alu into '{a.dst.buffer.name}' must update '{a.src.buffer.name}' in place, "
                f"but '{a.dst.buffer.name}' already holds other rows"
            )
        self.rows[a.dst] = row
        self.dead.add(a.src)

    def free(self, slot: Slot) -> None:
        if slot in self.owned:
            self.sram.free(slot.buffer.scope, self.rows[slot])
            self.owned.discard(slot)
        self.rows.pop(slot, None)
        self.dead.discard(slot)


def allocate_sram(stream: Streams, env: Environment) -> Streams:
    """The interleaved stream with every slot resolved to rows (markers consumed)."""
    state = _Rows(env)
    out = Streams()
    for e in stream:
        if isinstance(e.item, Alias):
            state.alias(e.item)
        elif isinstance(e.item, Free):
            state.free(e.item.slot)
        else:
            rows = {s: state.row(s) for s in e.item.slots()}
            out.append(Entry(e.key, e.thread, e.item.resolve(rows)))
    out.title = "operations with SRAM rows"
    return out


def insert_out_copies(stream: Streams, env: Environment) -> Streams:
    """A STORE of OUT rows last written by a LOAD ACC (which does not write OUT) gets an ALU
    shift-by-0 copy of those rows first."""
    out_valid = np.zeros(env.config.depth[MemType.ACC], dtype=bool)
    out = Streams()
    for e in stream:
        for mem, lo, hi in e.item.reads():
            if mem == MemType.OUT and not out_valid[lo:hi].all():
                out.append(Entry(e.key, e.thread, out_copy(lo, hi)))
                out_valid[lo:hi] = True
        for mem, lo, hi in e.item.writes():
            if mem in (MemType.OUT, MemType.ACC):
                out_valid[lo:hi] = mem == MemType.OUT
        out.append(e)
    out.title = "operations with SRAM rows, OUT copies inserted"
    return out
