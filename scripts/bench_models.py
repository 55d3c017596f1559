#!/usr/bin/env python
"""Whole networks against onnxruntime in the same run (benchmarks.models).

ResNet-18, MobileNet-v1, the DQN network and two BERT-style encoders (4 layers of hidden 256;
BERT-base's size) on 128 token ids, batch 1, float32, both on 2 threads: latency ratio (ours /
onnxruntime, lower is better) with the goals' verdicts, compile time, numerics (within rtol 1e-3
and 1e-4 of max|onnxruntime's output|), arena against its lower bound, the executor's own
overhead, and per-layer tables. --load adds a measurement beside a process spinning on one core;
--json prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import json

import _bench_path  # noqa: F401 - the repository root on sys.path, for benchmarks/

from benchmarks import hostisa, models
from benchmarks.harness import source_version, utc_now


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=list(models.GOALS), choices=list(models.GOALS))
    ap.add_argument("--reps", type=int, default=20, help="timed inferences (at least)")
    ap.add_argument("--min-time", type=float, default=2.0, help="seconds per comparison")
    ap.add_argument(
        "--load",
        action="store_true",
        help="also measure beside a spinning process (rounds alternating with quiet ones)",
    )
    ap.add_argument("--db", help="tuning records to apply")
    ap.add_argument("--one-thread", action="store_true", help="also compare with one thread each")
    ap.add_argument("--no-layers", action="store_true", help="omit the per-layer tables")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    hostisa.add_option(ap)
    ap.add_argument(
        "--tuning-study",
        metavar="DB",
        help="instead: the trials and time each task of a records database took to come "
        "within 5%% of its best",
    )
    args = ap.parse_args()
    hostisa.apply_option(ap, args)
    if args.tuning_study:
        res = models.convergence(args.tuning_study)
        if args.json:
            print(json.dumps(res))
        else:
            models.print_convergence(res)
        return
    res = models.run(args.models, args.reps, args.min_time, args.load, args.db, args.one_thread)
    if args.json:
        print(
            json.dumps(
                {
                    "version": source_version(),
                    "time": utc_now(),
                    "avx512_hidden": hostisa.hidden(),
                    "models": res,
                }
            )
        )
    else:
        models.print_tables(res, layers=not args.no_layers)


if __name__ == "__main__":
    main()
