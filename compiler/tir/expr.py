"""Expression nodes of the loop IR (shared by te and tir): every node carries a dtype.

Nodes are plain objects with `_fields` naming their child nodes, so one generic functor
(compiler.tir.functor) can walk and rebuild any of them.
"""

from __future__ import annotations

import itertools
from typing import Any

from . import dtype as dt

_counter = itertools.count()


class Node:
    """Base of IR nodes; `_fields` are child attributes (a node or a tuple of nodes)."""

    _fields: tuple[str, ...] = ()

    def replace(self, **changes: Any) -> Node:
        """A shallow copy with some fields changed (dtype recomputed where derived)."""
        node = object.__new__(type(self))
        node.__dict__.update(self.__dict__, **changes)
        node._retype()
        return node

    def _retype(self) -> None:
        pass


class Expr(Node):
    """A value-producing node."""

    dtype: str = "int32"

    def __repr__(self) -> str:
        return expr_text(self)

    # arithmetic sugar, TVM style
    def __add__(self, o):
        return Add(self, o)

    def __radd__(self, o):
        return Add(o, self)

    def __sub__(self, o):
        return Sub(self, o)

    def __rsub__(self, o):
        return Sub(o, self)

    def __mul__(self, o):
        return Mul(self, o)

    def __rmul__(self, o):
        return Mul(o, self)

    def __truediv__(self, o):
        return Div(self, o)

    def __rtruediv__(self, o):
        return Div(o, self)

    def __floordiv__(self, o):
        return FloorDiv(self, o)

    def __rfloordiv__(self, o):
        return FloorDiv(o, self)

    def __mod__(self, o):
        return FloorMod(self, o)

    def __rmod__(self, o):
        return FloorMod(o, self)

    def __neg__(self):
        return Sub(const(0, self.dtype), self)

    def __lt__(self, o):
        return LT(self, o)

    def __le__(self, o):
        return LE(self, o)

    def __gt__(self, o):
        return GT(self, o)

    def __ge__(self, o):
        return GE(self, o)

    def __eq__(self, o):  # type: ignore[override]
        return EQ(self, o)

    def __ne__(self, o):  # type: ignore[override]
        return NE(self, o)

    def __and__(self, o):
        return And(self, o)

    def __or__(self, o):
        return Or(self, o)

    def __invert__(self):
        return Not(self)

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        raise TypeError(
            f"cannot use the symbolic expression {self!r} as a Python bool; "
            "use te.all/te.any/te.if_then_else"
        )

    def astype(self, dtype: str) -> Expr:
        return Cast(dtype, self)


def const(value: Any, dtype: str | None = None) -> Expr:
    """A constant; int32/float32 by default like TVM."""
    if isinstance(value, Expr):
        return value if dtype is None or value.dtype == dtype else Cast(dtype, value)
    if isinstance(getattr(value, "var", None), Var):  # an IterVar stands for its variable
        return const(value.var, dtype)
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, int):
            dtype = "int32" if -(2**31) <= value < 2**31 else "int64"
        else:
            dtype = "float32"
    if dt.is_float(dtype):
        return FloatImm(dtype, float(value))
    return IntImm(dtype, int(value))


def convert(value: Any, like: Expr | None = None) -> Expr:
    """Turn a Python number into a constant whose dtype follows `like` when given."""
    if isinstance(value, Expr):
        return value
    if isinstance(getattr(value, "var", None), Var):
        return value.var
    if like is not None and not isinstance(value, bool):
        target = dt.element_of(like.dtype)
        if isinstance(value, float) and not dt.is_float(target):
            target = "float32"
        if dt.is_bool(target):
            target = "int32"
        return const(value, target)
    return const(value)


class IntImm(Expr):
    def __init__(self, dtype: str, value: int):
        self.dtype, self.value = dtype, int(value)


class FloatImm(Expr):
    def __init__(self, dtype: str, value: float):
        self.dtype, self.value = dtype, float(value)


class StringImm(Expr):
    def __init__(self, value: str):
        self.dtype, self.value = "handle", value


class Var(Expr):
    """A named scalar variable (loop index, size, handle); compared by identity."""

    def __init__(self, name: str = "v", dtype: str = "int32"):
        self.name, self.dtype = name, dtype
        self.uid = next(_counter)


class BinaryOp(Expr):
    _fields = ("a", "b")
    op = "?"

    def __init__(self, a: Any, b: Any):
        if not isinstance(a, Expr):
            a = convert(a, b if isinstance(b, Expr) else None)
        if not isinstance(b, Expr):
            b = convert(b, a)
        if dt.element_of(a.dtype) != dt.element_of(b.dtype):
            target = dt.element_of(dt.promote(a.dtype, b.dtype))
            a = (
                a
                if dt.element_of(a.dtype) == target
                else Cast(dt.with_lanes(target, dt.lanes(a.dtype)), a)
            )
            b = (
                b
                if dt.element_of(b.dtype) == target
                else Cast(dt.with_lanes(target, dt.lanes(b.dtype)), b)
            )
        self.a, self.b = a, b
        self._retype()

    def _retype(self) -> None:
        self.dtype = dt.promote(self.a.dtype, self.b.dtype)


class Add(BinaryOp):
    op = "+"


class Sub(BinaryOp):
    op = "-"


class Mul(BinaryOp):
    op = "*"


class Div(BinaryOp):
    """True division for floats, truncating division for integers."""

    op = "/"


class FloorDiv(BinaryOp):
    op = "//"


class FloorMod(BinaryOp):
    op = "%"


class Min(BinaryOp):
    op = "min"


class Max(BinaryOp):
    op = "max"


class CmpOp(BinaryOp):
    def _retype(self) -> None:
        self.dtype = dt.with_lanes("bool", max(dt.lanes(self.a.dtype), dt.lanes(self.b.dtype)))


class EQ(CmpOp):
    op = "=="

    def __bool__(self) -> bool:  # lets `a == b` on nodes act as identity in Python code
        return self.a is self.b


class NE(CmpOp):
    op = "!="

    def __bool__(self) -> bool:
        return self.a is not self.b


class LT(CmpOp):
    op = "<"


class LE(CmpOp):
    op = "<="


class GT(CmpOp):
    op = ">"


class GE(CmpOp):
    op = ">="


class And(CmpOp):
    op = "&&"


class Or(CmpOp):
    op = "||"


class Not(Expr):
    _fields = ("a",)

    def __init__(self, a: Expr):
        self.a = a
        self._retype()

    def _retype(self) -> None:
        self.dtype = self.a.dtype


class Select(Expr):
    """cond ? t : f with both sides evaluated (use if_then_else to guard loads)."""

    _fields = ("cond", "t", "f")

    def __init__(self, cond: Any, t: Any, f: Any):
        t = convert(t, f if isinstance(f, Expr) else None)
        f = convert(f, t)
        if t.dtype != f.dtype:
            target = dt.promote(t.dtype, f.dtype)
            t, f = (x if x.dtype == target else Cast(target, x) for x in (t, f))
        self.cond, self.t, self.f = convert(cond), t, f
        self._retype()

    def _retype(self) -> None:
        self.dtype = dt.with_lanes(
            dt.element_of(self.t.dtype), max(dt.lanes(x.dtype) for x in (self.cond, self.t, self.f))
        )


class Cast(Expr):
    _fields = ("value",)

    def __init__(self, dtype: str, value: Any):
        self.value = convert(value)
        self.dtype = dt.with_lanes(dtype, max(dt.lanes(dtype), dt.lanes(self.value.dtype)))
        dt.parse(dtype)

    def _retype(self) -> None:
        self.dtype = dt.with_lanes(dt.element_of(self.dtype), dt.lanes(self.value.dtype))


class Call(Expr):
    """A call of an intrinsic (op names such as "exp", "tir.if_then_else") or an extern symbol."""

    _fields = ("args",)

    def __init__(self, dtype: str, op: str, args: Any, extern: bool = False):
        self.dtype, self.op, self.extern = dtype, op, extern
        self.args = tuple(convert(a) for a in args)

    def _retype(self) -> None:
        if not self.extern and self.dtype != "handle":
            lanes = max(dt.lanes(a.dtype) for a in self.args) if self.args else 1
            if self.op == "tir.if_then_else":
                lanes = max(dt.lanes(a.dtype) for a in self.args[1:])
            self.dtype = dt.with_lanes(dt.element_of(self.dtype), lanes)


class Ramp(Expr):
    """The vector base + stride * [0, 1, ..., lanes-1]."""

    _fields = ("base", "stride")

    def __init__(self, base: Expr, stride: Expr, lanes: int):
        self.base, self.stride, self.lanes = convert(base), convert(stride), lanes
        self.dtype = dt.with_lanes(self.base.dtype, lanes)


class Broadcast(Expr):
    _fields = ("value",)

    def __init__(self, value: Expr, lanes: int):
        self.value, self.lanes = value, lanes
        self.dtype = dt.with_lanes(value.dtype, lanes)


class ProducerLoad(Expr):
    """A read of a te Tensor element; replaced by BufferLoad during lowering."""

    _fields = ("indices",)

    def __init__(self, producer: Any, indices: Any):
        self.producer = producer
        self.indices = tuple(convert(i) for i in indices)
        self.dtype = producer.dtype


class BufferLoad(Expr):
    _fields = ("indices",)

    def __init__(self, buffer: Any, indices: Any):
        self.buffer = buffer
        self.indices = tuple(convert(i) for i in indices)
        self._retype()

    def _retype(self) -> None:
        lanes = max(dt.lanes(i.dtype) for i in self.indices) if self.indices else 1
        self.dtype = dt.with_lanes(self.buffer.dtype, lanes)


class Reduce(Expr):
    """combiner over `axis` of `source`, counting only points where `condition` holds."""

    _fields = ("source", "condition")

    def __init__(self, combiner: Any, source: Expr, axis: tuple, condition: Expr):
        self.combiner, self.source, self.axis = combiner, source, tuple(axis)
        self.condition = condition
        self.dtype = source.dtype


def is_const(e: Any, value: int | float | None = None) -> bool:
    if not isinstance(e, (IntImm, FloatImm)):
        return False
    return value is None or e.value == value


def as_int(e: Any) -> int | None:
    """The value of an integer constant, else None."""
    if isinstance(e, int):
        return e
    return e.value if isinstance(e, IntImm) else None


# ---------------------------------------------------------------------------------- printing
_PREC = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3}
_PREC.update({"+": 4, "-": 4, "*": 5, "/": 5, "//": 5, "%": 5})


def expr_text(e: Any, prec: int = 0) -> str:
    """Python-like text of an expression, parenthesized where the enclosing operator's
    precedence `prec` binds tighter."""
    if isinstance(e, IntImm):
        if e.dtype == "bool":
            return "True" if e.value else "False"
        return str(e.value) if e.dtype in ("int32",) else f"{e.dtype}({e.value})"
    if isinstance(e, FloatImm):
        return repr(e.value) if e.dtype == "float32" else f"{e.dtype}({e.value!r})"
    if isinstance(e, StringImm):
        return repr(e.value if len(e.value) < 40 else e.value[:37] + "...")
    if isinstance(e, Var):
        return e.name
    if isinstance(e, (Min, Max)):
        return f"{e.op}({expr_text(e.a)}, {expr_text(e.b)})"
    if isinstance(e, BinaryOp):
        p = _PREC[e.op]
        s = f"{expr_text(e.a, p)} {e.op} {expr_text(e.b, p + 1)}"
        return f"({s})" if p < prec else s
    if isinstance(e, Not):
        return f"!{expr_text(e.a, 9)}"
    if isinstance(e, Select):
        return f"select({expr_text(e.cond)}, {expr_text(e.t)}, {expr_text(e.f)})"
    if isinstance(e, Cast):
        return f"{e.dtype}({expr_text(e.value)})"
    if isinstance(e, Call):
        return f"{e.op}({', '.join(expr_text(a) for a in e.args)})"
    if isinstance(e, Ramp):
        return f"ramp({expr_text(e.base)}, {expr_text(e.stride)}, {e.lanes})"
    if isinstance(e, Broadcast):
        return f"broadcast({expr_text(e.value)}, {e.lanes})"
    if isinstance(e, ProducerLoad):
        return f"{e.producer.name}[{', '.join(expr_text(i) for i in e.indices)}]"
    if isinstance(e, BufferLoad):
        return f"{e.buffer.name}[{', '.join(expr_text(i) for i in e.indices)}]"
    if isinstance(e, Reduce):
        axes = ", ".join(iv.var.name for iv in e.axis)
        where = "" if is_const(e.condition, 1) else f", where={expr_text(e.condition)}"
        return f"reduce_{e.combiner.name}({expr_text(e.source)}, axis=[{axes}]{where})"
    return f"<{type(e).__name__}>"
