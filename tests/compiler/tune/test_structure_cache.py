"""The structure cache on a synthetic template whose extents are piecewise in a split factor."""

import numpy as np

from compiler.tune.features import Loop, LoopNest, nest_arrays
from compiler.tune.space import ConfigSpace
from compiler.tune.tir_features import StructureCache, _Refined


def _space() -> ConfigSpace:
    space = ConfigSpace()
    space.define_split("tile_c", 48, num_outputs=2)  # blocks 1, 2, 3, 4, 6, 8, 12, 16, 24, 48
    space.define_split("tile_x", 32, num_outputs=2)
    space.define_knob("vec", [False, True])
    return space


def _lower(space: ConfigSpace, index: int) -> LoopNest:
    """A register tile's reduction over a channel block in steps of the block's largest
    divisor up to 4 (unrolled), as the x86 templates take them on 16-register targets."""
    cfg = space.get(index)
    blocks, block = cfg["tile_c"].size
    xo, xi = cfg["tile_x"].size
    step = max(d for d in range(1, 5) if block % d == 0)
    loops = [
        Loop("c.outer", blocks),
        Loop("x.outer", xo),
        Loop("c.step", block // step),
        Loop("c.lane", step, "unroll"),
        Loop("x", xi, "vec" if cfg["vec"].val else "none"),
    ]
    strides = {"data": [block * 32, xi, step, 1, 0], "out": [0, xi, 0, 0, 1]}
    # a loop that runs once moves no index (as `store_nest` reads a lowered one)
    runs = [lp.extent > 1 for lp in loops]
    return LoopNest(
        loops, {b: [x * r for x, r in zip(v, runs, strict=True)] for b, v in strides.items()}
    )


def test_classes_piecewise_in_a_factor_are_refined_by_its_residue():
    space = _space()
    cache = StructureCache(space, lambda i: _lower(space, i), seed=0)
    index = np.arange(len(space))
    digits = space.digits(index)
    served = np.zeros(len(index), bool)
    for rows, arrays in cache.arrays(digits):
        assert arrays is not None, "every class has a recipe once refined"
        served[rows] = True
        for k, i in enumerate(index[rows]):
            ext, ann, strides, _ = nest_arrays(_lower(space, int(i)))
            assert np.array_equal(arrays[0][k], ext) and np.array_equal(arrays[1][k], ann)
            assert np.array_equal(arrays[2][k], np.abs(strides))
    assert served.all()
    # the channel split is the one refined (steps of 1, 2, 3 and 4 mix in its classes)
    refined = {e.knob for e in cache._classes.values() if isinstance(e, _Refined)}
    assert refined == {0}
