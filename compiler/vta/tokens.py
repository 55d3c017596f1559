"""Pass `insert_tokens`: dependence tokens on one instruction stream, only where needed.

Every operation knows the SRAM rows it reads and writes. Walking the stream in order, an
operation that reads rows another module wrote (RAW) or overwrites rows another module still
reads (WAR) must wait for that operation: the producer pushes a token right after it and the
consumer pops it. The k-th pop of a queue pairs with its k-th push, so a consumer waits for the
newest producer it depends on and skips producers an earlier pop already covered. With virtual
threads this gives the double-buffering pattern: a thread's load waits only for the compute that
last read *its* buffer (the loop-carried token), the first iteration waits for nothing (the
prologue's tokens cancel) and nothing is left to drain (the epilogue).
"""

from __future__ import annotations

import bisect
import dataclasses

from vta.builder import ProgramBuilder
from vta.isa import SHARED_BUFFERS, Module, TokenQueue

from .ops import Op
from .unroll import Streams


@dataclasses.dataclass
class Synced:
    """An operation with the token queues it pops before and pushes after it."""

    op: Op
    thread: tuple[int, ...]
    pops: list[TokenQueue]
    pushes: list[TokenQueue]

    def __str__(self) -> str:
        pops = " ".join(f"pop {q.name.lower()}" for q in self.pops)
        pushes = " ".join(f"push {q.name.lower()}" for q in self.pushes)
        thread = "".join(f"[{t}]" for t in self.thread) or "-"
        return f"{thread:6} {pops:>15} | {self.op} | {pushes}"


class SyncedStream(list):
    """Operations with their tokens, in stream order; prints one line each."""

    def __init__(self, items=(), title: str = "operations with dependence tokens"):
        super().__init__(items)
        self.title = title

    def __str__(self) -> str:
        return "\n".join([f"# {self.title}: {len(self)}"] + [str(s) for s in self])


class _Newest:
    """The newest operation index per SRAM row, as constant runs of rows (operations touch
    row ranges, so a few runs describe a whole buffer: far cheaper than an array per row)."""

    __slots__ = ("depth", "starts", "values")

    def __init__(self, depth: int):
        self.depth = depth
        self.starts = [0, depth]  # run k covers rows [starts[k], starts[k + 1])
        self.values = [-1]

    def get(self, lo: int, hi: int) -> int:
        """The newest index over rows [lo, hi)."""
        hi = min(hi, self.depth)
        if lo >= hi:
            return -1
        first = bisect.bisect_right(self.starts, lo) - 1
        end = bisect.bisect_left(self.starts, hi, first)
        return max(self.values[first:end])

    def set(self, lo: int, hi: int, index: int) -> None:
        """Rows [lo, hi) were touched by operation `index`."""
        hi = min(hi, self.depth)
        if lo >= hi:
            return
        starts, values = self.starts, self.values
        first = bisect.bisect_right(starts, lo) - 1
        end = bisect.bisect_left(starts, hi, first)
        new_starts, new_values = [lo], [index]
        if starts[first] < lo:
            new_starts.insert(0, starts[first])
            new_values.insert(0, values[first])
        if starts[end] > hi:
            new_starts.append(hi)
            new_values.append(values[end - 1])
        starts[first:end] = new_starts
        values[first:end] = new_values


def plan_tokens(ops: list[Op], depth: dict) -> tuple[dict[int, set], dict[int, set]]:
    """The modules each op pops from before it and pushes to after it, by op index (ops
    with no token are absent)."""
    last_write = {m: _Newest(depth[m]) for m in SHARED_BUFFERS}
    last_read = {m: _Newest(depth[m]) for m in SHARED_BUFFERS}
    waited: dict[tuple[Module, Module], int] = {}
    pops: dict[int, set[Module]] = {}
    pushes: dict[int, set[Module]] = {}
    for b, op in enumerate(ops):
        module, reads, writes = op.module, op.reads(), op.writes()
        need: dict[Module, int] = {}
        for mem, lo, hi in reads:
            ends = SHARED_BUFFERS.get(mem)
            if ends is not None and ends[1] == module:
                need[ends[0]] = max(need.get(ends[0], -1), last_write[mem].get(lo, hi))
        for mem, lo, hi in writes:
            ends = SHARED_BUFFERS.get(mem)
            if ends is not None and ends[0] == module:
                need[ends[1]] = max(need.get(ends[1], -1), last_read[mem].get(lo, hi))
        for other, a in need.items():
            if a > waited.get((other, module), -1):
                waited[(other, module)] = a
                pushes.setdefault(a, set()).add(module)
                pops.setdefault(b, set()).add(other)
        for mem, lo, hi in reads:
            if mem in last_read:
                last_read[mem].set(lo, hi, b)
        for mem, lo, hi in writes:
            if mem in last_write:
                last_write[mem].set(lo, hi, b)
    return pops, pushes


def insert_tokens(stream: Streams, depth: dict, title: str | None = None) -> SyncedStream:
    """The stream's operations, each with the dependence tokens it needs."""
    pops, pushes = plan_tokens(stream.items(), depth)
    out = SyncedStream(title=title or "operations with dependence tokens")
    for b, e in enumerate(stream):
        m = e.item.module
        pop, push = pops.get(b, ()), pushes.get(b, ())
        out.append(
            Synced(
                e.item,
                e.thread,
                [TokenQueue.between(src, m) for src in sorted(pop)] if pop else [],
                [TokenQueue.between(m, dst) for dst in sorted(push)] if push else [],
            )
        )
    return out


def emit(stream: SyncedStream, builder: ProgramBuilder) -> None:
    """Append the operations with their tokens, then the final synchronization."""
    for s in stream:
        for q in s.pops:
            builder.dep_pop(q.producer, q.consumer)
        s.op.emit(builder)
        for q in s.pushes:
            builder.dep_push(q.producer, q.consumer)
    builder.finish()
