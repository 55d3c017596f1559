"""Statement nodes of the loop IR and the Buffer they read and write."""

from __future__ import annotations

import math
from typing import Any

from ..errors import OperatorError
from . import dtype as dt
from .expr import BufferLoad, Call, Expr, Node, Var, convert, expr_text, is_const

SCOPES = (
    "global",
    "shared",
    "local",
    "local.inp_buffer",
    "local.wgt_buffer",
    "local.acc_buffer",
    "local.uop_buffer",
)


class Buffer:
    """A region of memory in a scope: shape and strides in elements, offset into `data`."""

    def __init__(
        self,
        name: str,
        shape: Any,
        dtype: str = "float32",
        scope: str = "global",
        strides: Any = None,
        elem_offset: Any = 0,
        data: Var | None = None,
    ):
        if scope not in SCOPES:
            raise OperatorError(
                f"buffer {name}: unknown scope {scope!r}; valid: {', '.join(SCOPES)}"
            )
        self.name, self.dtype, self.scope = name, dtype, scope
        self.shape = tuple(convert(s) for s in shape)
        self.strides = tuple(convert(s) for s in strides) if strides else None
        self.elem_offset = convert(elem_offset)
        self.data = data if data is not None else Var(name, "handle")

    def __repr__(self) -> str:
        return f"Buffer({self.name}, {[str(s) for s in self.shape]}, {self.dtype}, {self.scope})"

    def vload(self, indices: Any) -> BufferLoad:
        return BufferLoad(self, indices)

    def __getitem__(self, indices: Any) -> BufferLoad:
        return BufferLoad(self, indices if isinstance(indices, tuple) else (indices,))

    def access_ptr(self, mode: str = "rw", offset: Any = 0) -> Call:
        """Address of element `offset` (flat, past elem_offset), for passing regions to kernels."""
        del mode  # access mode only documents intent on the CPU
        return Call("handle", "tir.address_of", [BufferLoad(self, [offset])])

    def const_size(self) -> int:
        """Elements of the allocation, from shape and strides (must be constant)."""
        extents = [s.value for s in self.shape]
        if self.strides is None:
            return math.prod(extents)
        return (
            1 + sum((n - 1) * st.value for n, st in zip(extents, self.strides, strict=False))
            if extents
            else 1
        )

    @property
    def nbytes(self) -> int:
        return self.const_size() * dt.itemsize(self.dtype)


class Stmt(Node):
    """A statement."""

    def __repr__(self) -> str:
        return astext(self)


class BufferStore(Stmt):
    _fields = ("value", "indices")

    def __init__(self, buffer: Buffer, value: Any, indices: Any):
        self.buffer, self.value = buffer, convert(value)
        self.indices = tuple(convert(i) for i in indices)


class Evaluate(Stmt):
    _fields = ("value",)

    def __init__(self, value: Any):
        self.value = convert(value)


class SeqStmt(Stmt):
    _fields = ("seq",)

    def __init__(self, seq: Any):
        self.seq = tuple(seq)


def seq(*stmts: Stmt | None) -> Stmt:
    """Sequence the non-empty statements, flattening nested sequences."""
    out: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        out.extend(s.seq if isinstance(s, SeqStmt) else [s])
    if not out:
        return Evaluate(0)
    return out[0] if len(out) == 1 else SeqStmt(out)


FOR_KINDS = ("serial", "parallel", "vectorized", "unrolled", "vthread", "thread_binding")


class For(Stmt):
    """for loop_var in [min, min + extent) with a kind from FOR_KINDS."""

    _fields = ("min", "extent", "body")

    def __init__(
        self,
        loop_var: Var,
        min: Any,
        extent: Any,
        kind: str,
        body: Stmt,
        thread_tag: str = "",
    ):
        assert kind in FOR_KINDS, kind
        self.loop_var, self.kind, self.thread_tag = loop_var, kind, thread_tag
        self.min, self.extent, self.body = convert(min), convert(extent), body


class IfThenElse(Stmt):
    _fields = ("cond", "then_case", "else_case")

    def __init__(self, cond: Expr, then_case: Stmt, else_case: Stmt | None = None):
        self.cond, self.then_case, self.else_case = cond, then_case, else_case


class Allocate(Stmt):
    """Memory for `buffer` (in its scope) live during `body`."""

    _fields = ("body",)

    def __init__(self, buffer: Buffer, body: Stmt):
        self.buffer, self.body = buffer, body


class AttrStmt(Stmt):
    """An annotation (pragma_*, storage_alignment, double_buffer_scope, thread_extent...)."""

    _fields = ("value", "body")

    def __init__(self, node: Any, key: str, value: Any, body: Stmt):
        self.node, self.key, self.value, self.body = node, key, convert(value), body


class LetStmt(Stmt):
    _fields = ("value", "body")

    def __init__(self, var: Var, value: Expr, body: Stmt):
        self.var, self.value, self.body = var, value, body


class PrimFunc(Node):
    """A lowered function: parameters are buffers, the body a statement."""

    _fields = ("body",)

    def __init__(self, name: str, params: list[Buffer], body: Stmt, attrs: dict | None = None):
        self.name, self.params, self.body = name, list(params), body
        self.attrs = dict(attrs or {})

    def __repr__(self) -> str:
        return astext(self)


# ---------------------------------------------------------------------------------- printing
def _stmt_lines(s: Any, ind: str, out: list[str]) -> None:
    if isinstance(s, SeqStmt):
        for x in s.seq:
            _stmt_lines(x, ind, out)
    elif isinstance(s, For):
        kind = "" if s.kind == "serial" else f" {s.kind}"
        tag = f" {s.thread_tag!r}" if s.thread_tag else ""
        lo = "" if is_const(s.min, 0) else f"{expr_text(s.min)}, "
        out.append(f"{ind}for {s.loop_var.name} in range({lo}{expr_text(s.extent)}){kind}{tag}:")
        _stmt_lines(s.body, ind + "  ", out)
    elif isinstance(s, BufferStore):
        idx = ", ".join(expr_text(i) for i in s.indices)
        out.append(f"{ind}{s.buffer.name}[{idx}] = {expr_text(s.value)}")
    elif isinstance(s, Evaluate):
        out.append(f"{ind}{expr_text(s.value)}")
    elif isinstance(s, IfThenElse):
        out.append(f"{ind}if {expr_text(s.cond)}:")
        _stmt_lines(s.then_case, ind + "  ", out)
        if s.else_case is not None:
            out.append(f"{ind}else:")
            _stmt_lines(s.else_case, ind + "  ", out)
    elif isinstance(s, Allocate):
        b = s.buffer
        shape = ", ".join(expr_text(x) for x in b.shape)
        strides = f", strides=[{', '.join(expr_text(x) for x in b.strides)}]" if b.strides else ""
        out.append(f"{ind}allocate {b.name}: {b.dtype}[{shape}]{strides} scope={b.scope!r}")
        _stmt_lines(s.body, ind, out)
    elif isinstance(s, AttrStmt):
        node = getattr(s.node, "name", "")
        out.append(f"{ind}attr [{node}] {s.key} = {expr_text(s.value)}")
        _stmt_lines(s.body, ind, out)
    elif isinstance(s, LetStmt):
        out.append(f"{ind}{s.var.name} = {expr_text(s.value)}")
        _stmt_lines(s.body, ind, out)
    elif isinstance(s, PrimFunc):
        params = ", ".join(
            f"{b.name}: {b.dtype}[{', '.join(expr_text(x) for x in b.shape)}]" for b in s.params
        )
        out.append(f"{ind}def {s.name}({params}):")
        _stmt_lines(s.body, ind + "  ", out)
    elif hasattr(s, "describe"):  # a target's own statement (e.g. an operation template)
        out.extend(f"{ind}{line}" for line in s.describe().splitlines())
    else:
        out.append(f"{ind}<{type(s).__name__}>")


def astext(node: Any) -> str:
    """Text of any IR node (Python-like, one statement a line)."""
    if isinstance(node, Expr):
        return expr_text(node)
    out: list[str] = []
    _stmt_lines(node, "", out)
    return "\n".join(out)
