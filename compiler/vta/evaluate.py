"""Index expressions evaluated with numpy over a loop grid, and affine fitting of them.

Shapes are static, so the backend evaluates every address of a loop nest at once instead of
reasoning symbolically: a nest is affine when its values equal base + sum(stride * var).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..arith.linear import linear
from ..errors import LoweringError
from ..tir import expr as E

_BINARY = {
    E.Add: np.add,
    E.Sub: np.subtract,
    E.Mul: np.multiply,
    E.FloorDiv: np.floor_divide,
    E.FloorMod: np.mod,
    E.Min: np.minimum,
    E.Max: np.maximum,
    E.EQ: np.equal,
    E.NE: np.not_equal,
    E.LT: np.less,
    E.LE: np.less_equal,
    E.GT: np.greater,
    E.GE: np.greater_equal,
    E.And: np.logical_and,
    E.Or: np.logical_or,
}


def evaluate(e: E.Expr, values: Mapping[E.Var, np.ndarray | int]) -> np.ndarray:
    """The integer value of index expression `e` (loads are not indices: an error)."""
    if isinstance(e, E.IntImm):
        return np.int64(e.value)
    if isinstance(e, E.Var):
        return np.asarray(_lookup(e, values), dtype=np.int64)
    if isinstance(e, E.Cast):
        return evaluate(e.value, values)
    if isinstance(e, E.Not):
        return np.logical_not(evaluate(e.a, values))
    if isinstance(e, E.Select):
        return np.where(evaluate(e.cond, values), evaluate(e.t, values), evaluate(e.f, values))
    fn = _BINARY.get(type(e))
    if fn is not None:
        return fn(evaluate(e.a, values), evaluate(e.b, values))
    raise LoweringError(f"cannot evaluate {e!r} as an address: it is not integer arithmetic")


def _lookup(v: E.Var, values: Mapping[E.Var, np.ndarray | int]) -> np.ndarray | int:
    if v not in values:
        raise LoweringError(f"index uses '{v.name}', which is not a loop of the host or nest")
    return values[v]


@dataclass(frozen=True)
class Loop:
    """One loop of a nest: its variable, extent and name."""

    var: E.Var
    extent: int

    @property
    def name(self) -> str:
        return self.var.name


def grid(loops: Sequence[Loop], host: Mapping[E.Var, int]) -> dict[E.Var, np.ndarray | int]:
    """Values of the host variables and of each nest loop as an open mesh (nest order)."""
    values: dict[E.Var, np.ndarray | int] = dict(host)
    n = len(loops)
    for k, loop in enumerate(loops):
        shape = [1] * n
        shape[k] = loop.extent
        values[loop.var] = np.arange(loop.extent, dtype=np.int64).reshape(shape)
    return values


def full(value: np.ndarray, loops: Sequence[Loop]) -> np.ndarray:
    return np.broadcast_to(value, tuple(lp.extent for lp in loops))


def affine(
    e: E.Expr, loops: Sequence[Loop], host: Mapping[E.Var, int], what: str
) -> tuple[int, list[int]]:
    """(base, stride per loop) of `e` over the nest, or a LoweringError naming the loop.

    Linear expressions are read off their coefficients; any other is evaluated over the whole
    grid and fitted."""
    form = linear(e)
    if form is not None:
        terms, base = form
        nest = {lp.var for lp in loops}
        for v, c in terms.items():
            if v not in nest:
                base += c * int(_lookup(v, host))
        return base, [terms.get(lp.var, 0) if lp.extent > 1 else 0 for lp in loops]
    value = full(evaluate(e, grid(loops, host)), loops)
    origin = (0,) * len(loops)
    base = int(value[origin]) if loops else int(value)
    strides = []
    for k, loop in enumerate(loops):
        if loop.extent == 1:
            strides.append(0)
            continue
        at = list(origin)
        at[k] = 1
        strides.append(int(value[tuple(at)]) - base)
    fitted = base + sum(
        (s * np.arange(lp.extent).reshape([-1 if j == k else 1 for j in range(len(loops))]))
        for k, (s, lp) in enumerate(zip(strides, loops, strict=True))
    )
    bad = np.argwhere(value != fitted) if loops else []
    if len(bad):
        k = next(k for k, i in enumerate(bad[0]) if i)
        raise LoweringError(
            f"{what}: the address {e!r} is not affine in loop '{loops[k].name}' (extent "
            f"{loops[k].extent}); micro-op and DMA loops need addresses base + stride * var"
        )
    return base, strides
