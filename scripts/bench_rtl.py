#!/usr/bin/env python3
"""RTL (verilated, C++ harness) against the Python cycle-level simulator on the same Programs:
simulated cycles per wall second of each, their cycle counts side by side and the error.

`--json` prints one object per Program: name, rtl_cycles, sim_cycles, error_pct,
rtl_cycles_per_s, sim_cycles_per_s. RTL wall time includes the harness process start.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hw.build import build_model  # noqa: E402
from hw.programs import conv_like  # noqa: E402
from vta.config import VTAConfig  # noqa: E402
from vta.device import get_device  # noqa: E402
from vta.examples import all_examples, blocked_gemm  # noqa: E402
from vta.fuzz import random_program  # noqa: E402


def programs(cfg: VTAConfig, quick: bool):
    """(name, Program): the reference examples, a conv-like kernel, random and blocked GEMMs."""
    out = [(ex.name, ex.program) for ex in all_examples(cfg)]
    out.append(("conv3x3_8x8", conv_like(cfg, 8, 8).program))
    out += [(f"random{s}", random_program(s, cfg)) for s in range(3)]
    scale = 1 if quick else 4
    for threads in (1, 2):
        ex = blocked_gemm(
            cfg,
            batch=8 * scale * cfg.batch,
            in_channels=8 * scale * cfg.block_in,
            out_channels=8 * scale * cfg.block_out,
            block=(4 * cfg.batch, 8 * cfg.block_in, 8 * cfg.block_out),
            threads=threads,
        )
        out.append((ex.name, ex.program))
    return out


def timed(device, program, repeat: int) -> tuple[int, float]:
    """(cycles, best wall seconds of `repeat` runs)."""
    best, cycles = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        _, stats = device.execute(program, program.dram)
        best = min(best, time.perf_counter() - start)
        cycles = stats.cycles
    return cycles, best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="pynq", help="configuration (default: pynq)")
    parser.add_argument("--quick", action="store_true", help="smaller blocked GEMMs")
    parser.add_argument("--repeat", type=int, default=3, help="runs per Program (best is kept)")
    parser.add_argument("--json", action="store_true", help="one JSON object per Program")
    args = parser.parse_args()
    cfg = VTAConfig.load(args.config)
    build_model(cfg)  # build outside the timed runs
    rtl, sim = get_device("rtl"), get_device("sim")
    rows = []
    for name, program in programs(cfg, args.quick):
        rtl_cycles, rtl_s = timed(rtl, program, args.repeat)
        sim_cycles, sim_s = timed(sim, program, args.repeat)
        rows.append(
            {
                "name": name,
                "rtl_cycles": rtl_cycles,
                "sim_cycles": sim_cycles,
                "error_pct": 100 * abs(rtl_cycles - sim_cycles) / sim_cycles,
                "rtl_cycles_per_s": rtl_cycles / rtl_s,
                "sim_cycles_per_s": sim_cycles / sim_s,
            }
        )
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    print(f"config {cfg.name}: RTL (Verilator C++ harness) vs sim (Python, event-driven)")
    head = f"{'program':<28} {'rtl cycles':>11} {'sim cycles':>11} {'error':>7}"
    print(head + f" {'rtl cyc/s':>11} {'sim cyc/s':>11} {'sim/rtl':>8}")
    for r in rows:
        ratio = r["sim_cycles_per_s"] / r["rtl_cycles_per_s"]
        print(
            f"{r['name']:<28} {r['rtl_cycles']:>11,} {r['sim_cycles']:>11,} "
            f"{r['error_pct']:>6.2f}% {r['rtl_cycles_per_s']:>11,.0f} "
            f"{r['sim_cycles_per_s']:>11,.0f} {ratio:>7.1f}x"
        )
    worst = max(r["error_pct"] for r in rows)
    total_rtl = sum(r["rtl_cycles"] / r["rtl_cycles_per_s"] for r in rows)
    total_sim = sum(r["sim_cycles"] / r["sim_cycles_per_s"] for r in rows)
    print(f"worst cycle error {worst:.2f}%; wall time rtl {total_rtl:.2f} s, sim {total_sim:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
