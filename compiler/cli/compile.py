"""`vta compile MODEL.onnx -o DIR`: compile an ONNX model into a folder that `vta run` loads
without compiling: for the CPU (`--target llvm`, with `--db` records, `--shape NAME=DIMS` for
symbolic inputs, `--print-passes` to see the graph after each pass), or quantized for the
accelerator (`--target vta`: its convolutions' Programs and the CPU layers' kernels, the latter
for the CPU of the board of a `--config` given (a PYNQ's Cortex-A9), else for this machine;
`--host-target` chooses: 'native' or an llvm target)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..errors import CompilerError
from . import args as A


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `vta compile`."""
    p = subparsers.add_parser(
        "compile", help="compile an ONNX model into a folder", description=__doc__
    )
    p.add_argument("model", help="MODEL.onnx")
    p.add_argument("-o", "--output", required=True, help="the compiled model's folder")
    p.add_argument("--print-passes", action="store_true", help="print the graph after each pass")
    A.add_model(p)
    A.add_accelerator(p, run=False)
    p.add_argument(
        "--host-target",
        type=A.target_name,
        help="--target vta: the CPU layers' target, 'native' for this machine (default: the "
        "CPU of the board of a --config given, a PYNQ's Cortex-A9; else this machine)",
    )
    p.set_defaults(func=_compile)


def _compile(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    shapes = A.parse_shapes(args.shape)
    if A.is_vta(args.target):
        from ..graph import accel_api

        host = accel_api.board_target(args.config, args.host_target)
        compiled = accel_api.compile_vta(
            args.model, args.config, args.calibration, args.db, args.candidates, shapes,
            print_passes=args.print_passes, log=lambda m: print(m, file=sys.stderr),
            host_target=host,
        )  # fmt: skip
        accel_api.save(compiled, args.output)
        print(f"calibrated on {compiled.calibration}", file=sys.stderr)
        print(f"CPU layers compiled for {host!r}", file=sys.stderr)
    elif args.host_target:
        raise CompilerError("--host-target applies to --target vta (give --target LLVM_TARGET)")
    else:
        from ..graph.build_onnx import compile_model
        from ..graph.hybrid import HybridModule
        from ..tune.dispatch import cpu_history

        with cpu_history(args.db, args.target) as records:  # --db's records, then the shipped
            graph = compile_model(
                Path(args.model),
                target=args.target,
                shapes=shapes,
                log=lambda m: print(m, file=sys.stderr),
                print_passes=args.print_passes,
                records=records,
            )
        HybridModule.cpu_only(graph).save(args.output)  # the one compiled-model folder
    print(f"compiled {args.model} in {time.perf_counter() - start:.2f} s -> {args.output}")
    return 0
