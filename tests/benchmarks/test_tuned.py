"""Tuned kernels for the peer comparison: the layout kernels, the retimed best config."""

import numpy as np

from benchmarks.tuned import (
    arrays_for,
    attention_row,
    layout_kernels,
    print_attention,
    print_peers,
    tuned_kernel,
)
from compiler.topi import testing
from compiler.tune import CPURunner, LocalBuilder, create_task, measure_option
from compiler.zoo import encoder


def test_layout_kernels_pack_and_unpack_like_numpy():
    pack, unpack = layout_kernels(c=32, size=5, f=64, osize=3, ic_bn=16, oc_bn=32)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 32, 5, 5)).astype(np.float32)
    xp = np.zeros((1, 2, 5, 5, 16), np.float32)
    pack(x, xp)
    np.testing.assert_array_equal(xp, testing.nchw_pack(x, 16))
    yp = rng.standard_normal((1, 2, 3, 3, 32)).astype(np.float32)
    y = np.zeros((1, 64, 3, 3), np.float32)
    unpack(yp, y)
    np.testing.assert_array_equal(y, testing.nchwc_unpack(yp))


def test_tuned_kernel_is_a_measured_config_built_again_and_computes_the_matmul():
    task = create_task("matmul", (64, 64, 64), "llvm")
    option = measure_option(
        LocalBuilder(timeout=60, n_parallel=2), CPURunner(repeat=2, min_repeat_ms=1)
    )
    try:
        config, kernel = tuned_kernel(task, 8, option, seed=0, threads=1)
    finally:
        option.close()
    assert task.config_space.is_valid(config.index)
    a, b, c = arrays_for(kernel)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_print_peers(capsys):
    print_peers(
        {
            "matmul_config": {"tile": 4},
            "matmul": {
                1: {
                    "ours_gflops": 50.0,
                    "numpy_avx512_gflops": 60.0,
                    "kernel": "SkylakeX",
                    "ratio": 0.83,
                    "foreign_cores": 0.1,
                }
            },
            "conv2d": {},
            "conv2d_geomean": None,
        }
    )
    out = capsys.readouterr().out
    assert "1 thread(s): ours 50.0 GFLOPS, numpy SkylakeX 60.0: 0.83x (foreign 0.10)" in out
    assert "geomean" not in out


def test_attention_row_tunes_the_encoders_attention_from_its_default(capsys):
    """The encoder's attention task, its default config measured first: the tuned kernel
    computes what the default one does."""
    model = encoder(layers=1, hidden=64, heads=2, ffn=128, tokens=16, vocab=50)
    row = attention_row(model, trials=4, seed=0, threads=1, rounds=1)
    assert row["task"] == "attention(2, 16, 16, 32, 32, 1)"
    assert row["max_rel_err"] < 1e-5
    assert row["tuned_ms"] > 0 and row["default_ms"] > 0 and row["ratio"] > 0
    print_attention(row)
    out = capsys.readouterr().out
    assert "tuned attention attention(2, 16, 16, 32, 32, 1) (4 trials, 1 threads)" in out
