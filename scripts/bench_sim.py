"""Simulator speed: a blocked int8 GEMM Program of >= 1 M simulated cycles (benchmarks.rtl).

Reports, for the cycle-level `sim`, simulated cycles and instructions per wall second; for the
functional `fsim`, int8 MACs per second, with numpy doing the same GEMM (int32 matmul and float32
BLAS) measured in the same run as the peer. Goals: sim >= 5 M cycles/s, fsim >= 1 G MAC/s.
"""

from __future__ import annotations

import argparse
import json

import _bench_path  # noqa: F401 - the repository root on sys.path, for benchmarks/

from benchmarks.rtl import print_simulator_speed, simulator_speed
from vta import VTAConfig


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="pynq")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--channels", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=2, help="virtual threads (1 or 2)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cfg = VTAConfig.load(args.config)
    fig = simulator_speed(cfg, args.batch, args.channels, args.threads, args.repeats)
    if args.json:
        print(json.dumps(fig, indent=2))
        return 0
    print_simulator_speed(fig)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
