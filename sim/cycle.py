"""`sim`: the cycle-level simulator, the default device.

Event-driven per instruction: each instruction's dispatch, start, end and push events are
computed from the events they wait on (its fetch, its module becoming free, the tokens it pops,
room in the queues it pushes) with the exact costs of `sim.timing`, never by stepping a clock.
Timing does not depend on data, so the whole schedule is computed first; then the functional
core applies the instructions in start-time order, which the dependence tokens make equivalent
to program order for a valid Program.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path

import numpy as np

from vta.config import VTAConfig
from vta.device import Device, check_budget, finish_prefix, until_finish
from vta.errors import BudgetError, DeadlockError, DeviceError, ISAError, ProgramError
from vta.isa import DEP_FIELDS, MODULE_FLAGS, Insn, Module, TokenQueue, insn_module
from vta.program import Program
from vta.stats import Stats

from .functional import FunctionalCore
from .schedule import Schedule
from .timing import HANDOFF_CYCLES, fetch_arrivals, insn_cost
from .trace import write_trace

# The default cycle budget of a run (about 11 s of accelerator time at 100 MHz); a run that
# would take longer raises BudgetError before any data is computed.
DEFAULT_MAX_CYCLES = 1 << 30
QUEUE_PRODUCER = [int(q.producer) for q in TokenQueue]
QUEUE_CONSUMER = [int(q.consumer) for q in TokenQueue]


class _Engine:
    """Computes a Schedule by advancing fetch and each module as far as its inputs are known."""

    def __init__(self, insns: list[Insn], cfg: VTAConfig):
        self.insns = insns
        self.cfg = cfg
        n = len(insns)
        self.module, self.pops, self.pushes, self.busy, self.stall_dram = [], [], [], [], []
        for index, insn in enumerate(insns):
            m = insn_module(insn)
            self.module.append(m)
            popped, pushed = _dependences(insn, index, m)
            self.pops.append(popped)
            self.pushes.append(pushed)
            try:
                cost = insn_cost(insn, cfg)
            except ISAError as err:
                raise ProgramError(f"instruction {index}: {err}") from None
            self.busy.append(cost.busy)
            self.stall_dram.append(cost.stall_dram)
        self.order: list[list[int]] = [[], [], []]  # each command queue's instructions
        self.slot = [0] * n  # position of each instruction in its command queue
        for index, m in enumerate(self.module):
            self.slot[index] = len(self.order[m])
            self.order[m].append(index)
        self.arrival = fetch_arrivals(n, cfg).tolist()
        self.dispatch = [0] * n
        self.ready = [0] * n
        self.start = [-1] * n
        self.end = [0] * n
        self.done = [0] * n
        self.wait_queue = [-1] * n
        self.fetch_dram = [0] * n
        self.fetch_queue = [0] * n
        self.pushed: list[list[int]] = [[], [], [], []]  # visible cycle of each token pushed
        self.popped: list[list[int]] = [[], [], [], []]  # cycle each token was popped
        self.fetched = 0  # instructions dispatched so far
        self.next = [0, 0, 0]  # next command-queue position per module
        self.started = [False, False, False]  # its head instruction started, pushes pending
        self.free = [0, 0, 0]  # first cycle each module can start its next instruction

    # --------------------------------------------------------------------------- events
    def run(self) -> Schedule:
        """Advance fetch and the modules until nothing can move. Results depend only on the
        events each step reads, so a module is revisited only when one of them changed: a
        dispatch to it, a token pushed to it, room in a queue it pushes, or (for fetch) a
        start freeing a command-queue slot."""
        wake, fetch = set(Module), True
        while wake or fetch:
            if fetch:
                first = self.fetched
                fetch = False
                if self._fetch():
                    wake.update(self.module[first : self.fetched])
            for m in sorted(wake):
                wake.discard(m)
                started, popped, pushed = self._advance(m)
                fetch |= started
                wake.update(QUEUE_PRODUCER[q] for q in popped)
                wake.update(QUEUE_CONSUMER[q] for q in pushed)
        if self.fetched < len(self.insns) or any(self.next[m] < len(self.order[m]) for m in Module):
            raise DeadlockError(self._deadlock_report())
        as_array = {
            f.name: np.asarray(getattr(self, f.name), dtype=np.int64)
            for f in dataclasses.fields(Schedule)
            if f.name != "insns"
        }
        return Schedule(self.insns, **as_array)

    def _fetch(self) -> bool:
        """Dispatch instructions in order while their command queue has room."""
        depth = self.cfg.cmd_queue_depth
        k, n = self.fetched, len(self.insns)
        last = self.dispatch[k - 1] if k else -1
        while k < n:
            t = max(self.arrival[k], last + 1)
            self.fetch_dram[k] = t - last - 1
            slot = self.slot[k]
            if slot >= depth:  # the entry `depth` places ahead must have left the queue
                freed = self.start[self.order[self.module[k]][slot - depth]]
                if freed < 0:
                    break
                room = freed + HANDOFF_CYCLES
                if room > t:
                    self.fetch_queue[k] = room - t
                    t = room
            self.dispatch[k] = last = t
            k += 1
        progressed = k > self.fetched
        self.fetched = k
        return progressed

    def _advance(self, m: int) -> tuple[bool, set[int], set[int]]:
        """Start and finish the module's instructions in order while their inputs are known;
        (whether any started, queues popped, queues pushed)."""
        order, started, popped, pushed = self.order[m], False, set(), set()
        while self.next[m] < len(order):
            j = order[self.next[m]]
            if not self.started[m]:
                if j >= self.fetched or not self._start(j, m):
                    break
                self.started[m] = started = True
                popped.update(self.pops[j])
            if not self._finish(j, m):
                break
            pushed.update(self.pushes[j])
            self.started[m] = False
            self.next[m] += 1
        return started, popped, pushed

    def _start(self, j: int, m: int) -> bool:
        ready = max(self.dispatch[j] + HANDOFF_CYCLES, self.free[m])
        start, waited = ready, -1
        for q in self.pops[j]:
            count = len(self.popped[q])
            if count >= len(self.pushed[q]):
                return False
            if self.pushed[q][count] > start:
                start, waited = self.pushed[q][count], q
        for q in self.pops[j]:
            self.popped[q].append(start)
        end = start + self.busy[j] + self.stall_dram[j]
        self.ready[j], self.start[j], self.end[j] = ready, start, end
        self.wait_queue[j] = waited
        return True

    def _finish(self, j: int, m: int) -> bool:
        done = self.end[j]
        depth = self.cfg.token_queue_depth
        for q in self.pushes[j]:
            # A push needs the token `depth` places ahead to have been popped.
            ahead = len(self.pushed[q]) - depth
            if ahead >= 0:
                if ahead >= len(self.popped[q]):
                    return False
                done = max(done, self.popped[q][ahead] + HANDOFF_CYCLES)
        for q in self.pushes[j]:
            self.pushed[q].append(done)
        self.done[j] = self.free[m] = done
        return True

    # --------------------------------------------------------------------------- deadlock
    def _deadlock_report(self) -> str:
        last = max([*self.done, *self.dispatch[: self.fetched]], default=0)
        lines = [f"deadlock after cycle {last:,}: no module can progress"]
        if self.fetched < len(self.insns):
            k = self.fetched
            name = Module(self.module[k]).label
            lines.append(
                f"fetch: blocked at instruction {k} ({self.insns[k].opcode.name}): the {name} "
                f"command queue is full ({self.cfg.cmd_queue_depth} entries)"
            )
        for m in Module:
            lines.append(f"{m.label}: {self._blocked_on(m)}")
        return "\n  ".join(lines)

    def _blocked_on(self, m: int) -> str:
        order = self.order[m]
        if self.next[m] >= len(order):
            return "finished"
        j = order[self.next[m]]
        what = f"blocked at instruction {j} ({self.insns[j].opcode.name})"
        if j >= self.fetched:
            return f"{what}: not yet fetched"
        if self.started[m]:
            depth = self.cfg.token_queue_depth
            full = [q for q in self.pushes[j] if len(self.pushed[q]) - len(self.popped[q]) >= depth]
            return f"{what}: waiting for room in full token queue " + ", ".join(
                f"{TokenQueue(q).label} ({self.cfg.token_queue_depth} tokens)" for q in full
            )
        waits = []
        for q in self.pops[j]:
            if len(self.popped[q]) < len(self.pushed[q]):
                continue
            producer = TokenQueue(q).producer
            later = self.order[producer][self.next[producer] :]
            source = (
                ""
                if any(q in self.pushes[i] for i in later)
                else (f"; no remaining {producer.label} instruction pushes it")
            )
            waits.append(f"a token on {TokenQueue(q).label}{source}")
        return f"{what}: waiting for " + " and ".join(waits)


@cache
def _token_queues(m: Module, flags: tuple[bool, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(popped, pushed) token queues of an instruction on module `m` with these DEP_FIELDS values;
    raises KeyError naming a flag the module does not have."""
    named = [MODULE_FLAGS[m][flag] for flag, value in zip(DEP_FIELDS, flags, strict=True) if value]
    popped = tuple(int(q) for q in named if q.consumer == m)
    return popped, tuple(int(q) for q in named if q.producer == m)


def _dependences(insn: Insn, index: int, m: Module) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The token queues `insn` pops and pushes; a flag its module lacks is a ProgramError."""
    try:
        return _token_queues(m, tuple(getattr(insn, flag) for flag in DEP_FIELDS))
    except KeyError as err:
        raise ProgramError(
            f"instruction {index}: {insn.opcode.name} runs on the {m.label} module, "
            f"which has no {err.args[0]!r} (valid flags there: {', '.join(MODULE_FLAGS[m])})"
        ) from None


def schedule(program: Program, max_cycles: int | None = None) -> Schedule:
    """The cycle-exact schedule of a Program (no functional execution); a run longer than
    `max_cycles` raises BudgetError naming what each module is doing at that cycle."""
    return stream_schedule(until_finish(program), program.config, max_cycles)


def stream_schedule(insns: list[Insn], cfg: VTAConfig, max_cycles: int | None = None) -> Schedule:
    """`schedule` of the instructions a device runs (up to and including FINISH)."""
    try:
        sched = _Engine(insns, cfg).run()
    except OverflowError:  # an instruction's end cycle does not fit 64 bits
        raise BudgetError("the run needs 2**63 cycles or more (beyond any cycle limit)") from None
    if max_cycles is not None and sched.cycles > max_cycles:
        over = np.flatnonzero(sched.end > max_cycles)
        j = int(over[np.argmin(sched.start[over])])
        raise BudgetError(
            f"cycle limit {max_cycles:,} exceeded: instruction {j} ({sched.insns[j].opcode.name})"
            f" on {Module(sched.module[j]).label} would end at cycle {int(sched.end[j]):,}; the "
            f"run needs {sched.cycles:,} cycles (raise max_cycles)\n  "
            + "\n  ".join(sched.states_at(max_cycles))
        )
    return sched


class CycleSimulator(Device):
    """The `sim` device: cycle-level timing per docs/timing.md plus bit-exact results."""

    name = "sim"

    def __init__(self, trace: str | Path | None = None, max_cycles: int | None = None, **options):
        if options:
            raise DeviceError(
                f"device 'sim' takes the options trace and max_cycles, got {sorted(options)}"
            )
        self.trace = trace
        self.max_cycles = check_budget(
            DEFAULT_MAX_CYCLES if max_cycles is None else max_cycles, "max_cycles", self.name
        )

    def time(self, program: Program) -> Stats:
        """Cycles, per-module busy/stall and the stream's counters, without computing data
        (timing does not depend on it): about a microsecond per instruction."""
        sched = schedule(program, self.max_cycles)
        stats = self.new_stats(program.config)
        stats.count_stream(sched.insns, program.config)
        sched.fill(stats)
        if self.trace is not None:
            write_trace(self.trace, sched, program.config)
        return stats

    def cycles(self, program: Program) -> int:
        """The run's cycles alone: the schedule without the Stats' counters."""
        return schedule(program, self.max_cycles).cycles

    def stream_cycles(self, insns: list[Insn], config: VTAConfig) -> int:
        """The cycles of an instruction stream (up to its FINISH) that is not a Program yet:
        timing depends on no data, so a knob search need not encode candidates or make their
        DRAM images (`ProgramBuilder.stream`)."""
        return stream_schedule(finish_prefix(insns), config, self.max_cycles).cycles

    def execute(self, program: Program, dram: np.ndarray) -> tuple[np.ndarray, Stats]:
        """Run `program` on a copy of `dram`; return the final image and the run's Stats."""
        sched = schedule(program, self.max_cycles)
        image = np.array(dram, dtype=np.uint8, copy=True).reshape(-1)
        stats = self.new_stats(program.config)
        core = FunctionalCore(program.config, image, stats)
        insns = sched.insns
        for j in np.lexsort((np.arange(len(insns)), sched.start)).tolist():
            core.execute(insns[j], j)
        sched.fill(stats)
        if self.trace is not None:
            write_trace(self.trace, sched, program.config)
        return image, stats
