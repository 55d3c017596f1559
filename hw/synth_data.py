"""The dataset of yosys runs that the resource model (`hw/resources.py`) is fitted and checked on:
`hw/data/synth_runs.json`, one record per synthesized design point (the whole configuration,
part and yosys family, LUT/FF/BRAM36/DSP counts, the raw cells, the estimated critical path and
Fmax, the yosys version and the seconds the run took).

`python -m hw.synth_data [--family xc7|xcup] [--limit N] [--max-macs M]` synthesizes the
points of `POINTS` that the file does not hold yet (up to M MACs per cycle), cheapest first
within rounds that take one point of every GEMM shape, one yosys at a time, and rewrites the
file after every run, so a stopped run resumes where it stopped. Needs yosys on PATH
(`apt-get install yosys`); run it under `nice` on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from vta.config import VTAConfig
from vta.errors import VTAError

from .parts import part_for
from .synth import find_yosys, synthesize

DATA = Path(__file__).resolve().parent / "data" / "synth_runs.json"
# The preset each family's points start from (its part and clock).
PRESETS = {"xc7": "pynq", "xcup": "ultra96"}
# Fields that name or describe a configuration without changing the hardware.
LABELS = ("name", "description")

_SMALL_1X8 = {
    "log_block": 3,
    "log_inp_buff_size": 13,
    "log_wgt_buff_size": 15,
    "log_acc_buff_size": 14,
    "log_uop_buff_size": 13,
}
_SMALL_1X16 = {
    "log_inp_buff_size": 13,
    "log_wgt_buff_size": 16,
    "log_acc_buff_size": 15,
    "log_uop_buff_size": 13,
}
_SMALL_1X32 = {
    "log_block": 5,
    "log_inp_buff_size": 14,
    "log_wgt_buff_size": 17,
    "log_acc_buff_size": 15,
    "log_uop_buff_size": 13,
}
# Design points as changes to the family's preset: around a small 1x8, 1x16 and 1x32 core one
# field at a time (GEMM shape, each buffer's depth, bus, ALU multiplier and requantize, pipeline
# and queue depths), then mixtures of several.
POINTS: list[dict] = [
    _SMALL_1X8,
    {**_SMALL_1X8, "alu_mul": True},
    {**_SMALL_1X8, "alu_requant": False},
    {**_SMALL_1X8, "log_bus_width": 7},
    {**_SMALL_1X8, "gemm_pipeline_depth": 6},
    {**_SMALL_1X8, "alu_pipeline_depth": 6},
    {**_SMALL_1X8, "cmd_queue_depth": 32},
    {**_SMALL_1X8, "token_queue_depth": 64},
    {**_SMALL_1X8, "log_inp_buff_size": 11, "log_wgt_buff_size": 13, "log_acc_buff_size": 12},
    {**_SMALL_1X8, "log_inp_buff_size": 15},
    {**_SMALL_1X8, "log_wgt_buff_size": 18},
    {**_SMALL_1X8, "log_acc_buff_size": 16},
    {**_SMALL_1X8, "log_uop_buff_size": 15},
    {**_SMALL_1X8, "log_uop_buff_size": 15, "log_bus_width": 7},
    {**_SMALL_1X8, "log_batch": 1},
    {**_SMALL_1X8, "log_batch": 1, "alu_mul": True, "log_bus_width": 7},
    {**_SMALL_1X8, "log_batch": 1, "log_inp_buff_size": 15, "log_acc_buff_size": 16},
    {
        **_SMALL_1X8,
        "alu_mul": True,
        "alu_requant": False,
        "gemm_pipeline_depth": 5,
        "alu_pipeline_depth": 5,
    },
    {**_SMALL_1X8, "cmd_queue_depth": 128, "token_queue_depth": 256, "log_bus_width": 7},
    {**_SMALL_1X8, "log_inp_buff_size": 14, "log_wgt_buff_size": 17, "log_acc_buff_size": 15},
    _SMALL_1X16,
    {**_SMALL_1X16, "alu_mul": True},
    {**_SMALL_1X16, "alu_requant": False},
    {**_SMALL_1X16, "log_bus_width": 7},
    {**_SMALL_1X16, "gemm_pipeline_depth": 6, "alu_pipeline_depth": 6},
    {**_SMALL_1X16, "cmd_queue_depth": 64, "token_queue_depth": 256},
    {**_SMALL_1X16, "log_inp_buff_size": 15, "log_acc_buff_size": 17},
    {**_SMALL_1X16, "log_wgt_buff_size": 18},
    {**_SMALL_1X16, "log_batch": 1},
    {**_SMALL_1X16, "log_batch": 1, "alu_mul": True, "log_bus_width": 7},
    {},  # the preset itself
    {"alu_mul": True, "log_bus_width": 7, "gemm_pipeline_depth": 5},
    _SMALL_1X32,
    {**_SMALL_1X32, "alu_mul": True, "log_bus_width": 7},
    {**_SMALL_1X32, "log_batch": 1},
    {**_SMALL_1X32, "log_wgt_buff_size": 18, "log_inp_buff_size": 15, "log_acc_buff_size": 17},
    {**_SMALL_1X8, "gemm_pipeline_depth": 8, "alu_pipeline_depth": 8},
    {
        **_SMALL_1X8,
        "log_inp_buff_size": 14,
        "log_wgt_buff_size": 16,
        "log_acc_buff_size": 15,
        "log_uop_buff_size": 14,
        "log_bus_width": 7,
        "alu_mul": True,
        "gemm_pipeline_depth": 5,
    },
    {**_SMALL_1X8, "log_batch": 1, "log_wgt_buff_size": 17, "alu_requant": False},
    {**_SMALL_1X8, "log_batch": 1, "alu_mul": True, "alu_requant": False, "alu_pipeline_depth": 6},
    {**_SMALL_1X16, "cmd_queue_depth": 32, "token_queue_depth": 16, "alu_pipeline_depth": 5},
    {
        **_SMALL_1X16,
        "log_inp_buff_size": 14,
        "log_wgt_buff_size": 17,
        "log_acc_buff_size": 16,
        "log_uop_buff_size": 14,
        "alu_mul": True,
        "alu_requant": False,
        "log_bus_width": 7,
    },
    {**_SMALL_1X16, "log_batch": 1, "log_bus_width": 7, "gemm_pipeline_depth": 6},
    {**_SMALL_1X32, "alu_requant": False, "gemm_pipeline_depth": 6},
    # BLOCK_OUT unlike BLOCK_IN: wider or narrower outputs than inputs
    {**_SMALL_1X8, "log_block_out": 4},
    {**_SMALL_1X16, "log_block_out": 3},
    {**_SMALL_1X16, "log_block_out": 5},
    {**_SMALL_1X32, "log_block_out": 4},
]


def design_point(changes: dict, family: str) -> VTAConfig:
    """The family's preset with `changes`, named after its configuration string."""
    if family not in PRESETS:
        raise VTAError(f"no design points for family {family!r} (known: {', '.join(PRESETS)})")
    cfg = VTAConfig.load(PRESETS[family]).replace(**changes)
    return cfg.replace(name=f"{cfg.config_string}-{family}", description="synth_data point")


def identity(config: dict) -> dict:
    """A configuration's hardware fields: what makes two runs the same design point."""
    return {k: v for k, v in config.items() if k not in LABELS}


def cost(cfg: VTAConfig) -> int:
    """How expensive a point is to synthesize, for ordering: MACs, then buffer bits."""
    return cfg.macs_per_cycle * (1 << 24) + sum(cfg.buff_bytes.values())


def load(path: Path = DATA) -> list[dict]:
    """The recorded runs (none if the file does not exist yet)."""
    return json.loads(path.read_text()) if path.exists() else []


def yosys_version() -> str:
    """`yosys -V`'s first line (the version and its git hash)."""
    run = subprocess.run([find_yosys(), "-V"], capture_output=True, text=True, check=False)
    return run.stdout.strip().splitlines()[0] if run.stdout.strip() else "unknown"


def record(cfg: VTAConfig, version: str) -> dict:
    """Synthesize one point and return its record."""
    start = time.perf_counter()
    totals, cells, path, _ = synthesize(cfg, None)
    seconds = time.perf_counter() - start
    return {
        "config": identity(cfg.to_dict()),
        "config_string": cfg.config_string,
        "part": cfg.fpga_part,
        "family": part_for(cfg.fpga_part).family,
        "lut": totals["LUT"],
        "ff": totals["FF"],
        "bram36": totals["BRAM36"],
        "dsp": totals["DSP"],
        "delay_ns": path.delay_ns,
        "fmax_mhz": round(path.fmax_mhz, 2),
        "levels": path.levels,
        "cells": cells,
        "yosys": version,
        "seconds": round(seconds, 1),
    }


def save(runs: list[dict], path: Path = DATA) -> None:
    """Write the runs (to a temporary file renamed over the old one: never half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(runs, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def pending(family: str, runs: list[dict]) -> list[VTAConfig]:
    """The points of `family` not recorded yet in rounds, each round the cheapest pending point
    of every GEMM shape, cheapest first (so a run stopped early still covers every shape)."""
    done = [run["config"] for run in runs]
    points = [design_point(changes, family) for changes in POINTS]
    todo = [cfg for cfg in points if identity(cfg.to_dict()) not in done]
    unique = list({json.dumps(identity(c.to_dict()), sort_keys=True): c for c in todo}.values())
    rank: dict[tuple[int, int], int] = {}
    order = []
    for cfg in sorted(unique, key=cost):
        shape = (cfg.log_batch, cfg.log_block)
        rank[shape] = rank.get(shape, -1) + 1
        order.append((rank[shape], cost(cfg), cfg))
    return [cfg for *_, cfg in sorted(order, key=lambda o: o[:2])]


def run(family: str, limit: int | None, path: Path = DATA, max_macs: int | None = None) -> int:
    """Synthesize up to `limit` pending points of `family` (of at most `max_macs` MACs per
    cycle), saving after each; the count run."""
    runs = load(path)
    todo = [c for c in pending(family, runs) if max_macs is None or c.macs_per_cycle <= max_macs]
    todo = todo[:limit]
    version = yosys_version()
    for n, cfg in enumerate(todo, 1):
        print(f"[{n}/{len(todo)}] {cfg.name} ...", flush=True)
        result = record(cfg, version)
        runs = load(path) + [result]
        save(runs, path)
        print(
            f"  LUT {result['lut']:,.0f} FF {result['ff']:,.0f} BRAM36 {result['bram36']:g} "
            f"DSP {result['dsp']:g} {result['delay_ns']:.2f} ns in {result['seconds']:.0f} s",
            flush=True,
        )
    return len(todo)


def main(argv: list[str] | None = None) -> int:
    """`python -m hw.synth_data [--family F] [--limit N] [--max-macs M] [--data FILE]`."""
    parser = argparse.ArgumentParser(prog="synth_data", description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=sorted(PRESETS), default="xc7")
    parser.add_argument("--limit", type=int, help="run at most this many points")
    parser.add_argument("--max-macs", type=int, help="skip points of more MACs per cycle")
    parser.add_argument("--data", type=Path, default=DATA, help=f"default: {DATA}")
    args = parser.parse_args(argv)
    try:
        run(args.family, args.limit, args.data, args.max_macs)
    except VTAError as err:
        print(f"synth_data: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
