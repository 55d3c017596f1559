"""Records say the host they were measured on, and the cost models read it with the thread
count: records of one kind of host train one model, another kind's are told apart."""

import json
import math
import sqlite3

import numpy as np

import compiler.tune.templates.cpu  # noqa: F401 - registers the matmul template
from compiler.autoschedule import AnsorTuner, SearchTask
from compiler.codegen.target import Target, cpu_facts
from compiler.tune import CPURunner, LocalBuilder, XGBTuner, create_task, measure_option, tune
from compiler.tune.cost_model import XGBCostModel, pair_accuracy
from compiler.tune.database import Database
from compiler.tune.features import PROGRAM_FEATURE_LENGTH
from compiler.tune.host import HOST_FEATURES, host_of, host_row, l3_per_core, with_host
from compiler.tune.record import SCHEMA_VERSION, MeasureInput, Record
from compiler.tune.transfer import history_dataset
from testkit.records import downgrade

AVX512 = {"isa": "avx512", "cpu": "znver4", "lanes": 16, "l1d": 32768, "l2": 1 << 20, "l3": 1 << 24}
AVX2 = {"isa": "avx2", "cpu": "haswell", "lanes": 8, "l1d": 32768, "l2": 1 << 18, "l3": 1 << 21}


def _cache_dir(root, index, level, kind, size, shared):
    d = root / f"index{index}"
    d.mkdir(parents=True)
    for name, value in (("level", level), ("type", kind), ("size", size)):
        (d / name).write_text(f"{value}\n")
    (d / "shared_cpu_list").write_text(f"{shared}\n")


def test_the_l3_per_core_is_its_size_over_the_cpus_sharing_it(tmp_path):
    _cache_dir(tmp_path / "a", 0, 1, "Data", "32K", "0")
    _cache_dir(tmp_path / "a", 3, 3, "Unified", "32768K", "0-1")
    assert l3_per_core(tmp_path / "a") == 16 << 20
    _cache_dir(tmp_path / "b", 3, 3, "Unified", "32M", "0-3,8-11")
    assert l3_per_core(tmp_path / "b") == 4 << 20
    _cache_dir(tmp_path / "c", 2, 2, "Unified", "1024K", "0")
    assert l3_per_core(tmp_path / "c") is None


def test_the_host_of_a_target_has_its_vector_width_and_the_machines_caches():
    host = host_of("llvm")
    facts = cpu_facts(Target.parse("llvm"))
    assert host["lanes"] == facts.lanes("float32") and host["isa"] == facts.isa
    assert host["l1d"] == facts.l1d_bytes and host["l2"] == facts.l2_bytes
    avx2 = host_of("llvm -mcpu=haswell")  # AVX2 code on this machine: an AVX2 host's lanes
    assert (avx2["isa"], avx2["lanes"], avx2["cpu"]) == ("avx2", 8, "haswell")
    assert avx2["l3"] == host["l3"]
    assert host_of("vta") is None and host_of("cuda -arch=sm_80") is None


def test_host_columns_are_log2_sizes_lanes_and_nan_where_unknown():
    row = host_row(AVX512, 2)
    assert row.shape == (HOST_FEATURES,)
    assert list(row) == [1.0, 16.0, 15.0, 20.0, 24.0]
    assert np.isnan(host_row(None, None)).all()
    assert np.isnan(host_row({**AVX2, "l3": None}, 4)[4]) and host_row(AVX2, 4)[0] == 2.0
    rows = with_host(np.zeros((3, 2)), row)
    assert rows.shape == (3, 2 + HOST_FEATURES) and (rows[:, 2:] == row).all()


def test_a_cpu_runners_records_say_their_host_and_a_database_keeps_it(tmp_path):
    task = create_task("matmul", (16, 16, 16), "llvm")
    option = measure_option(LocalBuilder(), CPURunner(threads=1))
    path = tmp_path / "r.db"
    try:
        with Database(path) as db:
            tune(task, 2, option, XGBTuner(task, seed=0), progress=False, database=db)
    finally:
        option.close()
    with Database(path) as db:
        found = db.records()
    assert found and all(r.host == host_of("llvm") and r.threads == 1 for r in found)
    line = json.loads(found[0].to_json())
    assert line["host"] == host_of("llvm") and line["v"] == SCHEMA_VERSION
    assert Record.from_json(found[0].to_json()).host == found[0].host


def test_a_version_3_database_and_its_lines_load_with_an_unknown_host(tmp_path):
    path = tmp_path / "v3.db"
    task = create_task("matmul", (16, 16, 16), "llvm")
    config = task.config_space.get(next(i for i in range(99) if task.config_space.is_valid(i)))
    with Database(path) as db:
        db.add_batch([Record.of(MeasureInput(task, config), [1e-5], threads=2)])
    downgrade(path, "host", 3)  # back to a version 3 file: no host column
    with Database(path) as db:
        assert [(r.threads, r.host) for r in db.records()] == [(2, None)]
        db.add_batch([Record.of(MeasureInput(task, config), [2e-5], threads=2, host=AVX2)])
        assert [r.host for r in db.records()] == [None, AVX2]
    version = sqlite3.connect(path).execute("SELECT version FROM schema_version").fetchone()
    assert version == (SCHEMA_VERSION,)
    line = json.loads(Record.of(MeasureInput(task, config), [1.0], threads=2).to_json())
    old = {k: v for k, v in line.items() if k != "host"} | {"v": 3}
    assert Record.from_json(json.dumps(old)).host is None


def _avx2_speed(x):
    """Faster with x[:, 0] until 0.5, then slow (a register tile that spills on AVX2)."""
    return np.where(x[:, 0] < 0.5, x[:, 0], 0.2 * x[:, 0] - 0.1)


def test_the_cost_model_tells_hosts_of_two_kinds_apart():
    """Configs ranked by x0 on AVX-512 hosts, but slow beyond 0.5 on AVX2 ones, each host's
    records a ranking of its own (as `history_dataset` groups them): with the host columns one
    model learns both orders; without them it mistakes one host's for the other's."""
    rng = np.random.default_rng(0)
    x = rng.random((200, 4)).astype(np.float32)
    truth, groups = np.concatenate([x[:, 0], _avx2_speed(x)]), np.repeat([0, 1], len(x))
    test = rng.random((100, 4)).astype(np.float32)
    model = XGBCostModel(seed=0)
    model.fit(np.concatenate([with_host(x, host_row(h, 2)) for h in (AVX512, AVX2)]), truth, groups)
    on_avx512 = model.predict(with_host(test, host_row(AVX512, 2)))
    on_avx2 = model.predict(with_host(test, host_row(AVX2, 2)))
    assert pair_accuracy(on_avx512, test[:, 0]) > 0.75
    assert pair_accuracy(on_avx2, _avx2_speed(test)) > 0.75
    blind = XGBCostModel(seed=0)
    blind.fit(np.concatenate([x, x]), truth, groups)
    assert pair_accuracy(blind.predict(test), _avx2_speed(test)) < 0.7


def test_transfer_rows_carry_each_records_host_and_threads():
    db = Database()
    other = create_task("matmul", (32, 32, 32), "llvm")
    space = other.config_space
    valid = [i for i in range(len(space)) if space.is_valid(i)][:6]
    hosts = [(AVX512, 2), (AVX2, 1), (None, None)] * 2
    db.add_batch(
        Record.of(MeasureInput(other, space.get(i)), [1e-5 * (k + 1)], threads=t, host=h)
        for k, (i, (h, t)) in enumerate(zip(valid, hosts, strict=True))
    )
    x, y, groups = history_dataset(db, create_task("matmul", (16, 16, 16), "llvm"), "knob")
    assert len(y) == 6 and len(set(groups.tolist())) == 3  # ranked per host and thread count
    want = np.stack([host_row(h, t) for h, t in hosts])
    np.testing.assert_array_equal(x[:, -HOST_FEATURES:], want)


def test_the_auto_schedulers_rows_end_with_its_host_and_learn_each_records():
    task = SearchTask("matmul", (32, 32, 32))
    tuner = AnsorTuner(task, seed=0)
    tuner.threads = 2
    programs = tuner.random_programs(4)
    x, valid = tuner.features(programs)
    assert valid.all() and x.shape == (4, PROGRAM_FEATURE_LENGTH + HOST_FEATURES)
    assert (x[:, -HOST_FEATURES:] == host_row(host_of("llvm"), 2)).all()
    assert math.isclose(x[0, -HOST_FEATURES], 1.0)
