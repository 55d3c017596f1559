"""The model-guided tuner (xgb-rank) against random search on measured CPU wall time
(benchmarks.search): the median GFLOPS of the configs each proposed once the model had data,
on the basic matmul space, per seed. Goal: the model's proposals run >= 2x as fast as random's
on every seed; --random-scores runs the negative control (random numbers in place of the
model's scores), which should miss it.

    ./scripts/bench search --seeds 0 1 2 --json /tmp/search.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _bench_path  # noqa: F401 - the repository root on sys.path, for benchmarks/

from benchmarks.search import print_rows, run


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--random-scores", action="store_true", help="the negative control")
    p.add_argument("--json", help="write the figures as JSON to this file")
    args = p.parse_args()
    rows = run(args.seeds, args.random_scores)
    if args.json:
        Path(args.json).write_text(json.dumps(rows))
    print_rows(rows, args.random_scores)


if __name__ == "__main__":
    main()
