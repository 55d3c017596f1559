"""What every benchmark shares: timing a call, summarizing timings, the foreign load on the
machine while measuring, and the version of the code measured.

The machine is shared: a benchmark reports the cores other processes used during each
measurement (`ForeignLoad`) beside its figures, so a figure taken under load is recognizable.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]  # the checkout this package runs from


def timeit(fn: Callable[..., Any], args: tuple, reps: int, min_time: float = 0.0) -> list[float]:
    """Seconds of each call of fn(*args) after one warm-up call: at least `reps` calls, and
    more until they add up to `min_time` seconds."""
    fn(*args)
    ts: list[float] = []
    while len(ts) < reps or sum(ts) < min_time:
        t = time.perf_counter()
        fn(*args)
        ts.append(time.perf_counter() - t)
    return ts


def alternate(rounds: int, measures: dict[str, Callable[[], T]]) -> dict[str, list[T]]:
    """Each measure's result (e.g. its timings) per round, over `rounds` rounds in which the
    measures take turns: a fast or slow spell of a shared machine (seconds long) then falls on
    every side of a comparison, not on the one measured during it."""
    per_round: dict[str, list[T]] = {key: [] for key in measures}
    for _ in range(rounds):
        for key, measure in measures.items():
            per_round[key].append(measure())
    return per_round


def pooled(per_round: Sequence[Sequence[float]]) -> list[float]:
    """The timings of every round together."""
    return [t for times in per_round for t in times]


def round_ratio(ours: Sequence[Sequence[float]], peer: Sequence[Sequence[float]]) -> float:
    """The median over rounds of the peer's median time over ours in the same round (above 1,
    ours is faster): each round compares two measurements seconds apart, in the same spell of
    the machine, where pooled medians of a machine switching between two speeds can each
    fall on either."""
    return float(np.median([np.median(p) / np.median(o) for o, p in zip(ours, peer, strict=True)]))


def stats(times: Sequence[float], flops: float) -> dict:
    """Best and median milliseconds and GFLOPS of the timings of a `flops`-operation call."""
    best, median = min(times), float(np.median(times))
    return {
        "best_ms": best * 1e3,
        "median_ms": median * 1e3,
        "gflops_best": flops / best / 1e9,
        "gflops_median": flops / median / 1e9,
    }


def geomean(values: Sequence[float]) -> float | None:
    """Geometric mean (None of nothing)."""
    return float(np.exp(np.mean(np.log(values)))) if len(values) else None


class ForeignLoad:
    """Cores used by other processes during a block: busy time in /proc/stat minus ours.

    Ours is this process and its reaped children; with `tree=True` also every live descendant
    (a pool of worker processes measuring for us), read from /proc.
    """

    def __init__(self, tree: bool = False):
        self.tree = tree
        self.cores = 0.0

    def __enter__(self) -> ForeignLoad:
        self.t0, self.busy0, self.own0 = time.perf_counter(), _busy(), self._own()
        return self

    def __exit__(self, *exc: Any) -> None:
        wall = time.perf_counter() - self.t0
        foreign = (_busy() - self.busy0) - (self._own() - self.own0)
        self.cores = max(0.0, foreign / wall)

    def _own(self) -> float:
        if self.tree:
            return _tree_cpu_seconds()
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system


def _busy() -> float:
    """CPU seconds the whole machine has been busy (all cores, minus idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def _tree_cpu_seconds() -> float:
    """CPU seconds of this process, its live descendants and the children they reaped."""
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


def source_version(paths: Sequence[str] = ("compiler", "benchmarks", "scripts")) -> str:
    """The git commit of the checkout, plus the tracked files under `paths` that differ from it
    (so a figure names the code that produced it)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout

    dirty = git("diff", "--name-only", "HEAD", "--", *paths).split()
    return git("rev-parse", "HEAD").strip() + (f" +changes: {' '.join(dirty)}" if dirty else "")


def utc_now() -> str:
    """The current time as an ISO 8601 UTC timestamp (seconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
