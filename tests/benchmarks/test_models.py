"""bench_models' logic on the small DQN network: every figure present and sane, tables print."""

import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from benchmarks import models
from compiler.codegen.parallel import get_num_threads

pytest.importorskip("onnxruntime")


def test_interleaved_times_both_in_blocks():
    calls = []
    a, b, a1, b1 = models.interleaved(
        lambda: calls.append("a"), lambda: calls.append("b"), 6, 0.0, 3, 0, 0.0
    )
    assert len(a) == len(b) == 6 and len(a1) == len(b1) == 2
    assert calls[:8] == ["a"] * 4 + ["b"] * 4  # an untimed call, then the block


def test_interleaved_blocks_run_by_time():
    """A block of fast calls goes on until it has run block_time seconds."""
    a, b, cold, _ = models.interleaved(lambda: time.sleep(0.001), lambda: None, 1, 0.0, 2, 0, 0.03)
    assert sum(a) + cold[0] >= 0.029  # past the 2-call block, however slow the calls
    assert len(b) >= 100


def test_bench_model_dqn(capsys):
    r = models.bench_model("dqn", reps=2, min_time=0.0, load=True, one_thread=True)
    q = r["quiet"]
    assert q["max_rel_err"] < 1e-4 and q["within_tolerance"] and q["ratio"] > 0
    assert r["arena_lower_bound"] <= r["arena_bytes"] and r["executor_overhead_us"] > 0
    convs = [row for row in r["layers"] if row["flops"]]
    assert len(convs) == 5 and all(row["gflops"] > 0 for row in convs)  # 3 convs, 2 dense
    # every conv and dense layer is a subgraph of the ONNX model whose nodes onnxruntime's
    # profile times; the frames' packing into our layout is not
    assert all(row["onnxruntime_ms"] > 0 and row["in_network_ms"] > 0 for row in convs)
    assert r["layers"][0]["label"] == "pack_frames" and r["layers"][0]["onnxruntime_ms"] is None
    assert r["one_thread"]["ratio"] > 0 and r["one_thread"]["max_rel_err"] < 1e-4
    assert get_num_threads() == models.THREADS  # restored for what runs next
    models.print_tables({"dqn": r})
    out = capsys.readouterr().out
    assert "one thread each" in out and "under load" in out
    assert r["load_change"] == pytest.approx(r["loaded"]["ratio"] / r["load_quiet"]["ratio"])
    assert "dqn" in out and "onnxruntime's profile of the same nodes" in out


def test_peak_comes_from_the_measured_clock():
    """The nominal clock of /proc/cpuinfo left out turbo, so kernels showed more than 100% of
    'peak'; the measured clock is a plausible core frequency and the peak follows it."""
    import platform

    from benchmarks import models as M

    if platform.machine() != "x86_64":
        pytest.skip("the clock is measured with x86-64 multiplies")
    ghz = M.measured_clock_ghz()
    assert 0.5 < ghz < 8.0
    lanes = M.cpu_facts().lanes("float32")
    assert M.peak_gflops(1) == pytest.approx(4 * lanes * ghz)


def test_convergence_counts_trials_and_time_to_within_five_percent(tmp_path):
    from compiler.tune.database import Database
    from compiler.tune.record import MeasureErrorNo, MeasureInput, Record
    from compiler.tune.task import create_task

    task = create_task("conv2d_NCHWc", (16, 8, 8, 32, 3, 3, 1, 16, 16), "llvm")
    costs = [5.0, 3.0, None, 2.05, 2.0, 2.5]  # None: a failed build
    with Database(tmp_path / "r.db") as db:
        records = []
        for k, cost in enumerate(costs):
            error = MeasureErrorNo.NO_ERROR if cost else MeasureErrorNo.COMPILE_ERROR
            inp = MeasureInput(task, task.config_space.get(k))
            r = Record.of(inp, [cost] if cost else [], error)
            r.all_cost = 1.0
            records.append(r)
        db.add_batch(records)
    res = models.convergence(str(tmp_path / "r.db"))
    (t,) = res["tasks"].values()
    assert (t["trials"], t["of"], t["best_ms"]) == (4, 6, 2000.0)
    assert t["seconds"] == pytest.approx(4.0)  # the four trials' shares of their batches
    assert res["trials"] == 4 and res["seconds"] == pytest.approx(4.0)


def test_load_effect_alternates_quiet_and_loaded_rounds(monkeypatch):
    spins = []
    real = models.spinning_process

    @contextmanager
    def counted():
        with real() as proc:
            spins.append(proc.pid)
            yield proc

    monkeypatch.setattr(models, "spinning_process", counted)
    from compiler.graph.build_onnx import compile_model
    from compiler.zoo import NETWORKS, random_inputs

    model = NETWORKS["dqn"]()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "dqn.onnx").write_bytes(model)
        graph = compile_model(Path(tmp) / "dqn.onnx")
    r = models.load_effect(graph, model, random_inputs("dqn"), reps=3, min_time=0.3)
    assert len(spins) == models.LOAD_ROUNDS  # one spinner per loaded round
    assert r["change"] == pytest.approx(r["loaded"]["ratio"] / r["quiet"]["ratio"])
    for part in ("quiet", "loaded"):
        assert r[part]["max_rel_err"] < 1e-4 and r[part]["ratio"] > 0
    assert r["loaded"]["foreign_cores"] > r["quiet"]["foreign_cores"]
