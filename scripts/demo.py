"""The main job, end to end: compile the ResNet-18 conv layers C2-C12 (int8, bias + shift + clip
fused on the ALU) for the accelerator, run each on the cycle-level simulator with and without
virtual threads, check every output against numpy, and report cycles, utilization and GOPS.

Layer selection and knob choice are shared with scripts/bench_vta.py (the same search over the
lowest-traffic knob settings per layer, plus the tuned knobs of each layer when a records
database from `vta tune C2 ... --target vta --db records.db` is present).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from compiler.bench.vta import CANDIDATES, bench_layer, print_table
from compiler.topi.vta.conv2d import RESNET18
from compiler.tune.templates.vta import tuned_conv2d_knobs
from vta import VTAError


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", nargs="*", default=list(RESNET18), choices=list(RESNET18))
    parser.add_argument(
        "--candidates", type=int, default=CANDIDATES, help="knob settings tried per layer"
    )
    parser.add_argument(
        "--records", default="records.db", help="tuning records (vta tune --target vta --db)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for name in args.layers:
        tuned = tuned_conv2d_knobs(RESNET18[name], args.records)
        if tuned and not args.json:
            print(f"{name}: tuned knobs from {args.records}: {tuned}", file=sys.stderr)
        try:
            rows.append(bench_layer(name, args.candidates, rng, tuned))
        except VTAError as err:
            print(f"demo: {name}: error: {err}", file=sys.stderr)
            return 2
        if not args.json:
            print(f"{name}: compiled, simulated, output matches numpy", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print_table(rows)
    total = sum(r["cycles"] for r in rows)
    serial = sum(r["cycles_no_vthread"] for r in rows)
    print(
        f"all layers: {total:,} cycles with virtual threads, {serial:,} without "
        f"({serial / total:.2f}x from latency hiding)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
