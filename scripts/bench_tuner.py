"""Tuner component study (issue 6, section 9): best-so-far curves of xgb-rank, xgb-reg, random
and genetic search on ResNet-18 layers, on the CPU (wall time) and the accelerator (simulator
cycles); trials each needs to reach 95% of the best any found (the median over --seeds); transfer
from other layers' records; program-feature throughput; with --peers, the tuned CPU matmul 1024^3
against numpy and conv2d layers against onnxruntime (scripts/bench_tuned.py). Tables on stdout;
--json PATH writes the same figures, with the PNG curves beside it.

The study is a list of parts, one tuning run each (target, layer, tuner, seed), run in priority
order: (a) xgb-rank and random on C2, C6, C9, CPU then accelerator; (b) xgb-reg and ga on the
same; (c) transfer: xgb-rank on C7-C9 with the records of C2-C6 (accelerator) or C1-C6 (CPU).
Each part writes its curve to PARTS/seed<N>/<target>_<layer>_<tuner>.json (and its records to a
.db beside it) when it finishes; a rerun skips finished parts and resumes an interrupted one from
its records, and the report is rewritten after every part. The accelerator's cycles are
deterministic, so its parts share measurements: a config any part (of any seed) already had
simulated is not built and simulated again (the JSON counts measured and reused trials). Every
tuner of a layer shares one feature cache (features depend on the config alone).

    .venv/bin/python scripts/bench_tuner.py --quick --json /tmp/bt/quick.json   # < 10 min
    .venv/bin/python scripts/bench_tuner.py --json /tmp/bench_tuner/full.json    # the study
    .venv/bin/python scripts/bench_tuner.py --json /tmp/bench_tuner/full.json --seeds 0,1,2 \
        --tuners xgb-rank,random --transfer ''                                  # + seeds 1, 2
    .venv/bin/python scripts/bench_tuner.py --json /tmp/bench_tuner/full.json --report-only
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from bench_cpu import ForeignLoad
from bench_tuned import peers, print_peers

import compiler.tune.templates  # noqa: F401 - registers the templates
from compiler.errors import TuningError
from compiler.tune import (
    CPURunner,
    Database,
    DeviceRunner,
    Featurizer,
    GATuner,
    LocalBuilder,
    MeasureOption,
    RandomTuner,
    Task,
    XGBTuner,
    create_task,
    measure_option,
    plot_tuning_curve,
    tune,
)
from compiler.tune.cost_model import MIN_SAMPLES
from compiler.tune.templates.resnet18 import resnet18_task_args
from compiler.tune.transfer import MIN_RECORDS

TUNERS = ("xgb-rank", "xgb-reg", "random", "ga")
TRANSFER = "xgb-rank+transfer"
STUDY_LAYERS = ("C2", "C6", "C9")
TRANSFER_TARGETS = ("C7", "C8", "C9")
TRANSFER_SOURCES = {
    "vta": ("C2", "C3", "C4", "C5", "C6"),
    "llvm": ("C1", "C2", "C3", "C4", "C5", "C6"),
}
UNIT = {"llvm": ("GFLOPS", 1e9), "vta": ("ops/cycle", 1.0)}
ROOT = Path(__file__).resolve().parent.parent
PREWARM_LIMIT = 100_000
GOAL_RATIO = 3.0  # xgb-rank reaches 95% of the best in at most a third of random's trials
TRANSFER_GOAL = 2.0  # transfer cuts xgb-rank's trials to 95% at least 2x


class StudyLoad(ForeignLoad):
    """ForeignLoad counting this process's live worker processes as its own, not foreign."""

    @staticmethod
    def _own() -> float:
        tick = os.sysconf("SC_CLK_TCK")
        children: dict[int, list[int]] = {}
        stats: dict[int, list[str]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = fields
            children.setdefault(int(fields[1]), []).append(int(entry))
        total, todo = 0.0, [os.getpid()]
        while todo:
            pid = todo.pop()
            if pid in stats:  # utime, stime, then reaped children's cutime, cstime
                total += sum(int(x) for x in stats[pid][11:15]) / tick
            todo.extend(children.get(pid, []))
        return total


def trials_to_reach(curve: list[float], mark: float) -> int | None:
    """1-based trial at which the best-so-far first reaches `mark` (None if never)."""
    hit = np.flatnonzero(np.maximum.accumulate(np.asarray(curve)) >= mark)
    return int(hit[0]) + 1 if hit.size else None


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
        featurize._cache.clear()
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


def commit() -> str:
    """HEAD, plus the tracked files under compiler/ and scripts/ that differ from it."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout

    dirty = git("diff", "--name-only", "HEAD", "--", "compiler", "scripts").split()
    return git("rev-parse", "HEAD").strip() + (f" +changes: {' '.join(dirty)}" if dirty else "")


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
class Study:
    """Runs parts in order, sharing per-target measure options and per-layer feature caches.
    The accelerator's option starts out knowing every simulated config of earlier runs (any
    seed): cycles are deterministic, so a rerun or another seed only simulates what is new."""

    parts_dir: Path
    source_trials: dict[str, int]
    commit: str = field(default_factory=commit)  # of the code this process runs
    options: dict[str, MeasureOption] = field(default_factory=dict)
    tasks: dict[tuple[str, str], tuple[Task, Featurizer]] = field(default_factory=dict)

    def task(self, target: str, layer: str) -> tuple[Task, Featurizer]:
        """The layer's task and its feature cache, filled with every valid config (the study's
        spaces hold at most ~15,000: seconds of work, then search never lowers a probe)."""
        if (target, layer) not in self.tasks:
            op, args = resnet18_task_args(layer, target)
            task = create_task(op, args, target)
            featurizer = Featurizer(task)
            space = task.config_space
            if space.range_length <= PREWARM_LIMIT:
                every = np.arange(space.range_length, dtype=np.int64)
                featurizer(every[space.valid_mask(every)])
            self.tasks[target, layer] = task, featurizer
        return self.tasks[target, layer]

    def option(self, target: str) -> MeasureOption:
        if target not in self.options:
            self.options[target] = option = option_for(target)
            for path in sorted(self.parts_dir.glob(f"seed*/{target}_*.db")):
                with Database(path) as db:
                    option.remember(db.records())
        return self.options[target]

    def path(self, part: Part, suffix: str) -> Path:
        return self.parts_dir / part.folder / f"{part.name}{suffix}"

    def tuner(self, part: Part):
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
        with StudyLoad() as load:
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
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        self.path(part, ".json").write_text(json.dumps(r))
        print(
            f"{part.folder}/{part.name}: best {max(r['curve']) / UNIT[part.target][1]:.2f} "
            f"{UNIT[part.target][0]} in {seconds:.0f} s ({r['measured']} measured, "
            f"{r['reused']} reused, foreign load {load.cores:.2f} cores)",
            flush=True,
        )
        return r

    def close(self) -> None:
        for option in self.options.values():
            option.close()


def plan(args: argparse.Namespace) -> list[Part]:
    """The parts in priority order, restricted by --targets/--layers/--tuners/--transfer:
    xgb-rank and random (CPU, accelerator); xgb-reg and ga on the CPU; xgb-reg on the
    accelerator; the accelerator's transfer; ga on the accelerator (its random first generation
    of 100 is the slowest to build, on spaces where random search reaches 95% at once); the
    CPU's transfer. Within each group, every seed of --seeds in turn."""
    targets, layers, tuners = args.targets.split(","), args.layers.split(","), args.tuners
    transfer = args.transfer.split(",") if args.transfer else []
    seeds = [int(x) for x in args.seeds.split(",")]

    def trials(target: str, tuner: str) -> int:
        model_free = tuner in ("random", "ga") and target == "vta"
        return args.vta_model_free_trials if model_free else args.trials

    def study(target: str, *names: str) -> list[Part]:
        if target not in targets:
            return []
        chosen = [t for t in names if t in tuners.split(",")]
        return [
            Part(target, layer, t, trials(target, t), args.batch, seed)
            for seed in seeds
            for layer in layers
            for t in chosen
        ]

    def transfers(target: str) -> list[Part]:
        if target not in transfer:
            return []
        sources = TRANSFER_SOURCES[target][args.skip_sources :]
        return [
            part
            for seed in seeds
            for layer in args.transfer_layers.split(",")
            for part in (
                Part(target, layer, "xgb-rank", args.trials, args.batch, seed),
                Part(target, layer, TRANSFER, args.trials, args.batch, seed, sources),
            )
        ]

    return [
        *study("llvm", "xgb-rank", "random"),
        *study("vta", "xgb-rank", "random"),
        *study("llvm", "xgb-reg", "ga"),
        *study("vta", "xgb-reg"),
        *transfers("vta"),
        *study("vta", "ga"),
        *transfers("llvm"),
    ]


def space_context(target: str, layer: str) -> dict:
    """Valid configs of the layer's space (None when too large to count)."""
    op, args = resnet18_task_args(layer, target)
    space = create_task(op, args, target).config_space
    if space.range_length > 2_000_000:
        return {"configs": space.range_length, "valid": None}
    valid = int(space.valid_mask(np.arange(space.range_length, dtype=np.int64)).sum())
    return {"configs": space.range_length, "valid": valid}


def median_trials(runs: list[dict], mark: float) -> tuple[int | None, list[int | None]]:
    """Trials to reach `mark` per run, and their median (None: not reached within the run); of
    an even count, the upper of the two middle runs (an observed run, and the cautious one)."""
    each = [trials_to_reach(r["curve"], mark) for r in runs]
    reached = sorted(t if t is not None else np.inf for t in each)
    middle = reached[len(reached) // 2]
    return (None if middle == np.inf else int(middle)), each


def first_guided_trial(batch: int) -> int:
    """The first trial xgb-rank picks with its model: until the model has its minimum number
    of samples its batches are random -- with one seed, the very configs random search tries."""
    return -(-MIN_SAMPLES // batch) * batch + 1


def goal_verdict(model: dict, rand: dict) -> dict:
    """random/xgb-rank median trials to 95% against GOAL_RATIO. Per seed xgb-rank needs at
    least min(random's trials, its first guided trial), so the goal is within reach only where
    random needs GOAL_RATIO x that trial or more; a random run that never reached the mark
    counts as n_trial + 1 (the ratio is then a lower bound)."""
    first = first_guided_trial(model["batch"])
    ratio = speedup_to_95(rand, model)
    return {
        "ratio": ratio,
        "met": ratio is not None and ratio >= GOAL_RATIO,
        "first_guided_trial": first,
        "in_reach": trials_to_95(rand) >= GOAL_RATIO * first,
    }


def transfer_verdict(model: dict, warm: dict) -> dict:
    """xgb-rank's median trials to 95% over xgb-rank+transfer's, against TRANSFER_GOAL (a
    transfer part that got no global model cannot meet it)."""
    ratio = speedup_to_95(model, warm)
    return {"ratio": ratio, "met": bool(warm["transferred"] and ratio and ratio >= TRANSFER_GOAL)}


def trials_to_95(t: dict) -> int:
    """A tuner's median trials to 95%, n_trial + 1 when it never got there (a lower bound)."""
    return t["trials_to_95"] or t["n_trial"] + 1


def speedup_to_95(slow: dict, fast: dict) -> float | None:
    """slow's median trials to 95% over fast's (a lower bound when slow never reached it);
    None when fast never reached it."""
    return trials_to_95(slow) / fast["trials_to_95"] if fast["trials_to_95"] else None


def run_to_run(parts: list[dict]) -> dict | None:
    """How far apart two runs measure the same config: over the configs that several runs (of
    any tuner or seed) measured without error, the ratio of the highest throughput to the
    lowest -- the timing noise the marks sit in (1.0 for deterministic cycles). None: no
    config was measured twice (or the parts predate per-trial configs)."""
    seen: dict[int, list[float]] = {}
    for r in parts:
        for config, value in zip(r.get("configs", ()), r["curve"], strict=False):
            if value > 0:
                seen.setdefault(config, []).append(value)
    ratios = np.array([max(v) / min(v) for v in seen.values() if len(v) > 1])
    if not ratios.size:
        return None
    return {
        "configs": int(ratios.size),
        "median": float(np.median(ratios)),
        "p90": float(np.percentile(ratios, 90)),
        "max": float(ratios.max()),
    }


def median_curve(runs: list[dict]) -> np.ndarray:
    """Element-wise median over runs of the best-so-far curves (cut to the shortest run)."""
    n = min(len(r["curve"]) for r in runs)
    return np.median([np.maximum.accumulate(r["curve"][:n]) for r in runs], axis=0)


def report(parts: list[dict], out: Path) -> dict:
    """Per (target, layer): the best any run found and, per tuner, the trials to 95% / 99% / 100%
    of it in each seed's run and their median; how dense the space's top is among random's
    trials; PNG of the median best-so-far curves."""
    layers: dict[tuple[str, str], dict[str, list[dict]]] = {}
    for r in parts:
        layers.setdefault((r["target"], r["layer"]), {}).setdefault(r["tuner"], []).append(r)
    studies = []
    for (target, layer), tuners in layers.items():
        best = max(max(r["curve"]) for runs in tuners.values() for r in runs)
        unit, scale = UNIT[target]
        s = {
            "target": target,
            "layer": layer,
            "unit": unit,
            "scale": scale,
            "best_any": best,
            "space": space_context(target, layer),
            "tuners": {},
        }
        for name, runs in tuners.items():
            t = s["tuners"][name] = {
                "seeds": [r["seed"] for r in runs],
                "best": max(max(r["curve"]) for r in runs),
                "n_trial": runs[0]["n_trial"],
                "batch": runs[0]["batch"],
                "sources": runs[0]["sources"],
                "transferred": all(r.get("transferred", True) for r in runs),
                "commits": sorted({r["commit"] for r in runs}),
                "foreign_cores": max(r["foreign_cores"] for r in runs),
                **{k: sum(r[k] for r in runs) for k in ("seconds", "measured", "reused", "errors")},
            }
            for key, fraction in (("95", 0.95), ("99", 0.99), ("best", 1.0)):
                t[f"trials_to_{key}"], t[f"trials_to_{key}_per_seed"] = median_trials(
                    runs, fraction * best
                )
        if "xgb-rank" in tuners and "random" in tuners:
            s["goal"] = goal_verdict(s["tuners"]["xgb-rank"], s["tuners"]["random"])
        if "xgb-rank" in tuners and TRANSFER in tuners:
            s["transfer_goal"] = transfer_verdict(s["tuners"]["xgb-rank"], s["tuners"][TRANSFER])
        s["run_to_run"] = run_to_run([r for runs in tuners.values() for r in runs])
        if "random" in tuners:  # an unbiased sample of the space: how dense is its top?
            y = np.concatenate([r["curve"] for r in tuners["random"]])
            s["random_within"] = {
                f"{k}": int((y >= k / 100 * best).sum()) for k in (90, 95, 99)
            } | {"of": len(y)}
        png = out / f"{target}_{layer}.png"
        seeds = len(next(iter(tuners.values())))
        plot_tuning_curve(
            {k: median_curve(runs) / scale for k, runs in tuners.items()},
            png,
            title=f"{layer} on {target}" + (f" (median of {seeds} seeds)" if seeds > 1 else ""),
            ylabel=f"best {unit}",
        )
        s["png"] = str(png)
        studies.append(s)
    return {"studies": studies}


def print_report(rep: dict) -> None:
    """The study table (median trials over seeds; per-seed figures after them), space density,
    the model-vs-random and transfer ratios."""
    if "feature_rate" in rep:
        print(f"program features: {rep['feature_rate']:,.0f} configs/s (conv2d C6, one core)")
    print(
        f"\n{'target':6} {'layer':5} {'tuner':18} {'trials':>6} {'best':>8} {'unit':9} "
        f"{'to 95%':>6} {'to 99%':>6} {'to best':>7} {'s':>5} {'meas':>5} {'foreign':>7}  per seed"
    )

    def shown(t: dict, key: str) -> str:
        return str(t[f"trials_to_{key}"] or f">{t['n_trial']}")

    for s in rep["studies"]:
        for name, t in s["tuners"].items():
            per_seed = "/".join(str(x or "-") for x in t["trials_to_95_per_seed"])
            print(
                f"{s['target']:6} {s['layer']:5} {name:18} {t['n_trial']:6d} "
                f"{t['best'] / s['scale']:8.2f} {s['unit']:9} {shown(t, '95'):>6} "
                f"{shown(t, '99'):>6} {shown(t, 'best'):>7} {t['seconds']:5.0f} "
                f"{t['measured']:5d} {t['foreign_cores']:7.2f}  seeds {t['seeds']}: {per_seed}"
            )
        space = s["space"]
        w = s.get("random_within")
        density = (
            f"; random trials within 90/95/99% of the best: "
            f"{w['90']}/{w['95']}/{w['99']} of {w['of']}"
            if w
            else ""
        )
        print(f"{'':13}space {space['valid']} valid of {space['configs']}{density}")
        if n := s["run_to_run"]:
            print(
                f"{'':13}same config, run to run: {n['configs']} configs measured in 2+ runs, "
                f"highest/lowest median {n['median']:.3f}, p90 {n['p90']:.3f}, max {n['max']:.2f}"
            )
        model, rand = s["tuners"].get("xgb-rank"), s["tuners"].get("random")
        if model and rand:
            figures = ", ".join(
                f"to {k}: {shown(rand, k)}/{shown(model, k)}" for k in ("95", "99", "best")
            )
            print(f"{'':13}random/xgb-rank median trials {figures}")
            g = s["goal"]
            verdict = "met" if g["met"] else "not met"
            if not g["in_reach"]:
                verdict += (
                    f"; out of reach: random needs {shown(rand, '95')} trials, under "
                    f"{GOAL_RATIO:g} x {g['first_guided_trial']} (xgb-rank's first "
                    "model-guided trial; the ones before are random search's own)"
                )
            ratio = "-" if g["ratio"] is None else f"{g['ratio']:.1f}"
            print(f"{'':13}goal random/xgb-rank >= {GOAL_RATIO:g} to 95%: {ratio}, {verdict}")
        warm = s["tuners"].get(TRANSFER)
        if model and warm:
            sources = "+".join(warm["sources"])
            figures = ", ".join(
                f"to {k}: {shown(model, k)} -> {shown(warm, k)}" for k in ("95", "99", "best")
            )
            missing = "" if warm["transferred"] else " (not applied: too few source records)"
            print(f"{'':13}transfer from {sources}, median trials {figures}{missing}")
            g = s["transfer_goal"]
            ratio = "-" if g["ratio"] is None else f"{g['ratio']:.1f}"
            verdict = "met" if g["met"] else "not met"
            print(f"{'':13}goal xgb-rank/transfer >= {TRANSFER_GOAL:g} to 95%: {ratio}, {verdict}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one layer, few trials (< 10 min)")
    p.add_argument("--json", help="write the figures as JSON to this file (PNGs beside it)")
    p.add_argument("--parts", help="folder of finished parts (default: PARTS beside --json)")
    p.add_argument("--seeds", default="0", help="comma-separated seeds, one run of each part each")
    p.add_argument("--targets", default="llvm,vta")
    p.add_argument("--layers", default=",".join(STUDY_LAYERS))
    p.add_argument("--tuners", default=",".join(TUNERS))
    p.add_argument("--trials", type=int, default=400)
    p.add_argument("--batch", type=int, default=8, help="study batch size (tuners' default: 64)")
    p.add_argument("--transfer", default="vta,llvm", help="targets of the transfer parts")
    p.add_argument("--transfer-layers", default=",".join(TRANSFER_TARGETS))
    p.add_argument("--skip-sources", type=int, default=0, help="drop the first N source layers")
    p.add_argument(
        "--vta-model-free-trials",
        type=int,
        help="trials of random and ga (and transfer sources) on the accelerator (default: "
        "--trials); fewer shorten the study, as random configs are its slowest builds",
    )
    p.add_argument("--peers", action="store_true", help="also run bench_tuned's peer comparison")
    p.add_argument("--report-only", action="store_true", help="report the finished parts")
    args = p.parse_args()
    if args.vta_model_free_trials is None:
        args.vta_model_free_trials = args.trials
    if args.quick:
        args.layers, args.trials, args.batch, args.vta_model_free_trials = "C9", 32, 8, 32
        args.transfer, args.transfer_layers = "vta", "C9"
    out = Path(args.json).parent if args.json else Path(tempfile.mkdtemp(prefix="bench_tuner_"))
    parts_dir = Path(args.parts) if args.parts else out / "parts"
    parts_dir.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    todo = plan(args)
    if args.quick:  # one source layer, few trials
        todo = [dataclasses.replace(p, sources=p.sources and ("C6",)) for p in todo]
    todo = list(dict.fromkeys(todo))  # a transfer's baseline may be a study part too

    rep: dict = {
        "commit": commit(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    source_trials = {"vta": args.vta_model_free_trials, "llvm": args.trials}
    study = Study(parts_dir, source_trials)
    finished = [r for p in todo if (r := study.done(p)) is not None]
    if not args.report_only:
        rep["feature_rate"] = feature_rate()
        try:
            finished = []
            for part in todo:
                finished.append(study.run(part))
                rep.update(report(finished, out))
                if args.json:
                    Path(args.json).write_text(json.dumps(rep))
        finally:
            study.close()
    rep.update(report(finished, out))
    if args.peers:
        seed = int(args.seeds.split(",")[0])
        rep["peers"] = peers(32, ["C9"], 32, seed) if args.quick else peers(200, ["C9"], 100, seed)
    if args.json:
        Path(args.json).write_text(json.dumps(rep))
    print_report(rep)
    if "peers" in rep:
        print()
        print_peers(rep["peers"])
    print(f"curves in {out}, parts in {parts_dir}")


if __name__ == "__main__":
    main()
