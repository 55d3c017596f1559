"""Schedules: one Stage per compute operation, the primitives that transform its loops, and
cache stages (cache_read, cache_write) that stage data through a memory scope.

A stage keeps the iteration-variable relations (split, fuse) from the operation's root axes to
the leaf axes that become loops, where it is attached (root, inline, or at a loop of another
stage), its memory scope, and per-axis annotations (loop kind, pragmas, tensor intrinsic).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ScheduleError
from ..te.tensor import ComputeOp, IterVar, Operation, Range, Tensor
from ..tir import expr as E
from ..tir.expr import Var
from ..tir.functor import Mutator, substitute
from ..tir.stmt import SCOPES


@dataclass
class Split:
    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int | None
    nparts: int | None


@dataclass
class Fuse:
    outer: IterVar
    inner: IterVar
    fused: IterVar


@dataclass
class IterAttr:
    """Annotations of one leaf axis."""

    kind: str = "serial"  # serial, parallel, vectorized, unrolled, vthread, thread_binding
    thread: IterVar | None = None
    pragmas: list[tuple[str, Any]] = field(default_factory=list)
    tensor_intrin: Any = None


def _ivar(x: Any) -> IterVar:
    if isinstance(x, IterVar):
        return x
    raise ScheduleError(f"expected an axis (IterVar), got {x!r}")


class Stage:
    """The schedule of one operation."""

    def __init__(self, op: ComputeOp, schedule: Schedule):
        self.op = self.origin_op = op
        self.schedule = schedule
        self.all_iter_vars: list[IterVar] = list(op.axis) + list(op.reduce_axis)
        self.leaf_iter_vars: list[IterVar] = list(self.all_iter_vars)
        self.relations: list[Split | Fuse] = []
        self.attach_type = "root"
        self.attach_stage: Stage | None = None
        self.attach_ivar: IterVar | None = None
        self.scope = "global"
        self.iter_attrs: dict[IterVar, IterAttr] = {}
        self.storage_aligns: dict[int, tuple[int, int]] = {}
        self.double_buffered = False
        self.is_output = False

    def __repr__(self) -> str:
        return f"stage({self.op.name})"

    # ---- helpers --------------------------------------------------------------------
    def _err(self, prim: str, msg: str) -> ScheduleError:
        return ScheduleError(f"{prim}: stage '{self.op.name}': {msg}")

    def _check_leaf(self, iv: Any, prim: str) -> IterVar:
        iv = _ivar(iv)
        if iv in self.leaf_iter_vars:
            return iv
        for rel in self.relations:
            if isinstance(rel, Fuse) and iv in (rel.outer, rel.inner):
                raise self._err(
                    prim, f"axis '{iv.name}' is not a leaf: it was fused into '{rel.fused.name}'"
                )
            if isinstance(rel, Split) and iv is rel.parent:
                raise self._err(
                    prim,
                    f"axis '{iv.name}' is not a leaf: it was split into "
                    f"'{rel.outer.name}' and '{rel.inner.name}'",
                )
        leaves = ", ".join(v.name for v in self.leaf_iter_vars)
        raise self._err(
            prim, f"axis '{iv.name}' is not an axis of this stage (leaf axes: {leaves})"
        )

    def _attr(self, iv: IterVar) -> IterAttr:
        return self.iter_attrs.setdefault(iv, IterAttr())

    def is_reduce(self, iv: IterVar) -> bool:
        return iv.kind == "reduce"

    # ---- loop transformations ----------------------------------------------------------
    def split(self, parent: IterVar, factor: int | None = None, nparts: int | None = None):
        """Split `parent` into (outer, inner) by an inner `factor` or an outer `nparts`."""
        parent = self._check_leaf(parent, "split")
        if (factor is None) == (nparts is None):
            raise self._err("split", f"axis '{parent.name}': give exactly one of factor, nparts")
        n = int(factor if factor is not None else nparts)
        if n < 1:
            raise self._err("split", f"axis '{parent.name}': split size must be >= 1, got {n}")
        outer = IterVar(None, Var(f"{parent.name}.outer", parent.var.dtype), parent.kind)
        inner = IterVar(None, Var(f"{parent.name}.inner", parent.var.dtype), parent.kind)
        self.relations.append(
            Split(parent, outer, inner, factor and int(factor), nparts and int(nparts))
        )
        k = self.leaf_iter_vars.index(parent)
        self.leaf_iter_vars[k : k + 1] = [outer, inner]
        self.all_iter_vars += [outer, inner]
        return outer, inner

    def tile(self, x_parent: IterVar, y_parent: IterVar, x_factor: int, y_factor: int):
        """Split two axes and reorder to (x.outer, y.outer, x.inner, y.inner)."""
        xo, xi = self.split(x_parent, x_factor)
        yo, yi = self.split(y_parent, y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def _extent_bound(self, iv: IterVar) -> int:
        """An upper bound of the axis' extent from its root domain and the relations so far
        (2**63 when unknown)."""
        if iv.dom is not None:
            ext = E.as_int(iv.dom.extent)
            return ext if ext is not None else 2**63
        for r in self.relations:
            if isinstance(r, Split) and iv in (r.outer, r.inner):
                parent = self._extent_bound(r.parent)
                if iv is r.inner:
                    return r.factor if r.factor else -(-parent // r.nparts)
                return r.nparts if r.nparts else -(-parent // r.factor)
            if isinstance(r, Fuse) and iv is r.fused:
                return self._extent_bound(r.outer) * self._extent_bound(r.inner)
        return 2**63

    def fuse(self, *args: IterVar) -> IterVar:
        """Fuse consecutive leaf axes (outer first) into one."""
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        ivs = [self._check_leaf(a, "fuse") for a in args]
        fused = ivs[0]
        for inner in ivs[1:]:
            k = self.leaf_iter_vars.index(fused)
            if k + 1 >= len(self.leaf_iter_vars) or self.leaf_iter_vars[k + 1] is not inner:
                raise self._err(
                    "fuse",
                    f"axes '{fused.name}' and '{inner.name}' are not adjacent leaf axes "
                    "(outer first); reorder them first",
                )
            if fused.kind != inner.kind:
                raise self._err(
                    "fuse",
                    f"cannot fuse reduction and data-parallel axes '{fused.name}', '{inner.name}'",
                )
            wide = "int64" in (fused.var.dtype, inner.var.dtype) or (
                self._extent_bound(fused) * self._extent_bound(inner) >= 2**31
            )
            name = f"{fused.name}.{inner.name}.fused"
            out = IterVar(None, Var(name, "int64" if wide else "int32"), fused.kind)
            self.relations.append(Fuse(fused, inner, out))
            self.leaf_iter_vars[k : k + 2] = [out]
            self.all_iter_vars.append(out)
            fused = out
        return fused

    def reorder(self, *args: IterVar) -> None:
        """Put the given leaf axes in this order, in the positions they occupy."""
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        ivs = [self._check_leaf(a, "reorder") for a in args]
        if len(set(map(id, ivs))) != len(ivs):
            raise self._err("reorder", "an axis appears twice")
        pos = sorted(self.leaf_iter_vars.index(v) for v in ivs)
        for p, v in zip(pos, ivs, strict=False):
            self.leaf_iter_vars[p] = v

    # ---- attachment ---------------------------------------------------------------------
    def compute_at(self, parent: Stage, axis: IterVar) -> None:
        """Compute this stage inside loop `axis` of `parent`, only the region it needs."""
        if not isinstance(parent, Stage):
            raise self._err("compute_at", f"expected a Stage, got {parent!r}")
        axis = _ivar(axis)
        if axis not in parent.leaf_iter_vars:
            raise self._err(
                "compute_at", f"'{axis.name}' is not a leaf axis of stage '{parent.op.name}'"
            )
        if not self.schedule.used_within(parent, self):
            raise self._err(
                "compute_at",
                f"loop '{parent.op.name}.{axis.name}' is not an ancestor of any use of "
                f"'{self.op.name}': neither stage '{parent.op.name}' nor a stage computed inside "
                "it reads it",
            )
        self.attach_type, self.attach_stage, self.attach_ivar = "scope", parent, axis

    def compute_inline(self) -> None:
        """Substitute this stage's body into its consumers."""
        if self.op.reduce_axis:
            raise self._err("compute_inline", "a reduction cannot be inlined")
        if self.is_output:
            raise self._err("compute_inline", "an output stage cannot be inlined")
        self.attach_type, self.attach_stage, self.attach_ivar = "inline", None, None

    def compute_root(self) -> None:
        self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None

    def set_scope(self, scope: str) -> None:
        if scope not in SCOPES:
            raise self._err("set_scope", f"unknown scope {scope!r}; valid: {', '.join(SCOPES)}")
        self.scope = scope

    # ---- loop annotations ----------------------------------------------------------------
    def _annotate(self, iv: IterVar, kind: str, prim: str) -> None:
        iv = self._check_leaf(iv, prim)
        if self.is_reduce(iv) and kind in ("vectorized", "parallel", "vthread", "thread_binding"):
            raise self._err(
                prim, f"axis '{iv.name}' is a reduction axis; only data-parallel axes can be {kind}"
            )
        self._attr(iv).kind = kind

    def vectorize(self, iv: IterVar) -> None:
        self._annotate(iv, "vectorized", "vectorize")

    def unroll(self, iv: IterVar) -> None:
        self._annotate(iv, "unrolled", "unroll")

    def parallel(self, iv: IterVar) -> None:
        self._annotate(iv, "parallel", "parallel")

    def bind(self, iv: IterVar, thread: IterVar) -> None:
        """Bind a loop to a thread axis (blockIdx.x, threadIdx.x, ..., or vthread)."""
        kind = "vthread" if thread.thread_tag in ("vthread", "cthread") else "thread_binding"
        self._annotate(iv, kind, "bind")
        self._attr(iv).thread = thread

    def pragma(self, iv: IterVar, key: str, value: Any = None) -> None:
        iv = self._check_leaf(iv, "pragma")
        self._attr(iv).pragmas.append((key, value if value is not None else 1))

    def storage_align(self, axis: IterVar, factor: int, offset: int) -> None:
        """Pad the stride of `axis` of this stage's buffer to factor * k + offset elements."""
        if axis not in self.op.axis:
            raise self._err("storage_align", f"'{_ivar(axis).name}' is not a root data axis")
        if factor <= 0 or not 0 <= offset < factor:
            raise self._err(
                "storage_align", f"need factor > 0 and 0 <= offset < factor, got {factor}, {offset}"
            )
        self.storage_aligns[self.op.axis.index(axis)] = (int(factor), int(offset))

    def double_buffer(self) -> None:
        """Give the buffer two halves alternated by the enclosing loop's iterations."""
        if self.attach_type != "scope":
            raise self._err(
                "double_buffer", "only a stage computed at a loop can be double buffered"
            )
        self.double_buffered = True

    def tensorize(self, iv: IterVar, intrin: Any) -> None:
        """Replace the loop nest from `iv` inwards by the tensor intrinsic `intrin`."""
        iv = self._check_leaf(iv, "tensorize")
        self._attr(iv).tensor_intrin = intrin


class Schedule:
    """Stages of all compute operations reachable from the outputs, producers first."""

    def __init__(self, outputs: list[Operation]):
        self.outputs = outputs
        self.stages: list[Stage] = []
        self.stage_map: dict[Operation, Stage] = {}
        for op in _post_dfs(outputs):
            st = Stage(op, self)
            st.is_output = op in outputs
            self.stages.append(st)
            self.stage_map[op] = st

    def __getitem__(self, t: Tensor | Operation) -> Stage:
        op = t.op if isinstance(t, Tensor) else t
        if op not in self.stage_map:
            raise ScheduleError(
                f"'{op.name}' has no stage in this schedule (placeholders have none)"
            )
        return self.stage_map[op]

    def stage_of(self, t: Tensor) -> Stage | None:
        return self.stage_map.get(t.op)

    def reads(self, reader: Stage) -> list[Stage]:
        out = []
        for t in reader.op.input_tensors:
            st = self.stage_of(t)
            if st is not None and st not in out:
                out.append(st)
        return out

    def reads_transitively(self, reader: Stage, producer: Stage) -> bool:
        """Does `reader` read `producer`, directly or through inlined stages?"""
        for st in self.reads(reader):
            if st is producer or (
                st.attach_type == "inline" and self.reads_transitively(st, producer)
            ):
                return True
        return False

    def used_within(self, parent: Stage, producer: Stage) -> bool:
        """Is `producer` read by `parent` or by a stage computed (transitively) inside it?"""
        for st in self.stages:
            if st is producer or not self.reads_transitively(st, producer):
                continue
            node: Stage | None = st
            while node is not None:
                if node is parent:
                    return True
                node = node.attach_stage if node.attach_type == "scope" else None
        return False

    def create_group(self, *args: Any) -> None:
        raise ScheduleError("create_group is not supported")

    # ---- cache stages: copies that stage data through a memory scope --------------------
    def cache_read(self, tensor: Tensor, scope: str, readers: Any) -> Tensor:
        """A copy of `tensor` in `scope` that the given readers read instead."""
        _check_scope(scope)
        readers = readers if isinstance(readers, (list, tuple)) else [readers]
        reader_stages = [self[r] for r in readers]
        cache = _copy_op(f"{tensor.name}.{scope}", tensor)
        for st in reader_stages:
            if tensor not in st.op.input_tensors:
                raise ScheduleError(
                    f"cache_read: stage '{st.op.name}' does not read '{tensor.name}'"
                )
            body = _ReplaceTensor(tensor, cache.output(0)).visit(st.op.body)
            new_op = ComputeOp(st.op.name, st.op.axis, body, st.op.tag, st.op.attrs)
            self.stage_map[new_op] = st
            st.op = new_op
        cst = Stage(cache, self)
        cst.scope = scope
        self.stage_map[cache] = cst
        first = min(self.stages.index(st) for st in reader_stages)
        self.stages.insert(first, cst)
        return cache.output(0)

    def cache_write(self, tensor: Tensor, scope: str) -> Tensor:
        """Compute `tensor` into a `scope` buffer first; its stage becomes a copy out of it."""
        _check_scope(scope)
        st: Stage = self[tensor]
        if st.relations or st.attach_type != "root" or st.iter_attrs:
            raise ScheduleError(
                f"cache_write: stage '{st.op.name}' is already scheduled; call cache_write first"
            )
        op = st.op
        # ops are definitions, shared by schedules: another schedule caching this op in this
        # scope gets the same two ops, so lowering's per-op caches serve it (the tuner lowers
        # many schedules of one definition)
        made = op.__dict__.setdefault("_cache_writes", {})
        if scope not in made or made[scope][0] in self.stage_map:
            axis = [IterVar(Range(0, iv.dom.extent), iv.name) for iv in op.axis]
            body = substitute(op.body, {a.var: b.var for a, b in zip(op.axis, axis, strict=False)})
            cache = ComputeOp(f"{op.name}.{scope}", axis, body, op.tag, op.attrs)
            copy = ComputeOp(op.name, op.axis, cache.output(0)(*[iv.var for iv in op.axis]), op.tag)
            made[scope] = (cache, copy)
        cache, copy = made[scope]
        cst = Stage(cache, self)
        cst.scope = scope
        self.stage_map[cache] = cst
        self.stage_map[copy] = st
        st.op = copy
        st.all_iter_vars = list(op.axis)
        st.leaf_iter_vars = list(op.axis)
        self.stages.insert(self.stages.index(st), cst)
        return cache.output(0)


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


def _post_dfs(outputs: list[Operation]) -> list[ComputeOp]:
    order: list[ComputeOp] = []
    seen: set[int] = set()

    def visit(op: Operation) -> None:
        if id(op) in seen or not isinstance(op, ComputeOp):
            return
        seen.add(id(op))
        for t in op.input_tensors:
            visit(t.op)
        order.append(op)

    for op in outputs:
        visit(op)
    return order


def create_schedule(ops: Any) -> Schedule:
    """A default schedule (every stage at root, loops in axis order) for the output ops."""
    ops = ops if isinstance(ops, (list, tuple)) else [ops]
    ops = [o.op if isinstance(o, Tensor) else o for o in ops]
    for o in ops:
        if not isinstance(o, ComputeOp):
            raise ScheduleError(f"create_schedule: '{getattr(o, 'name', o)}' is not a compute op")
    return Schedule(list(ops))


def split_extent(ext: int, rel: Split) -> tuple[int, int]:
    """(outer, inner) extents of a split of an axis of extent `ext`."""
    if rel.factor is not None:
        inner = min(rel.factor, ext)
        return -(-ext // inner), inner
    outer = min(rel.nparts, ext)
    return outer, -(-ext // outer)


__all__ = ["Schedule", "Stage", "create_schedule", "E"]
