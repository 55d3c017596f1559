"""The tuner's GPU parts on real PTX: builds with ptxas statistics, rejection of configs ptxas
flags (before any measurement), GPU facts in the features, the cost model learning rejected
configs as invalid; `vta tune --target cuda` without a GPU and `vta build`. Timing on a GPU is
tested under the `gpu` marker and skips here."""

import json

import numpy as np
import pytest

import compiler
from compiler.runtime.cuda import cuda_status
from compiler.tune import (
    CUDARunner,
    Featurizer,
    LocalBuilder,
    MeasureErrorNo,
    MeasureInput,
    XGBTuner,
    create_task,
    measure_option,
)
from compiler.tune.gpu_build import InvalidGPUConfig, artifact, cuda_build
from compiler.tune.templates.cuda import default_config
from vta.cli import main

requires_gpu = pytest.mark.skipif(cuda_status() is not None, reason=str(cuda_status()))


def test_cuda_build_returns_ptx_and_ptxas_stats():
    task = create_task("matmul", (128, 128, 64), "cuda -arch=sm_90")
    art = cuda_build(task, task.instantiate(default_config(task)))
    assert ".target sm_90" in art.ptx and art.kernel_names == ["main_kernel0"]
    stats = art.stats["main_kernel0"]
    assert 0 < stats.registers <= 255 and stats.shared_bytes > 0 and stats.spills == 0
    assert art.n_outputs == 1 and art.launches[0].grid == (2, 2, 1)


def test_config_that_exceeds_registers_is_rejected_before_measurement(gemm_schedule):
    # 32 x 32 threads, each with an 8 x 8 register tile: more than 64 registers per thread
    s, args = gemm_schedule(256, 256, 64, tile=(32, 8))
    module = compiler.build(s, args, target="cuda")
    assert module.problems(), module.stats
    with pytest.raises(InvalidGPUConfig, match="registers|spills"):
        artifact(module, args)


class _Unreachable(CUDARunner):
    """A runner that must not be asked to measure anything (every config is rejected first)."""

    def run(self, inputs, builds):
        assert not inputs, "a rejected config reached the runner"
        return []


def test_rejected_config_fails_before_measurement_and_counts_as_invalid():
    task = create_task("matmul", (256, 256, 64), "cuda")
    # in the template's space (64 accumulators, 1024 threads), but 1024 threads leave ptxas
    # 64 registers per thread, fewer than this tile needs
    knobs = {"tile_y": [1, 1, 32, 8], "tile_x": [1, 1, 32, 8], "tile_k": [8, 8]}
    cfg = task.config_space.from_json({**knobs, "vector": 1, "unroll_k": True})
    assert task.config_space.is_valid(cfg.index)
    option = measure_option(LocalBuilder(cuda_build, timeout=300, n_parallel=1), _Unreachable())
    try:
        (result,) = option.measure([MeasureInput(task, cfg)])
    finally:
        option.close()
    assert result.error_no == MeasureErrorNo.COMPILE_ERROR
    assert "InvalidGPUConfig" in result.error_msg and "main_kernel0" in result.error_msg
    tuner = XGBTuner(task)
    tuner.update([MeasureInput(task, cfg)], [result])
    assert tuner.history.throughputs == [0.0] and tuner.history.errors == 1


def test_gpu_facts_in_features_follow_the_config():
    task = create_task("matmul", (256, 256, 256), "cuda")
    feats = Featurizer(task)
    space = task.config_space
    a = space.from_json(
        {
            "tile_y": [4, 1, 16, 4],
            "tile_x": [4, 1, 16, 4],
            "tile_k": [32, 8],
            "vector": 1,
            "unroll_k": True,
        }
    )
    b = space.from_json(
        {
            "tile_y": [8, 1, 8, 4],
            "tile_x": [4, 1, 16, 4],
            "tile_k": [32, 8],
            "vector": 1,
            "unroll_k": True,
        }
    )
    rows = feats(np.array([a.index, b.index]))
    threads, blocks, work = rows[:, -3].tolist(), rows[:, -2].tolist(), rows[:, -1].tolist()
    assert threads == [8, 7] and blocks == [4, 5] and work[0] == work[1]


def test_vta_tune_cuda_without_a_gpu_says_so_in_one_line(capsys):
    if cuda_status() is None:
        pytest.skip("a GPU is present")
    assert main(["tune", "matmul:64,64,64", "--target", "cuda", "--arch", "sm_80"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot tune for cuda -arch=sm_80" in err[0]


def test_vta_build_cuda_writes_checked_ptx(tmp_path, capsys):
    out = tmp_path / "kernel.ptx"
    code = main(
        [
            "build",
            "matmul:100,75,50",
            "--target",
            "cuda",
            "--arch",
            "sm_90",
            "-o",
            str(out),
            "--check",
            "--json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["check"] == "ok" and report["problems"] == []
    assert ".target sm_90" in out.read_text() and report["kernels"][0]["spill_bytes"] == 0


def test_vta_build_llvm_writes_a_library_and_checks_it(tmp_path, capsys):
    out = tmp_path / "k.so"
    assert main(["build", "matmul:64,64,64", "--target", "llvm", "-o", str(out), "--check"]) == 0
    assert out.exists() and "check against numpy: ok" in capsys.readouterr().out


def test_vta_build_rejects_arch_for_cpu(tmp_path, capsys):
    out = str(tmp_path / "k.o")
    assert main(["build", "matmul:8,8,8", "--target", "llvm", "--arch", "sm_80", "-o", out]) == 1


@pytest.mark.gpu
@requires_gpu
def test_cuda_runner_times_a_kernel_on_the_gpu():
    task = create_task("matmul", (256, 256, 256), "cuda")
    option = measure_option(LocalBuilder(cuda_build, n_parallel=1), CUDARunner())
    try:
        (result,) = option.measure([MeasureInput(task, default_config(task))])
    finally:
        option.close()
    assert result.ok and 0 < result.cost < 1.0


@pytest.mark.gpu
@requires_gpu
def test_module_runs_on_the_gpu_equal_to_numpy(gemm_schedule):
    s, args = gemm_schedule(128, 128, 64)
    m = compiler.build(s, args, target="cuda")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((128, 64), np.float32), rng.standard_normal((64, 128), np.float32)
    out = np.zeros((128, 128), np.float32)
    m(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)
