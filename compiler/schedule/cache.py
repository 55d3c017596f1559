"""cache_read / cache_write: insert copy stages that stage data through a memory scope."""

from __future__ import annotations

from typing import Any

from ..errors import ScheduleError
from ..te.tensor import ComputeOp, IterVar, Range, Tensor
from ..tir import expr as E
from ..tir.functor import Mutator, substitute
from ..tir.stmt import SCOPES
from .schedule import Schedule, Stage


class _ReplaceTensor(Mutator):
    def __init__(self, old: Tensor, new: Tensor):
        self.old, self.new = old, new

    def visit_ProducerLoad(self, e: E.ProducerLoad) -> E.Expr:
        e = self.generic(e)
        return E.ProducerLoad(self.new, e.indices) if e.producer is self.old else e


def _copy_op(name: str, src: Tensor) -> ComputeOp:
    axis = [IterVar(Range(0, n), f"ax{k}") for k, n in enumerate(src.shape)]
    return ComputeOp(name, axis, src(*[iv.var for iv in axis]))


def _check_scope(scope: str) -> None:
    if scope not in SCOPES:
        raise ScheduleError(f"unknown scope {scope!r}; valid: {', '.join(SCOPES)}")


def cache_read(s: Schedule, tensor: Tensor, scope: str, readers: Any) -> Tensor:
    """A copy of `tensor` in `scope` that the given readers read instead."""
    _check_scope(scope)
    readers = readers if isinstance(readers, (list, tuple)) else [readers]
    reader_stages = [s[r] for r in readers]
    cache = _copy_op(f"{tensor.name}.{scope}", tensor)
    for st in reader_stages:
        if tensor not in st.op.input_tensors:
            raise ScheduleError(f"cache_read: stage '{st.op.name}' does not read '{tensor.name}'")
        body = _ReplaceTensor(tensor, cache.output(0)).visit(st.op.body)
        new_op = ComputeOp(st.op.name, st.op.axis, body, st.op.tag, st.op.attrs)
        s.stage_map[new_op] = st
        st.op = new_op
    cst = Stage(cache, s)
    cst.scope = scope
    s.stage_map[cache] = cst
    first = min(s.stages.index(st) for st in reader_stages)
    s.stages.insert(first, cst)
    return cache.output(0)


def cache_write(s: Schedule, tensor: Tensor, scope: str) -> Tensor:
    """Compute `tensor` into a `scope` buffer first; its stage becomes a copy out of it."""
    _check_scope(scope)
    st: Stage = s[tensor]
    if st.relations or st.attach_type != "root" or st.iter_attrs:
        raise ScheduleError(
            f"cache_write: stage '{st.op.name}' is already scheduled; call cache_write first"
        )
    op = st.op
    axis = [IterVar(Range(0, iv.dom.extent), iv.name) for iv in op.axis]
    body = substitute(op.body, {a.var: b.var for a, b in zip(op.axis, axis, strict=False)})
    cache = ComputeOp(f"{op.name}.{scope}", axis, body, op.tag, op.attrs)
    copy = ComputeOp(op.name, op.axis, cache.output(0)(*[iv.var for iv in op.axis]), op.tag)
    cst = Stage(cache, s)
    cst.scope = scope
    s.stage_map[cache] = cst
    s.stage_map[copy] = st
    st.op = copy
    st.all_iter_vars = list(op.axis)
    st.leaf_iter_vars = list(op.axis)
    s.stages.insert(s.stages.index(st), cst)
    return cache.output(0)
