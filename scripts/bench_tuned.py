"""Tuned CPU kernels against their peers in the same run (benchmarks.tuned): the xgb-rank
tuned float32 matmul 1024^3 against numpy with OpenBLAS's AVX-512 kernel (1 and 2 threads) and
the tuned ResNet-18 conv2d_NCHWc layers against a one-node onnxruntime Conv (2 threads). Also
run by scripts/bench_tuner.py --peers.

    ./scripts/bench tuned --layers C9 --trials 32 --json /tmp/bt/peers.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _bench_path  # noqa: F401 - the repository root on sys.path, for benchmarks/

from benchmarks.tuned import peers, print_peers
from compiler.tune.templates.resnet18 import LAYERS


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", nargs="*", default=list(LAYERS), help="ResNet-18 layers C1-C12")
    p.add_argument("--trials", type=int, default=100, help="xgb-rank trials per conv layer")
    p.add_argument("--matmul-trials", type=int, default=200)
    p.add_argument("--json", help="write the figures as JSON to this file")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    report = peers(args.matmul_trials, args.layers, args.trials, args.seed)
    if args.json:
        Path(args.json).write_text(json.dumps(report))
    print_peers(report)


if __name__ == "__main__":
    main()
