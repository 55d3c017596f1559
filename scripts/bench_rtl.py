#!/usr/bin/env python3
"""RTL (verilated, C++ harness) against the Python cycle-level simulator on the same Programs
(benchmarks.rtl): simulated cycles per wall second of each, their cycle counts side by side and the
error.

`--json` prints one object per Program: name, rtl_cycles, sim_cycles, error_pct,
rtl_cycles_per_s, sim_cycles_per_s, timing_only_cycles_per_s (sim without data). RTL wall time
includes the harness process start. `--resnet18` compares on the Programs of ResNet-18's fused
layers (benchmarks.vta's network, the estimate's best knobs) instead.
"""

from __future__ import annotations

import argparse
import json
import sys

import _bench_path  # noqa: F401 - the repository root on sys.path, for benchmarks/

from benchmarks.rtl import print_rtl_vs_sim, rtl_programs, rtl_vs_sim
from vta.config import VTAConfig


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="pynq", help="configuration (default: pynq)")
    parser.add_argument("--quick", action="store_true", help="smaller blocked GEMMs")
    parser.add_argument("--repeat", type=int, default=3, help="runs per Program (best is kept)")
    parser.add_argument("--json", action="store_true", help="one JSON object per Program")
    parser.add_argument("--resnet18", action="store_true", help="ResNet-18's fused layers")
    args = parser.parse_args()
    cfg = VTAConfig.load(args.config)
    if args.resnet18:
        from benchmarks.vta import resnet18_programs  # the compiler is optional for hw

        programs = resnet18_programs(cfg)
    else:
        programs = rtl_programs(cfg, args.quick)
    rows = rtl_vs_sim(cfg, programs, args.repeat)
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    print_rtl_vs_sim(cfg, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
