"""ResNet-18 C2-C12 compiled for the accelerator and run on the cycle-level simulator
(benchmarks.vta).

Per layer: the best knobs of a cheap search over the lowest-traffic settings, cycles and GEMM
utilization with and without virtual threads, the utilization ceiling the ALU epilogue leaves
(column `ceil`), GOPS at the configured clock and DRAM bytes; every output is checked against
the int8 numpy reference. Goal: latency hiding raises utilization on every layer; compute-bound
layers reach >= 0.90 (the others are reported as ALU-bound). Writes a roofline PNG.

`--board`: ResNet-18 and MobileNet-v1 end to end on the PYNQ and Ultra96 boards, modelled: the
accelerator's cycles at the configuration's clock plus the CPU layers on the board's CPU
(benchmarks.vta_board), with the CPU's share of the latency.
"""

from __future__ import annotations

import argparse
import json
import sys

import _bench_path  # noqa: F401 - the repository root on sys.path, for benchmarks/
import numpy as np

from benchmarks.vta import (
    CANDIDATES,
    UTILIZATION_GOAL,
    bench_layer,
    bench_network,
    print_network,
    print_table,
    roofline,
    verdicts,
)
from benchmarks.vta_accuracy import onnx_accuracy
from benchmarks.vta_board import CONFIGS, NETWORKS, bench_board, print_board
from benchmarks.vta_compile import bench_compile, print_compile
from compiler.graph.quant import CALIBRATIONS
from compiler.topi.vta.conv2d import RESNET18
from hw.parts import EFFICIENCY
from vta.config import VTAConfig

MODELS = ("dqn", "mobilenet_v1", "resnet18")


def print_accuracy(inputs: int, as_json: bool, models: list[str]) -> None:
    rows = [onnx_accuracy(model, method, inputs) for model in models for method in CALIBRATIONS]
    if as_json:
        print(json.dumps(rows, indent=1))
        return
    print("weights are seeded random (no pretrained weights are available offline)")
    print(f"{'model':13} {'calibration':11} {'max error':>9} {'top-1':>8}")
    for r in rows:
        print(
            f"{r['model']:13} {r['calibration']:11} "
            f"{r['max_error']:9.2%} {r['top1_agreement']:4}/{r['inputs']:<3}"
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", nargs="*", default=list(RESNET18), choices=list(RESNET18))
    p.add_argument(
        "--candidates",
        type=int,
        default=CANDIDATES,
        help=f"knob settings simulated per layer (default {CANDIDATES})",
    )
    p.add_argument(
        "--config",
        default=None,
        help="preset name, configuration string or .json file (default: the pynq preset)",
    )
    p.add_argument(
        "--no-requant",
        action="store_true",
        help="turn alu_requant off: the reference ISA, epilogue as ADD, SHR, MAX, MIN",
    )
    p.add_argument("--png", default="bench_vta_roofline.png", help="roofline plot path")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.add_argument(
        "--network",
        action="store_true",
        help="the whole ResNet-18 as fused kernels (residual adds and shortcut convs inside) "
        "against the conv2d_packed kernels; goal <= 7.0 M cycles",
    )
    p.add_argument(
        "--accuracy",
        type=int,
        metavar="N",
        help="quantized vs fp32 on N seeded inputs (DQN, MobileNet-v1, ResNet-18; random "
        "weights: no pretrained ones offline), per calibration, as `vta run --target vta` "
        "quantizes them",
    )
    p.add_argument("--models", nargs="+", choices=MODELS,
                   help="the networks --accuracy and --compile measure (default: all) and "
                   f"--board (default: {', '.join(NETWORKS)})")  # fmt: skip
    p.add_argument(
        "--board",
        action="store_true",
        help="end-to-end latency on the boards, modelled: the accelerator's cycles plus the "
        "CPU layers on the board's CPU (hw/parts.py), with the CPU's share",
    )
    p.add_argument("--configs", nargs="+", default=list(CONFIGS),
                   help=f"--board's configurations (default: {', '.join(CONFIGS)})")  # fmt: skip
    p.add_argument("--efficiency", type=float, default=EFFICIENCY,
                   help=f"--board: the fraction of the CPU's peaks its layers reach (default "
                   f"{EFFICIENCY})")  # fmt: skip
    p.add_argument(
        "--compile",
        type=int,
        metavar="N",
        help="compile time of the networks for the accelerator, stage by stage, against the "
        "CPU path's (median of N cold compiles each); goal: ResNet-18 <= 2.5 s",
    )
    args = p.parse_args(argv)
    if args.board:
        if not 0 < args.efficiency <= 1:
            p.error(f"--efficiency {args.efficiency}: a fraction in (0, 1]")
        models = args.models or list(NETWORKS)
        rows = [bench_board(m, c, args.efficiency) for m in models for c in args.configs]
        print(json.dumps(rows, indent=1)) if args.json else print_board(rows)
        return 0
    models = args.models or list(MODELS)
    if args.compile:
        rows = [bench_compile(m, args.compile, args.config) for m in models]
        print(json.dumps(rows, indent=1)) if args.json else print_compile(rows)
        return 0
    if args.accuracy:
        print_accuracy(args.accuracy, args.json, models)
        return 0
    cfg = VTAConfig.load(args.config)
    if args.no_requant and cfg.alu_requant:
        cfg = cfg.replace(name=f"{cfg.name}-norequant", alu_requant=False)
    if args.network:
        result = bench_network(cfg, args.candidates)
        print(json.dumps(result, indent=1)) if args.json else print_network(result)
        return 0
    rng = np.random.default_rng(0)
    rows = [bench_layer(name, args.candidates, rng, config=cfg) for name in args.layers]
    roofline(rows, args.png, cfg)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"config {cfg.name} (alu_requant={cfg.alu_requant})")
        print_table(rows)
        print(f"roofline: {args.png}")
    raised, bound = verdicts(rows)
    print(f"virtual threads raise utilization on every layer: {raised}", file=sys.stderr)
    print(
        f"ALU-bound (epilogue on the compute module caps utilization below "
        f"{UTILIZATION_GOAL}): {', '.join(bound) or 'none'}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
