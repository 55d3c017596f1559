"""Tuning under the conditions of deployment: every tuner measures CPU kernels with the thread
count the tuned code will run with (the thread pool's size unless `--threads N`), records say
it, and a build prefers records measured with its own count."""

import re
import sqlite3

import pytest

from compiler.codegen.abi import default_threads
from compiler.errors import TuningError
from compiler.tune import measure
from compiler.tune.database import Database
from compiler.tune.dispatch import ApplyHistoryBest, best_config, thread_note
from compiler.tune.record import SCHEMA_VERSION, MeasureInput, Record
from compiler.tune.task import create_task
from compiler.zoo import _Builder
from testkit.records import downgrade
from vta.cli import main

TINY = "matmul:16,16,16"


class Stop(TuningError):
    """Raised by the spy once the runner is made: the test needs no tuning run."""


@pytest.fixture
def runners(monkeypatch):
    """The thread count of every CPURunner made (the runner itself is made as usual)."""
    made = []
    init = measure.CPURunner.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self.threads)

    monkeypatch.setattr(measure.CPURunner, "__init__", spy)
    return made


@pytest.fixture
def pool_of_3(monkeypatch):
    monkeypatch.setenv("VTA_NUM_THREADS", "3")
    assert default_threads() == 3


def conv_model(tmp_path):
    b = _Builder(seed=3)
    y = b.node("Relu", [b.conv("x", 16, 16, 3, stride=2)])  # no Winograd: a template task
    path = tmp_path / "conv.onnx"
    path.write_bytes(b.model("x", (1, 16, 8, 8), y, (1, 16, 4, 4)))
    return path


def test_the_cpu_runner_defaults_to_the_thread_pools_size(pool_of_3):
    runner = measure.CPURunner()
    try:
        assert runner.threads == 3 and runner.params["threads"] == 3
    finally:
        runner.close()
    with pytest.raises(TuningError, match="threads must be 1 to 1024, got 0"):
        measure.CPURunner(threads=0)


@pytest.mark.parametrize("tuner", ["xgb", "ansor"])
@pytest.mark.parametrize("threads", [None, 1])
def test_vta_tune_workload_records_the_thread_count(tmp_path, pool_of_3, tuner, threads):
    """A short run of each tuner on a tiny matmul: its records say the pool's size (3), or 1
    with --threads 1."""
    db = tmp_path / "r.db"
    argv = ["tune", TINY, "--tuner", tuner, "--n-trial", "2", "--batch-size", "2"]
    argv += ["--db", str(db), *(["--threads", str(threads)] if threads else [])]
    assert main(argv) == 0
    with Database(db) as records:
        found = records.records()
    assert found and {r.threads for r in found} == {threads or 3}


@pytest.mark.parametrize("tuner", ["xgb", "ansor"])
@pytest.mark.parametrize("threads", [None, 1])
def test_vta_tune_model_measures_with_the_thread_count(
    tmp_path, pool_of_3, runners, monkeypatch, tuner, threads
):
    """A model's tasks (template and ansor) get the pool's size, or --threads."""

    def stop(*args, **kwargs):
        raise Stop

    monkeypatch.setattr("compiler.tune.tune_tasks", stop)  # the template tuner's run
    monkeypatch.setattr("compiler.autoschedule.tuning.TaskScheduler", stop)  # ansor's
    argv = ["tune", str(conv_model(tmp_path)), "--tuner", tuner, "--n-trial", "2"]
    argv += ["--db", str(tmp_path / "r.db"), *(["--threads", str(threads)] if threads else [])]
    assert main(argv) == 1  # stopped once the runner was made
    assert runners == [threads or 3]


@pytest.mark.parametrize("value", ["0", "1025", "two"])
def test_threads_out_of_range_is_a_one_line_usage_error(value, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["tune", TINY, "--threads", value])
    assert exit.value.code == 2
    assert "argument --threads" in capsys.readouterr().err.strip().splitlines()[-1]


# --------------------------------------------------------------------------------- dispatch
def matmul_records(*measured):
    """A database of the tiny matmul: config k measured with (cost, threads) measured[k]."""
    task = create_task("matmul", (16, 16, 16), "llvm")
    space = task.config_space
    valid = [i for i in range(len(space)) if space.is_valid(i)]
    db = Database()
    db.add_batch(
        [
            Record.of(MeasureInput(task, space.get(valid[k])), [cost], threads=threads)
            for k, (cost, threads) in enumerate(measured)
        ]
    )
    return task, db, valid


def test_a_record_of_the_builds_thread_count_wins_over_a_faster_one_of_another():
    task, db, valid = matmul_records((1e-5, 1), (2e-5, 2))
    context = ApplyHistoryBest([("records", db)], own=True, threads=2)
    found = context.query([task])
    assert (found.config.index, found.note) == (valid[1], "")
    assert context.config(task).index == valid[1]
    with ApplyHistoryBest([("records", db)], threads=1) as one:
        assert one.query([task]).config.index == valid[0] == one.config(task).index
    assert db.best(task.workload_key, "llvm").config_index == valid[0]  # no count: fastest
    context.close()


def test_another_thread_counts_record_serves_when_it_is_the_only_one_and_says_so():
    task, db, valid = matmul_records((1e-5, 1), (3e-5, None))
    with ApplyHistoryBest([("records", db)], own=True, threads=2) as context:
        found = context.query([task])
    assert found.config.index == valid[0]
    assert found.note == "record measured with 1 thread, running with 2"
    assert thread_note(None, 4) == "record measured with an unknown thread count, running with 4"
    assert thread_note(4, 4) == ""


def test_a_matching_record_in_a_later_source_wins_over_another_count_in_the_first():
    task, first, _ = matmul_records((1e-5, 1))
    _, second, valid = matmul_records((9e-5, None), (5e-5, 2))
    with ApplyHistoryBest([("records", first), ("shipped", second)], own=True, threads=2) as c:
        found = c.query([task])
    assert (found.source, found.config.index, found.note) == ("shipped", valid[1], "")


def test_best_config_prefers_the_thread_count(tmp_path):
    task, db, valid = matmul_records((1e-5, 1), (2e-5, 2))
    db.export_jsonl(tmp_path / "r.jsonl")
    with Database(tmp_path / "r.db") as disk:
        disk.import_jsonl(tmp_path / "r.jsonl")
    assert best_config(task, "llvm", tmp_path / "r.db", threads=2).index == valid[1]
    assert best_config(task, "llvm", tmp_path / "r.db", threads=1).index == valid[0]
    assert best_config(task, "llvm", tmp_path / "r.db", threads=8).index == valid[0]


def test_the_compile_log_names_a_kernel_whose_record_has_another_thread_count(tmp_path):
    from compiler.graph.build_onnx import compile_model
    from compiler.graph.cpu_api import model_tasks
    from compiler.tune.dispatch import cpu_history

    path = conv_model(tmp_path)
    ((task, _),) = model_tasks(path, "llvm", log=lambda _: None)
    tuning = create_task(task.template, task.task_args(), "llvm")
    with Database(tmp_path / "r.db") as db:
        db.add_batch(
            [Record.of(MeasureInput(tuning, tuning.config_space.get(0)), [1e-4], threads=1)]
        )
    for threads in (1, 2):
        log = []
        with cpu_history(tmp_path / "r.db", "llvm", threads=threads) as records:
            graph = compile_model(path, "llvm", log=log.append, records=records)
        assert graph.manifest["tuned_from"]["records"] == 1
        lines = [ln for ln in log if "record measured with" in ln]
        if threads == 1:
            assert lines == []
        else:
            assert len(lines) == 1
            assert re.fullmatch(
                r"k\d+_\S+: record measured with 1 thread, running with 2", lines[0]
            )


# ------------------------------------------------------------------------- old databases
def test_an_old_database_without_the_thread_count_still_loads(tmp_path):
    """A version-2 file: its auto-scheduler CPU records read as 1 thread (what it always
    measured with), template records as unknown."""
    path = tmp_path / "old.db"
    task, _, valid = matmul_records()
    template = Record.of(MeasureInput(task, task.config_space.get(valid[0])), [1e-5])
    ansor = Record('["ansor:matmul",[16,16,16]]', "llvm", {"kind": "ansor"}, 0, [2e-5])
    with Database(path) as db:
        db.add_batch([template, ansor])
    downgrade(path, "threads", 2)  # back to a version 2 file: no threads column
    with Database(path) as db:
        assert [r.threads for r in db.records()] == [None, 1]
        db.add_batch(
            [Record.of(MeasureInput(task, task.config_space.get(valid[1])), [1], threads=4)]
        )
        assert [r.threads for r in db.records()] == [None, 1, 4]
    version = sqlite3.connect(path).execute("SELECT version FROM schema_version").fetchone()
    assert version == (SCHEMA_VERSION,)
    lines = [
        '{"workload":"[\\"ansor:matmul\\",[16,16,16]]","target":"llvm","config":{},'
        '"config_index":0,"costs":[1.0],"v":2}',
        '{"workload":"[\\"matmul\\",[16,16,16]]","target":"llvm","config":{},'
        '"config_index":0,"costs":[1.0],"v":2}',
    ]
    assert [Record.from_json(ln).threads for ln in lines] == [1, None]


def test_a_run_resumes_only_from_records_of_its_thread_count(tmp_path, pool_of_3):
    db = tmp_path / "r.db"
    argv = ["tune", TINY, "--n-trial", "2", "--batch-size", "2", "--db", str(db)]
    assert main([*argv, "--threads", "1"]) == 0
    assert main([*argv, "--threads", "1"]) == 0  # resumed: its 2 trials are done
    with Database(db) as records:
        assert [r.threads for r in records.records()] == [1, 1]
    assert main(argv) == 0  # 3 threads: the 1-thread timings are not this run's
    with Database(db) as records:
        assert [r.threads for r in records.records()] == [1, 1, 3, 3]
