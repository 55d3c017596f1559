"""The auto-scheduler benchmark's pieces (benchmarks.ansor), on synthetic figures."""

import importlib.util
import re
import sys

import numpy as np
import pytest

from benchmarks import ansor


def test_curve_at_is_the_best_among_the_first_n_trials_in_gflops():
    curve = np.array([1e9, 3e9, 2e9, 5e9])
    assert ansor._curve_at(curve, [1, 3, 64]) == {1: 1.0, 3: 3.0, 64: 5.0}
    assert ansor._curve_at(np.array([]), [64]) == {64: 0.0}


def _row(op, a, p, numpy=None):
    row = {
        "op": op,
        "ansor": {64: a[0], 200: a[1]},
        "template": {64: p[0], 200: p[1]},
        "peer": "template tuner (xgb)",
        "search_s_per_batch": 0.5,
        "measure_s_per_batch": 2.0,
    }
    if numpy:
        row["numpy"] = numpy
    return row


def _scheduler(trials, gradient, round_robin, reach):
    """A task-scheduler result of two tasks on synthetic curves."""
    out = {"tasks": 2, "task_names": ["Conv(7x7/2)", "Conv(1x1/2)"], "budget": trials[-1]}
    for name, curve, units, best in [
        ("gradient", gradient, [7, 3], [0.75, 0.25]),
        ("round-robin", round_robin, [5, 5], [0.9, 0.3]),
    ]:
        out[name] = {"trials": trials, "latency_ms": curve, "units_per_task": units}
        out[name].update(best_ms=best, wall_s=9.0, search_s=2.0)
    out["gradient_trials_to_rr_final"] = reach
    return out


def test_print_result_counts_wins_at_each_trial_count(capsys):
    result = {
        "trials": [64, 200],
        "threads": 2,
        "host": {"isa": "avx2"},
        "avx512_hidden": True,
        "operators": [
            _row("matmul512", (90.0, 120.0), (100.0, 100.0), 150.0),
            _row("C2", (80.0, 90.0), (50.0, 100.0)),
        ],  # fmt: skip
        "metaschedule": [
            {"op": "matmul512", "trials": 64, "gflops": 30.0, "tuning_s": 50.0, "ours": 90.0}
            | {"tvm": "0.27.0", "mcpu": "znver4"},
            {"op": "C9", "trials": 64, "error": "no tvm", "ours": 70.0},
        ],
        "scheduler": _scheduler([4, 8, 40], [3.0, 1.5, 1.0], [3.0, 2.5, 1.5], 8),
    }
    result["operators"][0]["retimed"] = {
        64: {"ansor": 95.0, "template": 90.0, "numpy": 150.0, "ratio": 1.05, "numpy_ratio": 0.6}
    }
    ansor.print_result(result)
    out = capsys.readouterr().out
    lines = out.splitlines()
    matmul = next(line for line in lines if line.startswith("matmul512 "))
    assert matmul.split()[1:7] == ["90.0", "100.0", "0.90", "120.0", "100.0", "1.20"]
    assert matmul.split()[7:10] == ["150.0", "0.60", "0.80"]  # numpy, ours / numpy at 64, 200
    assert "(GFLOPS, 2 threads, avx2 (AVX-512 hidden))" in out
    assert "ansor >= peer on 1 at 64 trials, 1 at 200 trials, of 2" in out
    assert "MetaSchedule matmul512 @64: 30.0 GFLOPS" in out and "ours 90.0 (3.00x)" in out
    assert "MetaSchedule C9: not run (no tvm)" in out
    assert re.search(r"matmul512 +95\.0 +90\.0 +1\.05 +0\.60 +- ", out)
    assert "ansor >= peer at 64 trials on 1 of 1" in out
    assert "gradient reaches round robin's final after 8 trials (20%)" in out


@pytest.mark.skipif(importlib.util.find_spec("tvm") is not None, reason="tvm is installed")
def test_metaschedule_without_tvm_is_an_error_entry_not_a_crash():
    for key in ansor.METASCHEDULE_OPS:
        got = ansor.metaschedule(sys.executable, key, 1, 2)
        assert set(got) == {"error"} and "tvm" in got["error"]
    assert "error" in ansor.metaschedule("/nonexistent/python", "matmul512", 1, 2)


def test_hand_written_schedule_peer_is_measured():
    assert ansor.default_schedule_gflops("softmax", (4, 64), 2) > 0


def test_scheduler_tasks_are_the_networks_fused_groups():
    from compiler.graph.tasks import WORKLOAD, group_similarity

    pairs = ansor.resnet18_pairs()
    assert {name for (name, _), _ in pairs} == {WORKLOAD}
    # ResNet-18's convolutions (stem, 16 3x3, 3 1x1) and its classifier's dense layer
    assert sum(w for _, w in pairs) == 21
    keys = [group_similarity(args[0]) for (_, args), _ in pairs]
    assert "Conv(3x3/1, Winograd)+Add+Relu" in keys and "Conv(1x1/2)" in keys
    assert len(set(keys)) < len(keys)  # groups that compute alike share a key across shapes
    # which 3x3 convs run by Winograd depends on the host (7x7 outputs too with 16 registers)
    by_winograd = sum(w for k, (_, w) in zip(keys, pairs, strict=True) if "Winograd" in k)
    direct = ansor.resnet18_pairs(winograd=False)
    assert sum(w for _, w in direct) == 21 - by_winograd and all(
        "Winograd" not in group_similarity(args[0]) for (_, args), _ in direct
    )


def test_scheduler_only_result_prints(capsys):
    sched = _scheduler([4, 40], [3.0, 1.0], [3.0, 1.2], 32)
    sched["winograd_groups"] = False
    ansor.print_result({"trials": [64], "operators": [], "scheduler": sched})
    out = capsys.readouterr().out
    assert "(no operators)" in out and "ansor >= peer" not in out
    assert "ResNet-18 (no Winograd groups), 2 tasks, 40 trials" in out
    assert "reaches round robin's final after 32 trials (80%)" in out
    assert re.search(r"Conv\(7x7/2\) +7 +0\.750 +5 +0\.900", out)


def test_the_best_kernels_are_timed_again_in_turn():
    from compiler.autoschedule import AnsorTuner, SearchTask
    from compiler.tune import XGBTuner, create_task, tune

    task, ttask = SearchTask("matmul", (32, 32, 32)), create_task("matmul", (32, 32, 32), "llvm")
    searcher, xgb = AnsorTuner(task, seed=0), XGBTuner(ttask, seed=0)
    option = ansor._option(1)
    try:
        for tuner, t in ((searcher, task), (xgb, ttask)):
            tune(t, 4, option, tuner, progress=False, batch_size=2)
    finally:
        option.close()
    got = ansor.retime(task, searcher, xgb, [2, 4], 1)
    assert set(got) == {2, 4}
    for m in got.values():
        assert m["ansor"] > 0 and m["template"] > 0 and m["numpy"] > 0
        assert m["ratio"] > 0 and m["numpy_ratio"] > 0
