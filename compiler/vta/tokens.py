"""Dependence-token insertion: one interleaved instruction stream, ordered only where needed.

Every instruction records the SRAM rows it reads and writes. Walking the stream in order, an
instruction that reads rows another stage wrote (RAW) or overwrites rows another stage still
reads (WAR) must wait for that instruction: the producer pushes a token right after it and the
consumer pops it. The k-th pop of a queue pairs with its k-th push, so a consumer waits for the
newest producer it depends on and skips producers an earlier pop already covered. With virtual
threads this gives the double-buffering pattern of the seeds' figure: a thread's load waits
only for the compute that last read *its* buffer (the loop-carried token), the first iteration
waits for nothing (the prologue's tokens cancel) and nothing is left to drain (the epilogue).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vta.builder import ProgramBuilder
from vta.isa import SHARED_BUFFERS as CROSSING
from vta.isa import Module

# for each memory crossing stages: (the stage that writes it, the stage that reads it)

Rows = tuple[str, int, int]  # (memory kind, first row, end row)


@dataclass
class Op:
    """One instruction to emit through the builder, with the rows it touches."""

    stage: Module
    method: str  # ProgramBuilder method: load, store, gemm, alu
    kwargs: dict[str, Any]
    reads: list[Rows] = field(default_factory=list)
    writes: list[Rows] = field(default_factory=list)


def plan_tokens(ops: list[Op], depth: dict[str, int]) -> tuple[list[set], list[set]]:
    """For each op, the stages it pops from before it and pushes to after it."""
    last_write = {m: np.full(depth[m], -1) for m in CROSSING}
    last_read = {m: np.full(depth[m], -1) for m in CROSSING}
    waited: dict[tuple[Module, Module], int] = {}
    pops: list[set] = [set() for _ in ops]
    pushes: list[set] = [set() for _ in ops]
    for b, op in enumerate(ops):
        need: dict[Module, int] = {}
        for mem, lo, hi in op.reads:
            if mem in CROSSING and CROSSING[mem][1] == op.stage:
                producer = CROSSING[mem][0]
                need[producer] = max(need.get(producer, -1), int(last_write[mem][lo:hi].max()))
        for mem, lo, hi in op.writes:
            if mem in CROSSING and CROSSING[mem][0] == op.stage:
                reader = CROSSING[mem][1]
                need[reader] = max(need.get(reader, -1), int(last_read[mem][lo:hi].max()))
        for other, a in need.items():
            if a > waited.get((other, op.stage), -1):
                waited[(other, op.stage)] = a
                pushes[a].add(op.stage)
                pops[b].add(other)
        for mem, lo, hi in op.reads:
            if mem in CROSSING:
                last_read[mem][lo:hi] = b
        for mem, lo, hi in op.writes:
            if mem in CROSSING:
                last_write[mem][lo:hi] = b
    return pops, pushes


def emit(ops: list[Op], builder: ProgramBuilder) -> None:
    """Append `ops` with their dependence tokens, then the final synchronization."""
    pops, pushes = plan_tokens(ops, builder.config.depth)
    for op, pop, push in zip(ops, pops, pushes, strict=True):
        for src in sorted(pop):
            builder.dep_pop(src, op.stage)
        getattr(builder, op.method)(**op.kwargs)
        for dst in sorted(push):
            builder.dep_push(op.stage, dst)
    builder.finish()
