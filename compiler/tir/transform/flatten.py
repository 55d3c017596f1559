"""Storage flattening: multi-dimensional buffer accesses become one linear element index.

Strides come from the buffer (padded by storage_align) or from its shape; the scope stays on the
flat buffer, so later passes and backends still lower per scope. An access with one index into a
multi-dimensional buffer is taken as already flat (tensor intrinsics address regions that way).
"""

from __future__ import annotations

from ...arith import Analyzer
from .. import dtype as dt
from .. import expr as E
from .. import stmt as S
from ..functor import Mutator

INT32_ELEMENTS = 2**31 - 1  # buffers this large or larger are indexed in int64


def _wide(buf: S.Buffer) -> bool:
    """Whether an element index of `buf` can exceed int32 (or the size is not constant)."""
    if not all(isinstance(s, E.IntImm) for s in buf.shape):
        return True
    if buf.strides and not all(isinstance(s, E.IntImm) for s in buf.strides):
        return True
    offset = E.as_int(buf.elem_offset)
    return offset is None or offset + buf.const_size() >= INT32_ELEMENTS


def _int64(e: E.Expr) -> E.Expr:
    target = dt.with_lanes("int64", dt.lanes(e.dtype))
    return e if e.dtype == target else E.Cast(target, e)


def flat_index(buf: S.Buffer, indices: tuple[E.Expr, ...]) -> E.Expr:
    """The linear element index; computed in int64 when the buffer has 2**31 elements or more
    (int32 arithmetic would wrap), in the indices' type otherwise."""
    wide = _wide(buf)
    if wide:
        indices = tuple(_int64(E.convert(i)) for i in indices)
    offset = _int64(buf.elem_offset) if wide else buf.elem_offset
    if len(indices) == 1 and len(buf.shape) != 1:
        return indices[0] + offset
    strides = buf.strides
    if strides is None:
        strides, acc = [], E.const(1, "int64" if wide else None)
        for n in reversed(buf.shape):
            strides.append(acc)
            acc = acc * n
        strides.reverse()
    index = offset
    for i, st in zip(indices, strides, strict=False):
        index = index + i * (_int64(E.convert(st)) if wide else st)
    return index


class _Flatten(Mutator):
    def __init__(self, ana: Analyzer):
        self.ana = ana
        self.flat: dict[int, S.Buffer] = {}
        self.indices: dict[tuple, tuple] = {}  # (buffer, indices) by id -> (indices, flat)

    def index(self, buf: S.Buffer, indices: tuple[E.Expr, ...]) -> E.Expr:
        """The simplified flat index, once per buffer and index objects (a reduction's init,
        update and read of its own element share them)."""
        key = (id(buf), *map(id, indices))
        if key not in self.indices:  # the entry holds the indices: their ids stay theirs
            self.indices[key] = (indices, self.ana.simplify(flat_index(buf, indices)))
        return self.indices[key][1]

    def buffer(self, buf: S.Buffer) -> S.Buffer:
        if id(buf) not in self.flat:
            n = buf.const_size() if all(isinstance(s, E.IntImm) for s in buf.shape) else 0
            self.flat[id(buf)] = S.Buffer(buf.name, [n], buf.dtype, buf.scope, data=buf.data)
        return self.flat[id(buf)]

    def visit_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        e = self.generic(e)
        return E.BufferLoad(self.buffer(e.buffer), [self.index(e.buffer, e.indices)])

    def visit_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        s = self.generic(s)
        return S.BufferStore(self.buffer(s.buffer), s.value, [self.index(s.buffer, s.indices)])

    def visit_Allocate(self, s: S.Allocate) -> S.Stmt:
        return S.Allocate(self.buffer(s.buffer), self.visit(s.body))

    def visit_For(self, s: S.For) -> S.Stmt:
        lo, ext = E.as_int(s.min), E.as_int(s.extent)
        if lo is not None and ext is not None:
            self.ana.bind(s.loop_var, lo, lo + ext - 1)
        return self.generic(s)


def storage_flatten(f: S.PrimFunc, ana: Analyzer) -> S.PrimFunc:
    return f.replace(body=_Flatten(ana).visit(f.body))
