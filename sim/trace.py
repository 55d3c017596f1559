"""Chrome / Perfetto trace-event timeline of a cycle-level run.

One track per module (fetch, load, compute, store); one slice per instruction named by its opcode
(and memory type or ALU op), with its index and cycle numbers as arguments; waits for a token, for
command-queue room, for instruction bytes and for room in a full token queue are slices of their
own. Timestamps are microseconds at the configuration's clock. Open the file in ui.perfetto.dev
or chrome://tracing.
"""

from __future__ import annotations

import json
from pathlib import Path

from vta.config import VTAConfig
from vta.isa import AluInsn, Insn, MemInsn, TokenQueue
from vta.stats import MODULES

from .schedule import Schedule

PID = 1
TRACKS = MODULES  # fetch, load, compute, store; thread id = position


def insn_label(insn: Insn) -> str:
    """Slice name: opcode, plus memory type for LOAD/STORE and the operation for ALU."""
    if isinstance(insn, MemInsn):
        return "NOP" if insn.is_nop else f"{insn.opcode.name} {insn.memory_type.name}"
    if isinstance(insn, AluInsn):
        return f"ALU {insn.alu_opcode.name}{' imm' if insn.use_imm else ''}"
    return insn.opcode.name


def trace_events(sched: Schedule, cfg: VTAConfig) -> list[dict]:
    """The trace events of a schedule, metadata first."""
    us = 1.0 / cfg.clock_mhz  # microseconds per cycle
    events: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": PID, "args": {"name": f"VTA {cfg.name}"}}
    ]
    for tid, track in enumerate(TRACKS):
        events.append(
            {"name": "thread_name", "ph": "M", "pid": PID, "tid": tid, "args": {"name": track}}
        )
        events.append(
            {
                "name": "thread_sort_index",
                "ph": "M",
                "pid": PID,
                "tid": tid,
                "args": {"sort_index": tid},
            }
        )

    def span(tid: int, name: str, cat: str, begin: int, cycles: int, **args) -> None:
        if cycles > 0:
            events.append(
                {
                    "name": name,
                    "cat": cat,
                    "ph": "X",
                    "pid": PID,
                    "tid": tid,
                    "ts": begin * us,
                    "dur": cycles * us,
                    "args": {"cycle": begin, "cycles": cycles, **args},
                }
            )

    columns = zip(
        sched.insns,
        sched.module.tolist(),
        sched.dispatch.tolist(),
        sched.ready.tolist(),
        sched.start.tolist(),
        sched.end.tolist(),
        sched.done.tolist(),
        sched.busy.tolist(),
        sched.stall_dram.tolist(),
        sched.wait_queue.tolist(),
        sched.fetch_dram.tolist(),
        sched.fetch_queue.tolist(),
        strict=True,
    )
    for index, row in enumerate(columns):
        insn, m, dispatch, ready, start, end, done, busy, dram, queue, f_dram, f_queue = row
        label, tid = insn_label(insn), m + 1  # module m is track m + 1, after fetch
        queued = dispatch - f_queue
        span(0, "wait insn bytes", "stall_dram", queued - f_dram, f_dram, index=index)
        span(0, f"{TRACKS[tid]} queue full", "stall_queue", queued, f_queue, index=index)
        span(0, f"dispatch {label}", "dispatch", dispatch, 1, index=index)
        if queue >= 0:
            span(
                tid,
                f"wait {TokenQueue(queue).name.lower()}",
                "stall_token",
                ready,
                start - ready,
                index=index,
            )
        span(tid, label, "insn", start, end - start, index=index, busy=busy, stall_dram=dram)
        span(tid, "push: token queue full", "stall_queue", end, done - end, index=index)
    return events


def write_trace(path: str | Path, sched: Schedule, cfg: VTAConfig) -> None:
    """Write the timeline as trace-event JSON."""
    doc = {"traceEvents": trace_events(sched, cfg), "displayTimeUnit": "ns"}
    Path(path).write_text(json.dumps(doc))
