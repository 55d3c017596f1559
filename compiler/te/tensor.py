"""Tensor expressions: placeholders, compute operations, iteration variables and reductions."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import OperatorError
from ..tir import dtype as dt
from ..tir import expr as E
from ..tir.expr import Expr, Var, convert
from ..tir.functor import collect


class Range:
    """[min, min + extent)."""

    def __init__(self, min: Any, extent: Any):
        self.min, self.extent = convert(min), convert(extent)

    def __repr__(self) -> str:
        return f"Range({self.min}, {self.extent})"


class IterVar:
    """An iteration variable with a domain; kind is data_par, reduce or thread."""

    def __init__(self, dom: Range | None, var: Var | str, kind: str = "data_par", tag: str = ""):
        self.dom = dom
        if isinstance(var, Var):
            self.var = var
        else:  # int64 when the domain needs it (an extent or bound of 2**31 or more)
            wide = dom is not None and "int64" in (dom.min.dtype, dom.extent.dtype)
            self.var = Var(var, "int64" if wide else "int32")
        self.kind, self.thread_tag = kind, tag

    @property
    def name(self) -> str:
        return self.var.name

    def __repr__(self) -> str:
        return f"IterVar({self.var.name}, {self.dom}, {self.kind})"

    # iter vars act as their variable inside expressions
    def _v(self) -> Var:
        return self.var

    def __add__(self, o):
        return self.var + o

    def __radd__(self, o):
        return o + self.var

    def __sub__(self, o):
        return self.var - o

    def __rsub__(self, o):
        return o - self.var

    def __mul__(self, o):
        return self.var * o

    def __rmul__(self, o):
        return o * self.var

    def __floordiv__(self, o):
        return self.var // o

    def __mod__(self, o):
        return self.var % o

    def __lt__(self, o):
        return self.var < o

    def __le__(self, o):
        return self.var <= o

    def __gt__(self, o):
        return self.var > o

    def __ge__(self, o):
        return self.var >= o


def _expr(x: Any) -> Expr:
    return x.var if isinstance(x, IterVar) else convert(x)


class Tensor:
    """Output `value_index` of an operation; indexing it gives a ProducerLoad."""

    def __init__(self, op: Operation, value_index: int = 0):
        self.op, self.value_index = op, value_index

    @property
    def shape(self) -> tuple[int, ...]:
        return self.op.shape

    @property
    def dtype(self) -> str:
        return self.op.dtype

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __call__(self, *indices: Any) -> E.ProducerLoad:
        if len(indices) != len(self.shape):
            raise OperatorError(
                f"tensor {self.name} has {len(self.shape)} dims, got {len(indices)} indices"
            )
        exprs = [_expr(i) for i in indices]
        for axis, (i, n) in enumerate(zip(exprs, self.shape, strict=True)):
            if not dt.is_int(i.dtype) or dt.lanes(i.dtype) != 1:
                raise OperatorError(
                    f"tensor {self.name}: the index of axis {axis} is {i.dtype}; indices are "
                    "scalar integers (cast a gathered value first)"
                )
            v = E.as_int(i)
            if v is not None and not 0 <= v < int(n):
                raise OperatorError(
                    f"tensor {self.name}: constant index {v} of axis {axis} is outside [0, {n})"
                )
        return E.ProducerLoad(self, exprs)

    def __getitem__(self, indices: Any) -> E.ProducerLoad:
        return self(*(indices if isinstance(indices, tuple) else (indices,)))

    def __repr__(self) -> str:
        return f"Tensor({self.name}, {list(self.shape)}, {self.dtype})"


class Operation:
    """Base of operations; each has a name, shape, dtype and one output tensor."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def output(self, i: int = 0) -> Tensor:
        if i != 0:
            raise IndexError(f"operation {self.name} has one output")
        if not hasattr(self, "_out"):
            self._out = Tensor(self)
        return self._out

    @property
    def input_tensors(self) -> list[Tensor]:
        return []


MAX_EXTENT = 2**62  # an extent, and a tensor's element count, stay below this


def static_shape(shape: Any, what: str) -> tuple[int, ...]:
    """`shape` as a tuple of integer extents >= 0 whose product stays below MAX_EXTENT; an
    OperatorError naming `what` and the bad extent otherwise (no bool, no fractional value)."""
    if isinstance(shape, str) or not isinstance(shape, Sequence | tuple | list):
        raise OperatorError(f"{what}: shape {shape!r} is not a sequence of integers")
    out = []
    for axis, s in enumerate(shape):
        value = getattr(s, "value", s)  # an IntImm
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise OperatorError(f"{what}: extent {s!r} of axis {axis} is not an integer")
        if value < 0:
            raise OperatorError(f"{what}: extent {value} of axis {axis} is negative")
        out.append(int(value))
    if math.prod(out) >= MAX_EXTENT or any(v >= MAX_EXTENT for v in out):
        raise OperatorError(f"{what}: shape {out} has 2**62 or more elements")
    return tuple(out)


class PlaceholderOp(Operation):
    def __init__(self, shape: Sequence[int], dtype: str, name: str):
        self.shape, self.dtype, self.name = static_shape(shape, f"placeholder {name}"), dtype, name


class ComputeOp(Operation):
    """out[axis] = body, where body may be a Reduce over reduce_axis."""

    def __init__(
        self, name: str, axis: list[IterVar], body: Expr, tag: str = "", attrs: Any = None
    ):
        self.name, self.axis, self.body, self.tag = name, list(axis), body, tag
        self.attrs = dict(attrs or {})
        self.shape = tuple(int(iv.dom.extent.value) for iv in axis)
        self.dtype = body.dtype
        self.reduce_axis = list(body.axis) if isinstance(body, E.Reduce) else []

    @cached_property
    def input_tensors(self) -> list[Tensor]:
        """The tensors the body reads, in reading order (computed once: bodies do not change)."""
        found: dict[int, Tensor] = {}
        for n in collect(self.body, lambda n: isinstance(n, E.ProducerLoad)):
            found.setdefault(id(n.producer), n.producer)
        return list(found.values())


def placeholder(shape: Sequence[int], dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of the given static shape."""
    dt.parse(dtype)
    return PlaceholderOp(shape, dtype, name).output(0)


def compute(
    shape: Sequence[int],
    fcompute: Callable[..., Any],
    name: str = "compute",
    tag: str = "",
    attrs: Any = None,
) -> Tensor:
    """A tensor whose element at each index is fcompute(*index)."""
    shape = static_shape(shape, f"compute {name}")
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    if params and params[0].kind == inspect.Parameter.VAR_POSITIONAL:
        names = [f"i{k}" for k in range(len(shape))]
    else:
        names = [p.name for p in params]
    if len(names) != len(shape):
        raise OperatorError(
            f"compute {name}: fcompute takes {len(names)} indices, shape has {len(shape)}"
        )
    axis = [IterVar(Range(0, n), nm) for nm, n in zip(names, shape, strict=False)]
    body = convert(fcompute(*[iv.var for iv in axis]))
    return ComputeOp(name, axis, body, tag, attrs).output(0)


def reduce_axis(dom: Any, name: str = "rv") -> IterVar:
    """A reduction axis over `dom` (an extent or a (min, max) pair)."""
    if isinstance(dom, (tuple, list)):
        lo, hi = dom
        both_int = isinstance(lo, int) and isinstance(hi, int)
        rng = Range(lo, hi - lo if both_int else _expr(hi) - _expr(lo))
    elif isinstance(dom, Range):
        rng = dom
    else:
        rng = Range(0, dom)
    return IterVar(rng, name, "reduce")


def thread_axis(tag: str = "", name: str = "") -> IterVar:
    """A thread axis to bind loops to: blockIdx.*, threadIdx.*, vthread."""
    return IterVar(None, name or tag or "thread", "thread", tag)
