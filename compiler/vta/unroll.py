"""Passes `unroll` and `interleave_vthreads`: host loops run at compile time.

Shapes are static, so every host loop, branch and virtual-thread loop of the templated IR is
executed here. `unroll` gives each virtual thread its own stream of operations, in its program
order; each operation carries a program-point key in which the virtual-thread loops do not
appear. `interleave_vthreads` merges the threads statement by statement by those keys, except
that a run of adjacent DMA copies goes thread by thread: one thread's loads complete together,
so its compute can start while the next thread's loads are in flight, and its next loads wait
only for its own compute.
"""

from __future__ import annotations

import dataclasses

from ..errors import LoweringError
from ..tir import expr as E
from ..tir import stmt as S
from .dma import DmaTemplate
from .evaluate import evaluate
from .ops import Slot
from .template import Free, Instance, Item, OpTemplate

Key = tuple[int, ...]


@dataclasses.dataclass
class Entry:
    """An operation (or Alias/Free marker) of one virtual thread at one program point."""

    key: Key
    thread: tuple[int, ...]
    item: Item


class Streams(list):
    """Entries in order; prints one line each, tagged with its virtual thread."""

    title = "operations"

    def items(self) -> list[Item]:
        return [e.item for e in self]

    def __str__(self) -> str:
        lines = [f"# {self.title}: {len(self)}"]
        for e in self:
            thread = "".join(f"[{t}]" for t in e.thread) or "-"
            lines.append(f"{thread:6} {e.item}")
        return "\n".join(lines)


class _Walk:
    """Collects every template instance (with its key) and every buffer's end of scope."""

    def __init__(self):
        self.instances: dict[OpTemplate, list[tuple[Key, Instance]]] = {}
        self.entries: list[Entry] = []

    def run(self, s: S.Stmt, thread: tuple[int, ...], host: dict, key: Key) -> None:
        if isinstance(s, OpTemplate):
            self.instances.setdefault(s, []).append((key, Instance(thread, host)))
        elif isinstance(s, S.SeqStmt):
            self.seq(s.seq, thread, host, key)
        elif isinstance(s, S.For):
            if s.kind == "vthread":
                for t in range(E.as_int(s.extent)):
                    self.run(s.body, (*thread, t), {**host, s.loop_var: t}, key)
                return
            extent = int(evaluate(s.extent, host))
            for v in range(extent):
                self.run(s.body, thread, {**host, s.loop_var: v}, (*key, v))
        elif isinstance(s, S.LetStmt):
            self.run(s.body, thread, {**host, s.var: int(evaluate(s.value, host))}, key)
        elif isinstance(s, S.IfThenElse):
            if evaluate(s.cond, host):
                self.run(s.then_case, thread, host, (*key, 0))
            elif s.else_case is not None:
                self.run(s.else_case, thread, host, (*key, 1))
        elif isinstance(s, S.Allocate):
            self.run(s.body, thread, host, (*key, 0))
            self.entries.append(Entry((*key, 1, *thread), thread, Free(Slot(s.buffer, thread))))
        elif isinstance(s, S.AttrStmt):
            self.run(s.body, thread, host, key)
        elif not (isinstance(s, S.Evaluate) and E.is_const(s.value)):
            raise LoweringError(f"the VTA target cannot lower {type(s).__name__}: {s!r}")

    def seq(self, seq: tuple, thread: tuple[int, ...], host: dict, key: Key) -> None:
        k = 0
        while k < len(seq):
            run = 1
            while k + run < len(seq) and all(
                isinstance(x, DmaTemplate) for x in seq[k : k + run + 1]
            ):
                run += 1
            if run == 1:
                self.run(seq[k], thread, host, (*key, k))
            else:  # a run of DMA copies: thread by thread (the thread goes into the key)
                for i in range(k, k + run):
                    self.run(seq[i], thread, host, (*key, k, *thread, i))
            k += run


def unroll(f: S.PrimFunc) -> Streams:
    """Every operation of every virtual thread, grouped by thread, each in program order."""
    walk = _Walk()
    walk.run(f.body, (), {}, ())
    entries = walk.entries
    for template, found in walk.instances.items():
        keys = [k for k, _ in found]
        instances = [inst for _, inst in found]
        for key, inst, items in zip(keys, instances, template.instantiate(instances), strict=True):
            entries += [Entry((*key, *inst.thread, j), inst.thread, x) for j, x in enumerate(items)]
    entries.sort(key=lambda e: (e.thread, e.key))
    out = Streams(entries)
    out.title = "operations per virtual thread, before interleaving"
    return out


def interleave_vthreads(streams: Streams) -> Streams:
    """One stream: the threads' operations merged by program point."""
    out = Streams(sorted(streams, key=lambda e: e.key))
    out.title = "operations, virtual threads interleaved"
    return out
