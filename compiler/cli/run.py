"""`vta run MODEL.onnx|DIR --inputs IN.npz`: run an ONNX model (compiled first) or a folder
written by `vta compile`, with inputs and outputs (`--output OUT.npz`) keyed by the graph's
tensor names.

On the CPU (`--target llvm`), `--repeat N` times N inferences and reports the median, minimum
and maximum latency. With `--target vta` (or a folder compiled for it) the model is quantized
and its convolutions run on an accelerator device (`--device sim|fsim|rtl`), the rest on the
CPU; the outputs are checked bit for bit against the reference and each layer is reported
(where it ran and why, cycles, GEMM utilization, DRAM bytes, roofline side; a CPU layer's time
and kernel); exit 1 when the device's outputs differ. `--json` prints one JSON object as the
last line of stdout.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from ..errors import CompilerError
from . import args as A


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `vta run`."""
    p = subparsers.add_parser(
        "run",
        help="run an ONNX model or a compiled model folder",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", help="MODEL.onnx or a folder written by `vta compile`")
    p.add_argument("--inputs", required=True, help=".npz of the graph's inputs by name")
    p.add_argument("--output", help="write the outputs by name to this .npz")
    p.add_argument("--repeat", type=A.int_at_least(1), default=0, help="time N inferences")
    p.add_argument("--json", action="store_true", help="one JSON object as the last line")
    p.add_argument(
        "--no-check",
        action="store_true",
        help="--target vta: skip the numpy check of each offloaded layer (on a board, seconds)",
    )
    A.add_model(p)
    A.add_accelerator(p, run=True)
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    # a compiled folder runs on the board runtime alone: no compiler module is imported
    from ..graph.runtime import HybridModule, time_inferences

    saved = HybridModule.saved_target(args.model)
    if saved == "vta" or (saved is None and A.is_vta(args.target)):
        return _run_vta(args, saved == "vta")
    if args.no_check:
        raise CompilerError("--no-check skips the accelerator's check; --target llvm has none")
    log = (lambda m: print(m, file=sys.stderr)) if not args.json else None
    inputs = A.read_npz(args.inputs, "--inputs")
    if saved == "llvm":
        (step,) = HybridModule.load(args.model).steps
        graph = step.module
    else:
        from ..graph.cpu_api import load_model

        shapes = A.parse_shapes(args.shape)
        graph = load_model(args.model, args.target, args.db, shapes, log, inputs)
    bound = graph.manifest.get("bound_inputs", [])  # compiled for their values
    inputs = {k: v for k, v in inputs.items() if k not in bound}
    outputs = graph.run(inputs)
    if args.output:
        np.savez(args.output, **outputs)
    result: dict = {"outputs": {k: list(v.shape) for k, v in outputs.items()}}
    if args.repeat:
        lat = time_inferences(graph, inputs, args.repeat)
        result["latency_ms"] = lat
        result["repeat"] = args.repeat
        if not args.json:
            print(
                f"latency over {args.repeat} runs: median {lat['median']:.3f} ms, "
                f"min {lat['min']:.3f} ms, max {lat['max']:.3f} ms"
            )
    if not args.json:
        for k, shape in result["outputs"].items():
            print(f"output {k}: shape {shape}" + (f" -> {args.output}" if args.output else ""))
    else:
        print(json.dumps(result))
    return 0


def _run_vta(args: argparse.Namespace, saved: bool) -> int:
    """0 when the device matched the reference bit for bit; `saved`: the model is a compiled
    folder (loaded, not compiled)."""
    from ..graph.runtime import HybridModule, run_vta

    if args.repeat:
        raise CompilerError("--repeat times the CPU target; --target vta reports cycles")
    inputs = A.read_npz(args.inputs, "--inputs")
    if saved:
        compiled = HybridModule.load(args.model)
    else:
        from ..graph import accel_api

        compiled = accel_api.compile_vta(
            args.model,
            args.config,
            args.calibration,
            args.db,
            args.candidates,
            A.parse_shapes(args.shape),
            given=inputs,
            log=(lambda m: print(m, file=sys.stderr)) if not args.json else None,
        )
    report, outputs = run_vta(compiled, inputs, args.device, model=str(args.model),
                              plot=args.plot, check=not args.no_check)  # fmt: skip
    if args.output:
        np.savez(args.output, **outputs)
    if args.json:
        print(json.dumps(report, default=float))
    else:
        _print_vta(report)
    return 1 if report["bit_exact"] is False else 0


def _print_vta(report: dict) -> None:
    w = max(len(r["name"]) for r in report["layers"])
    print(f"{'layer':{w}} {'where':5} {'cycles':>9} {'util':>6} {'KB':>7} {'bound':8}  why "
          "(cpu rows: time, kernel)")  # fmt: skip
    for r in report["layers"]:
        if r["where"] == "cpu":
            ms = f"{r['cpu_seconds'] * 1e3:.2f} ms"
            print(f"{r['name']:{w}} cpu   {ms:>9} {'':>6} {'':>7} {r['kernel']:8}  {r['why']}")
            continue
        cycles, util = r["cycles"] or 0, r["gemm_utilization"] or 0.0
        print(f"{r['name']:{w}} vta   {cycles:9d} {util:6.3f} {r['dram_bytes'] / 1e3:7.0f} "
              f"{r['bound']:8}  {r['why']}")  # fmt: skip
    total = "no" if report["cycles"] is None else f"{report['cycles']:,}"
    print(f"total: {total} accelerator cycles on {report['device']} ({report['config']}), "
          f"CPU parts {report['cpu_seconds']:.2f} s, "
          f"compile {report['compile_seconds']:.1f} s")  # fmt: skip
    if report["latency_ms"] is not None:
        cpu_ms = report["cpu_seconds"] * 1e3
        print(f"latency on the board: {report['latency_ms']:.2f} ms (accelerator "
              f"{report['latency_ms'] - cpu_ms:.2f} ms at the config's clock + CPU parts "
              f"{cpu_ms:.2f} ms as timed here)")  # fmt: skip
    board = report["board"]
    if board is not None and board["latency_ms"] is not None:
        offload = ("; nothing offloaded" if board["offload_speedup"] is None else
                   f"; the offloaded layers on that CPU: {board['offloaded_on_cpu_ms']:.1f} ms, "
                   f"{board['offload_speedup']:.1f}x the accelerator's")  # fmt: skip
        print(f"latency on the board, modelled: {board['latency_ms']:.2f} ms (accelerator "
              f"{board['accelerator_ms']:.2f} ms + CPU layers {board['cpu_ms']:.2f} ms on "
              f"{board['cpu']} at {board['efficiency']:.0%} of its peaks: CPU share "
              f"{board['cpu_share']:.0%}{offload})")  # fmt: skip
    if report["compile_times"]:
        parts = ", ".join(f"{k} {v:.2f}" for k, v in report["compile_times"].items())
        print(f"compile seconds by stage: {parts}")
    exact = report["bit_exact"]
    print("outputs bit-identical to the quantized reference: "
          + ("not checked (--no-check)" if exact is None else str(exact)))  # fmt: skip
    if report["output_error"] is not None:
        print(f"vs fp32: max output error {report['output_error']:.3f} of max|fp32| "
              f"(calibration: {report['calibration']})")  # fmt: skip
