"""The co-design search against its baselines (`scripts/bench_codesign.py`).

Per part: the exhaustive grid of the reduced space (`codesign.space.REDUCED`; every point the
resource model says fits, compiled and timed) is the ground truth, kept as JSON under
`benchmarks/data/`; the learned and random searches then replay on it (a point's evaluation is
read from the grid, not recomputed) over several seeds, and each reports how many evaluations it
took to reach 95% of the grid's hypervolume (reference: the grid front's nadir plus 10%). Also:
the best fitting point against the part's preset; the co-design gain (each front point's
cycles with the preset's schedules replayed on it over its re-tuned cycles, geometric mean);
and the resource model's held-out errors against yosys (from its fit). Goals: the learned
search at 95% within 10% of the grid's evaluations and with 2.5x fewer evaluations than random
(median of the seeds); the best point 1.5x (xczu3eg) and 1.25x (xc7z020) faster than the
preset; a co-design gain of 1.25x.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from compiler.codegen.parallel import cache_root
from compiler.codesign.api import make_pool
from compiler.codesign.evaluate import (
    Evaluation,
    evaluate_point,
    network_prior,
    preset_point,
    replayed_cycles,
)
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
from compiler.tune.pool import Outcome
from hw.resources import load_model

from .harness import geomean

DATA = Path(__file__).resolve().parent / "data"
GOALS = {"xczu3eg": 1.5, "xc7z020": 1.25}


class ReplayPool:
    """Answers a search's jobs from the grid's evaluations (by point)."""

    n_workers = 2

    def __init__(self, grid: list[Evaluation]):
        self.grid = {ev.point: ev for ev in grid}

    def map(self, fn, jobs, timeout):
        return [Outcome(self.grid[job[1]]) for job in jobs]


def grid_file(model: str, part: str) -> Path:
    return DATA / f"codesign_grid_{model}_{part}.json"


def run_grid(model_path: str, model: str, part: str, scheduler: str | None = None) -> dict:
    """The grid's evaluations and the preset's (read from the kept file when it exists)."""
    path = grid_file(model, part)
    if path.exists():
        data = json.loads(path.read_text())
        return {"preset": Evaluation.from_dict(data["preset"]),
                "grid": [Evaluation.from_dict(e) for e in data["grid"]]}  # fmt: skip
    pool = make_pool(scheduler)
    try:
        point, cfg, clock = preset_point(part)
        job = (model_path, point, part, None, 8, cfg.name, clock)
        (preset,) = pool.map(evaluate_point, [job], 900.0)
        if not preset.ok:
            raise RuntimeError(preset.message)
        space = HardwareSpace(part, REDUCED, model_batch=1)  # the zoo's networks: batch 1
        (cache_root() / "codesign").mkdir(parents=True, exist_ok=True)
        store = Store(cache_root() / "codesign" / f"grid_{model}_{part}.db")  # a run resumes
        study = Study(model_path, space, store, "grid", pool=pool, transfer=False)
        grid = grid_search(study)
    finally:
        pool.close()
    DATA.mkdir(exist_ok=True)
    doc = {"model": model, "part": part, "preset": preset.value.to_dict(samples=False),
           "grid": [ev.to_dict(samples=False) for ev in grid]}  # fmt: skip
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return {"preset": preset.value, "grid": grid}


def evaluations_to(share: float, evs: list[Evaluation], ref, total: float) -> int | None:
    """How many of `evs`, in order, it takes to reach `share` of the hypervolume `total`."""
    values = []
    for k, ev in enumerate(evs, 1):
        v = objectives(ev, "latency")
        if v is not None:
            values.append(v)
        if values and hypervolume(values, ref) >= share * total:
            return k
    return None


def compare_searches(
    part: str, grid: list[Evaluation], seeds: int, budget: int | None = None, prior=None
) -> dict:
    """Evaluations to 95% of the grid's hypervolume, learned (from `prior`: the network's
    estimated cycles, `evaluate.network_prior`) against random, per seed, each search given
    `budget` evaluations (default: the grid's; not reached counts as the grid's)."""
    front = [objectives(ev, "latency") for ev in pareto(grid, "latency")]
    ref = (max(v[0] for v in front) * 1.1, max(v[1] for v in front) * 1.1)
    total = hypervolume([v for ev in grid if (v := objectives(ev, "latency"))], ref)
    space = HardwareSpace(part, REDUCED, model_batch=1)
    n = len(grid)
    out: dict[str, list] = {"learned": [], "random": []}
    for seed in range(seeds):
        for name, search in (("learned", learned_search), ("random", random_search)):
            study = Study("grid", space, Store(), f"{name}{seed}", pool=ReplayPool(grid),
                          prior=prior)  # fmt: skip
            evs = search(study, budget or n, seed)
            out[name].append(evaluations_to(0.95, evs, ref, total))
    med = {k: statistics.median([x if x is not None else n for x in v]) for k, v in out.items()}
    return {
        "grid_points": n,
        "to_95": out,
        "median_to_95": med,
        "learned_share_of_grid": med["learned"] / n,
        "random_over_learned": med["random"] / med["learned"],
    }


def best_against_preset(preset: Evaluation, grid: list[Evaluation]) -> dict:
    fitting = [ev for ev in grid if ev.ok and ev.cycles is not None]
    best = min(fitting, key=lambda ev: ev.latency_ms)
    return {
        "preset": preset.to_dict(samples=False),
        "best": best.to_dict(samples=False),
        "speedup": preset.latency_ms / best.latency_ms,
        "front": [ev.point.label for ev in pareto(grid, "latency")],
    }


def codesign_gain(model_path: str, part: str, preset: Evaluation, grid: list[Evaluation]) -> dict:
    """Each front point's cycles with the preset's schedules replayed on it over its cycles
    re-tuned, and their geometric mean (the front's points other than the preset's); both
    sides compiled now (the kept grid may predate the compiler's latest knob choices)."""
    front = [ev for ev in pareto(grid, "latency") if ev.point != preset.point]
    ratios = {
        ev.point.label: replayed_cycles(model_path, ev.config, preset.config, None)
        / evaluate_point(model_path, ev.point, part).cycles
        for ev in front
    }
    return {"gain": ratios, "gain_geomean": geomean(list(ratios.values()))}


def resource_model_errors() -> dict:
    """The resource model's held-out errors against yosys, as its fit measured them."""
    model = load_model()
    return {k: v for k, v in model.items() if k != "targets"}


def bench_codesign(model: str, model_path: str, parts: list[str], seeds: int,
                   scheduler: str | None = None) -> dict:  # fmt: skip
    rows = {}
    for part in parts:
        data = run_grid(model_path, model, part, scheduler)
        space = HardwareSpace(part, REDUCED, model_batch=1)
        rows[part] = {
            **best_against_preset(data["preset"], data["grid"]),
            **compare_searches(part, data["grid"], seeds, prior=network_prior(model_path, space)),
            **codesign_gain(model_path, part, data["preset"], data["grid"]),
            "goal_speedup": GOALS[part],
        }
    return {"model": model, "parts": rows, "resource_model": resource_model_errors()}


def print_codesign(fig: dict) -> None:
    print(f"co-design of {fig['model']} (reduced space; grids in {DATA})")
    head = (f"{'part':8} {'grid':>5} {'preset ms':>10} {'best ms':>9} {'speedup':>8} "
            f"{'goal':>5} {'learned@95%':>12} {'random@95%':>11} {'ratio':>6} {'gain':>6}  "
            "best point")  # fmt: skip
    print(head)
    for part, r in fig["parts"].items():
        print(
            f"{part:8} {r['grid_points']:5d} {r['preset']['latency_ms']:10.3f} "
            f"{r['best']['latency_ms']:9.3f} {r['speedup']:7.2f}x {r['goal_speedup']:4.2f}x "
            f"{r['median_to_95']['learned']:12g} {r['median_to_95']['random']:11g} "
            f"{r['random_over_learned']:5.2f}x {r['gain_geomean'] or 0:5.2f}x  {r['best']['label']}"
        )
    print(f"resource model (held-out, against yosys): {json.dumps(fig['resource_model'])}")
