"""The tuner study's figures (`study`): per target and layer, how many trials each tuner needed
to reach 95% / 99% / 100% of the best any run found (the median over seeds), the goals'
verdicts, the timing noise of the host, and the best-so-far curves as PNG.

A study part is a dict as `study.Study.run` writes it: target, layer, tuner, seed, n_trial,
batch, sources, transferred, commit, the per-trial throughput `curve` and `configs`, errors,
seconds, measured and reused trials, foreign_cores.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from compiler.tune.callbacks import plot_tuning_curve
from compiler.tune.cost_model import MIN_SAMPLES
from compiler.tune.task import create_task
from compiler.tune.templates.resnet18 import resnet18_task_args

TRANSFER = "xgb-rank+transfer"  # the tuner name of parts that start from other layers' records
UNIT = {"llvm": ("GFLOPS", 1e9), "vta": ("ops/cycle", 1.0)}
GOAL_RATIO = 3.0  # xgb-rank reaches 95% of the best in at most a third of random's trials
TRANSFER_GOAL = 2.0  # transfer cuts xgb-rank's trials to 95% at least 2x


def trials_to_reach(curve: Sequence[float], mark: float) -> int | None:
    """1-based trial at which the best-so-far first reaches `mark` (None if never)."""
    hit = np.flatnonzero(np.maximum.accumulate(np.asarray(curve)) >= mark)
    return int(hit[0]) + 1 if hit.size else None


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


def trials_to_95(t: dict) -> int:
    """A tuner's median trials to 95%, n_trial + 1 when it never got there (a lower bound)."""
    return t["trials_to_95"] or t["n_trial"] + 1


def speedup_to_95(slow: dict, fast: dict) -> float | None:
    """slow's median trials to 95% over fast's (a lower bound when slow never reached it);
    None when fast never reached it."""
    return trials_to_95(slow) / fast["trials_to_95"] if fast["trials_to_95"] else None


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


def space_context(target: str, layer: str) -> dict:
    """Valid configs of the layer's space (None when too large to count)."""
    op, args = resnet18_task_args(layer, target)
    space = create_task(op, args, target).config_space
    if space.range_length > 2_000_000:
        return {"configs": space.range_length, "valid": None}
    valid = int(space.valid_mask(np.arange(space.range_length, dtype=np.int64)).sum())
    return {"configs": space.range_length, "valid": valid}


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
