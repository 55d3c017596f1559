"""Index operators on run-time indices, for `build_ops.OPS`: GatherND reads through the
bounds-checked loads (`build_elementwise.checked_index`); ScatterElements and ScatterND compute
each output element from the indices that name it, and read `updates` once per index at a
position that lies outside it where the index is out of range, so a bad index is an
`OutOfBoundsError` after the run as a Gather's is (that reduction, zero when every index is in
range, is added to the output); TopK's indices by the values' ranks."""

from __future__ import annotations

import math

from .. import te
from ..te.tensor import Tensor
from ..tir import expr as E
from ..topi import tag
from .build_elementwise import checked_index

# ScatterElements' and ScatterND's reductions (none: the last update replaces)
REDUCERS = {"add": te.sum, "mul": te.comm_reducer(lambda a, b: a * b, lambda t: 1, "prod"),
            "max": te.max, "min": te.min}  # fmt: skip


def gather_nd(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX GatherND: the data's slice at each index tuple (the indices' last axis), after
    `batch_dims` leading axes shared by data and indices; indices checked."""
    data, indices = ins
    b, k, q = int(attrs["batch_dims"]), indices.shape[-1], indices.ndim

    def f(*o):
        lead, rest = o[: q - 1], o[q - 1 :]
        index = [checked_index(indices(*lead, j), data, b + j) for j in range(k)]
        return data(*lead[:b], *index, *rest)

    shape = (*indices.shape[:-1], *data.shape[b + k :])
    return te.compute(shape, f, name="gather_nd", tag=tag.INJECTIVE)


def _normalized(i: E.Expr, n: int) -> tuple[E.Expr, E.Expr]:
    """(an index read from a tensor as int64, negative ones counted from the end; whether it
    lies in [0, n))."""
    i = te.cast(i, "int64")
    i = te.select(i < 0, i + n, i)
    return i, te.all(i >= 0, i < n)


def _probe(updates: Tensor, at: list, ok: E.Expr, axis: int) -> E.Expr:
    """updates at `at`, or at a position past its end along `axis` where not `ok` (which the
    bounds-checked load refuses)."""
    past = te.const(math.prod(updates.shape), "int64")
    pos = [te.cast(i, "int64") for i in at]
    pos[axis] = te.select(ok, pos[axis], past)
    return updates(*pos)


def _checked_sum(extents: tuple, probe) -> Tensor:
    """A 0-d reduction over every index position p (of `extents`) of `probe(p)`: zero where
    the index is in range, a refused load where not."""
    axes = [te.reduce_axis(n, f"p{k}") for k, n in enumerate(extents)]
    return te.compute((), lambda *_: te.sum(probe(axes), axis=axes), name="scatter_check")


def _scatter(data: Tensor, updates: Tensor, positions: tuple, names, value, reduction: str):
    """The scatter's output: each element of data combined with (`reduction`) or replaced by
    (none: the last) the updates whose index names it. `names(o, p)` says whether position p's
    index names output element o and `value(o, p)` is that update."""
    rk = [te.reduce_axis(n, f"k{k}") for k, n in enumerate(positions)]
    dtype = data.dtype
    if reduction == "none":
        flat = E.const(0, "int64")
        for r, n in zip(rk, positions, strict=True):
            flat = flat * n + te.cast(r, "int64")
        last = te.compute(
            data.shape,
            lambda *o: te.max(te.select(names(o, rk), flat, te.const(-1, "int64")), axis=rk),
            name="scatter_last",
        )

        def pick(*o):
            hit = last(*o)
            p, rest = [], E.Max(hit, te.const(0, "int64"))
            for n in reversed(positions):
                p.insert(0, E.FloorMod(rest, n))
                rest = E.FloorDiv(rest, n)
            return te.select(hit >= 0, value(o, p), data(*o))

        return te.compute(data.shape, pick, name="scatter", tag=tag.INJECTIVE)
    red = REDUCERS[reduction]
    identity = red.identity(dtype)
    total = te.compute(
        data.shape,
        lambda *o: red(te.select(names(o, rk), value(o, rk), identity), axis=rk),
        name=f"scatter_{reduction}",
    )
    return te.compute(
        data.shape,
        lambda *o: red.combine(data(*o), total(*o)),
        name="scatter",
        tag=tag.INJECTIVE,
    )


def scatter_elements(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX ScatterElements along `axis` (reduction none, add, mul, max, min)."""
    data, indices, updates = ins
    ax, n = int(attrs["axis"]), data.shape[int(attrs["axis"])]

    def at(o, k):  # indices' position of output element o and step k (o clamped inside)
        return [k if d == ax else E.Min(o[d], indices.shape[d] - 1) for d in range(data.ndim)]

    def names(o, k):
        i, ok = _normalized(indices(*at(o, k[0])), n)
        inside = [o[d] < indices.shape[d] for d in range(data.ndim) if d != ax]
        return te.all(ok, i == te.cast(o[ax], "int64"), *inside)

    def value(o, k):
        return updates(*at(o, k[0]))

    def probe(p):
        _, ok = _normalized(indices(*p), n)
        return te.select(ok, te.const(0, data.dtype), _probe(updates, list(p), ok, ax))

    out = _scatter(data, updates, (indices.shape[ax],), names, value, attrs["reduction"])
    return _plus_check(out, _checked_sum(indices.shape, probe))


def scatter_nd(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX ScatterND (reduction none, add, mul, max, min): each index tuple (the indices'
    last axis) names a slice of the data, which its update replaces or combines with."""
    data, indices, updates = ins
    k, positions = indices.shape[-1], indices.shape[:-1]

    def index(p, j):
        return _normalized(indices(*p, j), data.shape[j])

    def names(o, p):
        tests = []
        for j in range(k):
            i, ok = index(p, j)
            tests += [ok, i == te.cast(o[j], "int64")]
        return te.all(*tests)

    def value(o, p):
        return updates(*p, *o[k:])

    def probe(p):
        ok = te.all(*(index(p, j)[1] for j in range(k)))
        at = [*p, *[0] * (updates.ndim - len(p))]
        return te.select(ok, te.const(0, data.dtype), _probe(updates, at, ok, 0))

    out = _scatter(data, updates, positions, names, value, attrs["reduction"])
    return _plus_check(out, _checked_sum(positions, probe))


def _plus_check(out: Tensor, check: Tensor) -> Tensor:
    """The output with the index check's zero added (so the check is computed)."""
    return te.compute(
        out.shape, lambda *o: out(*o) + check(), name="scatter_out", tag=tag.INJECTIVE
    )


def top_k_indices(ins: list[Tensor], attrs: dict) -> Tensor:
    """The indices (int64) of the k largest (or smallest) values along `axis`, in order, a tie
    to the lower index first: each value's rank (how many come before it), then per output
    position the index whose rank it is."""
    x, ax, k = ins[0], int(attrs["axis"]), int(attrs["k"])
    n = x.shape[ax]
    j = te.reduce_axis(n, "j")

    def before(v, w, i, jj):  # w (at index jj) comes before v (at index i)
        first = w > v if attrs["largest"] else w < v
        return te.any(first, te.all(w == v, jj < i))

    def rank(*o):
        v, w = x(*o), x(*o[:ax], j, *o[ax + 1 :])
        return te.sum(te.select(before(v, w, o[ax], j), te.const(1, "int64"),
                                te.const(0, "int64")), axis=j)  # fmt: skip

    ranks = te.compute(x.shape, rank, name="top_k_rank")
    m = te.reduce_axis(n, "m")

    def pick(*o):
        hit = ranks(*o[:ax], m, *o[ax + 1 :]) == te.cast(o[ax], "int64")
        return te.sum(te.select(hit, te.cast(m, "int64"), te.const(0, "int64")), axis=m)

    shape = (*x.shape[:ax], k, *x.shape[ax + 1 :])
    found = te.compute(shape, pick, name="top_k_index")
    return te.compute(shape, lambda *o: found(*o), name="top_k_out", tag=tag.INJECTIVE)
