"""benchmarks/codesign.py on a synthetic grid: evaluations to a share of the hypervolume, the
searches replayed on the grid, the best point against the preset."""

from benchmarks.codesign import ReplayPool, best_against_preset, compare_searches, evaluations_to
from compiler.codesign.pareto import hypervolume
from compiler.codesign.search import Study, grid_search, objectives
from compiler.codesign.space import REDUCED, HardwareSpace, point_of
from compiler.codesign.store import Store
from testkit.codesign import SyntheticPool, synthetic_prior
from vta.config import VTAConfig


def _grid():
    space = HardwareSpace("xczu3eg", REDUCED)
    pool = SyntheticPool(space)
    return grid_search(Study("m", space, Store(), "g", pool=pool)), pool


def test_evaluations_to_a_share_of_the_hypervolume():
    grid, _ = _grid()
    values = [objectives(ev, "latency") for ev in grid]
    ref = (max(v[0] for v in values) * 1.1, max(v[1] for v in values) * 1.1)
    total = hypervolume(values, ref)
    assert evaluations_to(1.0, grid, ref, total) <= len(grid)
    fastest = min(range(len(grid)), key=lambda i: grid[i].latency_ms)
    assert evaluations_to(1e-9, [grid[fastest]], ref, total) == 1
    assert evaluations_to(0.5, [], ref, total) is None


def test_searches_replay_on_the_grid_without_compiling():
    grid, pool = _grid()
    jobs = pool.jobs
    fig = compare_searches("xczu3eg", grid, seeds=2, budget=12, prior=synthetic_prior)
    assert pool.jobs == jobs  # everything came from the grid
    assert fig["grid_points"] == len(grid)
    for name in ("learned", "random"):
        assert all(k is None or 1 <= k <= 12 for k in fig["to_95"][name])
    assert fig["random_over_learned"] > 0
    assert set(ReplayPool(grid).grid) == {ev.point for ev in grid}


def test_best_point_against_the_preset():
    grid, pool = _grid()
    preset = pool.evaluation(point_of(VTAConfig.load("ultra96")))
    fig = best_against_preset(preset, grid)
    assert fig["best"]["latency_ms"] == min(ev.latency_ms for ev in grid)
    assert fig["speedup"] == preset.latency_ms / fig["best"]["latency_ms"]
