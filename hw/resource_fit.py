"""Fit the resource model's LUT, FF and critical-path coefficients (hw/resources.py) on the
dataset of yosys runs (hw/data/synth_runs.json) and measure its error on held-out runs.

`python -m hw.resource_fit [--data FILE] [--model FILE] [--folds K]` fits every target by least
squares on relative errors (each run weighs as its own scale, so a small design counts as much
as a large one), estimates the mean absolute error in percent by K-fold cross-validation
(every run predicted by a model fitted without it), and writes the coefficients and those
errors to hw/data/resource_model.json.

A family with fewer runs than its features need (an LUT fit has 8 coefficients) takes the
best-covered family's coefficients times one scale per target, the mean ratio of its runs to
that model's predictions.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from vta.config import VTAConfig
from vta.errors import VTAError

from .resources import MODEL, TARGET_FEATURES, features, predict
from .synth_data import DATA, load

FOLDS = 5
MARGIN_RUNS = 3  # a family fits its own coefficients with this many runs beyond its features
REPORTED = {"delay_ns": "fmax_mhz"}  # the critical path's error is reported as its Fmax's


def _config(run: dict) -> VTAConfig:
    return VTAConfig.from_dict({**run["config"], "name": "run"})


def _design(runs: list[dict], names: tuple[str, ...]) -> np.ndarray:
    rows = [features(_config(r), r["family"]) for r in runs]
    return np.array([[row[n] for n in names] for row in rows])


def fit_target(runs: list[dict], target: str) -> dict[str, list[float]]:
    """Per family, the coefficients of `target` over its features (TARGET_FEATURES)."""
    names = TARGET_FEATURES[target]
    counts = Counter(r["family"] for r in runs)
    base = counts.most_common(1)[0][0]
    coef: dict[str, list[float]] = {}
    for family in sorted(counts, key=lambda f: f != base):
        own = [r for r in runs if r["family"] == family]
        y = np.array([r[target] for r in own])
        x = _design(own, names)
        if len(own) >= len(names) + MARGIN_RUNS or family == base:
            weights = 1.0 / y
            solution, *_ = np.linalg.lstsq(x * weights[:, None], y * weights, rcond=None)
            coef[family] = [float(c) for c in solution]
        else:
            scale = float(np.mean(y / (x @ np.array(coef[base]))))
            coef[family] = [c * scale for c in coef[base]]
    return coef


def fit(runs: list[dict]) -> dict:
    """The model (every target's features and per-family coefficients) fitted on `runs`."""
    if not runs:
        raise VTAError("no yosys runs to fit on: run python -m hw.synth_data first")
    return {
        "targets": {
            t: {"features": list(names), "coef": fit_target(runs, t)}
            for t, names in TARGET_FEATURES.items()
        }
    }


def _percent_errors(model: dict, runs: list[dict], into: dict[str, dict[str, list[float]]]):
    """Add each run's absolute error in percent under `model` to `into` by target (the
    critical path as its Fmax) and family."""
    for target in TARGET_FEATURES:
        for run in runs:
            if run["family"] in model["targets"][target]["coef"]:
                guess = predict(target, _config(run), run["family"], model)
                if target == "delay_ns":  # reported as the Fmax it gives
                    guess, want = 1000.0 / guess, run["fmax_mhz"]
                else:
                    want = run[target]
                pct = 100 * abs(guess - want) / want
                into[REPORTED.get(target, target)].setdefault(run["family"], []).append(pct)


def _summary(errors: dict[str, dict[str, list[float]]]) -> dict[str, dict]:
    return {
        t: {
            f: {"mae_pct": round(float(np.mean(e)), 2), "max_pct": round(max(e), 2), "runs": len(e)}
            for f, e in sorted(per_family.items())
        }
        for t, per_family in errors.items()
    }


def held_out_errors(runs: list[dict], folds: int = FOLDS) -> dict[str, dict]:
    """K-fold cross-validation: per target (the critical path as its Fmax) and family, the mean
    and worst absolute error in percent of the runs each predicted by a model fitted on the
    other folds (runs dealt to folds in configuration-string order), and how many there were."""
    order = sorted(range(len(runs)), key=lambda i: (runs[i]["config_string"], str(runs[i])))
    errors: dict[str, dict[str, list[float]]] = {REPORTED.get(t, t): {} for t in TARGET_FEATURES}
    for k in range(folds):
        test = [runs[i] for n, i in enumerate(order) if n % folds == k]
        train = [runs[i] for n, i in enumerate(order) if n % folds != k]
        _percent_errors(fit(train), test, errors)
    return _summary(errors)


def fitted(run: dict) -> bool:
    """Whether the model is fitted on a run: every run of equal blocks. Runs of BLOCK_OUT unlike
    BLOCK_IN, too few yet to fit their shapes on, check how the model extrapolates to them."""
    return run["config"].get("log_block_out") is None


def refit(data: Path = DATA, model_path: Path = MODEL, folds: int = FOLDS) -> dict:
    """Fit on the `fitted` runs of `data`, measure the held-out errors and the errors on the
    other runs (`extrapolation`), write them all to `model_path`."""
    every = load(data)
    runs = [r for r in every if fitted(r)]
    model = fit(runs)
    if not 2 <= folds <= len(runs):
        raise VTAError(f"--folds {folds}: cross-validation needs 2 to {len(runs)} folds")
    model["held_out"] = held_out_errors(runs, folds)
    beyond: dict[str, dict[str, list[float]]] = {REPORTED.get(t, t): {} for t in TARGET_FEATURES}
    _percent_errors(model, [r for r in every if not fitted(r)], beyond)
    model["extrapolation"] = _summary(beyond)
    model["folds"] = folds
    model["runs"] = dict(sorted(Counter(r["family"] for r in runs).items()))
    model["yosys"] = sorted({r["yosys"] for r in every})
    model_path.parent.mkdir(parents=True, exist_ok=True)
    model_path.write_text(json.dumps(model, indent=1) + "\n")
    return model


def main(argv: list[str] | None = None) -> int:
    """`python -m hw.resource_fit [--data FILE] [--model FILE] [--folds K]`."""
    parser = argparse.ArgumentParser(prog="resource_fit", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help=f"default: {DATA}")
    parser.add_argument("--model", type=Path, default=MODEL, help=f"default: {MODEL}")
    parser.add_argument("--folds", type=int, default=FOLDS, help=f"default: {FOLDS}")
    args = parser.parse_args(argv)
    try:
        model = refit(args.data, args.model, args.folds)
    except (VTAError, OSError, ValueError) as err:
        print(f"resource_fit: error: {err}", file=sys.stderr)
        return 1
    print(f"fitted on {model['runs']} runs; {args.folds}-fold held-out error, then the error on")
    print("the runs of unequal blocks (not fitted on):")
    for name in ("held_out", "extrapolation"):
        for target, per_family in model[name].items():
            for family, e in per_family.items():
                print(
                    f"  {name:<13} {target:<9} {family:<5} mean {e['mae_pct']:5.1f}%  "
                    f"worst {e['max_pct']:5.1f}%  ({e['runs']} runs)"
                )
    print(f"coefficients written to {args.model}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
