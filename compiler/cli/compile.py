"""`vta compile MODEL.onnx -o DIR`: compile an ONNX model into a folder that `vta run` loads
without compiling: for the CPU (`--target llvm`, with `--db` records, `--shape NAME=DIMS` for
symbolic inputs, `--print-passes` to see the graph after each pass), or quantized for the
accelerator (`--target vta`: its convolutions' Programs and the CPU layers' kernels)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

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
    p.set_defaults(func=_compile)


def _compile(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    shapes = A.parse_shapes(args.shape)
    if A.is_vta(args.target):
        from ..graph import accel_api

        compiled = accel_api.compile_vta(
            args.model, args.config, args.calibration, args.db, args.candidates, shapes,
            print_passes=args.print_passes, log=lambda m: print(m, file=sys.stderr),
        )  # fmt: skip
        accel_api.save(compiled, args.output)
        print(f"calibrated on {compiled.calibration}", file=sys.stderr)
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
