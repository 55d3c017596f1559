"""The tuner component study (scripts/bench_tuner.py): best-so-far curves of xgb-rank, xgb-reg,
random and genetic search on ResNet-18 layers, on the CPU (wall time) and the accelerator
(simulator cycles); transfer from other layers' records; program-feature throughput. Its
figures are `study_report`'s.

The study is a list of parts, one tuning run each (target, layer, tuner, seed), run in priority
order (`Plan.parts`): (a) xgb-rank and random on C2, C6, C9, CPU then accelerator; (b) xgb-reg
and ga on the same; (c) transfer: xgb-rank on C7-C9 with the records of C2-C6 (accelerator) or
C1-C6 (CPU). Each part writes its curve to PARTS/seed<N>/<target>_<layer>_<tuner>.json (and its
records to a .db beside it) when it finishes; a rerun skips finished parts and resumes an
interrupted one from its records. The accelerator's cycles are deterministic, so its parts
share measurements: a config any part (of any seed) already had simulated is not built and
simulated again (the JSON counts measured and reused trials). Every tuner of a layer shares one
feature cache (features depend on the config alone).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from compiler.errors import TuningError
from compiler.tune import tune
from compiler.tune.callbacks import format_throughput
from compiler.tune.database import Database
from compiler.tune.featurizer import Featurizer
from compiler.tune.ga_tuner import GATuner
from compiler.tune.measure import (
    CPURunner,
    DeviceRunner,
    LocalBuilder,
    MeasureOption,
    measure_option,
)
from compiler.tune.task import Task, create_task
from compiler.tune.templates.resnet18 import resnet18_task_args
from compiler.tune.transfer import MIN_RECORDS
from compiler.tune.tuner import RandomTuner, Tuner
from compiler.tune.xgb_tuner import XGBTuner

from .harness import ForeignLoad, source_version, utc_now
from .study_report import TRANSFER, report

TUNERS = ("xgb-rank", "xgb-reg", "random", "ga")
STUDY_LAYERS = ("C2", "C6", "C9")
TRANSFER_TARGETS = ("C7", "C8", "C9")
TRANSFER_SOURCES = {
    "vta": ("C2", "C3", "C4", "C5", "C6"),
    "llvm": ("C1", "C2", "C3", "C4", "C5", "C6"),
}
PREWARM_LIMIT = 100_000


def feature_rate(repeats: int = 20) -> float:
    """Program-feature rows per second on the CPU conv2d template (C6), loop structures already
    learned: the whole space is featurized `repeats` times with the per-config cache cleared."""
    op, args = resnet18_task_args("C6", "llvm")
    task = create_task(op, args, "llvm")
    featurize = Featurizer(task)
    space = task.config_space
    index = space.sample(np.random.default_rng(0), space.range_length)  # every valid config
    featurize(index)  # learn every loop structure once
    start = time.perf_counter()
    for _ in range(repeats):
        featurize.clear()
        featurize(index)
    return repeats * len(index) / (time.perf_counter() - start)


def option_for(target: str) -> MeasureOption:
    """Accelerator: sim cycles, two simulations at a time. CPU: one kernel at a time, on one
    thread (a foreign process busy on one of the two cores would halve a 2-thread kernel's
    speed: the same config measured 153 and 425 GFLOPS minutes apart), ten short timings of
    >= 1 ms, ranked by the fastest."""
    if target == "vta":
        return measure_option(
            LocalBuilder(timeout=120, n_parallel=2), DeviceRunner("sim", n_parallel=2)
        )
    return measure_option(
        LocalBuilder(timeout=60, n_parallel=2), CPURunner(repeat=10, min_repeat_ms=1, threads=1)
    )


@dataclass(frozen=True)
class Part:
    """One tuning run: `tuner` on `layer`; transfer parts first read the sources' records."""

    target: str
    layer: str
    tuner: str
    n_trial: int
    batch: int
    seed: int = 0
    sources: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.target}_{self.layer}_{self.tuner}"

    @property
    def folder(self) -> str:
        return f"seed{self.seed}"


@dataclass
class Plan:
    """What to run: targets, layers, tuners, the targets and layers of the transfer parts,
    seeds, trials per part (`vta_model_free_trials` for random and ga on the accelerator and
    for transfer sources there; None: `trials`), batch size, and how many of each target's
    transfer sources to drop from the front."""

    targets: tuple[str, ...] = ("llvm", "vta")
    layers: tuple[str, ...] = STUDY_LAYERS
    tuners: tuple[str, ...] = TUNERS
    transfer: tuple[str, ...] = ("vta", "llvm")
    transfer_layers: tuple[str, ...] = TRANSFER_TARGETS
    seeds: tuple[int, ...] = (0,)
    trials: int = 400
    vta_model_free_trials: int | None = None
    batch: int = 8
    skip_sources: int = 0
    quick: bool = False  # one layer (C9), 32 trials, transfer on the accelerator from C6 only

    def __post_init__(self) -> None:
        if self.vta_model_free_trials is None:
            self.vta_model_free_trials = self.trials
        if self.quick:
            self.layers, self.trials, self.batch, self.vta_model_free_trials = ("C9",), 32, 8, 32
            self.transfer, self.transfer_layers = ("vta",), ("C9",)

    def source_trials(self) -> dict[str, int]:
        """Trials of each target's transfer sources."""
        return {"vta": self.vta_model_free_trials, "llvm": self.trials}

    def parts(self) -> list[Part]:
        """The parts in priority order: xgb-rank and random (CPU, accelerator); xgb-reg and ga
        on the CPU; xgb-reg on the accelerator; the accelerator's transfer; ga on the
        accelerator (its random first generation of 100 is the slowest to build, on spaces
        where random search reaches 95% at once); the CPU's transfer. Within each group, every
        seed in turn. A part that two groups name (a transfer's baseline) is run once."""

        def trials(target: str, tuner: str) -> int:
            model_free = tuner in ("random", "ga") and target == "vta"
            return self.vta_model_free_trials if model_free else self.trials

        def study(target: str, *names: str) -> list[Part]:
            if target not in self.targets:
                return []
            chosen = [t for t in names if t in self.tuners]
            return [
                Part(target, layer, t, trials(target, t), self.batch, seed)
                for seed in self.seeds
                for layer in self.layers
                for t in chosen
            ]

        def transfers(target: str) -> list[Part]:
            if target not in self.transfer:
                return []
            sources = TRANSFER_SOURCES[target][self.skip_sources :]
            if self.quick:
                sources = sources and ("C6",)
            return [
                part
                for seed in self.seeds
                for layer in self.transfer_layers
                for part in (
                    Part(target, layer, "xgb-rank", self.trials, self.batch, seed),
                    Part(target, layer, TRANSFER, self.trials, self.batch, seed, sources),
                )
            ]

        todo = [
            *study("llvm", "xgb-rank", "random"),
            *study("vta", "xgb-rank", "random"),
            *study("llvm", "xgb-reg", "ga"),
            *study("vta", "xgb-reg"),
            *transfers("vta"),
            *study("vta", "ga"),
            *transfers("llvm"),
        ]
        return list(dict.fromkeys(todo))


@dataclass
class Study:
    """Runs parts in order, sharing per-target measure options and per-layer feature caches.
    The accelerator's option starts out knowing every simulated config of earlier runs (any
    seed): cycles are deterministic, so a rerun or another seed only simulates what is new.
    `task_args(layer, target)` names a layer's workload, `make_option(target)` measures it."""

    parts_dir: Path
    source_trials: dict[str, int]
    task_args: Callable[[str, str], tuple[str, tuple]] = resnet18_task_args
    make_option: Callable[[str], MeasureOption] = option_for
    commit: str = field(default_factory=source_version)  # of the code this process runs
    options: dict[str, MeasureOption] = field(default_factory=dict)
    tasks: dict[tuple[str, str], tuple[Task, Featurizer]] = field(default_factory=dict)

    def task(self, target: str, layer: str) -> tuple[Task, Featurizer]:
        """The layer's task and its feature cache, filled with every valid config (the study's
        spaces hold at most ~15,000: seconds of work, then search never lowers a probe)."""
        if (target, layer) not in self.tasks:
            op, args = self.task_args(layer, target)
            task = create_task(op, args, target)
            featurizer = Featurizer(task)
            space = task.config_space
            if space.range_length <= PREWARM_LIMIT:
                every = np.arange(space.range_length, dtype=np.int64)
                featurizer(every[space.valid_mask(every)])
            self.tasks[target, layer] = task, featurizer
        return self.tasks[target, layer]

    def option(self, target: str) -> MeasureOption:
        """The target's measure option, remembering the records of every earlier part."""
        if target not in self.options:
            self.options[target] = option = self.make_option(target)
            for path in sorted(self.parts_dir.glob(f"seed*/{target}_*.db")):
                with Database(path) as db:
                    option.remember(db.records())
        return self.options[target]

    def path(self, part: Part, suffix: str) -> Path:
        return self.parts_dir / part.folder / f"{part.name}{suffix}"

    def tuner(self, part: Part) -> Tuner:
        task, featurizer = self.task(part.target, part.layer)
        if part.tuner in ("xgb-rank", "xgb-reg", TRANSFER):
            loss = "reg" if part.tuner == "xgb-reg" else "rank"
            return XGBTuner(task, loss=loss, seed=part.seed, featurizer=featurizer)
        if part.tuner == "random":
            return RandomTuner(task, seed=part.seed)
        if part.tuner == "ga":
            return GATuner(task, seed=part.seed)
        raise TuningError(f"no tuner {part.tuner!r} in this study")

    def done(self, part: Part) -> dict | None:
        """The part's figures if a run of it with the same trials, batch and seed finished."""
        path = self.path(part, ".json")
        if not path.exists():
            return None
        r = json.loads(path.read_text())
        same = (r["n_trial"], r["batch"], r["seed"]) == (part.n_trial, part.batch, part.seed)
        return r if same else None

    def run(self, part: Part) -> dict:
        """Run one part (resuming from its records) and write its JSON."""
        if (r := self.done(part)) is not None:
            return r
        # sources hold at least what the global model needs, or the transfer part would be
        # plain xgb-rank under another name
        trials = max(self.source_trials[part.target], MIN_RECORDS)
        sources = [
            Part(part.target, s, "random", trials, part.batch, part.seed) for s in part.sources
        ]
        for source in sources:
            self.run(source)
        (self.parts_dir / part.folder).mkdir(parents=True, exist_ok=True)
        db = Database(self.path(part, ".db"))
        if sources and not len(db):
            for source in sources:
                with Database(self.path(source, ".db")) as records:
                    db.add_batch(records.records())
        option = self.option(part.target)
        measured, reused = option.measured, option.reused
        tuner = self.tuner(part)
        with ForeignLoad(tree=True) as load:  # the pool's workers measure for us: not foreign
            start = time.perf_counter()
            history = tune(
                tuner.task,
                part.n_trial,
                option,
                tuner=tuner,
                database=db,
                transfer=bool(part.sources),
                progress=False,
                seed=part.seed,
                batch_size=part.batch,
            )
            seconds = time.perf_counter() - start
        db.close()
        transferred = isinstance(tuner, XGBTuner) and tuner.model.global_model is not None
        r = {
            "target": part.target,
            "layer": part.layer,
            "tuner": part.tuner,
            "sources": list(part.sources),
            "transferred": transferred,
            "n_trial": part.n_trial,
            "batch": part.batch,
            "seed": part.seed,
            "commit": self.commit,
            "curve": history.throughputs,
            "configs": history.configs,
            "errors": history.errors,
            "best_config": history.best_config.to_json() if history.best_config else None,
            "seconds": seconds,
            "measured": option.measured - measured,
            "reused": option.reused - reused,
            "foreign_cores": load.cores,
            "finished_at": utc_now(),
        }
        self.path(part, ".json").write_text(json.dumps(r))
        best = format_throughput(max(r["curve"]), option.cost_unit)
        print(
            f"{part.folder}/{part.name}: best {best} in {seconds:.0f} s ({r['measured']} measured, "
            f"{r['reused']} reused, foreign load {load.cores:.2f} cores)",
            flush=True,
        )
        return r

    def close(self) -> None:
        for option in self.options.values():
            option.close()


def run_study(
    plan: Plan, out: Path, parts_dir: Path, json_path: Path | None, report_only: bool = False
) -> dict:
    """Run the plan's parts not yet finished (none with `report_only`), rewriting the report
    (`study_report.report`, PNGs in `out`) and the JSON at `json_path` after every part, and
    return the report with the commit, start time and program-feature rate."""
    todo = plan.parts()
    rep: dict = {"commit": source_version(), "started_at": utc_now()}
    study = Study(parts_dir, plan.source_trials())
    finished = [r for p in todo if (r := study.done(p)) is not None]
    if not report_only:
        rep["feature_rate"] = feature_rate()
        try:
            finished = []
            for part in todo:
                finished.append(study.run(part))
                rep.update(report(finished, out))
                if json_path:
                    json_path.write_text(json.dumps(rep))
        finally:
            study.close()
    rep.update(report(finished, out))
    return rep
