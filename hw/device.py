"""The `rtl` device: a Program run on the verilated Verilog through the C++ batch harness.

The harness gets the DRAM image with the instruction stream appended at the next 4 KiB
boundary, drives the AXI4-Lite registers like a driver (INSN_ADDR, INSN_COUNT, START, poll
DONE/STATUS), serves DRAM through the timing-contract memory model and returns the final image
and the CYCLES register.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from vta.device import Device, until_finish
from vta.errors import DeviceError
from vta.isa import INSN_BYTES
from vta.program import Program
from vta.regmap import describe_status
from vta.stats import Stats

from .build import build_model

PAGE_BYTES = 4096
DEFAULT_MAX_CYCLES = 50_000_000


class RTLDevice(Device):
    """The `rtl` device. Options: `max_cycles` (a longer run raises `DeviceError`)."""

    name = "rtl"

    def __init__(self, max_cycles: int | None = None, **options):
        if options:
            raise DeviceError(f"device 'rtl' takes the option max_cycles, got {sorted(options)}")
        if max_cycles is not None and max_cycles < 1:
            raise DeviceError(f"max_cycles = {max_cycles} must be >= 1")
        self.max_cycles = DEFAULT_MAX_CYCLES if max_cycles is None else max_cycles
        self.last_clock_ticks = 0  # harness clock cycles of the last run (incl. register I/O)

    def execute(self, program: Program, dram: np.ndarray) -> tuple[np.ndarray, Stats]:
        cfg = program.config
        insns = until_finish(program)
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
            cmd = [binary, src, dst, str(insn_addr), str(len(insns)), str(self.max_cycles)]
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
            raise DeviceError(
                f"device 'rtl': cycle limit {self.max_cycles:,} exceeded without FINISH "
                "(a deadlock, or raise max_cycles)"
            )
        stats = self.new_stats(cfg)
        stats.cycles = result["cycles"]
        stats.count_stream(insns, cfg)
        return final, stats
