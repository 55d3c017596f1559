"""The auto-scheduler on the accelerator (compiler/autoschedule/accel.py): sketches of the
packed conv2d and dense, candidates bit-exact on fsim, the template's schedule inside the
search space, a seeded search against the template's default tiling, bad workloads refused."""

import numpy as np
import pytest

from compiler.autoschedule import AnsorTuner, SearchTask, accel, annotate, generate_sketches, mutate
from compiler.errors import TuningError
from compiler.topi.vta.conv2d import (
    RESNET18,
    Conv2DKnobs,
    conv2d_from_workload,
    default_knobs,
    fits,
    schedule_conv2d_packed,
)
from compiler.tune import tune
from compiler.tune.measure import compiler_build, random_arrays
from compiler.tune.templates.vta import CLIP, SHIFT
from compiler.tune.workloads import workload_measure_option
from compiler.vta import build, get_env
from vta.device import get_device

SMALL_CONV = (1, 2, 8, 8, 4, 3, 3, 1, 1)  # sizes in blocks, as Conv2DWorkload
SMALL_DENSE = (1, 4, 4)


def _run_fsim(task: SearchTask, program) -> tuple[np.ndarray, np.ndarray]:
    prog = compiler_build(task, task.instantiate(program))  # type: ignore[arg-type]
    names = [b.name for b in prog.buffers if b.role in ("input", "weight")]
    inputs = random_arrays([(prog.buffer(n).shape, prog.buffer(n).dtype) for n in names], seed=3)
    outs, _ = get_device("fsim").run(prog, dict(zip(names, inputs, strict=True)))
    return next(iter(outs.values())), task.reference(inputs)[0]


@pytest.mark.parametrize(
    "name, args", [("conv2d_packed", SMALL_CONV), ("dense_packed", SMALL_DENSE)]
)
def test_candidates_are_bit_exact_on_fsim(name, args):
    task = SearchTask(name, args, "vta")
    sketches = generate_sketches(task)
    assert len(sketches) == (6 if name == "conv2d_packed" else 2)  # the outer loop orders
    rng = np.random.default_rng(0)
    env = get_env()
    threads = set()
    for k in range(6):
        program = annotate(sketches[k % len(sketches)], rng)
        knobs = accel.knobs_of(program)
        assert fits(accel.conv_workload(task), knobs, env)
        threads.add(knobs.oc_nthread * knobs.h_nthread)
        got, want = _run_fsim(task, program)
        np.testing.assert_array_equal(got, want)
    assert threads != {1}  # virtual threads were drawn


def test_mutations_keep_fitting_tilings():
    task = SearchTask("conv2d_packed", SMALL_CONV, "vta")
    rng = np.random.default_rng(1)
    program = annotate(generate_sketches(task)[0], rng)
    space = set(accel.fitting_knobs(task))
    children = [c for c in (mutate(program, rng) for _ in range(20)) if c is not None]
    assert children and all(accel.knobs_of(c) in space for c in children)
    assert any(accel.knobs_of(c) != accel.knobs_of(program) for c in children)
    # C2's whole 56x56 output of 4 channel blocks in one tile: 12548 accumulator rows of 2048
    c2 = SearchTask("conv2d_packed", RESNET18["C2"].sizes, "vta")
    unfit = accel.with_knobs(generate_sketches(c2)[0], Conv2DKnobs(1, 56, 56, 1, 4, 1, 1))
    assert accel.knobs_of(unfit) == Conv2DKnobs(1, 56, 56, 1, 4, 1, 1)
    assert not accel.fits(unfit) and accel.if_fits(unfit) is None
    rows, valid = accel.featurize([program, unfit])
    assert valid.tolist() == [True, False] and rows[0].any() and not rows[1].any()


def test_the_templates_schedule_is_a_program_of_the_space():
    wl = RESNET18["C12"]
    task = SearchTask("conv2d_packed", wl.sizes, "vta")
    knobs = default_knobs(wl)
    template_order = 1  # outer tiles batch, rows, channels, columns: the sketch (0, 2, 1, 3)
    program = accel.with_knobs(generate_sketches(task)[template_order], knobs)
    assert accel.knobs_of(program) == knobs
    args, out = conv2d_from_workload(wl, shift=SHIFT, clip=CLIP)
    want = build(schedule_conv2d_packed(out, knobs), [*args, out]).program
    got = compiler_build(task, task.instantiate(program))  # type: ignore[arg-type]
    assert got.insns.tobytes() == want.insns.tobytes()


def test_search_reaches_the_template_default_on_a_resnet18_layer():
    wl = RESNET18["C9"]
    args, out = conv2d_from_workload(wl, shift=SHIFT, clip=CLIP)
    default = get_device("sim").time(build(schedule_conv2d_packed(out), [*args, out]).program)
    task = SearchTask("conv2d_packed", wl.sizes, "vta")
    tuner = AnsorTuner(task, seed=0)
    option = workload_measure_option("vta")
    try:
        history = tune(task, 16, option, tuner, progress=False, batch_size=8)  # type: ignore[arg-type]
    finally:
        option.close()
    assert history.errors == 0
    best_cycles = task.flop / history.best_throughput
    assert best_cycles <= default.cycles


def test_bad_workloads_are_refused_in_one_line():
    with pytest.raises(TuningError, match="conv2d_packed and dense_packed .* not 'matmul'"):
        generate_sketches(SearchTask("matmul", (16, 16, 16), "vta"))
    with pytest.raises(TuningError, match="tune on --target vta, not 'llvm'"):
        SearchTask("conv2d_packed", SMALL_CONV, "llvm")
    with pytest.raises(TuningError, match="stride"):
        SearchTask("conv2d_packed", (1, 2, 8, 8, 4, 3, 3, 0, 1), "vta")
    huge = SearchTask("conv2d_packed", (1, 1, 8, 8, 1, 64, 64, 1, 32), "vta")
    with pytest.raises(TuningError, match="no tiling fits"):
        accel.fitting_knobs(huge)


def test_vta_tune_with_ansor_writes_records(tmp_path, capsys):
    from compiler.tune.database import Database
    from vta.cli import main

    db = tmp_path / "r.db"
    args = ",".join(map(str, SMALL_CONV))
    argv = ["tune", f"conv2d_packed:{args}", "--target", "vta", "--tuner", "ansor"]
    assert main([*argv, "--n-trial", "4", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "after 4 trials" in out and "tensorize" in out and "cthread" in out
    with Database(db) as d:
        assert len(d.records(f'["ansor:conv2d_packed",[{args}]]', "vta")) == 4
    model = ["tune", str(tmp_path / "m.onnx"), "--target", "vta", "--tuner", "ansor"]
    assert main([*model, "--db", str(db)]) == 1  # refused before the model is read
    assert "does not tune a model's accelerator kernels yet" in capsys.readouterr().err
