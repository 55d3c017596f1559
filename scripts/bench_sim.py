"""Simulator speed: a blocked int8 GEMM Program of >= 1 M simulated cycles.

Reports, for the cycle-level `sim`, simulated cycles and instructions per wall second; for the
functional `fsim`, int8 MACs per second, with numpy doing the same GEMM (int32 matmul and float32
BLAS) measured in the same run as the peer. Goals: sim >= 5 M cycles/s, fsim >= 1 G MAC/s.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from vta import VTAConfig
from vta.device import get_device
from vta.examples import blocked_gemm
from vta.validate import validate_program

SIM_GOAL_CYCLES_PER_S = 5e6
FSIM_GOAL_MACS_PER_S = 1e9


def best_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


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
    n = args.channels
    example = blocked_gemm(
        cfg,
        batch=args.batch,
        in_channels=n,
        out_channels=n,
        block=(args.batch // 4, n // 4, n // 8),
        threads=args.threads,
    )
    program = example.program
    sim, fsim = get_device("sim"), get_device("fsim")
    _, stats = sim.execute(program, program.dram.copy())
    t_sim = best_time(lambda: sim.execute(program, program.dram.copy()), args.repeats)
    t_fsim = best_time(lambda: fsim.execute(program, program.dram.copy()), args.repeats)

    many = blocked_gemm(cfg, 128, 1024, 512, block=(16, 64, 16), threads=2).program
    t_validate = best_time(lambda: validate_program(many), args.repeats)

    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (args.batch, n), dtype=np.int32)
    w = rng.integers(-128, 128, (n, n), dtype=np.int32)
    t_np_int = best_time(lambda: a @ w.T, args.repeats)
    af, wf = a.astype(np.float32), w.astype(np.float32)
    t_np_f32 = best_time(lambda: af @ wf.T, args.repeats)

    macs = stats.macs
    fig = {
        "program": example.name,
        "config": cfg.name,
        "instructions": len(program),
        "sim_cycles": stats.cycles,
        "sim_wall_s": t_sim,
        "sim_cycles_per_s": stats.cycles / t_sim,
        "sim_instructions_per_s": len(program) / t_sim,
        "sim_goal_cycles_per_s": SIM_GOAL_CYCLES_PER_S,
        "fsim_wall_s": t_fsim,
        "fsim_macs_per_s": macs / t_fsim,
        "fsim_goal_macs_per_s": FSIM_GOAL_MACS_PER_S,
        "numpy_int32_macs_per_s": macs / t_np_int,
        "numpy_f32_blas_macs_per_s": macs / t_np_f32,
        "fsim_vs_numpy_int32": t_np_int / t_fsim,
        "fsim_vs_numpy_f32_blas": t_np_f32 / t_fsim,
        "validate_instructions_per_s": len(many) / t_validate,
    }
    if args.json:
        print(json.dumps(fig, indent=2))
        return 0
    print(
        f"{example.name} on {cfg.name}: {len(program):,} instructions, "
        f"{stats.cycles:,} simulated cycles, {macs:,} MACs"
    )
    print(f"{'measure':<38}{'value':>16}{'goal':>14}{'ratio':>9}")
    rows = [
        ("sim simulated cycles / s", fig["sim_cycles_per_s"], SIM_GOAL_CYCLES_PER_S),
        ("sim instructions / s", fig["sim_instructions_per_s"], None),
        ("fsim int8 MACs / s", fig["fsim_macs_per_s"], FSIM_GOAL_MACS_PER_S),
        ("validator instructions / s", fig["validate_instructions_per_s"], None),
        ("numpy int32 matmul MACs / s (peer)", fig["numpy_int32_macs_per_s"], None),
        ("numpy f32 BLAS matmul MACs / s (peer)", fig["numpy_f32_blas_macs_per_s"], None),
    ]
    for name, value, goal in rows:
        goal_s = f"{goal:>14.3g}" if goal else f"{'':>14}"
        ratio = f"{value / goal:>9.2f}" if goal else f"{'':>9}"
        print(f"{name:<38}{value:>16.4g}{goal_s}{ratio}")
    print(
        f"fsim / numpy int32 matmul: {fig['fsim_vs_numpy_int32']:.2f}x   "
        f"fsim / numpy f32 BLAS: {fig['fsim_vs_numpy_f32_blas']:.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
