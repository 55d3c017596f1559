"""The `rtl` device: a Program run on the verilated Verilog through the C++ batch harness.

The harness gets the DRAM image with the instruction stream appended at the next 4 KiB
boundary, drives the AXI4-Lite registers like a driver (INSN_ADDR, INSN_COUNT, START, poll
DONE/STATUS), serves DRAM through its memory model (the config's `dram_latency` and
`dram_beat_interval`, plus random AXI back-pressure with `stall` > 0) and returns the final
image, the CYCLES register and the per-module counters.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from sim.cycle import schedule
from vta.device import Device, check_budget, until_finish
from vta.errors import BudgetError, DeadlockError, DeviceError, VTAError
from vta.isa import INSN_BYTES
from vta.program import Program
from vta.regmap import COUNTERS_BASE, REG_BITS, describe_status, read_counters
from vta.stats import Stats

from .build import build_model

PAGE_BYTES = 4096
DEFAULT_MAX_CYCLES = 50_000_000
MAX_STALL = 0.95  # the harness withholds at most this share of handshakes


def model_states(program: Program, cycle: int) -> str:
    """What the cycle model says fetch and each module is doing at `cycle` (RTL and model are
    calibrated to the same cycles), as lines for a BudgetError."""
    try:
        sched = schedule(program)
    except DeadlockError as err:
        return f"the cycle model finds a {err}"
    if sched.cycles <= cycle:
        return (
            f"the cycle model finishes at cycle {sched.cycles:,}, within the limit: the RTL and "
            "the model disagree (a bug, please report it)"
        )
    return "\n  ".join(["per the cycle model at that cycle:", *sched.states_at(cycle)])


def _check_predicted_cycles(program: Program, max_cycles: int) -> None:
    """Refuse at once a run the cycle model (calibrated to the RTL cycle for cycle) puts over
    the budget, instead of simulating the RTL up to it; anything else the model objects to is
    left to the RTL to show."""
    try:
        schedule(program, max_cycles)
    except BudgetError as err:
        raise BudgetError(f"device 'rtl' (predicted by the cycle model): {err}") from None
    except VTAError:
        pass


def check_stall(stall: float, seed: int, device: str) -> None:
    """Reject memory back-pressure options the harness cannot serve, naming the device."""
    if not 0.0 <= stall <= MAX_STALL:
        raise DeviceError(f"device {device!r}: stall = {stall} must be in [0, {MAX_STALL}]")
    if not 0 <= seed < 1 << 64:
        raise DeviceError(f"device {device!r}: seed = {seed} must be in [0, 2**64)")


class RTLDevice(Device):
    """The `rtl` device. Options: `max_cycles` (a longer run raises `DeviceError`); `stall`,
    the probability with which the memory model withholds each AXI handshake (back-pressure on
    every channel; results stay bit-identical, cycles grow) and its random `seed`."""

    name = "rtl"

    def __init__(self, max_cycles: int | None = None, stall: float = 0.0, seed: int = 0, **options):
        if options:
            raise DeviceError(
                f"device 'rtl' takes the options max_cycles, stall and seed, got {sorted(options)}"
            )
        check_stall(stall, seed, self.name)
        self.max_cycles = check_budget(
            DEFAULT_MAX_CYCLES if max_cycles is None else max_cycles, "max_cycles", self.name
        )
        self.stall, self.seed = stall, seed
        self.last_clock_ticks = 0  # harness clock cycles of the last run (incl. register I/O)

    def execute(self, program: Program, dram: np.ndarray) -> tuple[np.ndarray, Stats]:
        cfg = program.config
        insns = until_finish(program)
        _check_predicted_cycles(program, self.max_cycles)
        binary = build_model(cfg)
        image = np.asarray(dram, dtype=np.uint8).reshape(-1)
        insn_addr = -(-image.size // PAGE_BYTES) * PAGE_BYTES
        stream = program.insns[: len(insns) * INSN_BYTES]
        full = np.zeros(insn_addr + stream.size, dtype=np.uint8)
        full[: image.size] = image
        full[insn_addr:] = stream
        with tempfile.TemporaryDirectory(prefix="vta-rtl-") as tmp:
            src, dst = Path(tmp) / "dram.bin", Path(tmp) / "final.bin"
            full.tofile(src)
            cmd = [
                binary,
                src,
                dst,
                insn_addr,
                len(insns),
                self.max_cycles,
                cfg.dram_latency,
                cfg.dram_beat_interval,
                repr(float(self.stall)),
                self.seed,
            ]
            run = subprocess.run(list(map(str, cmd)), capture_output=True, text=True)
            if run.returncode != 0:
                raise DeviceError(
                    f"device 'rtl': the harness failed (exit {run.returncode}): "
                    f"{run.stderr.strip()[-1000:]}"
                )
            result = json.loads(run.stdout.strip().splitlines()[-1])
            final = np.fromfile(dst, dtype=np.uint8)[: image.size].copy()
        self.last_clock_ticks = result["clock_ticks"]
        if result["status"]:
            raise DeviceError(
                f"device 'rtl': STATUS reports {describe_status(result['status'])} "
                f"(0x{result['status']:x}) after {result['cycles']:,} cycles"
            )
        if not result["done"]:
            raise BudgetError(
                f"device 'rtl': cycle limit {self.max_cycles:,} exceeded without FINISH "
                f"(a deadlock, or raise max_cycles)\n  {model_states(program, self.max_cycles)}"
            )
        stats = self.new_stats(cfg)
        stats.cycles = result["cycles"]
        stats.count_stream(insns, cfg)
        words = result["registers"]  # the counter block, word by word
        read_counters(lambda offset: words[(offset - COUNTERS_BASE) * 8 // REG_BITS], stats)
        return final, stats
