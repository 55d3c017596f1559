"""The benchmark harness: timing, foreign load, the version of the code measured."""

import multiprocessing
import re
import time

import numpy as np
import pytest

from benchmarks.harness import (
    ForeignLoad,
    alternate,
    geomean,
    pooled,
    round_ratio,
    source_version,
    stats,
    timeit,
)


def test_timeit_warms_up_then_times_at_least_reps_calls_and_min_time():
    calls = []
    times = timeit(lambda x: calls.append(x), (1,), reps=5)
    assert len(times) == 5 and len(calls) == 6  # one warm-up call, untimed
    assert all(t >= 0 for t in times)
    slept = timeit(time.sleep, (0.01,), reps=1, min_time=0.05)
    assert sum(slept) >= 0.05 and len(slept) >= 2 and min(slept) >= 0.01


def test_alternate_takes_turns_and_keeps_each_rounds_timings():
    calls = []

    def measure(key, seconds):
        def run():
            calls.append(key)
            return [seconds, seconds * 2]

        return run

    per_round = alternate(3, {"ours": measure("ours", 1.0), "peer": measure("peer", 5.0)})
    assert calls == ["ours", "peer"] * 3
    assert per_round == {"ours": [[1.0, 2.0]] * 3, "peer": [[5.0, 10.0]] * 3}
    assert pooled(per_round["ours"]) == [1.0, 2.0] * 3


def test_round_ratio_compares_within_rounds():
    """A machine switching between two speeds: pooled medians fall in different spells
    (0.5 s for ours, 2 s for the peer: 4x), each round's sides in the same one (2x)."""
    ours = [[1.0], [1.0], [0.5], [0.5], [0.5]]
    peer = [[2.0], [2.0], [1.0], [1.0], [2.0]]
    assert round_ratio(ours, peer) == 2.0
    assert np.median(pooled(peer)) / np.median(pooled(ours)) == 4.0
    with pytest.raises(ValueError):
        round_ratio(ours, peer[:4])


def test_stats_are_best_and_median_in_ms_and_gflops():
    s = stats([2e-3, 1e-3, 4e-3], flops=2e6)
    assert s == {"best_ms": 1.0, "median_ms": 2.0, "gflops_best": 2.0, "gflops_median": 1.0}
    assert geomean([2.0, 8.0]) == pytest.approx(4.0) and geomean([]) is None


def _burn_then_wait(seconds: float, burned, release) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    burned.set()
    release.wait(60)


def test_a_live_worker_process_counts_as_ours_only_with_tree():
    """A live worker's CPU seconds (measured, not timed) are ours with tree=True (so they add
    nothing to the foreign load); without it they would count as foreign."""
    ctx = multiprocessing.get_context("fork")
    for tree in (True, False):
        load = ForeignLoad(tree=tree)
        own0 = load._own()
        burned, release = ctx.Event(), ctx.Event()
        worker = ctx.Process(target=_burn_then_wait, args=(0.2, burned, release))
        worker.start()
        assert burned.wait(60)
        own = load._own()  # the worker is alive, its 0.2 s spent
        release.set()
        worker.join()
        assert (own - own0 >= 0.15) if tree else (own - own0 < 0.15)
    with ForeignLoad() as load:
        pass
    assert load.cores >= 0.0


def test_source_version_names_the_commit():
    assert re.fullmatch(r"[0-9a-f]{40}( \+changes: .+)?", source_version())
