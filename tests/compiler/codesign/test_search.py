"""The searches (compiler/codesign/search.py) on a synthetic cost, through a pool that answers
without compiling (testkit.codesign): only fitting, distinct points; resuming from the store;
the learned search's share of the grid's hypervolume."""

import numpy as np
import pytest
import xgboost as xgb

from compiler.codesign.pareto import hypervolume
from compiler.codesign.search import (
    Study,
    grid_search,
    learned_search,
    objectives,
    pareto,
    random_search,
)
from compiler.codesign.space import REDUCED, HardwareSpace
from compiler.codesign.store import Store
from testkit.codesign import SyntheticPool, synthetic_cpu_ms, synthetic_prior


def _study(tmp_path, objective="latency", name="s.db"):
    space = HardwareSpace("xczu3eg", REDUCED)
    pool = SyntheticPool(space)
    study = Study("m.onnx", space, Store(tmp_path / name), "k", objective, pool=pool,
                  prior=synthetic_prior, cpu_prior=synthetic_cpu_ms)  # fmt: skip
    return study, pool


def test_random_search_evaluates_distinct_fitting_points(tmp_path):
    study, pool = _study(tmp_path)
    evs = random_search(study, 10, seed=1)
    points = [ev.point for ev in evs]
    assert len(points) == 10 == len(set(points)) == pool.jobs
    assert all(study.fits(p) for p in points)


def test_a_search_resumes_from_its_store(tmp_path):
    study, pool = _study(tmp_path)
    first = learned_search(study, 8, seed=3)
    jobs = pool.jobs
    again, pool2 = _study(tmp_path)
    second = learned_search(again, 8, seed=3)
    assert [e.point for e in second] == [e.point for e in first]
    assert pool2.jobs == 0 and jobs == 8


@pytest.mark.parametrize("objective", ["latency", "board"])
def test_learned_search_reaches_the_grids_front_in_few_evaluations(tmp_path, objective):
    study, _ = _study(tmp_path, objective)
    grid = grid_search(study)
    front = [objectives(ev, objective) for ev in pareto(grid, objective)]
    ref = (max(v[0] for v in front) * 1.1, max(v[1] for v in front) * 1.1)  # the front's nadir
    total = hypervolume([objectives(ev, objective) for ev in grid], ref)
    needed = {"learned": [], "random": []}
    for seed in range(3):
        for name, search in (("learned", learned_search), ("random", random_search)):
            evs = search(_study(tmp_path, objective, name=f"{name}{seed}.db")[0], 40, seed)
            assert len({ev.point for ev in evs}) == 40
            values = [v for ev in evs if (v := objectives(ev, objective))]
            k = next((k for k in range(1, 41) if hypervolume(values[:k], ref) >= 0.95 * total), 41)
            needed[name].append(k)
    # two of three seeds: within 10 evaluations, and in 2.5x fewer than random
    assert sorted(needed["learned"])[1] <= 10, needed
    assert sorted(needed["learned"])[1] * 2.5 <= sorted(needed["random"])[1], needed


def test_the_front_is_the_fitting_compiled_points(tmp_path):
    study, _ = _study(tmp_path)
    evs = random_search(study, 12, seed=0)
    evs[0].error, evs[0].cycles = "no tiling fits", None
    front = pareto(evs, "latency")
    assert evs[0] not in front and front
    assert [ev.latency_ms for ev in front] == sorted(ev.latency_ms for ev in front)
    assert objectives(evs[0], "latency") is None


def test_a_ranker_learned_at_earlier_points_picks_a_new_points_candidates(tmp_path):
    from compiler import zoo
    from compiler.codesign.ranker import Ranker
    from compiler.codesign.space import Point
    from compiler.tune.pool import LocalPool

    model = tmp_path / "dqn.onnx"
    model.write_bytes(zoo.NETWORKS["dqn"]())
    space = HardwareSpace("xc7z020")
    pool = LocalPool(1)
    try:
        study = Study(str(model), space, Store(), "k", pool=pool, min_samples=40)
        first = study.evaluate([Point(), Point(inp_depth=10, wgt_depth=9, acc_depth=10)])
        assert all(not ev.ranked and len(ev.samples) == 24 for ev in first)  # 3 layers x 8
        assert isinstance(study.ranker, Ranker)
        (ranked,) = study.evaluate([Point(block=8, uop_depth=11)])
    finally:
        pool.close()
    assert ranked.ranked and ranked.cycles > 0 and len(ranked.samples) == 9  # 3 x 3
    # the ranker orders the timed candidates of every point much as their cycles do
    rows = np.array([r for ev in (*first, ranked) for r in ev.samples])
    predicted = np.asarray(study.ranker.booster.predict(xgb.DMatrix(rows[:, :-1])))
    assert np.corrcoef(predicted, np.log2(rows[:, -1]))[0, 1] > 0.9
