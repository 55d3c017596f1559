"""The main job, end to end: build a blocked int8 GEMM Program for the accelerator, run it on the
cycle-level simulator serialized and with two virtual threads (dependence tokens), check the
results against numpy and report both runs side by side.

Until the accelerator compiler lands, the Program comes from the builder (vta.examples).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from vta import VTAConfig, VTAError
from vta.device import get_device
from vta.examples import blocked_gemm


def run(config: str, batch: int, channels: int, device: str) -> list[dict]:
    cfg = VTAConfig.load(config)
    rows = []
    for threads in (1, 2):
        example = blocked_gemm(
            cfg,
            batch=batch,
            in_channels=channels,
            out_channels=channels,
            block=(batch // 2, channels // 2, channels // 2),
            threads=threads,
        )
        final, stats = get_device(device).execute(example.program, example.program.dram.copy())
        outputs = example.program.outputs(final)
        exact = all(np.array_equal(outputs[k], v) for k, v in example.expected.items())
        rows.append({"name": example.name, "threads": threads, "exact": exact, "stats": stats})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="pynq", help="accelerator configuration")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--channels", type=int, default=256)
    parser.add_argument("--device", default="sim", help="sim (default), fsim, rtl")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    try:
        rows = run(args.config, args.batch, args.channels, args.device)
    except VTAError as err:
        print(f"demo: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([{**r, "stats": r["stats"].to_dict()} for r in rows], indent=2))
    else:
        for r in rows:
            label = "serialized" if r["threads"] == 1 else "two virtual threads"
            print(f"== {r['name']} ({label}) — output matches numpy: {r['exact']}")
            print(r["stats"].report())
            print()
        one, two = rows[0]["stats"], rows[1]["stats"]
        if one.cycles and two.cycles:
            print(f"{'':<22}{'cycles':>12}{'utilization':>14}{'GOPS':>9}")
            for r in rows:
                s = r["stats"]
                print(f"{r['name']:<22}{s.cycles:>12,}{s.utilization:>14.3f}{s.gops:>9.2f}")
            print(f"latency hiding: {one.cycles / two.cycles:.2f}x fewer cycles with 2 threads")
    return 0 if all(r["exact"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
