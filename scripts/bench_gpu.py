#!/usr/bin/env python3
"""GPU kernels: ptxas's registers, shared memory and spills per kernel (sm_80 and sm_90) for
the GPU target's workloads; with a CUDA GPU also our time vs torch (cuBLAS/cuDNN) and the
ratio. Without a GPU it says that no timing was possible.

    ./scripts/bench gpu [--json] [--arch sm_80] [--only matmul]
"""

from __future__ import annotations

import argparse
import json

import _bench_path  # noqa: F401 - the repository root on sys.path, for benchmarks/

from benchmarks.gpu import format_table, run


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arch", action="append", help="sm_80 and/or sm_90 (default: both)")
    p.add_argument("--only", help="only workloads whose label contains this text")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    report = run(tuple(args.arch or ("sm_80", "sm_90")), args.only)
    print(json.dumps(report) if args.json else format_table(report))


if __name__ == "__main__":
    main()
