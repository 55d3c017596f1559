"""Seeded random valid Programs for differential fuzzing across devices.

`random_program(seed, config)` builds a small Program of 1-2 interleaved virtual threads. Each
thread owns disjoint INP/WGT/ACC windows of SRAM and repeats load -> compute -> store phases,
joined by RAW tokens (l2g, g2s) and WAR tokens (g2l, s2g; with prologue/epilogue tokens or with
the first pop and last push left out). Phases carry random 2-D loads with zero padding, LOAD ACC,
GEMM with and without reset and every ALU op the configuration has (MUL, REQ where enabled) over
micro-op kernels with 0-2 affine loops, and stores. Choices only read SRAM already written, never
let two consecutive GEMM micro-ops write one ACC row, and interleave the threads so each token
pairs with its own thread's producer: every Program validates.
"""

from __future__ import annotations

import dataclasses
from collections import deque

import numpy as np

from vta.builder import ProgramBuilder
from vta.config import VTAConfig
from vta.isa import AluOp, MemType, Module, TokenQueue, available_alu_ops, requant_imm
from vta.program import Program

LOAD, COMPUTE, STORE = Module.LOAD, Module.COMPUTE, Module.STORE
Queue = tuple[Module, Module]  # (producer, consumer): the arguments of dep_pop / dep_push
L2G, G2L, G2S, S2G = ((q.producer, q.consumer) for q in TokenQueue)
Action = tuple[str, tuple, dict]  # a ProgramBuilder method, its arguments and keywords
KERNEL_TRIES = 8
LONG = 0.15  # share of long copies (rows of a whole window) and of sweeping kernels
PAD_ONLY = 0.1  # share of vertically padded loads with y_size 0


@dataclasses.dataclass(frozen=True)
class FuzzKnobs:
    """Size limits of generated Programs (upper bounds, inclusive)."""

    max_threads: int = 2
    max_rounds: int = 3  # load -> compute -> store rounds per virtual thread
    max_loads: int = 2  # INP loads and WGT loads per load phase, each
    max_ops: int = 4  # LOAD ACC / GEMM / ALU per compute phase
    max_stores: int = 2
    max_uops: int = 3  # micro-ops per kernel
    max_extent: int = 4  # iterations of an affine micro-op loop
    max_factor: int = 3  # index step of an affine loop
    max_pad: int = 2
    window: int = 40  # SRAM entries of each buffer a thread uses (fewer if the buffer is small)
    dram_elems: int = 48  # elements of each DRAM buffer


@dataclasses.dataclass
class _Phase:
    """One phase of a virtual thread: builder actions, token ops included."""

    actions: list[Action]

    def tokens(self, op: str) -> list[Queue]:
        return [args for name, args, _ in self.actions if name == op]


class _Thread:
    """A virtual thread's SRAM windows and which of their entries hold data."""

    def __init__(self, rng: np.random.Generator, cfg: VTAConfig, knobs: FuzzKnobs, k: int, n: int):
        self.lo: dict[MemType, int] = {}
        self.written: dict[MemType, np.ndarray] = {}
        for mem in (MemType.INP, MemType.WGT, MemType.ACC):
            share = cfg.depth[mem] // n
            size = min(knobs.window, share)
            self.lo[mem] = k * share + int(rng.integers(0, share - size + 1))
            self.written[mem] = np.zeros(size, dtype=bool)
        self.written[MemType.OUT] = np.zeros_like(self.written[MemType.ACC])  # OUT rows: ACC's


def _loop_offsets(loops: list[tuple], column: int) -> np.ndarray:
    """Index offsets of one micro-op field over the loops, in execution order (outer first)."""
    seq = np.zeros(1, dtype=np.int64)
    for loop in reversed(loops):
        seq = (np.arange(loop[0])[:, None] * loop[column] + seq[None, :]).reshape(-1)
    return seq


def _bases(allowed: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Window positions v with v + o allowed for every offset o."""
    ok = allowed.copy()
    for o in np.unique(offsets).tolist():
        if o >= ok.size:
            return np.zeros(0, dtype=np.int64)
        ok[ok.size - o :] = False
        ok[: ok.size - o] &= allowed[o:]
    return np.flatnonzero(ok)


class _Generator:
    """Random phases for each thread, then one interleaved instruction stream."""

    def __init__(self, seed: int, cfg: VTAConfig, knobs: FuzzKnobs):
        self.rng = np.random.default_rng(seed)
        self.cfg, self.knobs = cfg, knobs
        self.ops = available_alu_ops(cfg)

    def _int(self, lo: int, hi: int) -> int:
        """A random integer in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    # ------------------------------------------------------------------------- data
    def _buffers(self, b: ProgramBuilder) -> None:
        """Random DRAM buffers "inp", "wgt", "acc" and "out" (filled too: stale bytes show)."""
        cfg, n, rng = self.cfg, self.knobs.dram_elems, self.rng
        shapes = {
            "inp": (n, cfg.batch, cfg.block_in),
            "wgt": (n, cfg.block_out, cfg.block_in),
            "out": (n, cfg.batch, cfg.block_out),
        }
        for name, role in (("inp", "input"), ("wgt", "weight"), ("out", "output")):
            b.buffer(name, shapes[name], "int8", role, rng.integers(-128, 128, shapes[name]))
        # ACC data mixes small values (in-range shift amounts, MIN/MAX ties) with full int32.
        scale = rng.choice([40, 1 << 12, 1 << 31], size=shapes["out"])
        acc = rng.integers(-scale, scale, dtype=np.int64).astype(np.int32)
        b.buffer("acc", shapes["out"], "int32", "input", acc)

    # ------------------------------------------------------------------------- load / store
    def _rows(self, x: int, y_max: int) -> tuple[int, int, int]:
        """Rows y, x_stride (equal to, above or below x: overlapping rows) and a first DRAM
        element for a 2-D copy of x-element rows that fits the DRAM buffer."""
        n, roll = self.knobs.dram_elems, self.rng.random()
        stride = x if roll < 0.5 else x + self._int(1, 3) if roll < 0.8 else self._int(0, x - 1)
        y = self._int(1, min(y_max, 1 + (n - x) // max(stride, 1)))
        return y, stride, self._int(0, n - ((y - 1) * stride + x))

    def _row_max(self, size: int) -> int:
        """Longest row of a copy: mostly short, sometimes a whole window (several bursts)."""
        return size if self.rng.random() < LONG else 6

    def _load(self, t: _Thread, mem: MemType) -> Action:
        """A 2-D strided LOAD into a random place of the thread's window (WGT unpadded)."""
        k = self.knobs
        size = t.written[mem].size
        x, y, stride, elem, pad = 1, 1, 1, 0, (0, 0, 0, 0)
        for _ in range(KERNEL_TRIES):
            xs = self._int(1, min(self._row_max(size), k.dram_elems))
            ys, strides, elems = self._rows(xs, 4)
            pads = tuple(
                self._int(1, k.max_pad) if mem != MemType.WGT and self.rng.random() < 0.3 else 0
                for _ in range(4)
            )
            if (pads[0] + ys + pads[1]) * (pads[2] + xs + pads[3]) <= size:
                x, y, stride, elem, pad = xs, ys, strides, elems, pads
                break
        if pad[0] + pad[1] and self.rng.random() < PAD_ONLY:
            y = 0  # no DRAM rows: the load writes only its zero padding
        footprint = (pad[0] + y + pad[1]) * (pad[2] + x + pad[3])
        base = self._int(0, size - footprint)
        t.written[mem][base : base + footprint] = True
        args = (mem, t.lo[mem] + base, mem.name.lower(), elem, y, x, stride)
        return ("load", args, {"pad": pad})

    def _store(self, t: _Thread) -> Action | None:
        """A STORE of a block of OUT rows that GEMM/ALU wrote, or None if there is none."""
        written = t.written[MemType.OUT]
        edges = np.flatnonzero(np.diff(np.concatenate([[0], written.astype(np.int8), [0]])))
        if not edges.size:
            return None
        starts, ends = edges[::2], edges[1::2]
        r = int(self.rng.integers(starts.size))
        run = int(ends[r] - starts[r])
        x = self._int(1, min(run, self._row_max(run), self.knobs.dram_elems))
        y, stride, elem = self._rows(x, min(run // x, 3))
        base = int(starts[r]) + self._int(0, run - x * y)
        return ("store", (t.lo[MemType.ACC] + base, "out", elem, y, x, stride), {})

    # ------------------------------------------------------------------------- kernels
    def _kernel(
        self, fields: list[tuple[np.ndarray, int]], gemm: bool
    ) -> tuple[np.ndarray, list[tuple]]:
        """Micro-ops and 0-2 affine loops whose indices of field f stay where fields[f][0] is
        true (window positions; fields[f][1] is the window's first SRAM entry)."""
        k = self.knobs
        for _ in range(KERNEL_TRIES):
            sweep = self.rng.random() < LONG  # one micro-op swept over a window's rows
            if sweep:
                size = fields[0][0].size
                extents, n_uops = [self._int(min(8, size), size)], 1
            else:
                extents = [self._int(1, k.max_extent) for _ in range(self._int(0, 2))]
                n_uops = self._int(1, k.max_uops)
            columns, factors = [], []
            for col, (allowed, lo) in enumerate(fields):
                if sweep:
                    steps = [1 if col == 0 else self._int(0, 1)]
                else:
                    steps = [self._int(0, k.max_factor) for _ in extents]
                offsets = _loop_offsets(list(zip(extents, steps, strict=True)), 1)
                candidates = _bases(allowed, offsets)
                if not candidates.size:
                    steps, candidates = [0] * len(extents), np.flatnonzero(allowed)
                columns.append(lo + self.rng.choice(candidates, n_uops))
                factors.append(steps)
            loops = [(e, *(f[i] for f in factors)) for i, e in enumerate(extents)]
            uops = np.stack(columns, axis=1)
            dst = uops[:, 0][None, :] + _loop_offsets(loops, 1)[:, None]
            rows = dst.reshape(-1)
            if not gemm or not np.any(rows[1:] == rows[:-1]):  # GEMM: no back-to-back row
                return uops, loops
        uop = [lo + int(self.rng.choice(np.flatnonzero(allowed))) for allowed, lo in fields]
        return np.array([uop]), []

    def _gemm(self, t: _Thread, reset: bool) -> Action:
        kinds = (MemType.ACC, MemType.INP, MemType.WGT)
        source = {m: np.ones_like(t.written[m]) for m in kinds} if reset else t.written
        fields = [(source[m], t.lo[m]) for m in kinds]
        uops, loops = self._kernel(fields, gemm=True)
        self._wrote(t, uops[:, 0], loops)
        return ("gemm", (uops,), {"loops": loops, "reset": reset})

    def _alu(self, t: _Thread) -> Action:
        op = self.ops[int(self.rng.integers(len(self.ops)))]
        use_imm = bool(self.rng.random() < 0.5)
        acc, lo = t.written[MemType.ACC], t.lo[MemType.ACC]
        src = np.ones_like(acc) if use_imm else acc
        uops, loops = self._kernel([(acc, lo), (src, lo)], gemm=False)
        if op == AluOp.SHR:
            imm = self._int(-40, 40)  # negative: left shift; beyond +-31: saturates
        elif op == AluOp.REQ:
            imm = requant_imm(self._int(0, 31), self.rng.random() < 0.5)
        elif self.rng.random() < 0.5:
            imm = self._int(-100, 100)
        else:
            imm = self._int(-(1 << 15), (1 << 15) - 1)
        self._wrote(t, uops[:, 0], loops)
        return ("alu", (op, uops), {"loops": loops, "use_imm": use_imm, "imm": imm})

    @staticmethod
    def _wrote(t: _Thread, dst: np.ndarray, loops: list[tuple]) -> None:
        rows = (dst[None, :] + _loop_offsets(loops, 1)[:, None]).reshape(-1) - t.lo[MemType.ACC]
        t.written[MemType.ACC][rows] = True
        t.written[MemType.OUT][rows] = True

    # ------------------------------------------------------------------------- phases
    def _load_phase(self, t: _Thread, war_pop: bool) -> _Phase:
        first = not t.written[MemType.INP].any()
        mems = [MemType.INP] * self._int(int(first), self.knobs.max_loads)
        mems += [MemType.WGT] * self._int(int(first), self.knobs.max_loads)
        self.rng.shuffle(mems)
        actions = [("dep_pop", G2L, {})] if war_pop else []
        actions += [self._load(t, mem) for mem in mems]
        actions.append(("dep_push", L2G, {}))
        return _Phase(actions)

    def _compute_phase(self, t: _Thread, war_pop: bool, war_push: bool) -> _Phase:
        """Ops with the RAW pop before the first INP/WGT read, the WAR pop before the first OUT
        write, and the INP/WGT release right after the last read or at the end."""
        ops: list[tuple[str, Action]] = []  # (role, action); role "read" GEMMs read INP/WGT
        for _ in range(self._int(1, self.knobs.max_ops)):
            acc = t.written[MemType.ACC].any()
            choices = ["load_acc", "reset"] + ["alu"] * 3 * int(acc)
            choices += (
                ["gemm"]
                * 3
                * int(acc and t.written[MemType.INP].any() and t.written[MemType.WGT].any())
            )
            ops.append(self._op(t, choices[int(self.rng.integers(len(choices)))]))
        if all(role == "load" for role, _ in ops):
            ops.append(self._op(t, "alu"))
        reads = [i for i, (role, _) in enumerate(ops) if role == "read"]
        writes = [i for i, (role, _) in enumerate(ops) if role != "load"]
        raw_pop = reads[0] if reads else 0
        release = reads[-1] + 1 if reads and self.rng.random() < 0.5 else len(ops)
        actions: list[Action] = []
        for i, (_, action) in enumerate(ops):
            if i == raw_pop:
                actions.append(("dep_pop", L2G, {}))
            if war_pop and i == writes[0]:
                actions.append(("dep_pop", S2G, {}))
            actions.append(action)
            if war_push and i + 1 == release:
                actions.append(("dep_push", G2L, {}))
        actions.append(("dep_push", G2S, {}))
        return _Phase(actions)

    def _op(self, t: _Thread, kind: str) -> tuple[str, Action]:
        if kind == "load_acc":
            return "load", self._load(t, MemType.ACC)
        if kind == "alu":
            return "write", self._alu(t)
        return ("write" if kind == "reset" else "read"), self._gemm(t, reset=kind == "reset")

    def _store_phase(self, t: _Thread, war_push: bool) -> _Phase:
        stores = [self._store(t) for _ in range(self._int(1, self.knobs.max_stores))]
        actions = [("dep_pop", G2S, {}), *[s for s in stores if s is not None]]
        if war_push:
            actions.append(("dep_push", S2G, {}))
        return _Phase(actions)

    def _thread_phases(self, t: _Thread, rounds: int, prologue: bool) -> list[_Phase]:
        n = rounds or self._int(1, self.knobs.max_rounds)
        phases = []
        for it in range(n):
            first, last = it == 0, it == n - 1
            phases.append(self._load_phase(t, war_pop=prologue or not first))
            phases.append(self._compute_phase(t, prologue or not first, prologue or not last))
            phases.append(self._store_phase(t, war_push=prologue or not last))
        return phases

    # ------------------------------------------------------------------------- stream
    def _interleave(self, threads: list[list[_Phase]], prologue: bool) -> list[_Phase]:
        """A random merge of the threads' phases in which every pop takes a token its own thread
        pushed: a phase may go next only if each queue it pops has its thread's token first."""
        queues: dict[Queue, deque[int]] = {q: deque() for q in (L2G, G2L, G2S, S2G)}
        if prologue:
            for t in range(len(threads)):
                queues[G2L].append(t)
                queues[S2G].append(t)
        merged, nxt = [], [0] * len(threads)
        while len(merged) < sum(map(len, threads)):
            ready = [
                t
                for t, phases in enumerate(threads)
                if nxt[t] < len(phases)
                and all(queues[q] and queues[q][0] == t for q in phases[nxt[t]].tokens("dep_pop"))
            ]
            if not ready:
                raise AssertionError("fuzz: token queues out of thread order (generator bug)")
            t = ready[int(self.rng.integers(len(ready)))]
            phase = threads[t][nxt[t]]
            nxt[t] += 1
            for q in phase.tokens("dep_pop"):
                queues[q].popleft()
            for q in phase.tokens("dep_push"):
                queues[q].append(t)
            merged.append(phase)
        return merged

    def program(self) -> Program:
        b = ProgramBuilder(self.cfg)
        self._buffers(b)
        n = self._int(1, self.knobs.max_threads)
        prologue = bool(self.rng.random() < 0.5)
        threads = [_Thread(self.rng, self.cfg, self.knobs, k, n) for k in range(n)]
        # A thread's last tokens stay queued until the epilogue, ahead of any later token of
        # another thread, so with prologue tokens every thread runs the same number of rounds.
        rounds = self._int(1, self.knobs.max_rounds) if prologue else 0
        per_thread = [self._thread_phases(t, rounds, prologue) for t in threads]
        phases = self._interleave(per_thread, prologue)
        if prologue:  # CoProcSync: each thread's INP/WGT and OUT start free
            for _ in threads:
                b.dep_push(COMPUTE, LOAD)
                b.dep_push(STORE, COMPUTE)
        for phase in phases:
            for name, args, kwargs in phase.actions:
                getattr(b, name)(*args, **kwargs)
        if prologue:  # drain the tokens of each thread's last round
            for _ in threads:
                b.dep_pop(COMPUTE, LOAD)
                b.dep_pop(STORE, COMPUTE)
        b.finish()
        return b.build(validate=True)


def random_program(
    seed: int, config: VTAConfig | str | None = None, knobs: FuzzKnobs | None = None
) -> Program:
    """A random valid Program (validated; same seed and config, same Program)."""
    return _Generator(seed, VTAConfig.load(config), knobs or FuzzKnobs()).program()
