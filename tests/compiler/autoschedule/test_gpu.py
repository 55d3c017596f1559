"""The auto-scheduler's GPU target: sketches, annotation, the new steps, building through ptxas
and the emulator (no GPU needed; measuring needs one)."""

import re

import numpy as np
import pytest

from compiler.autoschedule import SearchTask, annotate, crossover, generate_sketches, mutate
from compiler.autoschedule.gpu import resource_problems
from compiler.autoschedule.gpu_steps import Bind, CacheRead, FollowFusedSplit, SetScope
from compiler.autoschedule.program import Program
from compiler.autoschedule.steps import (
    UNROLL_KEY,
    Annotate,
    CacheWrite,
    ComputeAt,
    FollowSplit,
    Fuse,
    Pragma,
    Reorder,
    Split,
    step_from_json,
)
from compiler.driver import build
from compiler.errors import ScheduleError, TuningError
from compiler.runtime.cuda import cuda_status, gpu_available
from compiler.te.tensor import PlaceholderOp
from compiler.tune.gpu_build import GPUArtifact, InvalidGPUConfig, cuda_build
from compiler.tune.measure import MeasureErrorNo, compiler_build
from compiler.tune.record import MeasureInput

TARGET = "cuda -arch=sm_80"
CONV = ("conv2d_nchw", (8, 8, 8, 16, 3, 3))  # c, h, w, f, kh, kw


def _sketch(name, args):
    (sketch,) = generate_sketches(SearchTask(name, args, TARGET))
    return sketch


def _run(program: Program, seed: int = 0):
    """Build for sm_80 (ptxas checks every kernel) and emulate on random inputs: the module,
    the outputs and numpy's."""
    s, args = program.schedule()
    module = build(s, args, target=program.task.target)
    n_in = sum(isinstance(t.op, PlaceholderOp) for t in args)
    rng = np.random.default_rng(seed)
    inputs = [rng.random(t.shape, np.float32) - 0.5 for t in args[:n_in]]
    outs = [np.zeros(t.shape, t.dtype) for t in args[n_in:]]
    module.emulate(*inputs, *outs)
    return module, outs, program.task.reference(inputs)


def _check(program: Program, seed: int = 0) -> None:
    assert resource_problems(program) == [], str(program)
    module, outs, refs = _run(program, seed)
    assert module.problems() == [], str(program)
    for out, ref in zip(outs, refs, strict=True):
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4, err_msg=str(program))


def test_matmul_gpu_sketch():
    assert str(_sketch("matmul", (64, 64, 64))).splitlines() == [
        "C.local = cache_write(C, local)",
        "C.local: split k -> k.0, k.1, k.2 by [?, ?]",
        "C.local: split j -> j.0, j.1, j.2, j.3, j.4 by [?, ?, ?, ?]",
        "C.local: split i -> i.0, i.1, i.2, i.3, i.4 by [?, ?, ?, ?]",
        "C.local: reorder i.0, j.0, i.1, j.1, i.2, j.2, k.0, k.1, i.3, j.3, k.2, i.4, j.4",
        "C: split j -> j.0, j.1, j.2, j.3 by [?, ?, ?]",
        "C: split i -> i.0, i.1, i.2, i.3 by [?, ?, ?]",
        "C: reorder i.0, j.0, i.1, j.1, i.2, j.2, i.3, j.3",
        "compute_at(C.local, C.j.2)",
        "A.shared = cache_read(A, shared, [C.local])",
        "B.shared = cache_read(B, shared, [C.local])",
        "compute_at(A.shared, C.local.k.0)",
        "compute_at(B.shared, C.local.k.0)",
    ]


def test_conv2d_gpu_sketch():
    lines = str(_sketch(*CONV)).splitlines()
    assert lines[0] == "conv2d_nchw.local = cache_write(conv2d_nchw, local)"
    assert lines[7] == (
        "conv2d_nchw.local: reorder b, f.0, y.0, x.0, f.1, y.1, x.1, f.2, y.2, x.2, "
        "rc.0, ry.0, rx.0, rc.1, ry.1, rx.1, f.3, y.3, x.3, rc.2, ry.2, rx.2, f.4, y.4, x.4"
    )
    assert lines[-6:] == [
        "compute_at(conv2d_nchw.local, conv2d_nchw.x.2)",
        "data_pad.shared = cache_read(data_pad, shared, [conv2d_nchw.local])",
        "weight.shared = cache_read(weight, shared, [conv2d_nchw.local])",
        # the last loop of the outermost reduction tile
        "compute_at(data_pad.shared, conv2d_nchw.local.rx.0)",
        "compute_at(weight.shared, conv2d_nchw.local.rx.0)",
        "compute_inline(data_pad)",  # the padding is computed in the shared-memory fetch
    ]


def test_fused_consumer_keeps_the_tiled_stage_in_registers():
    lines = str(_sketch("matmul_relu", (64, 64, 64))).splitlines()
    assert "compute_at(C, D.j.2)" in lines and "set_scope(C, local)" in lines
    assert "A.shared = cache_read(A, shared, [C])" in lines


def _hand_program() -> Program:
    """matmul 64^3: blocks of 8x8 threads, 2x2 per thread, k staged 8 at a time."""
    task = SearchTask("matmul", (64, 64, 64), TARGET)
    steps = [
        CacheWrite("C"),
        Split("C.local", 2, (4, 2)),
        Split("C.local", 1, (2, 8, 2, 1)),
        Split("C.local", 0, (1, 8, 2, 2)),
        Reorder("C.local", (0, 5, 1, 6, 2, 7, 10, 11, 3, 8, 12, 4, 9)),
        FollowSplit("C", 1, 2, 4),
        FollowSplit("C", 0, 3, 4),
        Reorder("C", (0, 4, 1, 5, 2, 6, 3, 7)),
        CacheRead("A", "shared", ("C.local",)),
        CacheRead("B", "shared", ("C.local",)),
        ComputeAt("A.shared", "C.local", 6),
        ComputeAt("B.shared", "C.local", 6),
        Fuse("C", 0, 2),
        Bind("C", 0, "blockIdx.x"),
        Fuse("C", 1, 2),
        Bind("C", 1, "vthread"),
        Fuse("C", 2, 2),
        Bind("C", 2, "threadIdx.x"),
        ComputeAt("C.local", "C", 2),
    ]
    for name, vec in (("A.shared", 1), ("B.shared", 4)):
        steps += [
            Fuse(name, 0, 2),
            Split(name, 0, (vec,)),
            FollowFusedSplit(name, 0, (2, 3), 1),
            Bind(name, 1, "threadIdx.x"),
            Annotate(name, 2, "vectorize"),
        ]
    steps += [Pragma("C.local", 7, UNROLL_KEY, 512), Pragma("C", 0, UNROLL_KEY, 64)]
    return Program(task, steps)


def test_annotated_program_prints_bindings_and_cooperative_fetching():
    program = _hand_program()
    lines = str(program).splitlines()
    assert lines[12:] == [
        "C: fuse i.0, j.0 -> i.0.j.0.fused",
        "C: bind i.0.j.0.fused -> blockIdx.x",
        "C: fuse i.1, j.1 -> i.1.j.1.fused",
        "C: bind i.1.j.1.fused -> vthread",
        "C: fuse i.2, j.2 -> i.2.j.2.fused",
        "C: bind i.2.j.2.fused -> threadIdx.x",
        "compute_at(C.local, C.i.2.j.2.fused)",
        "A.shared: fuse ax0, ax1 -> ax0.ax1.fused",
        "A.shared: split ax0.ax1.fused -> ax0.ax1.fused.0, ax0.ax1.fused.1 by [1]",
        "A.shared: split ax0.ax1.fused.0 -> ax0.ax1.fused.0.0, ax0.ax1.fused.0.1 by [64]",
        "A.shared: bind ax0.ax1.fused.0.1 -> threadIdx.x",
        "A.shared: vectorize ax0.ax1.fused.1",
        "B.shared: fuse ax0, ax1 -> ax0.ax1.fused",
        "B.shared: split ax0.ax1.fused -> ax0.ax1.fused.0, ax0.ax1.fused.1 by [4]",
        "B.shared: split ax0.ax1.fused.0 -> ax0.ax1.fused.0.0, ax0.ax1.fused.0.1 by [64]",
        "B.shared: bind ax0.ax1.fused.0.1 -> threadIdx.x",
        "B.shared: vectorize ax0.ax1.fused.1",
        "C.local: auto_unroll_max_step=512 at k.1 (unrolls k.1, i.3, j.3, k.2, i.4, j.4)",
        "C: auto_unroll_max_step=64 at i.0.j.0.fused (unrolls i.3, j.3)",
    ]
    module, (out,), (ref,) = _run(program)
    ((kernel),) = module.kernels
    assert kernel.grid == (4, 1, 1) and kernel.block == (64, 1, 1)  # 64 threads: 8 x 8
    assert module.stats[kernel.name].shared_bytes == 2 * 32 * 8 * 4  # A and B tiles of k.1*k.2
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def _shape(lines: list[str]) -> list[str]:
    """Printed steps with their sampled values hidden."""
    lines = [re.sub(r"by \[[^\]]*\]", "by [?]", line) for line in lines]
    return [re.sub(r"=\d+ at (\S+) \(.*\)$", r"=? at \1", line) for line in lines]


def test_annotated_conv2d_program():
    sketch = _sketch(*CONV)
    program = annotate(sketch, np.random.default_rng(0))
    head = [line for line in str(sketch).splitlines() if not line.startswith("compute_at(conv2d")]
    lines = _shape(str(program).splitlines())
    assert lines[: len(head)] == _shape(head)
    fetch = "ax0.ax1.fused.ax2.fused.ax3.fused"
    assert lines[len(head) :] == [
        "conv2d_nchw: fuse b, f.0, y.0, x.0 -> b.f.0.fused.y.0.fused.x.0.fused",
        "conv2d_nchw: bind b.f.0.fused.y.0.fused.x.0.fused -> blockIdx.x",
        "conv2d_nchw: fuse f.1, y.1, x.1 -> f.1.y.1.fused.x.1.fused",
        "conv2d_nchw: bind f.1.y.1.fused.x.1.fused -> vthread",
        "conv2d_nchw: fuse f.2, y.2, x.2 -> f.2.y.2.fused.x.2.fused",
        "conv2d_nchw: bind f.2.y.2.fused.x.2.fused -> threadIdx.x",
        "compute_at(conv2d_nchw.local, conv2d_nchw.f.2.y.2.fused.x.2.fused)",
        *[
            line
            for stage in ("data_pad.shared", "weight.shared")
            for line in (
                f"{stage}: fuse ax0, ax1, ax2, ax3 -> {fetch}",
                f"{stage}: split {fetch} -> {fetch}.0, {fetch}.1 by [?]",
                f"{stage}: split {fetch}.0 -> {fetch}.0.0, {fetch}.0.1 by [?]",
                f"{stage}: bind {fetch}.0.1 -> threadIdx.x",
                f"{stage}: vectorize {fetch}.1",
            )
        ],
        "conv2d_nchw.local: auto_unroll_max_step=? at rc.1",  # inside the shared stages' loop
        "conv2d_nchw: auto_unroll_max_step=? at b.f.0.fused.y.0.fused.x.0.fused",
    ]


def test_new_steps_round_trip_json_and_replay_deterministically():
    for step in (
        Bind("C", 2, "threadIdx.x"),
        CacheRead("A", "shared", ("C.local",)),
        SetScope("C", "local"),
        FollowFusedSplit("A.shared", 0, (2, 3), 1),
    ):
        assert step_from_json(step.to_json()) == step
    rng = np.random.default_rng(3)
    for name, args in (("matmul", (64, 64, 64)), CONV):
        program = annotate(_sketch(name, args), rng)
        again = Program.from_json(program.task, program.to_json())
        assert again.key == program.key and str(again) == str(program)
        s1, a1 = program.schedule()
        s2, a2 = again.schedule()
        assert build(s1, a1, target=TARGET).ptx == build(s2, a2, target=TARGET).ptx


def test_bad_gpu_steps_are_named():
    task = SearchTask("matmul", (16, 16, 16), TARGET)
    with pytest.raises(TuningError, match="unknown thread axis 'threadIdx.q'"):
        Program(task, [Bind("C", 0, "threadIdx.q")]).schedule()
    with pytest.raises(TuningError, match="stage 'C' reads no 'Z'"):
        Program(task, [CacheRead("Z", "shared", ("C",))]).schedule()
    with pytest.raises(TuningError, match="refers to step 0"):
        Program(task, [Fuse("C", 0, 2), FollowFusedSplit("C", 0, (0,), 1)]).schedule()
    with pytest.raises(ScheduleError, match="unknown scope"):
        Program(task, [SetScope("C", "texture")]).schedule()


@pytest.mark.parametrize(("name", "args", "seed"), [("matmul", (64, 64, 64), 7), (*CONV, 3)])
def test_random_gpu_programs_pass_ptxas_and_match_numpy(name, args, seed):
    # seeds whose programs build quickly (a heavily unrolled one takes ~10 s): the slow
    # test below runs more
    sketch = _sketch(name, args)
    rng = np.random.default_rng(seed)
    for k in range(3):
        _check(annotate(sketch, rng), seed=k)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "args"), [("matmul", (64, 64, 64)), CONV])
def test_more_random_gpu_programs_match_numpy(name, args):
    sketch = _sketch(name, args)
    rng = np.random.default_rng(100)
    for k in range(12):
        _check(annotate(sketch, rng), seed=k)


def test_random_matmul_256_programs_fit_the_architecture_and_pass_ptxas():
    sketch = _sketch("matmul", (256, 256, 256))
    rng = np.random.default_rng(11)
    for _ in range(4):
        program = annotate(sketch, rng)
        assert resource_problems(program) == []
        s, args = program.schedule()
        module = build(s, args, target=TARGET)
        assert module.problems() == [], str(program)
        ((kernel),) = module.kernels
        assert np.prod(kernel.block) <= 1024


@pytest.mark.slow
def test_random_matmul_256_programs_match_numpy():
    sketch = _sketch("matmul", (256, 256, 256))
    rng = np.random.default_rng(5)
    for k in range(8):
        _check(annotate(sketch, rng), seed=k)


def test_mutations_keep_the_step_list_shape_and_stay_valid():
    rng = np.random.default_rng(1)
    for name, args in (("matmul", (64, 64, 64)), CONV):
        parent = annotate(_sketch(name, args), rng)
        children = []
        for _ in range(80):
            child = mutate(parent, rng)
            if child is None:
                continue
            assert [(type(a), a.stage) for a in child.steps] == [
                (type(b), b.stage) for b in parent.steps
            ]
            assert resource_problems(child) == []
            children.append(child)
        assert len({c.key for c in children}) >= 5
        for child in children[:2]:
            _check(child)


def test_crossover_children_of_gpu_programs_fit():
    sketch = _sketch("matmul", (64, 64, 64))
    rng = np.random.default_rng(2)
    parents = [annotate(sketch, rng) for _ in range(6)]
    children = [crossover(a, b, rng) for a in parents for b in parents if a is not b]
    kept = [c for c in children if c is not None]
    assert kept and all(resource_problems(c) == [] for c in kept)
    _check(kept[0])


def test_search_proposes_gpu_programs():
    from compiler.autoschedule.search import AnsorTuner

    tuner = AnsorTuner(SearchTask("matmul", (64, 64, 64), TARGET), seed=0, population=16)
    batch = tuner.next_batch(8)
    assert len(batch) == 8
    assert all(not resource_problems(p) for p in batch)
    assert np.isfinite(tuner.scores(batch)).all()  # GPU programs featurize
    evolved = tuner.evolve(batch)  # mutation and crossover on GPU programs
    assert evolved and np.isfinite(tuner.scores(evolved)).all()


def test_gpu_programs_build_into_artifacts_and_spills_are_invalid():
    program = _hand_program()
    task = program.task
    artifact = compiler_build(task, task.instantiate(program))
    assert isinstance(artifact, GPUArtifact) and artifact.threads == {"main_kernel0": 64}
    # 16 x 16 accumulators per thread, unrolled into registers: more than a thread has
    task = SearchTask("matmul", (256, 256, 256), TARGET)
    steps = list(_hand_program().steps)
    steps[1] = Split("C.local", 2, (8, 1))
    steps[2] = Split("C.local", 1, (1, 4, 16, 1))
    steps[3] = Split("C.local", 0, (1, 4, 16, 1))
    steps[-2] = Pragma("C.local", 8, UNROLL_KEY, 1024)
    big = Program(task, steps)
    assert any(f"{16 * 16} local elements" in p for p in resource_problems(big))
    with pytest.raises(InvalidGPUConfig, match="spills registers"):
        cuda_build(task, big.schedule())


def test_builder_reports_an_invalid_gpu_program_as_a_compile_error():
    from compiler.tune.measure import LocalBuilder

    program = _hand_program()
    bad = Program(program.task, [*program.steps[:17], Bind("C", 2, "blockIdx.x")])
    builder = LocalBuilder(timeout=60, n_parallel=1)
    try:
        good, failed = builder.build(
            [MeasureInput(program.task, program), MeasureInput(bad.task, bad)]
        )
    finally:
        builder.close()
    assert good.error_no == MeasureErrorNo.NO_ERROR and isinstance(good.artifact, GPUArtifact)
    assert failed.error_no == MeasureErrorNo.COMPILE_ERROR


@pytest.mark.skipif(not gpu_available(), reason=f"needs a CUDA GPU: {cuda_status()}")
def test_auto_schedule_measures_on_a_gpu(tmp_path):
    from compiler.autoschedule import auto_schedule
    from compiler.tune.measure import CUDARunner, LocalBuilder, measure_option

    option = measure_option(LocalBuilder(timeout=60), CUDARunner())
    try:
        history = auto_schedule(SearchTask("matmul", (256, 256, 256), TARGET), 16, option)
    finally:
        option.close()
    assert history.best_throughput > 0


def test_vta_build_compiles_the_auto_schedulers_gpu_record_without_a_gpu(tmp_path, capsys):
    from compiler.tune.database import Database
    from compiler.tune.record import Record
    from vta.cli import main

    program = Program(SearchTask("matmul", (64, 64, 64), "cuda"), _hand_program().steps)
    db = tmp_path / "r.db"
    with Database(db) as d:  # the record a tuning run on a GPU stores (its time made up here)
        d.add_batch([Record.of(MeasureInput(program.task, program), [1e-5])])
    out = tmp_path / "k.ptx"
    argv = ["build", "matmul:64,64,64", "--target", "cuda", "--db", str(db), "-o", str(out)]
    assert main([*argv, "--check"]) == 0
    text = capsys.readouterr().out
    assert "auto-scheduler record" in text and "check against numpy: ok" in text
    assert ".entry main_kernel0" in out.read_text()


def test_tuning_for_a_gpu_needs_one(capsys):
    from vta.cli import main

    argv = ["tune", "matmul:64,64,64", "--tuner", "ansor", "--target", "cuda"]
    if gpu_available():
        pytest.skip("a GPU exists: tuning would run")
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot tune for cuda" in err and "vta build" in err


def test_resnet_layers_take_the_gpu_templates_arguments():
    from compiler.cli.args import parse_workload

    rng = np.random.default_rng(0)
    for layer in ("C1", "C12"):
        op, args = parse_workload(layer, "cuda")  # conv2d_nchw (c, h, w, f, kh, kw, stride, pad)
        program = annotate(_sketch(op, args), rng)
        s, tensors = program.schedule()
        (kernel,) = build(s, tensors, target=TARGET).kernels
        assert 1 < np.prod(kernel.grid) and np.prod(kernel.block) <= 1024, layer
    # an explicit padding (here none) reaches the compute and the reference
    _check(annotate(_sketch("conv2d_nchw", (4, 6, 6, 8, 3, 3, 1, 0)), rng))
