"""Records database: schema, batches, JSON lines, best-record dispatch, surviving SIGKILL."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from compiler.errors import TuningError
from compiler.tune import Database, MeasureErrorNo, Record
from compiler.tune.record import SCHEMA_VERSION

HERE = Path(__file__).parent


def rec(index, cost, workload='["op",[1]]', target="llvm", error=MeasureErrorNo.NO_ERROR):
    return Record(workload, target, {"k": index}, index, [cost] if not error else [], error)


def test_schema_wal_and_batches(tmp_path):
    path = tmp_path / "r.db"
    with Database(path) as db:
        assert (
            db.add_batch([rec(0, 3.0), rec(1, 1.0), rec(2, 0, error=MeasureErrorNo.TIMEOUT)]) == 3
        )
        assert len(db) == 3
        assert db.best('["op",[1]]', "llvm").config_index == 1
        assert db.best('["op",[2]]', "llvm") is None
        assert [r.ok for r in db.records()] == [True, True, False]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    row = conn.execute(
        "SELECT error_class, cost, measured_at, stored_at FROM records WHERE config_index = 2"
    ).fetchone()
    assert row[0] == "TIMEOUT" and row[1] is None and row[2] <= row[3]
    conn.execute("UPDATE schema_version SET version = 99")
    conn.commit()
    with pytest.raises(TuningError, match="schema version 99"):
        Database(path)


def test_version_1_files_are_migrated_to_rank_by_the_fastest_timing(tmp_path):
    path = tmp_path / "old.db"
    noisy = Record('["op",[1]]', "llvm", {"k": 0}, 0, [3.0, 1.0])  # mean 2, fastest 1
    steady = Record('["op",[1]]', "llvm", {"k": 1}, 1, [1.5, 1.5])  # mean 1.5, fastest 1.5
    with Database(path) as db:
        db.add_batch([noisy, steady])
    conn = sqlite3.connect(path)  # turn it back into a version 1 file, ranked by the mean
    conn.execute("ALTER TABLE records RENAME COLUMN cost TO mean_cost")
    conn.execute("UPDATE records SET mean_cost = 2.0 WHERE config_index = 0")
    conn.execute("UPDATE schema_version SET version = 1")
    conn.commit()
    conn.close()
    with Database(path) as db:
        assert db.best('["op",[1]]', "llvm").config_index == 0
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT cost FROM records ORDER BY config_index").fetchall() == [
        (1.0,),
        (1.5,),
    ]


def test_a_failing_batch_stores_nothing(tmp_path):
    db = Database(tmp_path / "r.db")
    db.add_batch([rec(0, 1.0)])
    bad = rec(1, 1.0)
    bad.config = {"not": object()}  # not JSON-serializable: fails mid-batch
    with pytest.raises(TypeError):
        db.add_batch([rec(2, 1.0), bad])
    assert [r.config_index for r in db.records()] == [0]


def test_jsonl_round_trip_skips_duplicates(tmp_path):
    src = Database(tmp_path / "a.db")
    src.add_batch([rec(i, float(i + 1), target=t) for i in range(4) for t in ("llvm", "vta")])
    assert src.export_jsonl(tmp_path / "r.jsonl") == 8
    first = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    assert (
        first["workload"] == '["op",[1]]'
        and first["costs"] == [1.0]
        and first["v"] == SCHEMA_VERSION
    )
    dst = Database(tmp_path / "b.db")
    assert dst.import_jsonl(tmp_path / "r.jsonl") == 8
    assert dst.import_jsonl(tmp_path / "r.jsonl") == 0
    assert [(r.config_index, r.target) for r in dst.records()] == [
        (r.config_index, r.target) for r in src.records()
    ]
    (tmp_path / "bad.jsonl").write_text('{"workload": 1}\n')
    with pytest.raises(TuningError, match="bad.jsonl:1"):
        dst.import_jsonl(tmp_path / "bad.jsonl")


def test_files_written_before_records_and_results_were_one_type_still_load(tmp_path):
    """A records database (as SQL text) and its JSON lines, both written by the toolkit when
    measurement results and stored records were separate types: ok, failed and timed-out
    records of two targets."""
    old = sqlite3.connect(tmp_path / "old.db")
    old.executescript((HERE / "data" / "records_v2.sql").read_text())
    old.close()
    lines = (HERE / "data" / "records_v2.jsonl").read_text().splitlines()
    # the same records, now saying their thread count and host: unknown for these records
    lines = [
        json.dumps(
            {
                **{k: v for k, v in json.loads(ln).items() if k != "v"},
                "threads": None,
                "host": None,
                "v": SCHEMA_VERSION,
            },
            separators=(",", ":"),
        )
        for ln in lines
    ]
    with Database(tmp_path / "old.db") as db:
        stored = db.records()
        assert [r.to_json() for r in stored] == lines
        assert db.best('["matmul",[64,64,64]]', "llvm").config_index == 11  # fastest 2.1e-5
        assert db.best('["conv2d_packed",[1,4,14,14,4,3,3,1,1]]', "vta").costs == [123456.0]
    E = MeasureErrorNo
    assert [r.error_no for r in stored] == [0, 0, E.COMPILE_ERROR, 0, E.TIMEOUT]
    assert stored[2].cost == float("inf") and not stored[4].ok
    with Database() as db:
        assert db.import_jsonl(HERE / "data" / "records_v2.jsonl") == 5
        assert [r.to_json() for r in db.records()] == lines


RUN = textwrap.dedent("""
    import os, sys, time
    import tune_templates
    from compiler.tune import Database, RandomTuner, XGBTuner, create_task

    class SlowMeasure(tune_templates.AnalyticMeasure):
        def measure(self, inputs):
            with open({marker!r}, "a") as f:
                f.write("batch\\n")
            out = []
            for inp in inputs:  # slow enough to be killed in the middle of a batch
                time.sleep(0.05)
                out.extend(super().measure([inp]))
            return out

    task = create_task("tiled_matmul", (64, 64, 64), "analytic")
    tuner = XGBTuner(task, feature_type="knob", sa_iters=50, seed=int(sys.argv[1]))
    tuner.tune(int(sys.argv[2]), SlowMeasure(), batch_size=16, database=Database({db!r}))
""")


def test_sigkill_mid_batch_resumes_without_loss_or_duplicates(tmp_path):
    db_path, marker = tmp_path / "r.db", tmp_path / "batches"
    script = tmp_path / "run.py"
    script.write_text(RUN.format(marker=str(marker), db=str(db_path)))
    env = dict(os.environ, PYTHONPATH=str(HERE))  # the script imports tune_templates
    proc = subprocess.Popen([sys.executable, str(script), "0", "96"], env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait until the 3rd batch is being measured
        if marker.exists() and marker.read_text().count("batch") >= 3:
            break
        time.sleep(0.02)
    time.sleep(0.3)  # ~6 of its 16 configs measured
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = Database(db_path).records()
    assert len(before) == 32, "two committed batches, nothing of the third"
    assert sqlite3.connect(db_path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    subprocess.run([sys.executable, str(script), "1", "96"], env=env, check=True, timeout=300)
    after = Database(db_path).records()
    assert len(after) == 96
    assert [(r.config_index, r.timestamp) for r in after[:32]] == [
        (r.config_index, r.timestamp) for r in before
    ]
    assert len({r.config_index for r in after}) == 96, "no config measured twice"


def test_best_config_reads_a_records_file(tmp_path):
    import compiler.tune.templates  # noqa: F401 - registers conv2d_packed
    from compiler.topi.vta.conv2d import RESNET18
    from compiler.tune import best_config, create_task
    from compiler.tune.templates.vta import tuned_conv2d_knobs

    wl = RESNET18["C9"]
    task = create_task("conv2d_packed", wl.sizes, "vta")
    path = tmp_path / "r.db"
    assert best_config(task, "vta", path) is None and tuned_conv2d_knobs(wl, path) is None
    space = task.config_space
    slow, fast = (space.get(int(i)) for i in space.sample(np.random.default_rng(0), 2))
    with Database(path) as db:
        db.add_batch(
            Record(task.workload_key, "vta", c.to_json(), c.index, [cycles])
            for c, cycles in ((slow, 9e6), (fast, 1e6))
        )
    assert best_config(("conv2d_packed", task.args), "vta", path).index == fast.index
    knobs = tuned_conv2d_knobs(wl, path)
    assert knobs.tile_h == fast["tile_h"].size[1] and knobs.h_nthread == fast["h_nthread"].val
