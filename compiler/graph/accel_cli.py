"""`vta run MODEL.onnx --target vta`: quantize, partition, compile and run an ONNX model with its
convolutions on an accelerator device and the rest on the CPU's llvm kernels (`accel_onnx`),
check the outputs bit for bit against the reference (the same CPU kernels, the offloaded layers
in numpy), and report per layer (where it ran and why, cycles, GEMM utilization, DRAM bytes,
roofline side; a CPU layer's time and kernel) with the totals."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from vta.config import VTAConfig

from ..errors import CompilerError
from ..tune.cli import int_at_least, plot_path
from . import accel_onnx as A
from . import accel_store
from .accel import plot_roofline, roofline_side

CALIBRATION_INPUTS = 4


def _calibration(args: argparse.Namespace, net: A.Network) -> tuple[np.ndarray, str]:
    from vta.program_file import read_arrays

    if args.calibration:
        arrays = read_arrays(args.calibration, what="--calibration")
        if net.input not in arrays:
            raise CompilerError(f"--calibration {args.calibration}: no array '{net.input}'")
        x = arrays[net.input].astype(np.float32)
        if x.shape[1:] != net.input_shape[1:]:
            raise CompilerError(
                f"--calibration {args.calibration}: '{net.input}' has shape {list(x.shape)}; "
                f"expected [N, {', '.join(map(str, net.input_shape[1:]))}]"
            )
        return x, f"{args.calibration} ({x.shape[0]} inputs)"
    rng = np.random.default_rng(0)
    x = rng.standard_normal((CALIBRATION_INPUTS, *net.input_shape[1:])).astype(np.float32)
    return x, f"{CALIBRATION_INPUTS} seeded standard-normal inputs (no --calibration given)"


def compile_vta(args: argparse.Namespace) -> A.Compiled:
    """The model (an .onnx file, or a folder from `vta compile --target vta`) quantized and
    compiled for the accelerator; its fp32 network is `None` for a folder."""
    from .cli import parse_shapes

    if accel_store.is_saved(args.model):
        return accel_store.load(args.model)
    net = A.import_network(args.model, parse_shapes(args.shape))
    calib, calib_text = _calibration(args, net)
    qn = A.quantize_network(net, calib)
    qn.calibration = f"{calib_text}, least-mean-square-error exponents"
    return A.compile_network(qn, VTAConfig.load(args.config), args.candidates, args.db)


def run_vta(args: argparse.Namespace, inputs: dict[str, np.ndarray]) -> int:
    """The `vta run --target vta` command; 0 when the device matched the reference bit for bit."""
    compiled = compile_vta(args)
    qn, cfg = compiled.qn, compiled.cfg
    net = qn.net
    if set(inputs) != {net.input}:
        raise CompilerError(f"--inputs: give exactly '{net.input}', got {sorted(inputs)}")
    x = inputs[net.input].astype(np.float32)
    if x.shape != net.input_shape:
        raise CompilerError(f"--inputs: '{net.input}' has shape {list(x.shape)}, expected "
                            f"{list(net.input_shape)}")  # fmt: skip
    # the reference first: the same CPU kernels, the offloaded layers in numpy; it also takes
    # the CPU kernels' first-call costs (page faults, waking the thread pool), so the device
    # run's CPU rows report their steady time
    ref = A.run(compiled, x)[0]
    start = time.perf_counter()
    acts, rows, cpu = A.run(compiled, x, args.device)
    wall = time.perf_counter() - start
    exact = np.array_equal(acts[net.output], ref[net.output])
    out = A.dequantized_output(qn, acts)
    error = None
    if all(ly.weight is not None for ly in net.layers if ly.kind in ("conv", "dwconv", "dense")):
        f32 = A.forward_f32(net, x)[net.output]
        error = float(np.abs(out - f32).max() / max(np.abs(f32).max(), 1e-30))
    for r in rows:
        if r["where"] == "vta":
            r["bound"] = roofline_side(r["intensity"], cfg)
    cycles = None if args.device == "fsim" else sum(r.get("cycles") or 0 for r in rows)
    report = {
        "model": str(args.model),
        "config": cfg.name,
        "device": args.device,
        "calibration": qn.calibration,
        "cycles": cycles,
        "layers": rows,
        "cpu_seconds": cpu,
        "run_seconds": wall,
        "compile_seconds": compiled.compile_seconds,
        "bit_exact": bool(exact),
        "output_error": error,
    }
    if args.output:
        np.savez(args.output, **{net.output: out})
    if args.plot:
        plot_roofline(rows, cfg, args.plot, Path(args.model).stem)
    if args.json:
        print(json.dumps(report, default=float))
    else:
        _print(report, cfg)
    return 0 if exact else 1


def _print(report: dict, cfg: VTAConfig) -> None:
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
    print(f"total: {total} accelerator cycles on {report['device']} ({cfg.name}), CPU parts "
          f"{report['cpu_seconds']:.2f} s, compile {report['compile_seconds']:.1f} s")  # fmt: skip
    print(f"outputs bit-identical to the quantized reference: {report['bit_exact']}")
    if report["output_error"] is not None:
        print(f"vs fp32: max output error {report['output_error']:.3f} of max|fp32| "
              f"(calibration: {report['calibration']})")  # fmt: skip


def add_arguments(p: argparse.ArgumentParser, run: bool) -> None:
    """The options of `vta run` (`run`) or `vta compile` that apply to --target vta."""
    if run:
        p.add_argument("--device", default="sim", help="--target vta: sim, fsim or rtl")
        p.add_argument(
            "--plot", type=plot_path, metavar="PNG", help="--target vta: the layers' roofline plot"
        )
    p.add_argument("--config", default=None, help="--target vta: pynq, ultra96, tiny or a file")
    p.add_argument("--calibration", help="--target vta: .npz of calibration inputs by name")
    p.add_argument(
        "--candidates",
        type=int_at_least(1),
        default=8,
        help="--target vta: knob settings timed per layer",
    )


def tune_vta(args: argparse.Namespace, model: str) -> int:
    """`vta tune MODEL.onnx --target vta --db F`: the network's conv2d_fused tasks (quantized with
    the default calibration, as `vta run` without --calibration) tuned on `--device` (cycles from
    the timing-only simulator on sim); `vta run MODEL.onnx --target vta --db F` uses the records."""
    from ..tune import tune_tasks
    from ..tune.database import Database
    from ..tune.measure import DeviceRunner, LocalBuilder, measure_option
    from ..tune.task import create_task

    if not args.db:
        raise CompilerError("tuning a model needs --db FILE (its records make the compiled model)")
    net = A.import_network(model)
    args.calibration = None
    qn = A.quantize_network(net, _calibration(args, net)[0])
    found = A.tuning_tasks(qn, VTAConfig.load(None))
    # the XGBoost tuner's loop-nest features need a schedule; these tasks are Programs, so the
    # learned model ranks their knobs instead
    tuner = "xgb-knob" if args.tuner == "xgb" else args.tuner
    print(f"{model}: {len(found)} conv2d_fused tasks for {sum(w for _, w in found)} layers "
          f"(tuner {tuner})")  # fmt: skip
    tasks = [create_task("conv2d_fused", a, "vta") for a, _ in found]
    runner = DeviceRunner(args.device, check=args.check or args.device != "sim")
    option = measure_option(LocalBuilder(timeout=args.build_timeout), runner)
    start = time.perf_counter()
    try:
        with Database(args.db) as db:
            histories = tune_tasks(tasks, args.n_trial, option, tuner=tuner, database=db,
                                   seed=args.seed)  # fmt: skip
    finally:
        option.close()
    for task, (task_args, weight), h in zip(tasks, found, histories, strict=True):
        best = f"{task.flop / h.best_throughput:,.0f} cycles" if h.best_throughput else "none"
        print(f"  conv2d_fused{task_args[:9]} x{weight}: {len(h.throughputs)} trials, best {best}")
    print(f"tuned {len(tasks)} tasks in {time.perf_counter() - start:.1f} s; records in {args.db}")
    return 0
