"""`vta run` and `vta compile`: ONNX models (or compiled model folders) on the CPU.

    vta compile MODEL.onnx --target llvm -o DIR [--db F] [--shape NAME=1,3,224,224] [--print-passes]
    vta run MODEL.onnx|DIR --inputs IN.npz --output OUT.npz [--db F] [--shape ...] [--repeat N]
        [--json]

Inputs and outputs are keyed by the graph's tensor names. With --repeat N, `run` times N
inferences and reports the median, minimum and maximum latency; --json prints one JSON object
as the last line of stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import CompilerError
from ..tune.cli import int_at_least, target_name
from .executor import GraphModule

if TYPE_CHECKING:
    from .build import ConvTask


def parse_shapes(items: list[str] | None) -> dict[str, tuple[int, ...]]:
    """['data=1,3,224,224'] -> {'data': (1, 3, 224, 224)}."""
    shapes = {}
    for item in items or []:
        name, sep, dims = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            shapes[name] = tuple(int(d) for d in dims.split(","))
        except ValueError:
            raise CompilerError(f"--shape {item!r}: expected NAME=D1,D2,... (integers)") from None
    return shapes


def load_model(path: str, target: str, db: str | None, shapes: dict, log=None) -> GraphModule:
    """A compiled model folder loads as it is; an .onnx file is compiled."""
    from .build_onnx import compile_model  # the compiler pipeline only when compiling

    p = Path(path)
    if p.is_dir():
        return GraphModule.load(p)
    if not p.is_file():
        raise CompilerError(f"{path}: no such model file or compiled model folder")
    return compile_model(p, target=target, db=db, shapes=shapes, log=log)


def _read_inputs(path: str) -> dict[str, np.ndarray]:
    from vta.program_file import read_arrays

    return read_arrays(path, what="--inputs")


def _cmd_run(args: argparse.Namespace) -> int:
    from .accel_store import is_saved

    if args.target.split()[0] == "vta" or is_saved(args.model):
        from .accel_cli import run_vta

        if args.repeat:
            raise CompilerError("--repeat times the CPU target; --target vta reports cycles")
        return run_vta(args, _read_inputs(args.inputs))
    log = (lambda m: print(m, file=sys.stderr)) if not args.json else None
    graph = load_model(args.model, args.target, args.db, parse_shapes(args.shape), log)
    inputs = _read_inputs(args.inputs)
    outputs = graph.run(inputs)
    if args.output:
        np.savez(args.output, **outputs)
    result: dict = {"outputs": {k: list(v.shape) for k, v in outputs.items()}}
    if args.repeat:
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            graph.run(inputs)
            times.append((time.perf_counter() - t) * 1e3)
        lat = {"median": float(np.median(times)), "min": min(times), "max": max(times)}
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


def _cmd_compile(args: argparse.Namespace) -> int:
    from .build_onnx import compile_model

    t = time.perf_counter()
    if args.target.split()[0] == "vta":
        from . import accel_store
        from .accel_cli import compile_vta

        accel_store.save(compile_vta(args), args.output)
        print(f"compiled {args.model} in {time.perf_counter() - t:.2f} s -> {args.output}")
        return 0
    graph = compile_model(
        Path(args.model),
        target=args.target,
        db=args.db,
        shapes=parse_shapes(args.shape),
        log=lambda m: print(m, file=sys.stderr),
        print_passes=args.print_passes,
    )
    graph.save(args.output)
    print(f"compiled {args.model} in {time.perf_counter() - t:.2f} s -> {args.output}")
    return 0


def model_tasks(path: str, target: str, log=print) -> list[tuple[ConvTask, int]]:
    """The model's distinct convolution tuning tasks (with the graph's channel blocks;
    convolutions the build computes by Winograd have none, 1x1 ones it computes by
    input-channel chunks have the pointwise template's) and how many kernels of the graph
    each one makes; `log` gets the table of all the fused graph's distinct kernels first."""
    from ..codegen.target import target_scope
    from .build import conv_task, pointwise_convs, winograd_convs
    from .build_onnx import fused_graph, lower_groups
    from .passes import extract_tasks, format_tasks

    graph = fused_graph(path)
    log(format_tasks(graph, extract_tasks(graph)))
    with target_scope(target):
        groups, shapes, params, _, _ = lower_groups(graph)
        params = dict(params)
        winograd_convs(groups, shapes, params)  # these have no template task
        shapes = {**shapes, **{k: v.shape for k, v in params.items()}}
        pointwise_convs(groups, shapes, [])
    weights: dict[ConvTask, int] = {}
    for g in groups:
        task = conv_task(g, shapes)
        if task:
            weights[task] = weights.get(task, 0) + 1
    return list(weights.items())


def tune_model(args: argparse.Namespace) -> int:
    """`vta tune MODEL.onnx --target llvm --n-trial N --db F`: every conv task of the model in
    turn ([k/n] progress bars), resuming from and recording to the database."""
    from ..tune import tune_tasks
    from ..tune.database import Database
    from ..tune.measure import CPURunner, LocalBuilder, measure_option
    from ..tune.task import create_task

    model = next(w for w in args.workload if w.endswith(".onnx"))
    if args.target.split()[0] == "vta":
        from .accel_cli import tune_vta

        return tune_vta(args, model)
    if args.target.split()[0] != "llvm":
        raise CompilerError(f"tuning a model supports --target llvm or vta, not {args.target!r}")
    if not args.db:
        raise CompilerError("tuning a model needs --db FILE (its records make the compiled model)")
    found = model_tasks(model, args.target)
    print(f"{model}: {len(found)} tunable tasks")
    for k, (task, weight) in enumerate(found, 1):
        print(f"  [{k}/{len(found)}] {task.label()} x{weight}")
    tasks = [create_task(t.template, t.task_args(), "llvm") for t, _ in found]
    option = measure_option(
        LocalBuilder(timeout=args.build_timeout), CPURunner(threads=1, pool=None)
    )
    t = time.perf_counter()
    try:
        with Database(args.db) as db:
            histories = tune_tasks(
                tasks, args.n_trial, option, tuner=args.tuner, database=db, seed=args.seed
            )
    finally:
        option.close()
    for (task, _), h in zip(found, histories, strict=True):
        print(f"{task.label()}: {len(h.throughputs)} trials, {h.errors} errors")
    print(f"tuned {len(tasks)} tasks in {time.perf_counter() - t:.1f} s; records in {args.db}")
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--target",
        type=target_name,
        default="llvm",
        help="llvm (this CPU) or vta (the accelerator)",
    )
    p.add_argument("--db", help="tuning records to apply (untuned tasks use default schedules)")
    p.add_argument("--shape", action="append", metavar="NAME=DIMS", help="a symbolic input's shape")


def register_run(subparsers: argparse._SubParsersAction) -> None:
    """Add `vta run`."""
    p = subparsers.add_parser("run", help="run an ONNX model or a compiled model folder")
    p.add_argument("model", help="MODEL.onnx or a folder written by `vta compile`")
    p.add_argument("--inputs", required=True, help=".npz of the graph's inputs by name")
    p.add_argument("--output", help="write the outputs by name to this .npz")
    p.add_argument("--repeat", type=int_at_least(1), default=0, help="time N inferences")
    p.add_argument("--json", action="store_true", help="one JSON object as the last line")
    _common(p)
    from .accel_cli import add_arguments

    add_arguments(p, run=True)
    p.set_defaults(func=_cmd_run)


def register_compile(subparsers: argparse._SubParsersAction) -> None:
    """Add `vta compile`."""
    p = subparsers.add_parser("compile", help="compile an ONNX model into a folder")
    p.add_argument("model", help="MODEL.onnx")
    p.add_argument("-o", "--output", required=True, help="the compiled model's folder")
    p.add_argument("--print-passes", action="store_true", help="print the graph after each pass")
    _common(p)
    from .accel_cli import add_arguments

    add_arguments(p, run=False)
    p.set_defaults(func=_cmd_compile)
