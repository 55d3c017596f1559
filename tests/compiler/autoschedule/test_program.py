"""Programs: random annotation, deterministic replay, JSON, correctness of built programs."""

import importlib

import numpy as np
import pytest

from compiler.autoschedule import partial
from compiler.autoschedule.annotate import (
    PARALLEL_TASKS,
    annotate,
    crossover,
    factorizations,
    mutate,
    mutate_parallel,
    mutate_rfactor,
)
from compiler.autoschedule.layout import Pack
from compiler.autoschedule.program import Program, SearchTask, run_program
from compiler.autoschedule.rfactor import Rfactor
from compiler.autoschedule.sketch import generate_sketches
from compiler.autoschedule.steps import (
    ComputeAt,
    ComputeRoot,
    Fuse,
    Inline,
    Split,
    loop_extents,
    stage_named,
    step_from_json,
)
from compiler.errors import TuningError

CASES = [
    ("matmul", (32, 48, 16)),
    ("matmul_relu", (16, 32, 8)),
    ("conv2d_NCHWc", (16, 6, 6, 32, 3, 3)),
    ("depthwise_conv2d_nchw", (8, 6, 6, 3)),
    ("softmax", (4, 32)),
    ("row_norm", (3, 64)),
]


@pytest.mark.parametrize("name,args", CASES)
def test_annotated_and_mutated_programs_compute_the_reference(name, args, task_inputs):
    task = SearchTask(name, args)
    rng = np.random.default_rng(1)
    inputs = task_inputs(task)
    (want,) = task.reference(inputs)
    for sk in generate_sketches(task):
        program = annotate(sk, rng)
        children = [c for c in (mutate(program, rng) for _ in range(8)) if c is not None]
        for p in [program, *children[:2]]:
            (got,) = run_program(p, inputs)
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


def test_replay_is_deterministic_and_json_round_trips():
    task = SearchTask("matmul_relu", (16, 32, 8))
    program = annotate(generate_sketches(task)[0], np.random.default_rng(3))
    again = Program.from_json(task, program.to_json())
    assert str(again) == str(program) and again.index == program.index
    assert str(program) == str(program)  # replays onto a fresh schedule each time
    s1, _ = program.schedule()
    s2, _ = again.schedule()
    assert [[iv.name for iv in st.leaf_iter_vars] for st in s1.stages] == [
        [iv.name for iv in st.leaf_iter_vars] for st in s2.stages
    ]


def test_annotation_fills_every_tile_size_and_covers_every_axis():
    task = SearchTask("matmul", (64, 48, 32))
    for k in range(10):
        program = annotate(generate_sketches(task)[0], np.random.default_rng(k))
        assert "?" not in str(program)
        s, _ = program.schedule()
        for j, step in enumerate(program.steps):  # divisors, or a partial row tile
            if isinstance(step, Split):
                st = stage_named(s, step.stage)
                before = Program(task, program.steps[:j], program.sketch).schedule()[0]
                pre = stage_named(before, step.stage)
                extent = loop_extents(pre)[pre.leaf_iter_vars[step.iter]]
                assert partial.split_levels(extent, step.lengths) is not None
                assert not partial.is_partial(extent, step.lengths) or (
                    st.op.name == "C.local" and step.iter == 0
                )
    assert sorted(factorizations(12, 2)) == [(1, 12), (2, 6), (3, 4), (4, 3), (6, 2), (12, 1)]


def test_crossover_mixes_stages_of_one_sketch():
    task = SearchTask("matmul_relu", (16, 32, 8))
    sk = generate_sketches(task)[0]
    rng = np.random.default_rng(5)
    a, b = annotate(sk, rng), annotate(sk, rng)
    child = crossover(a, b, rng)
    assert child is not None
    for x, ya, yb in zip(child.steps, a.steps, b.steps, strict=True):
        assert x in (ya, yb)
    other = Program(task, a.steps[:-1], sketch=sk.sketch + 1)
    assert crossover(a, other, rng) is None


def test_bad_steps_and_workloads_are_clear_errors():
    with pytest.raises(TuningError, match="not a transformation step"):
        step_from_json(["XX", "C"])
    with pytest.raises(TuningError, match="unknown auto-scheduler workload"):
        SearchTask("no_such_op", (1,))
    with pytest.raises(TuningError, match="not an auto-scheduler record"):
        Program.from_json(SearchTask("matmul", (4, 4, 4)), {"tile_x": [1, 4]})


def test_flop_counts_value_arithmetic_not_index_arithmetic():
    """A conv's loads index with y + ry and ic_chunk * 16 + ic_block: those adds are not
    operations of the convolution (counting them made its GFLOPS 4x too high)."""
    from compiler.autoschedule import SearchTask

    args = (64, 56, 56, 64, 3, 3, 1, 16, 16)
    conv = 2 * 56 * 56 * 64 * 64 * 9
    padding = 4 * 58 * 58 * 16  # the padding stage's selects
    assert SearchTask("conv2d_NCHWc", args, "llvm").flop == conv + padding
    assert SearchTask("matmul", (64, 32, 16), "llvm").flop == 2 * 64 * 32 * 16


def test_softmax_exp_location_is_sampled_and_every_choice_is_correct(task_inputs):
    task = SearchTask("softmax", (4, 32))
    sk = generate_sketches(task)[0]  # the sketch without rfactor
    inputs = task_inputs(task)
    (want,) = task.reference(inputs)
    seen = {}
    for k in range(24):
        program = annotate(sk, np.random.default_rng(k))
        (loc,) = [s for s in program.steps if s.stage == "T_softmax_exp" and _is_location(s)]
        seen.setdefault(type(loc).__name__, program)
    assert set(seen) == {"Inline", "ComputeRoot", "ComputeAt"}
    for program in seen.values():
        (got,) = run_program(program, inputs)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def _is_location(step):
    return isinstance(step, ComputeAt | ComputeRoot | Inline)


def test_rfactor_mutation_changes_the_factor_and_stays_correct(task_inputs):
    task = SearchTask("row_norm", (4, 1024))
    (factored,) = [sk for sk in generate_sketches(task) if "rfactor" in str(sk)]
    rng = np.random.default_rng(2)
    program = annotate(factored, rng)
    (rf,) = [s for s in program.steps if isinstance(s, Rfactor)]
    inputs = task_inputs(task)
    (want,) = task.reference(inputs)
    factors = set()
    for _ in range(4):
        child = mutate_rfactor(program, rng)
        assert child is not None
        (new,) = [s for s in child.steps if isinstance(s, Rfactor)]
        assert new.factor != rf.factor and 1024 % new.factor == 0
        factors.add(new.factor)
        (got,) = run_program(child, inputs)
        np.testing.assert_allclose(got, want, rtol=1e-4)
    assert len(factors) > 1
    assert mutate_rfactor(annotate(generate_sketches(task)[0], rng), rng) is None  # no rfactor


def test_packed_panels_follow_the_register_tile_and_replay(task_inputs):
    task = SearchTask("matmul", (16, 128, 8))
    sketches = [sk for sk in generate_sketches(task) if "pack(" in str(sk)]
    assert len(sketches) == 1  # and one without the pack (B is read 16 times over)
    inputs = task_inputs(task)
    (want,) = task.reference(inputs)
    rng = np.random.default_rng(4)
    widths = set()
    for sk in sketches:
        for _ in range(6):
            program = annotate(sk, rng)
            (pack,) = [s for s in program.steps if isinstance(s, Pack)]
            j_split = program.steps[pack.src]
            assert j_split.stage == pack.reader and j_split.iter == 1  # C's (or C.local's) j
            bn = j_split.lengths[-1]
            widths.add(bn)
            assert f"B.packed = pack(B, panels of {bn}, for {pack.reader})" in str(program)
            (loc,) = [s for s in program.steps if s.stage == "B.packed" and _is_location(s)]
            assert isinstance(loc, ComputeRoot)  # packed once, never inlined nor repacked
            again = Program.from_json(task, program.to_json())
            assert str(again) == str(program) and again.index == program.index
            s, _ = again.schedule()
            assert [st.op.name for st in s.stages if st.attach_type != "inline"][0] == "B.packed"
            assert s.stages[0].op.shape == (128 // bn, 8, bn)
            children = [c for c in (mutate(program, rng) for _ in range(8)) if c is not None]
            for p in [program, *children[:2]]:
                (got,) = run_program(p, inputs)
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert len(widths) > 1


def test_parallel_mutation_never_fuses_past_an_attach_point(task_inputs):
    task = SearchTask("matmul", (16, 128, 8))
    cached = [sk for sk in generate_sketches(task) if "cache_write" in str(sk)]
    rng = np.random.default_rng(0)
    for sk in cached:
        for _ in range(20):
            program = annotate(sk, rng)
            child = mutate_parallel(program, rng, 1)
            if child is not None:  # C.local is computed at C.j.1: at most i.0, j.0, i.1 fused
                (fuse,) = [s for s in child.steps if isinstance(s, Fuse) and s.stage == "C"]
                assert fuse.count <= 3
                run_program(child, task_inputs(task))


def _parallel_extents(program):
    """The extent of every parallel loop of a program."""
    s, _ = program.schedule()
    return [
        loop_extents(st)[iv]
        for st in s.stages
        for iv in st.leaf_iter_vars
        if st.iter_attrs.get(iv) is not None and st.iter_attrs[iv].kind == "parallel"
    ]


@pytest.mark.parametrize("threads", [2, 8])
def test_guided_parallel_loops_give_every_thread_work(threads):
    """Guided draws fuse enough loops that each thread has PARALLEL_TASKS iterations where
    the tiling leaves that many (some tilings leave 2 or 4 in all), and a mutation
    does not take that away; uniform draws leave threads idle more often."""
    task = SearchTask("conv2d_NCHWc", (64, 14, 14, 64, 3, 3))
    rng = np.random.default_rng(0)
    need = PARALLEL_TASKS * threads
    guided, uniform = [], []
    for sk in generate_sketches(task):
        for _ in range(15):
            program = annotate(sk, rng, True, threads)
            guided += _parallel_extents(program)
            for _ in range(5):
                child = mutate_parallel(program, rng, threads)
                guided += _parallel_extents(child) if child is not None else []
            uniform += _parallel_extents(annotate(sk, rng, False, threads))
    share = np.mean(np.array(guided) >= need)
    assert share > (0.95 if threads == 2 else 0.7)
    assert np.mean(np.array(uniform) >= need) < share - 0.2


def test_a_mutation_that_no_longer_replays_is_no_program(monkeypatch):
    annotate_module = importlib.import_module("compiler.autoschedule.annotate")  # not the function
    task = SearchTask("matmul_relu", (16, 32, 8))
    rng = np.random.default_rng(0)
    program = next(
        p
        for p in (annotate(sk, rng) for sk in generate_sketches(task))
        if any(isinstance(s, ComputeAt) for s in p.steps)
    )

    def break_attach(p, rng):  # attach a stage at a loop its target does not have
        steps = [
            ComputeAt(s.stage, s.target, 99) if isinstance(s, ComputeAt) else s for s in p.steps
        ]
        return Program(p.task, steps, p.sketch)

    monkeypatch.setattr(annotate_module, "MUTATIONS", {break_attach: 1.0})
    assert mutate(program, rng) is None


def test_unroll_pragma_counts_the_stages_computed_inside_its_loops(task_inputs):
    # C.local (its loops unrolled to 16 statements) is computed at C.j.1: unrolling C's
    # j.1 (8) and i.2 (2) expands (2 + 16) x 8 = 144 statements; i.1 (4) would make 576 > 512.
    # Counting C's own loops alone unrolled j.0, i.1, j.1 and i.2 around the attached nest
    # too: 100,000 lines of LLVM IR for a 16x32x8 matmul, which LLVM took minutes to optimize.
    task = SearchTask("matmul", (16, 32, 8))
    steps = [
        ["CW", "C"], ["SP", "C.local", 2, [4]], ["SP", "C.local", 1, [8, 1, 1]],
        ["SP", "C.local", 0, [4, 2, 1]], ["RE", "C.local", [0, 4, 1, 5, 8, 2, 6, 9, 3, 7]],
        ["FSP", "C", 1, 2, 3], ["FSP", "C", 0, 3, 3], ["RE", "C", [0, 3, 1, 4, 2, 5]],
        ["CA", "C.local", "C", 3], ["FU", "C", 0, 1], ["AN", "C", 0, "parallel"],
        ["AN", "C.local", -1, "vectorize"], ["AN", "C", -1, "vectorize"],
        ["PR", "C.local", 0, "auto_unroll_max_step", 16],
        ["PR", "C", 0, "auto_unroll_max_step", 512],
    ]  # fmt: skip
    program = Program.from_json(task, {"kind": "ansor", "sketch": 0, "steps": steps})
    lines = str(program).splitlines()
    assert "C.local: auto_unroll_max_step=16 at i.0 (unrolls k.0, i.2, j.2, k.1, i.3)" in lines
    assert "C: auto_unroll_max_step=512 at i.0 (unrolls j.1, i.2)" in lines
    run_program(program, task_inputs(task))
