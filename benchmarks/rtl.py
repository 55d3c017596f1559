"""Speed of the accelerator's realizations, each against a peer in the same run: the RTL
(verilated, C++ harness) against the cycle-level simulator on the same Programs
(scripts/bench_rtl.py), and the simulators against numpy doing the same GEMM
(scripts/bench_sim.py).

Devices are taken from the `vta.device` registry by name, so this module imports only `vta` and
`hw`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from hw.build import build_model
from testkit.examples import all_examples, blocked_gemm
from testkit.program_fuzz import random_program
from testkit.programs import conv_like
from vta.config import VTAConfig
from vta.device import get_device
from vta.program import Program
from vta.validate import validate_program

SIM_GOAL_CYCLES_PER_S = 5e6
FSIM_GOAL_MACS_PER_S = 1e9


def best_time(fn: Callable[[], Any], repeats: int) -> float:
    """The fastest of `repeats` calls of fn(), in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


# ------------------------------------------------------------------------------ RTL against sim
def rtl_programs(cfg: VTAConfig, quick: bool) -> list[tuple[str, Program]]:
    """(name, Program): the reference examples, a conv-like kernel, random and blocked GEMMs
    (`quick`: blocked GEMMs a quarter of the size in each dimension)."""
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


def timed_run(device: Any, program: Program, repeat: int) -> tuple[int, float]:
    """(cycles, best wall seconds of `repeat` runs) of a Program on its own DRAM image."""
    best, cycles = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        _, stats = device.execute(program, program.dram)
        best = min(best, time.perf_counter() - start)
        cycles = stats.cycles
    return cycles, best


def timed_only(device: Any, program: Program, repeat: int) -> tuple[int, float]:
    """(cycles, best wall seconds) of the timing-only run (`Device.time`: no data)."""
    best, cycles = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        cycles = device.time(program).cycles
        best = min(best, time.perf_counter() - start)
    return cycles, best


def rtl_vs_sim(cfg: VTAConfig, programs: list[tuple[str, Program]], repeat: int) -> list[dict]:
    """Per Program: both devices' cycle counts, their difference in percent of sim's, and each
    device's simulated cycles per wall second (RTL wall time includes the harness start), also
    for sim's timing-only mode (whose cycles must equal the full run's)."""
    build_model(cfg)  # build outside the timed runs
    rtl, sim = get_device("rtl"), get_device("sim")
    rows = []
    for name, program in programs:
        rtl_cycles, rtl_s = timed_run(rtl, program, repeat)
        sim_cycles, sim_s = timed_run(sim, program, repeat)
        timing_cycles, timing_s = timed_only(sim, program, repeat)
        if timing_cycles != sim_cycles:
            raise RuntimeError(f"{name}: timing-only sim counts {timing_cycles}, not {sim_cycles}")
        rows.append(
            {
                "name": name,
                "rtl_cycles": rtl_cycles,
                "sim_cycles": sim_cycles,
                "error_pct": 100 * abs(rtl_cycles - sim_cycles) / sim_cycles,
                "rtl_cycles_per_s": rtl_cycles / rtl_s,
                "sim_cycles_per_s": sim_cycles / sim_s,
                "timing_only_cycles_per_s": sim_cycles / timing_s,
            }
        )
    return rows


def print_rtl_vs_sim(cfg: VTAConfig, rows: list[dict]) -> None:
    """The comparison as a table for people, with the worst error and the wall times."""
    print(f"config {cfg.name}: RTL (Verilator C++ harness) vs sim (Python, event-driven)")
    head = f"{'program':<28} {'rtl cycles':>11} {'sim cycles':>11} {'error':>7}"
    print(head + f" {'rtl cyc/s':>11} {'sim cyc/s':>11} {'sim/rtl':>8} {'timing/rtl':>10}")
    for r in rows:
        ratio = r["sim_cycles_per_s"] / r["rtl_cycles_per_s"]
        timing = r["timing_only_cycles_per_s"] / r["rtl_cycles_per_s"]
        print(
            f"{r['name']:<28} {r['rtl_cycles']:>11,} {r['sim_cycles']:>11,} "
            f"{r['error_pct']:>6.2f}% {r['rtl_cycles_per_s']:>11,.0f} "
            f"{r['sim_cycles_per_s']:>11,.0f} {ratio:>7.1f}x {timing:>9.1f}x"
        )
    worst = max(r["error_pct"] for r in rows)
    total_rtl = sum(r["rtl_cycles"] / r["rtl_cycles_per_s"] for r in rows)
    total_sim = sum(r["sim_cycles"] / r["sim_cycles_per_s"] for r in rows)
    total_t = sum(r["sim_cycles"] / r["timing_only_cycles_per_s"] for r in rows)
    print(
        f"worst cycle error {worst:.2f}%; wall time rtl {total_rtl:.2f} s, sim {total_sim:.2f} s, "
        f"timing-only sim {total_t:.3f} s ({total_rtl / total_t:.0f}x faster than the RTL)"
    )


# --------------------------------------------------------------------- simulators against numpy
def simulator_speed(cfg: VTAConfig, batch: int, channels: int, threads: int, repeats: int) -> dict:
    """A blocked int8 GEMM Program (batch x channels x channels; 256 x 1024 x 1024 runs >= 1 M
    simulated cycles): `sim`'s simulated cycles and instructions per wall second, `fsim`'s
    int8 MACs per second, the validator's instructions per second, and numpy doing the same
    GEMM (int32 matmul, float32 BLAS) as the peer."""
    n = channels
    example = blocked_gemm(
        cfg,
        batch=batch,
        in_channels=n,
        out_channels=n,
        block=(batch // 4, n // 4, n // 8),
        threads=threads,
    )
    program = example.program
    sim, fsim = get_device("sim"), get_device("fsim")
    _, stats = sim.execute(program, program.dram.copy())
    t_sim = best_time(lambda: sim.execute(program, program.dram.copy()), repeats)
    t_fsim = best_time(lambda: fsim.execute(program, program.dram.copy()), repeats)

    many = blocked_gemm(cfg, 128, 1024, 512, block=(16, 64, 16), threads=2).program
    t_validate = best_time(lambda: validate_program(many), repeats)

    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (batch, n), dtype=np.int32)
    w = rng.integers(-128, 128, (n, n), dtype=np.int32)
    t_np_int = best_time(lambda: a @ w.T, repeats)
    af, wf = a.astype(np.float32), w.astype(np.float32)
    t_np_f32 = best_time(lambda: af @ wf.T, repeats)

    macs = stats.macs
    return {
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
        "macs": macs,
    }


def print_simulator_speed(fig: dict) -> None:
    """The figures as a table for people, against the goals."""
    print(
        f"{fig['program']} on {fig['config']}: {fig['instructions']:,} instructions, "
        f"{fig['sim_cycles']:,} simulated cycles, {fig['macs']:,} MACs"
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
