"""Program features for the cost model: per innermost statement, summed over a program.

A program is lowered as far as the tuner's features need (`tir_features.lower_for_features`);
every buffer store becomes a loop nest (its loops, annotations and per-buffer strides) whose
fixed-length feature row (`tune.features`) is computed as for the template tuner's main
statement; a program's row is the sum of its stores' rows. Loops that run once carry nothing
and are dropped, so deep tilings still fit the feature's loop slots. A store under the guards
of a partial tile (`partial.py`: the cut tile's points past the axis are skipped) counts only
the iterations that pass them: the largest loop its guards read runs the share that does
(`guarded_share`), so a cut tile does not look like more work than it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..errors import LoweringError
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.functor import collect, free_vars
from ..tune.features import MAX_BUFFERS, MAX_LOOPS, PROGRAM_FEATURE_LENGTH, Loop, LoopNest
from ..tune.features import program_features as nest_rows
from ..tune.tir_features import lower_for_features, store_nest, stores
from ..vta.evaluate import evaluate
from .program import Program

MAX_GUARD_POINTS = 1 << 16  # guards over larger loop grids are not counted (share 1)


def _compact(nest: LoopNest) -> LoopNest:
    keep = [k for k, lp in enumerate(nest.loops) if lp.extent > 1][-MAX_LOOPS:]
    loops: list[Loop] = [nest.loops[k] for k in keep]
    names = list(nest.strides)[:MAX_BUFFERS]  # the store's buffer comes first
    strides = {b: [nest.strides[b][k] for k in keep] for b in names}
    return LoopNest(loops, strides)


def guarded_share(conds: list[E.Expr], fors: list[S.For]) -> tuple[int, float]:
    """(index into `fors` of the largest loop the guards `conds` read, share of the grid of
    the loops they read that passes them); (-1, 1.0) without guards, or where they read
    anything but loops of constant extent from 0 or their grid exceeds MAX_GUARD_POINTS."""
    used = set().union(*(free_vars(c) for c in conds)) if conds else set()
    loops = [(k, f) for k, f in enumerate(fors) if f.loop_var in used]
    extents = [E.as_int(f.extent) for _, f in loops]
    if (
        not loops
        or len(loops) < len(used)
        or any(E.as_int(f.min) != 0 for _, f in loops)
        or any(n is None for n in extents)
        or math.prod(extents) > MAX_GUARD_POINTS  # type: ignore[arg-type]
    ):
        return -1, 1.0
    grid = np.meshgrid(*(np.arange(n) for n in extents), indexing="ij", sparse=True)  # type: ignore[arg-type]
    values = {f.loop_var: g for (_, f), g in zip(loops, grid, strict=True)}
    passed = np.ones(tuple(extents), bool)  # type: ignore[arg-type]
    try:
        for cond in conds:
            passed &= np.broadcast_to(evaluate(cond, values).astype(bool), passed.shape)
    except LoweringError:  # not integer arithmetic of the loops
        return -1, 1.0
    largest = max(loops, key=lambda kf: E.as_int(kf[1].extent) or 0)[0]
    return largest, float(passed.mean())


def _guards(body: S.Stmt) -> dict[int, list[E.Expr]]:
    """Per store (by id), the conditions of the IfThenElse statements whose then-case holds it."""
    out: dict[int, list[E.Expr]] = {}
    for node in collect(body, lambda n: isinstance(n, S.IfThenElse)):
        for st in collect(node.then_case, lambda n: isinstance(n, S.BufferStore)):
            out.setdefault(id(st), []).append(node.cond)
    return out


def _counted(nest: LoopNest, loop: int, share: float) -> LoopNest:
    """The nest with loop #`loop` running `share` of its iterations."""
    if loop < 0:
        return nest
    loops = list(nest.loops)
    lp = loops[loop]
    loops[loop] = Loop(lp.name, max(1.0, lp.extent * share), lp.annotation)  # type: ignore[arg-type]
    return LoopNest(loops, nest.strides)


def program_nests(program: Program) -> list[LoopNest]:
    """The loop nest of every store of a program, a guarded one's counting the iterations that
    pass its guards (raises if the program does not lower)."""
    s, args = program.schedule()
    func = lower_for_features(s, args)
    guards = _guards(func.body)
    nests = []
    for st, fors in stores(func.body):
        loop, share = guarded_share(guards.get(id(st), []), fors)
        nests.append(_compact(_counted(store_nest(st, fors), loop, share)))
    return nests


def featurize(programs: Sequence[Program]) -> tuple[np.ndarray, np.ndarray]:
    """(rows, valid): one summed feature row per program; programs that fail to replay or
    lower get a zero row and valid False."""
    nests: list[LoopNest] = []
    owner: list[int] = []
    valid = np.zeros(len(programs), bool)
    for k, p in enumerate(programs):
        try:
            found = program_nests(p)
        except Exception:  # noqa: BLE001 - whatever replay or lowering raises: invalid
            continue
        valid[k] = True
        nests += found
        owner += [k] * len(found)
    rows = np.zeros((len(programs), PROGRAM_FEATURE_LENGTH), np.float32)
    if nests:
        np.add.at(rows, np.array(owner), nest_rows(nests))
    return rows, valid
