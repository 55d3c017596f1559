"""Synthesize the VTA RTL with yosys `synth_xilinx` for the configuration's Xilinx part (the
family from hw/parts.py: xc7 for the Zynq-7020, xcup for the ZU3EG) and report LUT, FF, BRAM36
and DSP48 counts against the part's capacity, the LUT headroom, and the estimated critical path
(hw.timing: cells, ns, Fmax against the configured clock).

Needs yosys on PATH (`apt-get install yosys` on Debian/Ubuntu); without it the report raises a
one-line `DeviceError` saying so, and installs nothing. Multipliers are mapped to DSP48s; the GEMM
core packs two int8 products into each (vta_gemm_core.v).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from vta.config import VTAConfig
from vta.errors import DeviceError
from vta.hwconfig import generate_header

from .build import TOP, rtl_sources
from .parts import part_for
from .timing import CriticalPath, analyse

# yosys cell name -> (resource, amount of that resource per cell); 7-series (E1) and
# UltraScale+ (E2, the 8-port LUT RAMs) cells. A LUT RAM or shift register counts the LUTs
# (SLICEM LUT6s) it occupies.
CELLS = {
    **{f"LUT{n}": ("LUT", 1) for n in range(1, 7)},
    "INV": ("LUT", 1),  # an inverter is a LUT1 (synth_xilinx keeps it as its own cell)
    **{c: ("LUT", 1) for c in ("RAM32X1S", "RAM64X1S", "SRL16E", "SRLC32E")},
    **{c: ("LUT", 2) for c in ("RAM32X1D", "RAM64X1D", "RAM128X1S")},
    **{c: ("LUT", 4) for c in ("RAM32M", "RAM64M", "RAM128X1D", "RAM256X1S")},
    **{c: ("LUT", 8) for c in ("RAM32M16", "RAM64M8")},
    **{c: ("FF", 1) for c in ("FDRE", "FDSE", "FDCE", "FDPE")},
    **{c: ("BRAM36", 1) for c in ("RAMB36E1", "RAMB36E2")},
    **{c: ("BRAM36", 0.5) for c in ("RAMB18E1", "RAMB18E2")},
    **{c: ("DSP", 1) for c in ("DSP48E1", "DSP48E2")},
}


def find_yosys() -> str:
    """The yosys on PATH; a one-line `DeviceError` naming the package when there is none (the
    toolkit never runs a package manager)."""
    path = shutil.which("yosys")
    if path is None:
        raise DeviceError(
            "synthesis needs yosys on PATH, which is not here: install it "
            "(apt-get install yosys on Debian/Ubuntu)"
        )
    return path


# The clock margin the report checks paths against: Fmax >= MARGIN x the configured clock.
MARGIN = 1.2


def synthesize(
    cfg: VTAConfig, log: Path | None
) -> tuple[dict[str, float], dict[str, int], CriticalPath, list[CriticalPath]]:
    """Run yosys; return (resource totals, raw cell counts, estimated critical path, the worst
    path into each signal that misses the clock with MARGIN)."""
    family = part_for(cfg.fpga_part).family
    yosys = find_yosys()
    with tempfile.TemporaryDirectory(prefix="vta-synth-") as tmp:
        Path(tmp, "vta_config.vh").write_text(generate_header(cfg))
        sources = " ".join(str(p) for p in rtl_sources())
        netlist = Path(tmp, "netlist.json")
        script = (
            f"read_verilog -I{tmp} {sources}\nsynth_xilinx -family {family} -top {TOP} -flatten\n"
            f"stat\nwrite_json {netlist}\n"
        )
        Path(tmp, "synth.ys").write_text(script)
        run = subprocess.run(
            [yosys, "-q", "-l", str(Path(tmp, "yosys.log")), "-s", str(Path(tmp, "synth.ys"))],
            capture_output=True,
            text=True,
        )
        text = Path(tmp, "yosys.log").read_text() if Path(tmp, "yosys.log").exists() else ""
        if log:
            log.write_text(text + run.stderr)
        if run.returncode != 0:
            tail = (run.stderr or text).strip().splitlines()[-5:]
            raise DeviceError("yosys failed (--log FILE keeps its log):\n" + "\n".join(tail))
        path, slow = analyse(netlist, TOP, 1000.0 / (MARGIN * cfg.clock_mhz), family)
    stat = text[text.rfind("Printing statistics") :]
    cells = {name: int(n) for name, n in re.findall(r"^\s+(\w+)\s+(\d+)\s*$", stat, re.M)}
    totals = {"LUT": 0.0, "FF": 0.0, "BRAM36": 0.0, "DSP": 0.0}
    for name, count in cells.items():
        if name in CELLS:
            resource, amount = CELLS[name]
            totals[resource] += count * amount
    return totals, cells, path, slow


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `synth-report` (shared by scripts/synth_report and `vta synth-report`)."""
    parser.add_argument("--config", default="pynq", help="configuration (default: pynq)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--log", type=Path, help="keep the yosys log here")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Plug `vta synth-report` into the vta command (entry point group `vta.commands`)."""
    parser = subparsers.add_parser("synth-report", help=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.set_defaults(func=_cmd_report)


def main(argv: list[str] | None = None) -> int:
    """`synth-report [--config NAME] [--json] [--log FILE]`; exit status 1 if it does not fit."""
    parser = argparse.ArgumentParser(prog="synth-report", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return _cmd_report(parser.parse_args(argv))


def synthesis_report(config: str | Path | None = "pynq", log: Path | None = None) -> dict:
    """Synthesize the configuration (a preset name or file) and report: resources used against
    the part's capacity, whether it fits, the LUT headroom, the estimated critical path
    (`critical_path`, with the signals slower than MARGIN x the clock) and the raw cells;
    `log` keeps the yosys log."""
    cfg = VTAConfig.load(config)
    part = part_for(cfg.fpga_part)
    start = time.perf_counter()
    totals, cells, path, slow = synthesize(cfg, log)
    seconds = time.perf_counter() - start
    capacity = part.capacity
    timing = {
        "delay_ns": path.delay_ns,
        "levels": path.levels,
        "fmax_mhz": round(path.fmax_mhz, 1),
        "clock_mhz": cfg.clock_mhz,
        "margin": round(path.fmax_mhz / cfg.clock_mhz - 1, 3),
        "start": path.nets[0] if path.nets else None,
        "end": path.nets[-1] if path.nets else None,
        "cell_types": [kind for kind, _ in path.cells],
        "slow_signals": [
            {"delay_ns": p.delay_ns, "levels": p.levels, "from": p.nets[0], "to": p.nets[-1]}
            for p in slow
        ],
    }
    return {
        "config": cfg.name,
        "part": cfg.fpga_part,
        "used": totals,
        "capacity": capacity,
        "fits": all(totals[k] <= capacity[k] for k in capacity),
        "lut_headroom": round(1 - totals["LUT"] / capacity["LUT"], 3),
        "critical_path": timing,
        "cells": cells,
        "seconds": round(seconds, 1),
    }


def _cmd_report(args: argparse.Namespace) -> int:
    """Synthesize and print the report; 1 if the design does not fit the part."""
    report = synthesis_report(args.config, args.log)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(format_report(report))
    return 0 if report["fits"] else 1


def format_report(report: dict) -> str:
    """The report of `synthesis_report` as a table and the critical path, for people."""
    timing, totals = report["critical_path"], report["used"]
    slow = timing["slow_signals"]
    lines = [
        f"yosys synth_xilinx: config {report['config']} on {report['part']} "
        f"({report['seconds']:.0f} s)",
        f"{'resource':<8} {'used':>10} {'available':>10} {'util':>7}",
    ]
    for key, cap in report["capacity"].items():
        lines.append(f"{key:<8} {totals[key]:>10,.1f} {cap:>10,} {100 * totals[key] / cap:>6.1f}%")
    lines += [
        f"{'fits' if report['fits'] else 'DOES NOT FIT'}; "
        f"LUT headroom {100 * report['lut_headroom']:.0f}%",
        f"critical path (estimate, hw/timing.py): {timing['delay_ns']:.2f} ns over "
        f"{timing['levels']} cells -> Fmax {timing['fmax_mhz']:.0f} MHz "
        f"({100 * timing['margin']:+.0f}% against {timing['clock_mhz']:g} MHz)",
        f"  from {timing['start']}",
        f"  to   {timing['end']}",
        "  via  " + " > ".join(timing["cell_types"]),
    ]
    target = 1000.0 / (MARGIN * timing["clock_mhz"])
    lines.append(f"signals with a path over {target:.2f} ns ({MARGIN:g} x the clock): {len(slow)}")
    for p in slow[:10]:
        lines.append(f"  {p['delay_ns']:6.2f} ns {p['levels']:3} cells  {p['from']} -> {p['to']}")
    return "\n".join(lines)
