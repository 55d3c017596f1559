#!/usr/bin/env python
"""CPU operator benchmark against peers measured in the same run (benchmarks.cpu).

float32 matmul 1024^3 against numpy/OpenBLAS (the machine's OPENBLAS_* environment and OpenBLAS's
AVX-512 kernel), 1 and 2 threads; a non-divisible 1024x1000x1024 matmul against the AVX-512
kernel; ResNet-18 layers C2, C6, C9 (conv2d_NCHWc) against a one-node onnxruntime Conv. Prints
best / median times, GFLOPS and ratios (ours / peer, higher is better), each side timed in
alternating rounds (--rounds); --json prints the same as JSON.
"""

from __future__ import annotations

import argparse
import json

import _bench_path  # noqa: F401 - the repository root on sys.path, for benchmarks/

from benchmarks import cpu, hostisa


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--reps", type=int, default=5, help="timed calls per side in a round")
    ap.add_argument(
        "--rounds", type=int, default=cpu.ROUNDS, help="alternating rounds of ours and the peers"
    )
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--skip-conv", action="store_true", help="matmul only")
    hostisa.add_option(ap)
    args = ap.parse_args()
    hostisa.apply_option(ap, args)
    res = cpu.run(args.reps, args.threads, conv=not args.skip_conv, rounds=args.rounds)
    if args.json:
        print(json.dumps({**res, "avx512_hidden": hostisa.hidden()}, indent=2))
    else:
        cpu.print_table(res)


if __name__ == "__main__":
    main()
