"""The CPU operator benchmark on small sizes: correct kernels, figures, ratios and tables."""

import pytest

from benchmarks import cpu


def test_matmuls_are_correct_and_reported_with_ratios(capsys):
    res = {
        "matmul": cpu.bench_matmul(reps=2, thread_counts=[1], n=64, rounds=3),
        "matmul_tail": cpu.bench_tail_matmul(reps=2, thread_counts=[1], n=64, cols=40, rounds=2),
        "conv2d": {},
    }
    assert res["matmul"]["max_rel_err"] < 1e-5 and res["matmul_tail"]["max_rel_err"] < 1e-5
    cpu.add_ratios(res)
    per = res["matmul"]["threads"][1]
    assert per["ratio_vs_numpy_avx512"] == per["numpy_avx512"]["best_ms"] / per["ours"]["best_ms"]
    median = per["ratio_vs_numpy_avx512_median"]
    assert 0 < median and 0 < per["ratio_vs_numpy_env_median"]
    assert per["foreign_cores"] >= 0 and res["matmul_tail"]["cols"] == 40
    cpu.print_table(res)
    out = capsys.readouterr().out
    assert (
        "matmul 64^3 float32" in out and "goal >= 0.8x numpy with the kernel OpenBLAS picks" in out
    )
    verdict = "met" if median >= cpu.GOAL_VS_AVX512 else "NOT met"
    assert f"median ratio: {verdict} (worst {median:.2f}x)" in out
    assert "matmul 64x40x64 (non-divisible 4x64 tiles" in out


def test_turns_give_each_sides_stats_and_each_peers_round_ratio():
    slow, fast = iter([[0.2], [0.4], [0.2]]), iter([[0.1], [0.1], [0.4]])
    per = cpu.turns(3, {"ours": lambda: next(fast), "peer": lambda: next(slow)}, 1e9)
    assert per["ratio_vs_peer_median"] == 2.0  # rounds: 2, 4, 0.5
    assert per["ours"]["best_ms"] == 100.0 and per["peer"]["median_ms"] == 200.0
    assert per["foreign_cores"] >= 0


def test_conv_layers_match_onnxruntime():
    pytest.importorskip("onnxruntime", reason="the peers need the 'bench' extra")
    pytest.importorskip("onnx", reason="the peers need the 'bench' extra")
    res = cpu.bench_conv(reps=1, thread_counts=[1], layers=["C9"], rounds=2)
    assert res["C9"]["max_abs_err"] < 1e-3 and res["C9"]["threads"][1]["ours"]["best_ms"] > 0
