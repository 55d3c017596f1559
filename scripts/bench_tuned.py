"""Tuned CPU kernels against their peers in the same run (benchmarks.tuned): the xgb-rank
tuned float32 matmul 1024^3 against numpy with OpenBLAS's AVX-512 kernel (1 and 2 threads),
the tuned ResNet-18 conv2d_NCHWc layers against a one-node onnxruntime Conv (2 threads), and
the zoo's encoder4's fused attention kernel tuned as `vta tune MODEL.onnx` tunes it against its
default schedule (2 threads). Also run by scripts/bench_tuner.py --peers (matmul and convs).

    ./scripts/bench tuned --layers C9 --trials 32 --json /tmp/bt/peers.json
    ./scripts/bench tuned --parts attention --attention-trials 64
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _bench_path  # noqa: F401 - the repository root on sys.path, for benchmarks/

from benchmarks.tuned import attention_row, peers, print_attention, print_peers
from compiler.tune.templates.resnet18 import LAYERS
from compiler.zoo import encoder

PARTS = ("peers", "attention")  # matmul and convs against their peers; the attention


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    p.add_argument("--layers", nargs="*", default=list(LAYERS), help="ResNet-18 layers C1-C12")
    p.add_argument("--trials", type=int, default=100, help="xgb-rank trials per conv layer")
    p.add_argument("--matmul-trials", type=int, default=200)
    p.add_argument("--attention-trials", type=int, default=64)
    p.add_argument("--json", help="write the figures as JSON to this file")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    report = {}
    if "peers" in args.parts:
        report = peers(args.matmul_trials, args.layers, args.trials, args.seed)
    if "attention" in args.parts:
        report["attention"] = attention_row(encoder(), args.attention_trials, args.seed)
    if args.json:
        Path(args.json).write_text(json.dumps(report))
    if "peers" in args.parts:
        print_peers(report)
    if "attention" in args.parts:
        print_attention(report["attention"])


if __name__ == "__main__":
    main()
