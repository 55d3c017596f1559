"""Tensor intrinsics: declare a micro-kernel's behaviour as a tensor expression, match it
against the loop nest under an axis, and replace that nest by the kernel's statements.

Matching compares the stage's body with the intrinsic's after mapping the innermost axes of the
region onto the intrinsic's axes; indices are compared relative to the region's origin, which
becomes each buffer's element offset when the kernel is instantiated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..arith import eval_interval, structural_equal
from ..errors import ScheduleError
from ..te.tensor import ComputeOp, PlaceholderOp, Tensor
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.functor import Mutator, substitute
from ..tir.transform.flatten import flat_index


def decl_buffer(
    shape: Any,
    dtype: str = "float32",
    name: str = "buffer",
    strides: Any = None,
    elem_offset: Any = None,
    scope: str = "global",
) -> S.Buffer:
    """A buffer for an intrinsic's operand; symbolic strides/offset are bound when tensorizing."""
    offset = elem_offset if elem_offset is not None else E.Var(f"{name}_elem_offset")
    return S.Buffer(name, shape, dtype, scope, strides, offset)


@dataclass
class TensorIntrin:
    """A micro-kernel: its behaviour (`op`) and statements for body / reset / update."""

    name: str
    op: ComputeOp
    inputs: list[Tensor]
    buffers: dict[Tensor, S.Buffer]
    body: S.Stmt | None
    reset: S.Stmt | None
    update: S.Stmt | None


def _stmt(x: Any) -> S.Stmt | None:
    if x is None or isinstance(x, S.Stmt):
        return x
    return S.Evaluate(x)


def decl_tensor_intrin(
    op: ComputeOp, fcompute: Callable, name: str = "tensor_intrin", binds: dict | None = None
) -> TensorIntrin:
    """fcompute(ins, outs) returns the body statement, or (body, reset, update)."""
    binds = dict(binds or {})
    inputs = op.input_tensors
    bufs = {t: binds.get(t) or decl_buffer(t.shape, t.dtype, t.name) for t in inputs}
    out = op.output(0)
    bufs[out] = binds.get(out) or decl_buffer(out.shape, out.dtype, out.name)
    res = fcompute([bufs[t] for t in inputs], [bufs[out]])
    body, reset, update = res if isinstance(res, tuple) else (res, None, None)
    return TensorIntrin(name, op, inputs, bufs, _stmt(body), _stmt(reset), _stmt(update))


@dataclass
class Instantiated:
    body: S.Stmt | None
    reset: S.Stmt | None
    update: S.Stmt | None


class _Matcher:
    def __init__(self, fail: Callable[[str], ScheduleError], ivars: list[E.Var], ana):
        self.fail, self.ivars, self.ana = fail, ivars, ana
        self.tensors: dict[Tensor, Tensor] = {}
        self.origin: dict[Tensor, list[E.Expr]] = {}

    def _rel(self, idx: E.Expr) -> tuple[E.Expr, E.Expr]:
        zero = self.ana.simplify(substitute(idx, {v: E.const(0) for v in self.ivars}))
        return self.ana.simplify(idx - zero), zero

    def match(self, a: E.Expr, b: E.Expr) -> None:
        """a from the intrinsic, b from the stage."""
        if type(a) is not type(b) or a.dtype != b.dtype:
            raise self.fail(f"body differs: intrinsic has `{a}`, stage has `{b}`")
        if isinstance(a, E.Reduce):
            if a.combiner.name != b.combiner.name:
                theirs, mine = a.combiner.name, b.combiner.name
                raise self.fail(f"reducer differs: intrinsic uses {theirs}, stage uses {mine}")
            return self.match(a.source, b.source)
        if isinstance(a, E.ProducerLoad):
            if self.tensors.setdefault(a.producer, b.producer) is not b.producer:
                raise self.fail(f"input `{a.producer.name}` is bound to two tensors")
            lead = len(b.indices) - len(a.indices)
            origin = []
            for ib in b.indices[:lead]:  # leading dims of the stage's tensor stay fixed
                rb, zb = self._rel(ib)
                if lead < 0 or not E.is_const(rb, 0):
                    raise self.fail(
                        f"`{b.producer.name}` varies in more dims than `{a.producer.name}`"
                    )
                origin.append(zb)
            for ia, ib in zip(a.indices, b.indices[lead:], strict=True):
                ra, za = self._rel(ia)
                rb, zb = self._rel(ib)
                if not structural_equal(ra, rb):
                    raise self.fail(
                        f"index of `{b.producer.name}` differs: intrinsic `{ia}`, stage `{ib}`"
                    )
                origin.append(self.ana.simplify(zb - za))
            self.origin.setdefault(b.producer, origin)
            return None
        if isinstance(a, (E.IntImm, E.FloatImm)) and a.value != b.value:
            raise self.fail(f"constant differs: intrinsic has {a}, stage has {b}")
        if isinstance(a, E.Var) and a is not b:
            raise self.fail(f"body differs: intrinsic has `{a}`, stage has `{b}`")
        if isinstance(a, E.Call) and a.op != b.op:
            raise self.fail(f"call differs: intrinsic calls {a.op}, stage calls {b.op}")
        for f in a._fields:
            xa, xb = getattr(a, f), getattr(b, f)
            for ya, yb in zip(
                xa if isinstance(xa, tuple) else (xa,),
                xb if isinstance(xb, tuple) else (xb,),
                strict=True,
            ):
                self.match(ya, yb)
        return None


class _Bind(Mutator):
    """Accesses of intrinsic buffers become flat accesses of the real buffers."""

    def __init__(self, bufs: dict[S.Buffer, S.Buffer]):
        self.bufs = bufs

    def visit_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        e = self.generic(e)
        if e.buffer not in self.bufs:
            return e
        return E.BufferLoad(self.bufs[e.buffer], [flat_index(e.buffer, e.indices)])

    def visit_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        s = self.generic(s)
        if s.buffer not in self.bufs:
            return s
        return S.BufferStore(self.bufs[s.buffer], s.value, [flat_index(s.buffer, s.indices)])


def _strides(buf: S.Buffer) -> list[E.Expr]:
    if buf.strides is not None:
        return list(buf.strides)
    out, acc = [], 1
    for n in reversed(buf.shape):
        out.append(E.const(acc))
        acc *= n.value
    return out[::-1]


def tensorize_stmts(low, st, t: int, intrin: TensorIntrin) -> Instantiated:
    """The intrinsic's statements bound to the region of `st` under leaf axis `t`."""
    leaves = st.leaf_iter_vars

    def fail(msg: str) -> ScheduleError:
        return ScheduleError(
            f"tensorize: stage '{st.op.name}' at axis '{leaves[t].name}' does not match "
            f"intrinsic '{intrin.name}': {msg}"
        )

    info, ana = low.infos[st], low.ana
    relax = {iv.var: (E.const(0), E.const(info.leaf_ext[iv] - 1)) for iv in leaves[t:]}
    lo, ext = {}, {}
    for iv in info.roots:
        rng = eval_interval(info.value[iv], relax, ana)
        n = E.as_int(ana.simplify(rng[1] - rng[0] + 1)) if rng else None
        if n is None:
            raise fail(f"the region of axis '{iv.name}' is not a constant box")
        lo[iv], ext[iv] = ana.simplify(info.root_min[iv] + rng[0]), n
    vmap: dict[E.Var, E.Expr] = {}
    ivars: list[E.Var] = []
    for mine, theirs, kind in (
        (st.op.axis, intrin.op.axis, "axis"),
        (st.op.reduce_axis, intrin.op.reduce_axis, "reduction axis"),
    ):
        if len(theirs) > len(mine):
            raise fail(f"intrinsic has {len(theirs)} {kind}es, stage has {len(mine)}")
        lead = len(mine) - len(theirs)
        for k, iv in enumerate(mine):
            if k < lead:
                if ext[iv] != 1:
                    raise fail(f"{kind} '{iv.name}' spans {ext[iv]} inside the region, expected 1")
                vmap[iv.var] = lo[iv]
                continue
            other = theirs[k - lead]
            if ext[iv] != other.dom.extent.value:
                raise fail(
                    f"{kind} '{iv.name}' has extent {ext[iv]} in the region, intrinsic "
                    f"{kind} '{other.name}' has {other.dom.extent.value}"
                )
            vmap[iv.var] = lo[iv] + other.var
            ivars.append(other.var)
    matcher = _Matcher(fail, ivars, ana)
    matcher.match(intrin.op.body, ana.simplify(substitute(info.body, vmap)))

    bufs: dict[S.Buffer, S.Buffer] = {}
    values: dict[E.Var, E.Expr] = {}

    def bind(ibuf: S.Buffer, real: S.Buffer, origin: list[E.Expr]) -> None:
        strides = _strides(real)
        rank = len(ibuf.shape)
        if ibuf.strides is None:
            for d, (a, b) in enumerate(zip(_strides(ibuf), strides[-rank:], strict=True)):
                if ibuf.shape[d].value > 1 and not structural_equal(a, ana.simplify(b)):
                    raise fail(
                        f"buffer '{ibuf.name}' is compact but the region of '{real.name}' has "
                        f"stride {b} in dim {d}; declare the buffer with symbolic strides"
                    )
        else:
            for a, b in zip(ibuf.strides, strides[-rank:], strict=True):
                if isinstance(a, E.Var):
                    values[a] = b
        offset = sum((o * s for o, s in zip(origin, strides, strict=True)), E.const(0))
        if isinstance(ibuf.elem_offset, E.Var):
            values[ibuf.elem_offset] = ana.simplify(offset)
        bufs[ibuf] = real

    for it in intrin.inputs:
        tensor = matcher.tensors[it]
        origin = matcher.origin[tensor]
        if isinstance(tensor.op, PlaceholderOp):
            bind(intrin.buffers[it], low.inputs[tensor.op], origin)
        else:
            pst = low.s.stage_of(tensor)
            bind(intrin.buffers[it], low.buffers[pst], low.buffer_index(pst, origin))
    out_origin = low.buffer_index(st, [lo[iv] for iv in st.op.axis])
    bind(intrin.buffers[intrin.op.output(0)], low.buffers[st], out_origin)

    def inst(s: S.Stmt | None) -> S.Stmt | None:
        return None if s is None else substitute(_Bind(bufs).visit(s), values)

    if intrin.body is None:
        raise fail("the intrinsic declares no body")
    result = Instantiated(inst(intrin.body), inst(intrin.reset), inst(intrin.update))
    if st.op.reduce_axis and (result.reset is None or result.update is None):
        first_reduce = next(k for k, iv in enumerate(leaves) if iv.kind == "reduce")
        if first_reduce < t:
            raise fail("reduction axes outside the region need the intrinsic's reset and update")
    return result
