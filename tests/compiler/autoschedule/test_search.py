"""Evolutionary search: programs measured with the tuner's builders and runners, stored in the
records database, resumed from it; the cost model ranks the search's proposals."""

import numpy as np

from compiler.autoschedule import AnsorTuner, SearchTask, auto_schedule
from compiler.autoschedule.program import Program, run_program
from compiler.autoschedule.search import SharedCostModel
from compiler.tune import CPURunner, Database, LocalBuilder, measure_option
from compiler.tune.cost_model import pair_accuracy


def test_search_measures_stores_and_resumes(tmp_path):
    task = SearchTask("matmul_relu", (32, 64, 32))
    option = measure_option(LocalBuilder(timeout=60, n_parallel=1), CPURunner(repeat=2))
    db = Database(tmp_path / "r.db")
    try:
        history = auto_schedule(task, 8, option, db, progress=False, batch_size=4)
        assert len(history.throughputs) == 8 and history.errors == 0
        records = db.records(task.workload_key, "llvm")
        assert len(records) == 8 and task.workload_key == '["ansor:matmul_relu",[32,64,32]]'
        assert all(r.config["kind"] == "ansor" for r in records)
        assert len({r.config_index for r in records}) == 8  # never measured twice
        again = auto_schedule(task, 8, option, db, progress=False)
        assert option.measured == 8 and len(again.throughputs) == 8  # resumed: nothing new
    finally:
        option.close()
    best = Program.from_json(task, db.best(task.workload_key, "llvm").config)
    a, b = (
        np.random.default_rng(0).standard_normal(s).astype("float32") for s in [(32, 32), (32, 64)]
    )
    (got,) = run_program(best, [a, b])
    np.testing.assert_allclose(got, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_fitted_model_drives_the_evolutionary_proposals():
    task = SearchTask("matmul", (64, 64, 64))
    tuner = AnsorTuner(task, seed=0, population=32, generations=2)
    programs = tuner.random_programs(40)
    assert len(programs) == 40 and len({p.key for p in programs}) == 40
    # a synthetic truth: programs whose innermost tile is wider are faster
    x, valid = tuner.features(programs)
    assert valid.all()
    width = np.array([float(str(p).count("vectorize")) + len(p.key) % 7 for p in programs])
    tuner.measured = list(zip(programs, width, strict=True))
    tuner.model.fit(x, width)
    batch = tuner.next_batch(8)
    assert len(batch) == 8 and len({p.key for p in batch}) == 8
    scores = tuner.scores(batch)
    assert np.isfinite(scores).all()
    assert isinstance(tuner.search_seconds, float)  # timing itself belongs to bench_ansor


def test_tuners_of_several_tasks_share_one_model():
    shared = SharedCostModel(seed=0)
    tuners = [
        AnsorTuner(SearchTask("matmul", shape), seed=0, shared=shared)
        for shape in [(64, 64, 64), (32, 128, 32)]
    ]
    assert tuners[0].model is tuners[1].model is shared.model
    data = []
    for scale, tuner in zip([1.0, 1000.0], tuners, strict=True):  # throughputs in other units
        programs = tuner.random_programs(12)
        x, valid = tuner.features(programs)
        assert valid.all()
        data.append((tuner.task.workload_key, x, scale * (1.0 + x[:, 0] + x[:, 1])))
    shared.fit(*data[0])
    assert not shared.model.fitted  # 12 rows: below the model's minimum
    shared.fit(*data[1])
    assert shared.model.fitted and shared.model.n_samples == 24  # fitted on both tasks' rows
    shared.fit(*data[0])  # a task's new rows replace its old ones
    assert shared.model.n_samples == 24
    for _, x, y in data:  # ranked within each task, whatever its scale
        assert pair_accuracy(shared.model.predict(x), y) > 0.8
