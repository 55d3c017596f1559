"""`vta build WORKLOAD --target cuda|llvm`: compile one workload with its best record (or the
template's default config) into a file, without measuring anything.

For `cuda` the file is PTX that ptxas has assembled, and the report lists each kernel's launch,
registers, shared memory and spills (a kernel that spills or exceeds the architecture's limits
fails the build); for `llvm` it is an object file (.o) or shared library (.so). `--check` runs
the result on random inputs against the workload's numpy reference: the GPU kernels on the
emulator, the CPU function natively. Exit 0 on success, 1 on a failed check or a flagged
kernel, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from . import args as A


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `build` subcommand to the `vta` command."""
    p = subparsers.add_parser(
        "build",
        help="compile a workload's kernel (best record or default)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("workload", help="OP:ARGS (matmul:1024,1024,1024), or a layer name (C1..C12)")
    A.add_target(p, "cuda (PTX) or llvm (CPU object/library)")
    A.add_arch(p)
    p.add_argument("-o", "--output", required=True, help="file to write (.ptx; .o or .so)")
    A.add_db(p, "records database: build its best config of the workload")
    p.add_argument("--check", action="store_true", help="run on random inputs against numpy")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_build)


def _build(args: argparse.Namespace) -> int:
    from ..autoschedule.build import build_workload

    target = A.cuda_target(args.target, args.arch)
    op, op_args = A.parse_workload(args.workload, target)
    report = build_workload(op, op_args, target, args.output, args.db, args.check)
    if args.json:
        print(json.dumps(report))
    else:
        _print(report)
    failed = report.get("problems") or report.get("check", "ok") != "ok"
    return 1 if failed else 0


def _print(report: dict[str, Any]) -> None:
    print(f"{report['workload']} on {report['target']} -> {report['output']}")
    print(f"config ({report['config_source']}): {json.dumps(report['config'])}")
    if "kernels" in report:
        print(f"{'kernel':<16} {'grid':>14} {'block':>12} {'regs':>5} {'smem B':>7} {'spill B':>7}")
        for k in report["kernels"]:
            grid, block = "x".join(map(str, k["grid"])), "x".join(map(str, k["block"]))
            print(
                f"{k['name']:<16} {grid:>14} {block:>12} {k['registers']:>5} "
                f"{k['shared_bytes']:>7} {k['spill_bytes']:>7}"
            )
        for p in report["problems"]:
            print(f"flagged: {p}")
    if "check" in report:
        print(f"check against numpy: {report['check']}")
