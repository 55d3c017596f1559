"""`vta codesign`'s library entry points, in plain arguments: run a search (`codesign`), prove
its points (`verify_point`: bit-exact on `sim`; `verify_rtl`: the RTL cycle-equal to `sim`) and
write the chosen point (`emit`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

from hw.resources import estimate
from vta.config import VTAConfig

from ..errors import CompilerError
from .evaluate import (
    Evaluation,
    evaluate_point,
    network_cpu_prior,
    network_prior,
    preset_point,
    workload,
)
from .search import (
    OBJECTIVES,
    STRATEGIES,
    Study,
    grid_search,
    learned_search,
    objectives,
    pareto,
    random_search,
)
from .space import HardwareSpace
from .store import Store, study_key


@dataclasses.dataclass
class Result:
    """A search's outcome: the part's preset, the front (fastest first), the best fitting point
    by the objective, every evaluation, and which front points `sim` ran bit-exact."""

    default: Evaluation
    pareto: list[Evaluation]
    best: Evaluation | None
    evaluations: list[Evaluation]
    verified: dict[str, bool] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict:
        def with_check(ev: Evaluation) -> dict:
            return {**ev.to_dict(samples=False), "bit_exact_sim": self.verified.get(ev.point.label)}

        return {
            "default": with_check(self.default),
            "pareto": [with_check(ev) for ev in self.pareto],
            "best": None if self.best is None else with_check(self.best),
        }


def make_pool(scheduler: str | None, workers: int | None = None):
    """Where points are evaluated: a Dask cluster at `scheduler`, else a local pool of
    processes (one per core)."""
    from ..tune.pool import DaskPool, LocalPool

    return DaskPool(scheduler) if scheduler else LocalPool(workers)


def codesign(
    model: str | Path,
    part: str = "xc7z020",
    objective: str = "latency",
    trials: int = 64,
    seed: int = 0,
    db: str | Path | None = None,
    scheduler: str | None = None,
    strategy: str = "learned",
    calibration: str | None = None,
    candidates: int = 8,
    verify: bool = True,
    progress: Callable[[Evaluation], None] | None = None,
    dimensions: dict | None = None,
    transfer: bool = True,
) -> Result:
    """Search the hardware space of `part` for the model at `model` (`strategy`: learned,
    random or grid; `trials` evaluations, the grid all of its points), evaluating on Dask
    workers at `scheduler` or a local pool, every evaluation stored in `db` (SQLite; a search
    with the same study resumes from it). With `verify`, each front point's network runs on
    `sim` and must be bit-exact. With `transfer`, points after the first few choose their knobs
    among the few candidates a ranker learned from the earlier points' timings puts first
    (`search.Study`)."""
    if strategy not in STRATEGIES:
        raise CompilerError(f"unknown search {strategy!r} (choose {', '.join(STRATEGIES)})")
    if objective not in OBJECTIVES:
        raise CompilerError(f"unknown objective {objective!r} (choose {', '.join(OBJECTIVES)})")
    model = str(model)
    graph = workload(model, calibration).graph  # a model that does not import fails here
    batch = graph.value(graph.inputs[0]).shape[0] if graph.inputs else 1
    space = HardwareSpace(part, dimensions, model_batch=batch)
    store = Store(db or ":memory:")
    key = study_key(model, calibration, space.part.name, candidates, None)
    pool = make_pool(scheduler)
    try:
        prior = network_prior(model, space, calibration)
        cpu = network_cpu_prior(model, space, calibration) if objective == "board" else None
        study = Study(model, space, store, key, objective, calibration, candidates, pool,
                      progress, transfer, prior=prior, cpu_prior=cpu)  # fmt: skip
        default = _preset(study)
        if strategy == "grid":
            evaluations = grid_search(study)
        elif strategy == "random":
            evaluations = random_search(study, trials, seed, _batch(pool))
        else:
            evaluations = learned_search(study, trials, seed, _batch(pool))
        front = pareto(evaluations, objective)
        result = Result(default, front, _best(front, objective), evaluations)
        if verify:
            checked = [default, *front]
            jobs = [(model, ev, part, calibration, candidates) for ev in checked]
            for ev, out in zip(checked, pool.map(verify_point, jobs, 1800.0), strict=True):
                result.verified[ev.point.label] = bool(out.ok and out.value)
    finally:
        _close(pool)
        store.close()
    return result


def _batch(pool) -> int:
    """Points evaluated at once: one per worker of the pool."""
    n = getattr(pool, "n_workers", None)
    if n is None:
        n = len(pool.client.scheduler_info().get("workers", {})) or 1
    return max(1, n)


def _close(pool) -> None:
    close = getattr(pool, "close", None)
    if close is not None:
        close()


def _preset(study: Study) -> Evaluation:
    """The part's preset at the clock it closes at (`preset_point`; stored under its label)."""
    point, cfg, clock = preset_point(study.space.part.name)
    label = f"preset:{cfg.name}"
    found = study.store.get(study.key, label)
    if found is not None:
        return found
    job = (study.model, point, study.space.part.name, study.calibration, study.candidates,
           cfg.name, clock)  # fmt: skip
    (outcome,) = study.pool.map(evaluate_point, [job], 900.0)
    if not outcome.ok:
        raise CompilerError(f"the {cfg.name} preset could not be evaluated: {outcome.message}")
    ev = outcome.value
    study.store.put(study.key, ev, label)
    return ev


def _best(front: list[Evaluation], objective: str) -> Evaluation | None:
    if not front:
        return None
    return min(front, key=lambda ev: objectives(ev, objective)[0])


def verify_point(
    model: str, ev: Evaluation, part: str, calibration: str | None, candidates: int
) -> bool:
    """Whether the network compiled for `ev`'s configuration runs bit-exact on `sim` (every
    accelerator group against the quantized reference, on the first calibration input)."""
    from ..errors import OperatorError
    from ..graph.hybrid import compile_hybrid

    cfg = VTAConfig.from_dict(ev.config)
    w = workload(model, calibration)
    module = compile_hybrid(w.quantized(cfg), cfg, candidates)
    try:
        module.run(w.inputs[0], device="sim")
    except OperatorError:
        return False
    return True


def verify_rtl(model: str, ev: Evaluation, calibration: str | None, candidates: int) -> dict:
    """Run the smallest of `ev`'s accelerator Programs (fewest instructions) on the verilated
    RTL built for its configuration (the header `emit` writes; the first run of a configuration
    builds it, minutes) and on `sim`: the group, both cycle counts and whether they are equal."""
    from vta.device import get_device

    from ..graph.hybrid import accelerator_programs

    cfg = VTAConfig.from_dict(ev.config)
    programs = accelerator_programs(workload(model, calibration).quantized(cfg), cfg, candidates)
    name, program = min(programs.items(), key=lambda item: len(item[1]))
    rtl = get_device("rtl").time(program).cycles
    sim = get_device("sim").cycles(program)
    return {"group": name, "rtl_cycles": rtl, "sim_cycles": sim, "equal": rtl == sim}


def emit(ev: Evaluation, folder: str | Path, part: str) -> list[Path]:
    """Write the chosen point: `config.json` (what `--config` takes), the RTL's header
    `vta_config.vh`, `layers.json` (each accelerator layer's cycles) and `resources.json` (the
    resource model's estimate)."""
    from vta.hwconfig import generate_header

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    cfg = VTAConfig.from_dict(ev.config)
    res = estimate(cfg, part)
    files = {
        "config.json": json.dumps(cfg.to_dict(), indent=2) + "\n",
        "vta_config.vh": generate_header(cfg),
        "layers.json": json.dumps(ev.layer_cycles or {}, indent=2) + "\n",
        "resources.json": json.dumps(dataclasses.asdict(res), indent=2) + "\n",
    }
    for name, text in files.items():
        (out / name).write_text(text)
    return [out / name for name in files]
