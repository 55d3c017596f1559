"""`vta codesign MODEL.onnx`: search accelerator configurations for a network with the compiler in
the loop, on a target part (`--part xc7z020|xczu3eg`).

Each design point (GEMM shape, buffer depths, bus, ALU options) is compiled for (knobs chosen on
the timing-only simulator) and costed: cycles of the offloaded work, resources and Fmax from the
resource model (fitted to yosys), latency at the clock the point closes at, energy from counted
events. The learned search (or `--search random|grid`) evaluates `--trials` points, stored in
`--db` (a killed search resumes) and run on Dask workers at `--scheduler` or on a local pool.
Prints the Pareto front of the offloaded work's latency (`--objective board`: one inference on the
part's board, modelled, CPU layers included; `edp`: energy-delay) against LUTs, the part's preset
first;
`--plot F.png` draws it, `--emit DIR` writes the best point's config.json (what `--config` takes),
RTL header and resource estimate, `--verify-rtl` runs one of its Programs on its RTL (exit 1
unless cycle-equal to sim); `--json` prints {"default", "pareto", "best"} as the last line.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import args as A


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `vta codesign`."""
    p = subparsers.add_parser(
        "codesign",
        help="search accelerator configurations for a network",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", help="MODEL.onnx")
    p.add_argument("--part", default="xc7z020", choices=("xc7z020", "xczu3eg"))
    p.add_argument("--objective", default="latency", choices=("latency", "board", "edp"))
    p.add_argument("--search", default="learned", choices=("learned", "random", "grid"))
    p.add_argument("--trials", type=A.int_in_range(1, 100_000), default=64)
    p.add_argument("--seed", type=A.int_at_least(0), default=0)
    p.add_argument("--db", help="SQLite file of evaluated points (resumes a search)")
    p.add_argument("--scheduler", help="Dask scheduler ADDRESS (default: a local pool)")
    p.add_argument("--calibration", help=".npz of calibration inputs (default: seeded)")
    p.add_argument("--candidates", type=A.int_in_range(1, 64), default=8,
                   help="knob settings timed per layer and point")  # fmt: skip
    p.add_argument("--no-transfer", action="store_true",
                   help="every point times the estimate's candidates (no ranker)")  # fmt: skip
    p.add_argument("--no-verify", action="store_true",
                   help="skip running the front's networks bit-exact on sim")  # fmt: skip
    p.add_argument(
        "--verify-rtl", action="store_true", help="check the best point's RTL cycles against sim"
    )
    p.add_argument("--emit", help="write the best point's files to this folder")
    p.add_argument("--plot", type=A.plot_path, help="latency against LUTs, as an image")
    p.add_argument("--json", action="store_true", help="one JSON object as the last line")
    p.set_defaults(func=_codesign)


def _codesign(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from ..codesign import api
    from ..codesign.report import plot_front, table

    total = None if args.search == "grid" else args.trials
    bars: list = []  # opened at the first point: a model that fails to load prints no bar

    def tick(ev) -> None:
        if not bars:
            bars.append(tqdm(total=total, desc="co-design", unit="point", disable=args.json))
        bars[0].set_postfix_str(ev.point.label)
        bars[0].update()

    try:
        result = api.codesign(
            args.model, args.part, args.objective, args.trials, args.seed, args.db,
            args.scheduler, args.search, args.calibration, args.candidates,
            verify=not args.no_verify, progress=tick, transfer=not args.no_transfer,
        )  # fmt: skip
    finally:
        for bar in bars:
            bar.close()
    if args.plot:
        plot_front(result, args.plot, args.part, args.objective)
    if args.emit and result.best is not None:
        written = api.emit(result.best, args.emit, args.part)
        print(f"wrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    rtl = None
    if args.verify_rtl and result.best is not None:
        rtl = api.verify_rtl(args.model, result.best, args.calibration, args.candidates)
    if args.json:
        print(json.dumps({**result.to_json(), **({"rtl_check": rtl} if rtl else {})}))
    else:
        print(table(result, args.objective))
        if rtl is not None:
            same = "equal" if rtl["equal"] else "DIFFERENT"
            print(f"RTL of {result.best.point.label}, group {rtl['group']}: {rtl['rtl_cycles']:,} "
                  f"cycles, sim {rtl['sim_cycles']:,}: {same}")  # fmt: skip
    return 0 if rtl is None or rtl["equal"] else 1
