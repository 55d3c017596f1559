"""Program features for the cost model: per innermost statement, summed over a program.

A program is lowered as far as the tuner's features need (`tir_features.lower_for_features`);
every buffer store becomes a loop nest (its loops, annotations and per-buffer strides) whose
fixed-length feature row (`tune.features`) is computed as for the template tuner's main
statement; a program's row is the sum of its stores' rows. Loops that run once carry nothing
and are dropped, so deep tilings still fit the feature's loop slots.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..tune.features import MAX_BUFFERS, MAX_LOOPS, PROGRAM_FEATURE_LENGTH, Loop, LoopNest
from ..tune.features import program_features as nest_rows
from ..tune.tir_features import lower_for_features, store_nest, stores
from .program import Program


def _compact(nest: LoopNest) -> LoopNest:
    keep = [k for k, lp in enumerate(nest.loops) if lp.extent > 1][-MAX_LOOPS:]
    loops: list[Loop] = [nest.loops[k] for k in keep]
    names = list(nest.strides)[:MAX_BUFFERS]  # the store's buffer comes first
    strides = {b: [nest.strides[b][k] for k in keep] for b in names}
    return LoopNest(loops, strides)


def program_nests(program: Program) -> list[LoopNest]:
    """The loop nest of every store of a program (raises if the program does not lower)."""
    s, args = program.schedule()
    func = lower_for_features(s, args)
    return [_compact(store_nest(st, fors)) for st, fors in stores(func.body)]


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
