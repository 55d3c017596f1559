"""Tuning callbacks (a progress bar) and the tuning-curve plot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from .record import MeasureInput, Record


def format_throughput(value: float, cost_unit: str) -> str:
    """GFLOPS for wall-time costs, ops/cycle for device cycles."""
    return f"{value / 1e9:.2f} GFLOPS" if cost_unit == "s" else f"{value:.2f} ops/cycle"


class ProgressBar:
    """A tqdm bar over trials showing errors and the best throughput so far."""

    def __init__(self, total: int, desc: str = "tuning", **tqdm_kwargs: Any):
        self.bar = tqdm(total=total, desc=desc, unit="trial", **tqdm_kwargs)

    def __call__(
        self, tuner: Any, inputs: Sequence[MeasureInput], results: Sequence[Record]
    ) -> None:
        history = tuner.history
        self.bar.n = len(history.throughputs)
        self.bar.set_postfix_str(
            f"errors={history.errors} best="
            f"{format_throughput(history.best_throughput, tuner.cost_unit)}"
        )

    def close(self) -> None:
        self.bar.close()


def plot_tuning_curve(
    curves: Mapping[str, Sequence[float]],
    path: str | Path,
    title: str = "tuning curve",
    ylabel: str = "best throughput",
) -> None:
    """Best-so-far throughput against trials, one line per tuner, written as an image."""
    import matplotlib  # optional (the 'plot' extra), and slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, values in curves.items():
        best = np.maximum.accumulate(np.asarray(values, dtype=np.float64))
        ax.plot(np.arange(1, len(best) + 1), best, label=name)
    ax.set_xlabel("trials")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
