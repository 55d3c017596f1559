"""Schedule to loop IR: one loop nest per stage, producers attached inside consumer loops.

Tensor reads become buffer loads; every stage writes its own buffer, whose origin is the region
bound inference found (so a stage computed at a loop stores at 0-based offsets). Non-divisible
splits and regions that overhang a domain are guarded by predicates placed right inside the
innermost loop they depend on.
"""

from __future__ import annotations

from ..arith import Analyzer
from ..errors import LoweringError
from ..te.tensor import IterVar, PlaceholderOp, Tensor
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.functor import Mutator, collect, free_vars, substitute
from .bound import StageInfo, body_memo, infer_bounds
from .schedule import Schedule, Stage
from .tensorize import tensorize_stmts


def _strides(shape: list[int], aligns: dict[int, tuple[int, int]]) -> list[int] | None:
    if not aligns:
        return None
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        st = strides[k + 1] * shape[k + 1]
        if k in aligns:
            factor, offset = aligns[k]
            st += (offset - st) % factor
        strides[k] = st
    return strides


def first_loads(e: E.Expr) -> E.Expr:
    """What a stage's loop nest needs of its value for features: the first read of each
    tensor (in reading order), as the arguments of one call; a reduction keeps its combiner,
    axes and condition around them. An expression that reads nothing is kept."""
    if isinstance(e, E.Reduce):
        return E.Reduce(e.combiner, first_loads(e.source), e.axis, e.condition)
    loads: dict[object, E.ProducerLoad] = {}
    for ld in collect(e, lambda n: isinstance(n, E.ProducerLoad)):
        loads.setdefault(ld.producer, ld)
    return E.Call(e.dtype, "first_loads", list(loads.values())) if loads else e


class ScheduleLowering:
    """Builds the statement of a whole schedule; state shared by the per-stage builders.
    `loads_only`: each stage stores `first_loads` of its value (the loops, stores and reads'
    indices as in the full lowering, for features; not a program to run)."""

    def __init__(self, s: Schedule, args: list[Tensor], ana: Analyzer, loads_only: bool = False):
        self.s, self.ana, self.loads_only = s, ana, loads_only
        self.infos: dict[Stage, StageInfo] = infer_bounds(s, ana)
        self.buffers: dict[Stage, S.Buffer] = {}
        self.inputs: dict[PlaceholderOp, S.Buffer] = {}
        self.params: list[S.Buffer] = []
        for t in args:
            self.params.append(self._arg_buffer(t))
        for st, info in self.infos.items():
            if st not in self.buffers:
                shape = [info.root_ext[iv] for iv in st.op.axis]
                if st.double_buffered:
                    shape = [2, *shape]
                aligns = {k + st.double_buffered: a for k, a in st.storage_aligns.items()}
                self.buffers[st] = S.Buffer(
                    st.op.name, shape, st.op.dtype, st.scope, _strides(shape, aligns)
                )
        self.attached: dict[tuple[Stage, IterVar], list[Stage]] = {}
        for st in self.infos:
            if st.attach_type == "scope":
                self.attached.setdefault((st.attach_stage, st.attach_ivar), []).append(st)

    def _arg_buffer(self, t: Tensor) -> S.Buffer:
        if not isinstance(t, Tensor):
            raise LoweringError(f"lower: args must be tensors, got {t!r}")
        if isinstance(t.op, PlaceholderOp):
            buf = S.Buffer(t.name, t.shape, t.dtype)
            self.inputs[t.op] = buf
            return buf
        st = self.s.stage_of(t)
        if st is None or st not in self.infos or st.attach_type != "root":
            raise LoweringError(f"lower: argument '{t.name}' must be a placeholder or a root stage")
        buf = S.Buffer(t.name, t.shape, t.dtype, "global")
        self.buffers[st] = buf
        return buf

    # ---- index translation --------------------------------------------------------------
    def buffer_index(self, st: Stage, indices: list[E.Expr]) -> list[E.Expr]:
        """Indices into `st`'s buffer for absolute tensor indices."""
        info = self.infos[st]
        out = [
            self.ana.simplify(i - info.root_min[iv])
            for iv, i in zip(st.op.axis, indices, strict=False)
        ]
        if st.double_buffered:
            out = [E.FloorMod(st.attach_ivar.var, 2), *out]
        return out

    def load(self, e: E.ProducerLoad) -> E.Expr:
        op = e.producer.op
        if isinstance(op, PlaceholderOp):
            if op not in self.inputs:
                raise LoweringError(f"lower: placeholder '{op.name}' is read but not in args")
            return E.BufferLoad(self.inputs[op], e.indices)
        st = self.s.stage_of(e.producer)
        return E.BufferLoad(self.buffers[st], self.buffer_index(st, list(e.indices)))

    def translate(self, e: E.Expr) -> E.Expr:
        """Tensor reads as buffer loads, simplified (under `loads_only` only the reads' indices
        are: storage flattening simplifies them again)."""
        e = _Loads(self).visit(e)
        return e if self.loads_only else self.ana.simplify(e)

    # ---- statements -----------------------------------------------------------------------
    def lower(self) -> S.Stmt:
        body = S.seq(*(self.stage_nest(st) for st in self.infos if st.attach_type == "root"))
        for st in reversed(list(self.infos)):
            if st.attach_type == "root" and self.buffers[st] not in self.params:
                body = S.Allocate(self.buffers[st], body)
        return body

    def predicates(self, info: StageInfo) -> list[E.Expr]:
        preds = []
        st = info.stage
        for iv in info.roots:
            v, ext = info.value[iv], info.root_ext[iv]
            if self.ana.const_bound(v)[1] >= ext:
                preds.append(v < ext)
            if st.attach_type == "scope" and iv in st.op.axis:
                absolute = info.root_value(iv)
                for cond in (absolute >= 0, absolute < iv.dom.extent):
                    if not self.ana.can_prove(cond):
                        preds.append(self.ana.simplify(cond))
        return preds

    def stage_nest(self, st: Stage) -> S.Stmt:
        info = self.infos[st]
        buf = self.buffers[st]
        leaves = st.leaf_iter_vars
        vmap = {iv.var: info.root_value(iv) for iv in info.roots}
        idx = self.buffer_index(st, [vmap[iv.var] for iv in st.op.axis])
        body = body_memo(st, info.body, first_loads) if self.loads_only else info.body
        body = substitute(body, vmap)
        t = next(
            (
                k
                for k, iv in enumerate(leaves)
                if st.iter_attrs.get(iv) and st.iter_attrs[iv].tensor_intrin
            ),
            None,
        )
        n_loops = len(leaves) if t is None else t
        depth_of = {iv.var: k for k, iv in enumerate(leaves)}
        preds = []
        for cond in self.predicates(info):
            used = [depth_of[v] for v in free_vars(cond) if v in depth_of]
            d = max(used, default=-1)
            if d >= n_loops:
                raise LoweringError(
                    f"tensorize: stage '{st.op.name}': the region at '{leaves[t].name}' needs the "
                    f"bound check {cond!r}; choose split factors that divide the axes"
                )
            spatial_only = all(leaves[k].kind != "reduce" for k in used)
            preds.append((d, cond, spatial_only))

        init = None
        p = None
        if isinstance(body, E.Reduce):
            red = body
            load = E.BufferLoad(buf, idx)
            update: S.Stmt = S.BufferStore(
                buf, self.translate(red.combiner.combine(load, red.source)), idx
            )
            cond = self.translate(red.condition)
            if not E.is_const(cond, 1):
                update = S.IfThenElse(cond, update)
            init = S.BufferStore(buf, red.combiner.identity(buf.dtype), idx)
            p = next(k for k, iv in enumerate(leaves) if iv.kind == "reduce")
            core = update
        else:
            core = S.BufferStore(buf, self.translate(body), idx)
        if t is not None:
            stmts = tensorize_stmts(self, st, t, st.iter_attrs[leaves[t]].tensor_intrin)
            if p is not None and p < t:
                core, init = stmts.update, stmts.reset
            else:
                core, p, init = stmts.body, None, None

        init_nest = None
        if init is not None:
            dp = [k for k in range(p, n_loops) if leaves[k].kind != "reduce"]
            init_preds = [(d, c) for d, c, sp in preds if sp and d >= p]
            init_nest = self._nest(st, dp, init, init_preds)
        stmt = core
        for k in reversed(range(n_loops)):
            stmt = self._guard(stmt, [c for d, c, _ in preds if d == k])
            stmt = self._attach(st, leaves[k], stmt)
            stmt = self._for(st, leaves[k], stmt)
            if k == p:
                stmt = S.seq(init_nest, stmt)
        return self._guard(stmt, [c for d, c, _ in preds if d == -1])

    def _nest(self, st: Stage, order: list[int], core: S.Stmt, preds) -> S.Stmt:
        leaves = st.leaf_iter_vars
        stmt = core
        for k in reversed(order):
            stmt = self._guard(stmt, [c for d, c in preds if d == k])
            stmt = self._for(st, leaves[k], stmt)
        return stmt

    @staticmethod
    def _guard(stmt: S.Stmt, conds: list[E.Expr]) -> S.Stmt:
        if not conds:
            return stmt
        cond = conds[0]
        for c in conds[1:]:
            cond = E.And(cond, c)
        return S.IfThenElse(cond, stmt)

    def _attach(self, st: Stage, leaf: IterVar, stmt: S.Stmt) -> S.Stmt:
        children = self.attached.get((st, leaf), [])
        if not children:
            return stmt
        stmt = S.seq(*(self.stage_nest(c) for c in children), stmt)
        for c in reversed(children):
            stmt = S.Allocate(self.buffers[c], stmt)
            if c.double_buffered:
                stmt = S.AttrStmt(self.buffers[c].data, "double_buffer_scope", 1, stmt)
        return stmt

    def _for(self, st: Stage, leaf: IterVar, body: S.Stmt) -> S.Stmt:
        attr = st.iter_attrs.get(leaf)
        ext = self.infos[st].leaf_ext[leaf]
        kind = attr.kind if attr else "serial"
        tag = attr.thread.thread_tag if attr and attr.thread else ""
        loop: S.Stmt = S.For(leaf.var, 0, ext, kind, body, tag)
        for key, value in reversed(attr.pragmas if attr else []):
            value = E.StringImm(value) if isinstance(value, str) else value
            loop = S.AttrStmt(leaf.var, "pragma_" + key, value, loop)
        return loop


class _Loads(Mutator):
    def __init__(self, low: ScheduleLowering):
        self.low = low

    def visit_ProducerLoad(self, e: E.ProducerLoad) -> E.Expr:
        return self.low.load(self.generic(e))


def schedule_ops(
    s: Schedule, args: list[Tensor], ana: Analyzer, loads_only: bool = False
) -> tuple[S.Stmt, list[S.Buffer]]:
    """The loop nest of schedule `s` and the parameter buffers for `args` (`loads_only`: the
    stores' values reduced to their first reads, see `ScheduleLowering`)."""
    low = ScheduleLowering(s, args, ana, loads_only)
    return low.lower(), low.params
