"""`Schedule`: when each instruction of a cycle-level run was dispatched, started and ended."""

from __future__ import annotations

import dataclasses

import numpy as np

from vta.isa import Insn, Module
from vta.stats import Stats


@dataclasses.dataclass
class Schedule:
    """When every instruction was dispatched, became ready, started, ended and was done.

    `ready` is when it reached the head of its idle module; `start - ready` is token stall;
    `end - start` its cost; `done - end` a stall pushing into a full token queue. `wait_queue`
    is the token queue that held it last (-1 if none), `fetch_dram`/`fetch_queue` the cycles
    fetch waited for its bytes and for command-queue room before dispatching it.
    """

    insns: list[Insn]
    module: np.ndarray
    dispatch: np.ndarray
    ready: np.ndarray
    start: np.ndarray
    end: np.ndarray
    done: np.ndarray
    busy: np.ndarray
    stall_dram: np.ndarray
    wait_queue: np.ndarray
    fetch_dram: np.ndarray
    fetch_queue: np.ndarray

    @property
    def cycles(self) -> int:
        """The run's cycle count: the end of FINISH (the stream's last instruction)."""
        return int(self.end[-1])

    def states_at(self, cycle: int) -> list[str]:
        """What fetch and each module is doing at `cycle`: one line each."""
        fetched = int(np.count_nonzero(self.dispatch <= cycle))
        lines = [f"fetch: {fetched} of {len(self.insns)} instructions dispatched"]
        for m in Module:
            mine = np.flatnonzero(self.module == m)
            busy = mine[(self.start[mine] <= cycle) & (cycle < self.done[mine])]
            later = mine[self.start[mine] > cycle]
            if busy.size:
                j = int(busy[0])
                state = (
                    f"busy with instruction {j} ({self.insns[j].opcode.name}) from cycle "
                    f"{int(self.start[j]):,} to {int(self.end[j]):,}"
                )
            elif later.size:
                j = int(later[0])
                state = f"waiting at instruction {j} ({self.insns[j].opcode.name})"
            else:
                state = "finished"
            lines.append(f"{m.label}: {state}")
        return lines

    def fill(self, stats: Stats) -> None:
        """Per-module busy/stall cycles and instruction counts, and the cycle count."""
        stats.cycles = self.cycles
        fetch = stats.modules["fetch"]
        fetch.instructions = len(self.insns)
        fetch.busy = len(self.insns)  # one dispatch per cycle
        fetch.stall_dram = int(self.fetch_dram.sum())
        fetch.stall_queue = int(self.fetch_queue.sum())
        per_module = {
            "busy": self.busy,
            "stall_dram": self.stall_dram,
            "stall_token": self.start - self.ready,
            "stall_queue": self.done - self.end,
        }
        for key, values in per_module.items():
            sums = np.bincount(self.module, weights=values, minlength=3)
            for m in Module:
                setattr(stats.modules[m.label], key, int(sums[m]))
        counts = np.bincount(self.module, minlength=3)
        for m in Module:
            stats.modules[m.label].instructions = int(counts[m])
