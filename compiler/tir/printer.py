"""Readable text for expressions, statements and functions (Python-like, one statement a line)."""

from __future__ import annotations

from typing import Any

from . import expr as E
from . import stmt as S

_PREC = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3}
_PREC.update({"+": 4, "-": 4, "*": 5, "/": 5, "//": 5, "%": 5})


def _e(e: Any, prec: int = 0) -> str:
    if isinstance(e, E.IntImm):
        if e.dtype == "bool":
            return "True" if e.value else "False"
        return str(e.value) if e.dtype in ("int32",) else f"{e.dtype}({e.value})"
    if isinstance(e, E.FloatImm):
        return repr(e.value) if e.dtype == "float32" else f"{e.dtype}({e.value!r})"
    if isinstance(e, E.StringImm):
        return repr(e.value if len(e.value) < 40 else e.value[:37] + "...")
    if isinstance(e, E.Var):
        return e.name
    if isinstance(e, (E.Min, E.Max)):
        return f"{e.op}({_e(e.a)}, {_e(e.b)})"
    if isinstance(e, E.BinaryOp):
        p = _PREC[e.op]
        s = f"{_e(e.a, p)} {e.op} {_e(e.b, p + 1)}"
        return f"({s})" if p < prec else s
    if isinstance(e, E.Not):
        return f"!{_e(e.a, 9)}"
    if isinstance(e, E.Select):
        return f"select({_e(e.cond)}, {_e(e.t)}, {_e(e.f)})"
    if isinstance(e, E.Cast):
        return f"{e.dtype}({_e(e.value)})"
    if isinstance(e, E.Call):
        return f"{e.op}({', '.join(_e(a) for a in e.args)})"
    if isinstance(e, E.Ramp):
        return f"ramp({_e(e.base)}, {_e(e.stride)}, {e.lanes})"
    if isinstance(e, E.Broadcast):
        return f"broadcast({_e(e.value)}, {e.lanes})"
    if isinstance(e, E.ProducerLoad):
        return f"{e.producer.name}[{', '.join(_e(i) for i in e.indices)}]"
    if isinstance(e, E.BufferLoad):
        return f"{e.buffer.name}[{', '.join(_e(i) for i in e.indices)}]"
    if isinstance(e, E.Reduce):
        axes = ", ".join(iv.var.name for iv in e.axis)
        where = "" if E.is_const(e.condition, 1) else f", where={_e(e.condition)}"
        return f"reduce_{e.combiner.name}({_e(e.source)}, axis=[{axes}]{where})"
    return f"<{type(e).__name__}>"


def _s(s: Any, ind: str, out: list[str]) -> None:
    if isinstance(s, S.SeqStmt):
        for x in s.seq:
            _s(x, ind, out)
    elif isinstance(s, S.For):
        kind = "" if s.kind == "serial" else f" {s.kind}"
        tag = f" {s.thread_tag!r}" if s.thread_tag else ""
        lo = "" if E.is_const(s.min, 0) else f"{_e(s.min)}, "
        out.append(f"{ind}for {s.loop_var.name} in range({lo}{_e(s.extent)}){kind}{tag}:")
        _s(s.body, ind + "  ", out)
    elif isinstance(s, S.BufferStore):
        idx = ", ".join(_e(i) for i in s.indices)
        out.append(f"{ind}{s.buffer.name}[{idx}] = {_e(s.value)}")
    elif isinstance(s, S.Evaluate):
        out.append(f"{ind}{_e(s.value)}")
    elif isinstance(s, S.IfThenElse):
        out.append(f"{ind}if {_e(s.cond)}:")
        _s(s.then_case, ind + "  ", out)
        if s.else_case is not None:
            out.append(f"{ind}else:")
            _s(s.else_case, ind + "  ", out)
    elif isinstance(s, S.Allocate):
        b = s.buffer
        shape = ", ".join(_e(x) for x in b.shape)
        strides = f", strides=[{', '.join(_e(x) for x in b.strides)}]" if b.strides else ""
        out.append(f"{ind}allocate {b.name}: {b.dtype}[{shape}]{strides} scope={b.scope!r}")
        _s(s.body, ind, out)
    elif isinstance(s, S.AttrStmt):
        node = getattr(s.node, "name", "")
        out.append(f"{ind}attr [{node}] {s.key} = {_e(s.value)}")
        _s(s.body, ind, out)
    elif isinstance(s, S.LetStmt):
        out.append(f"{ind}{s.var.name} = {_e(s.value)}")
        _s(s.body, ind, out)
    elif isinstance(s, S.PrimFunc):
        params = ", ".join(
            f"{b.name}: {b.dtype}[{', '.join(_e(x) for x in b.shape)}]" for b in s.params
        )
        out.append(f"{ind}def {s.name}({params}):")
        _s(s.body, ind + "  ", out)
    elif hasattr(s, "describe"):  # a target's own statement (e.g. an operation template)
        out.extend(f"{ind}{line}" for line in s.describe().splitlines())
    else:
        out.append(f"{ind}<{type(s).__name__}>")


def astext(node: Any) -> str:
    """Text of any IR node."""
    if isinstance(node, E.Expr):
        return _e(node)
    out: list[str] = []
    _s(node, "", out)
    return "\n".join(out)
