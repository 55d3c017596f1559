"""Partial register tiles: innermost space tiles that do not divide their axis, sampled,
mutated, lowered with full vectors and featurized by the iterations that run."""

import math

import numpy as np
import pytest

import compiler
from compiler.autoschedule import partial
from compiler.autoschedule import register_tile as rt
from compiler.autoschedule.annotate import (
    annotate,
    mutate_partial_tile,
    mutate_tile_size,
    parallel_counts,
    parallel_limit,
    register_tile,
    sample_tiles,
)
from compiler.autoschedule.features import program_nests
from compiler.autoschedule.program import Program, SearchTask, run_program
from compiler.autoschedule.sketch import generate_sketches
from compiler.autoschedule.steps import Fuse, Split, loop_extents, stage_named
from compiler.tir import expr as E
from compiler.tir import stmt as S
from compiler.tir.functor import collect

CONV = ("conv2d_NCHWc", (16, 7, 7, 16, 3, 3))  # a 7 x 7 output: no tile of 2-6 divides it
LOCAL = "conv2d_NCHWc.local"
AVX2 = rt.RegisterFile(lanes=8, registers=16)


def _retiled(program: Program, inner: dict[int, int]) -> Program:
    """The program with the innermost tile of LOCAL's axis `pos` set to inner[pos]."""
    steps = list(program.steps)
    for k, step in enumerate(steps):
        if isinstance(step, Split) and step.stage == LOCAL and step.iter in inner:
            extent = int(program.task.outputs[0].op.axis[step.iter].dom.extent.value)
            steps[k] = Split(
                LOCAL, step.iter, partial.retile(extent, step.lengths, inner[step.iter])
            )
    return Program(program.task, steps, program.sketch)


def test_partial_options_cover_the_axis_with_the_last_tile_cut():
    opts = partial.partial_options(7, 4, 64)
    assert opts and {f[-1] for f in opts} == {2, 3, 4, 5, 6}
    for f in opts:
        assert 7 % f[-1] and math.prod(f[:-1]) == -(-7 // f[-1])
    assert partial.partial_options(8, 2, 64) == ((3, 3), (2, 5), (2, 6), (2, 7))
    assert partial.split_levels(7, (1, 6)) == [2, 1, 6]
    assert partial.split_levels(14, (5, 3)) == [1, 5, 3]
    assert partial.split_levels(14, (2, 3)) is None  # 5 tiles of 3: no level of 2
    assert partial.split_levels(12, (2, 3)) == [2, 2, 3]  # exact splits as before
    assert partial.retile(14, (5, 1, 2), 3) == (5, 1, 3)  # 5 tiles of 3: the 5 stays
    assert partial.retile(14, (7, 1, 2), 4) == (1, 1, 4)  # 4 tiles of 4: the 7 folds out
    assert partial.is_partial(7, (1, 3)) and not partial.is_partial(7, (1, 7))


@pytest.mark.parametrize("inner", [{2: 3, 3: 2}, {3: 6}, {2: 4}])
def test_partial_conv_tiles_compute_the_reference_with_full_vectors(inner, task_inputs):
    task = SearchTask(*CONV)
    program = _retiled(annotate(generate_sketches(task)[0], np.random.default_rng(0), True), inner)
    tile = register_tile(program.steps, LOCAL)
    assert all(tile[pos] == n for pos, n in inner.items())
    inputs = task_inputs(task)
    (want,) = task.reference(inputs)
    (got,) = run_program(program, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    s, args = program.schedule()
    final = compiler.lower_passes(s, args)["simplify_final"]
    stores = [
        st
        for st in collect(final.body, lambda n: isinstance(n, S.BufferStore))
        if st.buffer.name == LOCAL
    ]
    lanes = {i.lanes if isinstance(i, E.Ramp) else 1 for st in stores for i in st.indices}
    assert lanes == {tile[4]}  # the cut tiles keep the whole vectors of the full ones


def test_guided_draws_take_partial_tiles_that_fit_and_cover_the_axis():
    task = SearchTask("conv2d_NCHWc", (32, 7, 7, 32, 3, 3))
    st = stage_named(generate_sketches(task)[0].schedule()[0], LOCAL)
    splits = {4: 3, 3: 3, 2: 3, 1: 3, 8: 1, 7: 1, 6: 1, 5: 1}
    rng = np.random.default_rng(2)
    cut = 0
    for _ in range(60):
        lengths = sample_tiles(st, splits, rng, AVX2)
        tile = {pos: lens[-1] for pos, lens in lengths.items() if pos < 5}
        assert rt.fits(st.op, tile, AVX2) and tile[4] % AVX2.lanes == 0
        for pos, lens in lengths.items():
            extent = int([*st.op.axis, *st.op.reduce_axis][pos].dom.extent.value)
            assert partial.split_levels(extent, lens) is not None
            assert pos in (1, 2, 3) or not partial.is_partial(extent, lens)
        cut += any(partial.is_partial(7, lengths[pos]) for pos in (2, 3))
    assert 10 <= cut <= 50  # partial tiles in some draws (partial.PARTIAL), exact in others


def test_partial_tile_mutations_keep_the_cover_and_compute_the_reference(task_inputs):
    task = SearchTask(*CONV)
    rng = np.random.default_rng(4)
    base = _retiled(annotate(generate_sketches(task)[0], rng, True), {3: 3})
    inputs = task_inputs(task)
    (want,) = task.reference(inputs)
    children = []
    for _ in range(40):
        for child in (mutate_partial_tile(base, rng), mutate_tile_size(base, rng)):
            if child is None:
                continue
            s, _ = child.schedule()
            for step in child.steps:
                if isinstance(step, Split) and step.stage == LOCAL and step.iter in (2, 3):
                    assert partial.split_levels(7, step.lengths) is not None
            children.append(child)
    assert len({str(c) for c in children}) >= 5
    assert any(register_tile(c.steps, LOCAL)[3] != 3 for c in children)
    for child in children[:3]:
        (got,) = run_program(child, inputs)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_features_count_the_iterations_a_cut_tile_runs():
    task = SearchTask(*CONV)
    program = _retiled(annotate(generate_sketches(task)[0], np.random.default_rng(0), True), {3: 6})
    out = task.outputs[0]
    points = math.prod(int(n) for n in out.shape)
    s, _ = program.schedule()
    st = stage_named(s, "conv2d_NCHWc")
    ext = loop_extents(st)
    assert math.prod(ext[iv] for iv in st.leaf_iter_vars) > points  # 12 columns for 7
    copies = [n for n in program_nests(program) if next(iter(n.strides)) == "conv2d_NCHWc"]
    assert len(copies) == 1
    assert math.prod(lp.extent for lp in copies[0].loops) == pytest.approx(points)


def test_parallel_loops_stop_above_a_cut_axis_so_its_tile_partitions_out(task_inputs):
    task = SearchTask("conv2d_NCHWc", (16, 7, 7, 64, 3, 3))  # 4 output-channel blocks
    sketch = generate_sketches(task)[0]
    program = _retiled(annotate(sketch, np.random.default_rng(0), True), {2: 3, 3: 2})
    steps = [  # every output-channel block in the outer loop: 4 iterations above the cut
        Split(LOCAL, 1, (1, 1, 1))
        if isinstance(x, Split) and x.stage == LOCAL and x.iter == 1
        else x
        for x in program.steps
    ]
    program = Program(task, steps, program.sketch)
    k = next(j for j, x in enumerate(program.steps) if isinstance(x, Fuse))
    s = Program(task, program.steps[:k], program.sketch).schedule()[0]
    st = stage_named(s, "conv2d_NCHWc")
    cut = partial.cut_loops(st)
    assert {iv.var.name for iv in cut} >= {"y.0", "x.0"}
    counts = parallel_counts(st, parallel_limit(s, st), 2)
    assert counts and all(not cut & set(st.leaf_iter_vars[:c]) for c in counts)
    steps = list(program.steps)
    steps[k] = Fuse("conv2d_NCHWc", 0, max(counts))
    fused = Program(task, steps, program.sketch)
    s, args = fused.schedule()
    final = compiler.lower_passes(s, args)["simplify_final"]
    assert not collect(final.body, lambda n: isinstance(n, S.IfThenElse))  # tiles partitioned
    inputs = task_inputs(task)
    (want,) = task.reference(inputs)
    (got,) = run_program(fused, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
