"""Guided annotation: register tiles that fit the target's vector registers."""

import math

import numpy as np
import pytest

from compiler.autoschedule import register_tile as rt
from compiler.autoschedule.annotate import (
    annotate,
    mutate,
    mutate_register_tile,
    register_faults,
    register_tile,
    sample_register_tile,
)
from compiler.autoschedule.program import SearchTask, run_program
from compiler.autoschedule.sketch import generate_sketches
from compiler.autoschedule.steps import Pragma, Split
from compiler.tune.measure import random_arrays

AVX512 = rt.RegisterFile(lanes=16, registers=32)


def _op(name, args):
    return SearchTask(name, args).outputs[0].op


def test_registers_count_accumulators_held_operands_and_a_broadcast():
    matmul = _op("matmul", (64, 64, 64))  # axes i, j: B[k, j] is held, A[i, k] broadcast
    assert rt.registers_needed(matmul, {0: 4, 1: 64}, 16) == 4 * 4 + 4 + 1
    assert rt.fits(matmul, {0: 6, 1: 64}, AVX512)  # 24 + 4 + 1
    assert not rt.fits(matmul, {0: 8, 1: 64}, AVX512)  # 32 accumulators alone
    assert not rt.fits(matmul, {0: 4, 1: 8}, AVX512)  # half a vector though 64 allows whole
    conv = _op("conv2d_NCHWc", (32, 14, 14, 32, 3, 3))  # b, oc, y, x, ob: weights per oc
    assert rt.vector_axis(conv) == 4
    assert rt.registers_needed(conv, {1: 2, 3: 7, 4: 16}, 16) == 14 + 2 + 1
    dw = _op("depthwise_conv2d_nchw", (8, 28, 28, 3))  # the data load spans the whole tile
    assert rt.registers_needed(dw, {2: 2, 3: 28}, 16) == 4 + 1
    assert rt.fits(dw, {3: 14}, AVX512)  # 28 has no whole-vector divisor: partial is fine


def test_load_bound_tiles_issue_more_loads_than_fmas():
    matmul = _op("matmul", (64, 64, 64))
    assert rt.load_bound(matmul, {0: 1, 1: 64}, 8)  # 8 vectors of B + 1 broadcast, 8 FMAs
    assert rt.load_bound(matmul, {0: 8, 1: 8}, 8)  # 1 vector + 8 broadcasts
    assert not rt.load_bound(matmul, {0: 4, 1: 16}, 8)  # 2 + 4 loads for 8 FMAs
    assert not rt.load_bound(matmul, {0: 2, 1: 32}, 8)  # 4 + 2
    conv = _op("conv2d_NCHWc", (32, 14, 14, 32, 3, 3))
    assert not rt.load_bound(conv, {3: 4, 4: 16}, 8)  # 4 columns x 2 vectors: 2 + 4 loads
    assert rt.load_bound(conv, {1: 4, 4: 16}, 8)  # 4 oc blocks of one point: 8 + 1 loads
    # guided draws avoid them where the extents allow: 1024 has 4x16 and 2x32 on AVX2
    big = _op("matmul", (1024, 1024, 1024))
    avx2 = rt.RegisterFile(lanes=8, registers=16)
    rng = np.random.default_rng(0)
    extents = {0: 1024, 1: 1024}
    draws = [sample_register_tile(big, {0: 3, 1: 3}, extents, rng, avx2) for _ in range(40)]
    assert {(d[0], d[1]) for d in draws} == {(4, 16), (2, 32)}


@pytest.mark.parametrize(
    "name,args",
    [("matmul", (1024, 1024, 1024)), ("conv2d_NCHWc", (64, 56, 56, 64, 3, 3, 1, 16, 16))],
)
def test_guided_annotation_keeps_tiles_in_registers_and_unrolls_them(name, args):
    task = SearchTask(name, args)
    rf = rt.register_file(task.target, "float32")
    rng = np.random.default_rng(0)
    guided_faults, uniform_faults, shapes = 0, 0, set()
    for sk in generate_sketches(task):
        for _ in range(12):
            program = annotate(sk, rng, guided=True)
            guided_faults += register_faults(program)
            (tiled,) = {s.stage for s in program.steps if isinstance(s, Split) and s.lengths[1:]}
            inner = register_tile(program.steps, tiled)
            op = task.outputs[0].op
            assert inner[rt.vector_axis(op)] % rf.lanes == 0  # whole vectors
            (limit,) = [
                p.value for p in program.steps if isinstance(p, Pragma) and p.stage == tiled
            ]
            assert limit >= math.prod(inner.values())  # the unroll limit covers the tile
            shapes.add(tuple(sorted(inner.items())))
            uniform_faults += register_faults(annotate(sk, rng, guided=False)) > 0
    assert guided_faults == 0
    assert uniform_faults > 0  # the rules do constrain: uniform sampling breaks them
    assert len(shapes) >= 2  # and leave the search more than one tile (4x16, 2x32 on AVX2)


def test_register_tile_mutation_reshapes_the_tile_and_keeps_extents():
    task = SearchTask("conv2d_NCHWc", (16, 8, 8, 32, 3, 3, 1, 16, 16))
    rng = np.random.default_rng(4)
    (sketch,) = generate_sketches(task)
    program = annotate(sketch, rng, guided=True)
    axes = task.outputs[0].op.axis
    before = register_tile(program.steps, "conv2d_NCHWc.local")
    moved = 0
    for _ in range(100):
        child = mutate_register_tile(program, rng)
        if child is None:
            continue
        after = register_tile(child.steps, "conv2d_NCHWc.local")
        changed = [p for p in after if after[p] != before[p]]
        assert len(changed) == 2  # a factor left one axis' tile and joined another's
        moved += 1
        for s in child.steps:  # every split still divides its axis
            if isinstance(s, Split) and len(s.lengths) >= 2:
                assert int(axes[s.iter].dom.extent.value) % math.prod(s.lengths) == 0
    assert moved > 5
    inputs = random_arrays([(t.shape, t.dtype) for t in task.tensors[:2]])
    (want,) = task.reference(inputs)
    (got,) = run_program(child or program, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


def test_mutations_never_break_a_rule_the_parent_kept():
    task = SearchTask("matmul", (512, 512, 512))
    rng = np.random.default_rng(7)
    (sketch,) = generate_sketches(task)
    program = annotate(sketch, rng, guided=True)
    assert register_faults(program) == 0
    children = [c for c in (mutate(program, rng) for _ in range(120)) if c is not None]
    assert len(children) > 20
    assert all(register_faults(c) == 0 for c in children)


def test_no_register_rules_off_the_cpu():
    assert rt.register_file("cuda", "float32") is None
