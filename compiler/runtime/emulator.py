"""A GPU emulator: runs the lowered kernels (the IR that becomes PTX) on the CPU with numpy.

Semantics are the GPU's: blocks run in any order (a seeded shuffle, in chunks), the threads of a
block run in lock-step between barriers, each block has its own shared memory and each thread
its own local memory, and memory starts as garbage (NaN or 0x5A5A5A5A) as on a device. Every
thread of a chunk of blocks is one numpy lane, so a statement costs a few array operations,
not a Python step per thread: a kernel is translated once into Python source whose uniform
loops are Python loops and whose per-thread values are arrays. Index parts that depend only on
the thread and block indices are computed once per chunk.

Races are detected, not masked by the lock-step order: between two barriers, an element of a
shared buffer written by one thread and read or written by another is a race (a missing
barrier), and so is an element of a global buffer written by one block and touched by another
in the same kernel. Out-of-bounds accesses by active threads are errors too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..arith import Analyzer
from ..arith.simplify import Lin, is_index, skey
from ..errors import CompilerError
from ..tir import dtype as dt
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.functor import collect, free_vars
from ..tir.transform.thread import BARRIER, BLOCK_TAGS, THREAD_TAGS, launch_extents

MAX_LANES = 1 << 17  # threads emulated at once (memory: locals are kept per thread)
MAX_HOISTED_BYTES = 256 << 20
GARBAGE_INT = 0x5A5A5A5A


class EmulatorError(CompilerError):
    """A kernel did something a GPU would not do reliably: a race, an out-of-bounds access."""


class RaceError(EmulatorError):
    """Two threads (or blocks) accessed one element without the synchronization ordering them."""


def garbage(shape: Any, dtype: str | np.dtype) -> np.ndarray:
    """Uninitialized device memory: NaN for floats, 0x5A.. for integers."""
    d = np.dtype(dtype)
    if d.kind == "f":
        return np.full(shape, np.nan, d)
    return np.full(shape, GARBAGE_INT, np.int64).astype(d)


# ------------------------------------------------------------------------------------ races
@dataclass
class _Log:
    """Accesses of one buffer as (address, first agent, last agent) rows, checked when an
    epoch (barrier interval) or a kernel ends."""

    name: str
    size: int  # elements per block for shared buffers, 0 for global ones
    reads: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    writes: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)

    def add(self, writes: bool, addr: np.ndarray, agent: np.ndarray) -> None:
        """Accesses at `addr` (lanes first) by `agent` (one per lane)."""
        agent = np.broadcast_to(agent.reshape(-1, *([1] * (addr.ndim - 1))), addr.shape)
        (self.writes if writes else self.reads).append((addr.ravel(), agent.ravel()))

    def clear(self) -> None:
        self.reads.clear()
        self.writes.clear()

    def check(self, kernel: str, who: str) -> None:
        if not self.writes:
            self.clear()
            return
        wa = np.concatenate([a for a, _ in self.writes]).astype(np.int64)
        wg = np.concatenate([g for _, g in self.writes]).astype(np.int64)
        order = np.argsort(wa, kind="stable")
        wa, wg = wa[order], wg[order]
        uniq, start = np.unique(wa, return_index=True)
        lo, hi = np.minimum.reduceat(wg, start), np.maximum.reduceat(wg, start)
        bad = np.flatnonzero(lo != hi)
        if bad.size:
            self._race(kernel, who, int(uniq[bad[0]]), int(lo[bad[0]]), int(hi[bad[0]]), "write")
        for ra, rg in self.reads:
            pos = np.searchsorted(uniq, ra)
            hit = pos < len(uniq)
            hit[hit] = uniq[pos[hit]] == ra[hit]
            diff = np.flatnonzero(hit)
            diff = diff[rg[diff] != lo[pos[diff]]]
            if diff.size:
                k = diff[0]
                self._race(kernel, who, int(ra[k]), int(lo[pos[k]]), int(rg[k]), "read")
        self.clear()

    def _race(self, kernel: str, who: str, addr: int, a: int, b: int, other: str) -> None:
        if self.size:
            where = f"shared '{self.name}'[{addr % self.size}]"
            what = f"threads {a} and {b} of a block ({other} after a write) without a barrier"
        else:
            where = f"global '{self.name}'[{addr}]"
            what = f"blocks {a} and {b} ({other} after a write) in one kernel launch"
        raise RaceError(f"kernel '{kernel}': {where} is accessed by {what}; {who}")


# ---------------------------------------------------------------------------- translation
def _np(dtype: str) -> str:
    return "np." + str(dt.to_numpy(dt.element_of(dtype)))


@dataclass
class _Val:
    code: str
    varying: bool  # differs between lanes (an array with the lanes first)


class _Translator:
    """Kernel IR -> the Python source of `def kernel(env)`."""

    def __init__(self, body: S.Stmt, launch_vars: dict[str, E.Var], written: set[E.Var]):
        self.ana = Analyzer()
        self.lines: list[str] = []
        self.prologue: list[str] = []
        self.indent = 1
        self.names: dict[E.Var, str] = {}
        self.varying: set[E.Var] = set(launch_vars.values())
        self.thread_vars = set(launch_vars.values())
        self.hoisted: dict[Any, str] = {}
        self.hoisted_count = 0
        self.mask: str | None = None
        self.bufs: dict[E.Var, tuple[str, S.Buffer]] = {}
        self.written = written
        self.allocs: list[S.Buffer] = []
        self._n = 0
        for tag, v in launch_vars.items():
            self.names[v] = self._fresh(tag.replace(".", "_"))
            self.prologue.append(f"    {self.names[v]} = env.index[{tag!r}]")
        self.body = body

    def _fresh(self, base: str) -> str:
        self._n += 1
        return f"{''.join(c if c.isalnum() else '_' for c in base)}_{self._n}"

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def source(self, params: list[S.Buffer]) -> str:
        for k, buf in enumerate(params):
            name = self._fresh("g_" + buf.name)
            self.bufs[buf.data] = (name, buf)
            self.prologue.append(f"    {name} = env.globals[{k}]")
        self.stmt(self.body)
        head = ["def kernel(env):", *self.prologue]
        return "\n".join(head + self.lines + ["    return None"]) + "\n"

    # ---- statements ----------------------------------------------------------------------
    def stmt(self, s: S.Stmt) -> None:
        getattr(self, "s_" + type(s).__name__)(s)

    def s_SeqStmt(self, s: S.SeqStmt) -> None:
        for x in s.seq:
            self.stmt(x)

    def s_AttrStmt(self, s: S.AttrStmt) -> None:
        self.stmt(s.body)

    def s_Allocate(self, s: S.Allocate) -> None:
        buf = s.buffer
        if buf.scope not in ("shared", "local"):
            raise EmulatorError(f"buffer '{buf.name}' of scope {buf.scope!r} inside a kernel")
        name = self._fresh(buf.name)
        self.bufs[buf.data] = (name, buf)
        k = len(self.allocs)
        self.allocs.append(buf)
        self.prologue.append(f"    {name} = env.allocs[{k}]")
        if buf.scope == "shared":
            self.prologue.append(f"    {name}_base = env.block_base({buf.const_size()})")
        self.stmt(s.body)

    def s_LetStmt(self, s: S.LetStmt) -> None:
        v = self.expr(s.value)
        name = self._fresh(s.var.name)
        self.names[s.var] = name
        if v.varying:
            self.varying.add(s.var)
            self.emit(f"{name} = np.array({v.code})")
        else:
            self.emit(f"{name} = {v.code}")
        self.stmt(s.body)

    def s_For(self, s: S.For) -> None:
        lo, ext = self.expr(s.min), self.expr(s.extent)
        if lo.varying or ext.varying:
            raise EmulatorError(f"loop '{s.loop_var.name}' has bounds that differ per thread")
        name = self._fresh(s.loop_var.name)
        self.names[s.loop_var] = name
        a, n = E.as_int(s.min), E.as_int(s.extent)
        if a is not None and n is not None:
            self.ana.bind(s.loop_var, a, a + n - 1)
        if n == 1:  # runs once: no block (Python compiles at most 20 nested blocks)
            self.emit(f"{name} = {lo.code}")
            self.stmt(s.body)
            return
        self.emit(f"for {name} in range({lo.code}, ({lo.code}) + ({ext.code})):")
        self.indent += 1
        self.emit("pass")
        self.stmt(s.body)
        self.indent -= 1

    def s_IfThenElse(self, s: S.IfThenElse) -> None:
        c = self.expr(s.cond)
        if not c.varying:
            self.emit(f"if {c.code}:")
            self._block(s.then_case)
            if s.else_case is not None:
                self.emit("else:")
                self._block(s.else_case)
            return
        outer = self.mask
        cond = self._fresh("c")
        self.emit(f"{cond} = np.broadcast_to({c.code}, env.lanes)")
        for branch, test in ((s.then_case, cond), (s.else_case, f"~{cond}")):
            if branch is None:
                continue
            m = self._fresh("m")
            self.emit(f"{m} = {test}" if outer is None else f"{m} = {outer} & ({test})")
            self.emit(f"if {m}.any():")
            self.mask = m
            self._block(branch)
            self.mask = outer

    def _block(self, s: S.Stmt) -> None:
        self.indent += 1
        self.emit("pass")
        self.stmt(s)
        self.indent -= 1

    def s_Evaluate(self, s: S.Evaluate) -> None:
        if isinstance(s.value, E.Call) and s.value.op == BARRIER:
            self.emit("env.barrier()")
        elif not isinstance(s.value, (E.IntImm, E.FloatImm)):
            self.emit(self.expr(s.value).code)

    def s_BufferStore(self, s: S.BufferStore) -> None:
        name, buf = self.bufs[s.buffer.data]
        value = self.expr(s.value)
        value_code = f"{value.code}" if value.varying else f"{_np(buf.dtype)}({value.code})"
        mask = self.mask or "None"
        if buf.scope == "local":
            idx = self.expr(s.indices[0])
            self.emit(f"env.store_local({name}, {idx.code}, {idx.varying}, {value_code}, {mask})")
            return
        addr = self.address(buf, s.indices[0])
        log = self._log(buf, True)
        self.emit(f"env.store({name}, {addr}, {value_code}, {mask}, {log})")

    def _log(self, buf: S.Buffer, write: bool) -> str:
        if buf.scope == "shared":
            return f"({buf.name!r}, {buf.const_size()}, {write})"
        if buf.data in self.written:
            return f"({buf.name!r}, 0, {write})"
        return "None"

    # ---- addresses ----------------------------------------------------------------------
    def _invariant(self, e: E.Expr) -> bool:
        return free_vars(e) <= self.thread_vars

    def address(self, buf: S.Buffer, index: E.Expr) -> str:
        """Flat element addresses, one row per lane, into a global or shared buffer's array (a
        shared array holds every block of the chunk: the block's base is added)."""
        base = f"{self.bufs[buf.data][0]}_base" if buf.scope == "shared" else None
        ramp, lanes_first = "", dt.lanes(index.dtype) > 1  # a vector: lanes, then elements
        if isinstance(index, E.Ramp):
            ramp = f" + ({self.expr(index.stride).code}) * env.iota({index.lanes})"
            index, lanes_first = index.base, True
        if is_index(index) and free_vars(index) & self.varying:
            parts = self._split(index, base, lanes_first)
        else:
            v = self.expr(index)
            code = f"env.lanes_first({v.code})" if lanes_first and v.varying else v.code
            if base is not None:
                code = f"{f'env.lanes_first({base})' if lanes_first else base} + ({code})"
            varying = v.varying or base is not None
            parts = [code if varying else f"env.per_lane({code})"]
        return f"({' + '.join(parts)}){ramp}"

    def _split(self, index: E.Expr, base: str | None, lanes_first: bool) -> list[str]:
        """index = (thread-invariant part, hoisted) + (uniform part) + (the rest)."""
        lin = self.ana.to_lin(index)
        inv, uni, rest = Lin({}, lin.const), Lin(), Lin()
        for key, (atom, c) in lin.terms.items():
            if self._invariant(atom):
                inv.terms[key] = (atom, c)
            elif free_vars(atom) & self.varying:
                rest.terms[key] = (atom, c)
            else:
                uni.terms[key] = (atom, c)
        parts = []
        if inv.terms or base is not None:
            parts.append(self._hoist(inv, base, index.dtype, lanes_first))
        elif inv.const:
            uni = uni.add(Lin({}, inv.const))
        for part in (uni, rest):
            if part.terms or part.const:
                v = self.expr(self.ana.from_lin(part, index.dtype))
                parts.append(f"env.lanes_first({v.code})" if lanes_first and v.varying else v.code)
        return parts

    def _hoist(self, inv: Lin, base: str | None, dtype: str, lanes_first: bool) -> str:
        expr = self.ana.from_lin(inv, dtype)
        code = self.expr(expr).code
        code = code if base is None else f"{base} + ({code})"
        if lanes_first:
            code = f"env.lanes_first({code})"
        key = (skey(expr), base, lanes_first)
        if key not in self.hoisted:
            if self.hoisted_count * 4 * MAX_LANES > MAX_HOISTED_BYTES:
                return f"({code})"
            name = self._fresh("h")
            self.prologue.append(f"    {name} = {code}")
            self.hoisted[key] = name
            self.hoisted_count += 1
        return self.hoisted[key]

    # ---- expressions -----------------------------------------------------------------------
    def expr(self, e: E.Expr) -> _Val:
        fn = getattr(self, "e_" + type(e).__name__, None)
        if fn is None:
            raise EmulatorError(f"the emulator cannot evaluate {type(e).__name__}: {e!r}")
        return fn(e)

    def e_IntImm(self, e: E.IntImm) -> _Val:
        if e.dtype == "int32":
            return _Val(str(e.value), False)
        if e.dtype == "bool":
            return _Val(str(bool(e.value)), False)
        return _Val(f"{_np(e.dtype)}({e.value})", False)

    def e_FloatImm(self, e: E.FloatImm) -> _Val:
        return _Val(f"{_np(e.dtype)}({e.value!r})", False)

    def e_Var(self, e: E.Var) -> _Val:
        if e not in self.names:
            raise EmulatorError(f"variable '{e.name}' is used outside its scope")
        return _Val(self.names[e], e in self.varying)

    def _bin(self, e: E.BinaryOp, fmt: str) -> _Val:
        a, b = self.expr(e.a), self.expr(e.b)
        return _Val(fmt.format(a=a.code, b=b.code), a.varying or b.varying)

    def e_Add(self, e):
        return self._bin(e, "({a} + {b})")

    def e_Sub(self, e):
        return self._bin(e, "({a} - {b})")

    def e_Mul(self, e):
        return self._bin(e, "({a} * {b})")

    def e_Div(self, e):
        return self._bin(e, "({a} / {b})" if dt.is_float(e.dtype) else "env.tdiv({a}, {b})")

    def e_FloorDiv(self, e):
        return self._bin(e, "np.floor({a} / {b})" if dt.is_float(e.dtype) else "({a} // {b})")

    def e_FloorMod(self, e):
        if dt.is_float(e.dtype):
            return self._bin(e, "({a} - {b} * np.floor({a} / {b}))")
        return self._bin(e, "({a} % {b})")

    def e_Min(self, e):
        return self._bin(e, "np.minimum({a}, {b})")

    def e_Max(self, e):
        return self._bin(e, "np.maximum({a}, {b})")

    def _cmp(self, e):
        return self._bin(e, "({a} " + e.op + " {b})")

    e_EQ = e_NE = e_LT = e_LE = e_GT = e_GE = _cmp

    def e_And(self, e):
        return self._bin(e, "({a} & {b})")

    def e_Or(self, e):
        return self._bin(e, "({a} | {b})")

    def e_Not(self, e):
        a = self.expr(e.a)
        return _Val(f"np.logical_not({a.code})", a.varying)

    def e_Select(self, e):
        c, t, f = self.expr(e.cond), self.expr(e.t), self.expr(e.f)
        return _Val(f"np.where({c.code}, {t.code}, {f.code})", c.varying or t.varying or f.varying)

    def e_Cast(self, e):
        v = self.expr(e.value)
        if e.value.dtype == e.dtype:
            return v
        return _Val(f"env.cast({v.code}, {_np(e.dtype)})", v.varying)

    def e_Ramp(self, e):
        base, stride = self.expr(e.base), self.expr(e.stride)
        code = f"(env.lanes_first({base.code}) + ({stride.code}) * env.iota({e.lanes}))"
        return _Val(code, base.varying or stride.varying)

    def e_Broadcast(self, e):
        v = self.expr(e.value)
        return _Val(f"env.lanes_first({v.code})" if v.varying else v.code, v.varying)

    def e_BufferLoad(self, e: E.BufferLoad) -> _Val:
        name, buf = self.bufs[e.buffer.data]
        mask = self.mask or "None"
        if buf.scope == "local":
            idx = self.expr(e.indices[0])
            return _Val(f"env.load_local({name}, {idx.code}, {idx.varying}, {mask})", True)
        addr = self.address(buf, e.indices[0])
        return _Val(f"env.load({name}, {addr}, {mask}, {self._log(buf, False)})", True)

    def e_Call(self, e: E.Call) -> _Val:
        if e.op == "tir.if_then_else":
            return self._if_then_else(e)
        if e.extern or e.op.startswith("tir."):
            raise EmulatorError(f"the emulator has no definition of '{e.op}'")
        args = [self.expr(a) for a in e.args]
        fn = {"fabs": "abs", "pow": "power", "round": "rint"}.get(e.op, e.op)
        code = f"np.{fn}({', '.join(a.code for a in args)})"
        if fn == "erf":
            code = f"env.erf({args[0].code})"
        return _Val(f"env.cast({code}, {_np(e.dtype)})", any(a.varying for a in args))

    def _if_then_else(self, e: E.Call) -> _Val:
        c = self.expr(e.args[0])
        if not c.varying:
            t, f = self.expr(e.args[1]), self.expr(e.args[2])
            return _Val(f"({t.code} if {c.code} else {f.code})", t.varying or f.varying)
        outer = self.mask
        cond = f"np.broadcast_to({c.code}, env.lanes)"
        self.mask = cond if outer is None else f"({outer} & {cond})"
        t = self.expr(e.args[1])
        self.mask = f"~{cond}" if outer is None else f"({outer} & ~{cond})"
        f = self.expr(e.args[2])
        self.mask = outer
        return _Val(f"env.where({c.code}, {t.code}, {f.code})", True)


# ------------------------------------------------------------------------------ execution
class _Env:
    """What a translated kernel reads: lane indices, buffers and the memory operations."""

    def __init__(self, kernel: EmulatedKernel, blocks: np.ndarray, globals_: list[np.ndarray]):
        t = math.prod(kernel.block)
        self.kernel = kernel
        self.n_blocks = len(blocks)
        self.lanes = self.n_blocks * t
        tid = np.tile(np.arange(t, dtype=np.int32), self.n_blocks)
        self.blk = np.repeat(np.arange(self.n_blocks, dtype=np.int32), t)
        bid = np.repeat(blocks.astype(np.int32), t)
        self.tid, self.bid = tid, bid
        self.index = {}
        bx, by, _ = kernel.block
        gx, gy, _ = kernel.grid
        for tag, (x, n1, n2) in zip(
            THREAD_TAGS + BLOCK_TAGS,
            [(tid, 1, bx), (tid, bx, by), (tid, bx * by, None)]
            + [(bid, 1, gx), (bid, gx, gy), (bid, gx * gy, None)],
            strict=True,
        ):
            v = x // n1 if n1 > 1 else x
            self.index[tag] = (v % n2 if n2 else v).astype(np.int32)
        self.globals = globals_
        self.allocs = [
            garbage(
                (b.const_size(), self.lanes)
                if b.scope == "local"
                else (b.const_size() * self.n_blocks,),
                dt.to_numpy(b.dtype),
            )
            for b in kernel.allocs
        ]
        self.logs: dict[str, _Log] = {}
        self.global_logs = kernel.global_logs
        self._iota: dict[int, np.ndarray] = {}

    # lanes and values
    def block_base(self, size: int) -> np.ndarray:
        return self.blk * np.int32(size)

    def iota(self, n: int) -> np.ndarray:
        if n not in self._iota:
            self._iota[n] = np.arange(n, dtype=np.int32)
        return self._iota[n]

    @staticmethod
    def lanes_first(x: Any) -> Any:
        return x[..., None] if isinstance(x, np.ndarray) and x.ndim == 1 else x

    @staticmethod
    def cast(x: Any, t: type) -> Any:
        if isinstance(x, np.ndarray):
            return x.astype(t)
        if t is np.int32 and not isinstance(x, (float, np.floating)):
            return int(x)
        return t(x)

    @staticmethod
    def tdiv(a: Any, b: Any) -> Any:
        q = np.abs(a) // np.abs(b)
        return np.where((np.asarray(a) < 0) != (np.asarray(b) < 0), -q, q)

    @staticmethod
    def where(c: Any, t: Any, f: Any) -> np.ndarray:
        c = np.asarray(c)
        if c.ndim == 1 and (np.ndim(t) == 2 or np.ndim(f) == 2):
            c = c[:, None]
        return np.where(c, t, f)

    @staticmethod
    def erf(x: Any) -> Any:
        return np.vectorize(math.erf, otypes=[np.float64])(x)

    def per_lane(self, x: Any) -> np.ndarray:
        """A uniform address (or vector of them) as one row per lane."""
        x = np.asarray(x)
        return np.broadcast_to(x, (self.lanes, *x.shape))

    # memory
    def _bounds(self, buf: np.ndarray, addr: np.ndarray, name: str, write: bool) -> None:
        lo, hi = addr.min(initial=0), addr.max(initial=0)
        if lo < 0 or hi >= buf.size:
            raise EmulatorError(
                f"kernel '{self.kernel.name}' {'writes' if write else 'reads'} {name} out of "
                f"bounds: element {lo if lo < 0 else hi} of {buf.size}"
            )

    def _record(self, log: tuple | None, addr: np.ndarray, mask: np.ndarray | None) -> None:
        if log is None:
            return
        name, size, write = log
        if size:
            target, agent = self.logs.setdefault(name, _Log(name, size)), self.tid
        else:
            target, agent = self.global_logs.setdefault(name, _Log(name, 0)), self.bid
        if mask is not None:
            addr, agent = addr[mask], agent[mask]
        target.add(write, addr, agent)

    def load(self, buf: np.ndarray, addr: np.ndarray, mask: Any, log: tuple | None) -> Any:
        name = repr(log[0]) if log else "a global buffer"
        if mask is not None:
            self._record(log, addr, mask)
            addr = np.where(mask[:, None] if addr.ndim == 2 else mask, addr, 0)
        else:
            self._record(log, addr, None)
        self._bounds(buf, addr, name, False)
        return np.take(buf, addr)

    def store(
        self, buf: np.ndarray, addr: np.ndarray, value: Any, mask: Any, log: tuple | None
    ) -> None:
        name = repr(log[0]) if log else "a global buffer"
        value = np.broadcast_to(value, addr.shape)
        self._record(log, addr, mask)
        if mask is not None:
            addr, value = addr[mask], value[mask]
        self._bounds(buf, addr, name, True)
        buf[addr] = value

    def load_local(self, buf: np.ndarray, idx: Any, varying: bool, mask: Any) -> np.ndarray:
        if not varying:
            return buf[idx] if np.ndim(idx) == 0 else buf[idx].T
        if mask is not None:
            idx = np.where(mask[:, None] if np.ndim(idx) == 2 else mask, idx, 0)
        lanes = np.arange(self.lanes)
        return buf[idx, lanes[:, None] if np.ndim(idx) == 2 else lanes]

    def store_local(self, buf: np.ndarray, idx: Any, varying: bool, value: Any, mask: Any) -> None:
        if varying:
            lanes = np.arange(self.lanes)
            if np.ndim(idx) == 2:
                lanes = lanes[:, None]
            value = np.broadcast_to(value, np.broadcast_shapes(np.shape(idx), lanes.shape))
            idx, lanes = np.broadcast_arrays(idx, lanes)
            if mask is not None:
                idx, lanes, value = idx[mask], lanes[mask], value[mask]
            buf[idx, lanes] = value
            return
        rows = buf[idx] if np.ndim(idx) == 0 else buf[idx].T
        value = np.broadcast_to(value, rows.shape)
        if mask is None:
            if np.ndim(idx) == 0:
                buf[idx] = value
            else:
                buf[idx] = value.T
        else:
            m = np.broadcast_to(mask[:, None] if rows.ndim == 2 else mask, rows.shape)
            if np.ndim(idx) == 0:
                np.copyto(buf[idx], value, where=m)
            else:
                view = buf[idx].T.copy()
                np.copyto(view, value, where=m)
                buf[idx] = view.T

    def barrier(self) -> None:
        for log in self.logs.values():
            log.check(self.kernel.name, "a barrier (__syncthreads) is missing between them")


@dataclass
class EmulatedKernel:
    """A kernel translated for the emulator."""

    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    allocs: list[S.Buffer]
    fn: Any
    source: str
    global_logs: dict[str, _Log] = field(default_factory=dict)

    def run(self, buffers: list[np.ndarray], seed: int = 0) -> None:
        """Run every block (shuffled, in chunks of lanes) on flat parameter arrays."""
        order = np.random.default_rng(seed).permutation(math.prod(self.grid))
        per = max(1, MAX_LANES // math.prod(self.block))
        self.global_logs.clear()
        for start in range(0, len(order), per):
            env = _Env(self, order[start : start + per], buffers)
            try:
                self.fn(env)
            except IndexError as err:  # a local array indexed out of range
                raise EmulatorError(f"kernel '{self.name}': {err}") from err
            env.barrier()
        for log in self.global_logs.values():
            log.check(self.name, "blocks run in any order")


def translate(kernel: Any) -> EmulatedKernel:
    """An EmulatedKernel from a DeviceKernel (compiler.driver_gpu)."""
    _, launch_vars, body = launch_extents(kernel.body)
    written = {s.buffer.data for s in collect(body, lambda n: isinstance(n, S.BufferStore))}
    tr = _Translator(body, launch_vars, written)
    src = tr.source(kernel.params)
    scope: dict[str, Any] = {"np": np}
    exec(compile(src, f"<emulated {kernel.name}>", "exec"), scope)  # noqa: S102
    return EmulatedKernel(kernel.name, kernel.grid, kernel.block, tr.allocs, scope["kernel"], src)
