"""XGBoost cost model: predicts a score per config whose order follows measured throughput.

Default objective `rank:pairwise` (as AutoTVM's: only the order of candidates matters);
`reg` fits normalized throughput with squared error. Each fit holds out a random split and stops
boosting when the held-out pairwise ordering accuracy stops improving (AutoTVM early-stops on its
training set, which rewards overfitting) -- once that split has `min_val` rows; below that its
accuracy is too noisy to stop on (a 16-sample model stopped on 3 held-out rows ranked unseen
configs worse than chance), so small fits use every row and `small_rounds` rounds. Transfer: an
optional global model, trained on other workloads' records, adds its margin times a weight that
halves every `half_life` local samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xgboost as xgb

from ..errors import TuningError

LOSSES = {"rank": "rank:pairwise", "reg": "reg:squarederror"}
MIN_SAMPLES = 16  # a model is fitted from this many measurements; before, batches are random


def pair_accuracy(scores: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of pairs with different labels that `scores` order the same way."""
    truth = np.sign(labels[:, None] - labels[None, :])
    guess = np.sign(scores[:, None] - scores[None, :])
    mask = truth != 0
    return float((truth[mask] == guess[mask]).mean()) if mask.any() else 0.5


def _dmatrix(
    x: np.ndarray,
    y: np.ndarray | None = None,
    groups: np.ndarray | None = None,
    base_margin: np.ndarray | None = None,
) -> xgb.DMatrix:
    d = xgb.DMatrix(x, label=y, base_margin=base_margin)
    if groups is not None:
        d.set_group(np.unique(groups, return_counts=True)[1])
    return d


class XGBCostModel:
    """fit(features, throughputs) then predict(features) -> scores, higher is faster."""

    def __init__(
        self,
        loss: str = "rank",
        n_threads: int | None = None,
        seed: int = 0,
        max_rounds: int = 400,
        early_stopping: int = 20,
        val_fraction: float = 0.2,
        min_samples: int = MIN_SAMPLES,
        min_val: int = 32,
        small_rounds: int = 100,
        half_life: float = 64.0,
    ):
        if loss not in LOSSES:
            raise TuningError(f"cost model loss {loss!r} is not one of {sorted(LOSSES)}")
        self.loss = loss
        self.params: dict[str, Any] = {
            "objective": LOSSES[loss],
            "max_depth": 3,
            "gamma": 1e-4,
            "min_child_weight": 1,
            "eta": 0.3,
            "lambda": 1.0,
            "alpha": 0.0,
            "disable_default_eval_metric": 1,
            "seed": seed,
            "verbosity": 0,
        }
        # one thread by default: rows are few and short, and the cores are measuring kernels
        self.params["nthread"] = n_threads or 1
        self.rng = np.random.default_rng(seed)
        self.max_rounds = max_rounds
        self.early_stopping = early_stopping
        self.val_fraction = val_fraction
        self.min_samples = min_samples
        self.min_val = min_val
        self.small_rounds = small_rounds
        self.half_life = half_life
        self.booster: xgb.Booster | None = None
        self.global_model: XGBCostModel | None = None
        self.n_samples = 0

    # -- transfer --
    def transfer_weight(self) -> float:
        """Weight of the global model: 1 with no local data, halving every half_life samples."""
        if self.global_model is None:
            return 0.0
        w = 0.5 ** (self.n_samples / self.half_life)
        return w if w >= 0.05 else 0.0

    def _base_margin(self, x: np.ndarray) -> np.ndarray | None:
        w = self.transfer_weight()
        return w * self.global_model.predict(x) if w else None

    # -- training --
    @property
    def fitted(self) -> bool:
        return self.booster is not None or self.transfer_weight() > 0

    def fit(self, x: np.ndarray, throughput: np.ndarray, groups: np.ndarray | None = None) -> None:
        """Fit on rows x with throughputs (0 = failed); `groups` ranks several workloads apart.

        Labels are throughput / max per group, so groups with different units combine.
        """
        x = np.asarray(x, dtype=np.float32)
        y = np.asarray(throughput, dtype=np.float64)
        groups = np.zeros(len(y), np.int64) if groups is None else np.asarray(groups)
        self.n_samples = len(y)
        order = np.argsort(groups, kind="stable")  # xgboost wants each group contiguous
        x, y, groups = x[order], y[order], groups[order]
        for g in np.unique(groups):
            top = y[groups == g].max()
            y[groups == g] = y[groups == g] / top if top > 0 else 0.0
        if len(y) < self.min_samples or not (y > 0).any():
            self.booster = None
            return
        val = self.rng.random(len(y)) < self.val_fraction
        if val.sum() < self.min_val:
            val[:] = False
        margin = self._base_margin(x)
        dtrain = _dmatrix(x[~val], y[~val], groups[~val], None if margin is None else margin[~val])
        rounds: int = self.small_rounds
        kwargs: dict[str, Any] = {}
        if val.any():
            dval = _dmatrix(x[val], y[val], groups[val], None if margin is None else margin[val])
            rounds = self.max_rounds
            kwargs = dict(
                evals=[(dval, "val")],
                early_stopping_rounds=self.early_stopping,
                custom_metric=lambda p, d: ("pair-acc", pair_accuracy(p, d.get_label())),
                maximize=True,
            )
        self.booster = xgb.train(
            self.params, dtrain, num_boost_round=rounds, verbose_eval=False, **kwargs
        )

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Scores (higher = predicted faster); the global model alone before any local fit."""
        x = np.asarray(x, dtype=np.float32)
        margin = self._base_margin(x)
        if self.booster is None:
            if margin is None:
                raise TuningError("the cost model is not fitted and has no global model")
            return margin
        best = getattr(self.booster, "best_iteration", None)
        rounds = (0, best + 1) if best is not None else (0, 0)
        return self.booster.inplace_predict(x, iteration_range=rounds, base_margin=margin)
