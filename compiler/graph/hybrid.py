"""Compile a quantized, partitioned graph into a `runtime.HybridModule`: its accelerator groups
as Programs (`accel.compile_qconv`, run by any device) beside its CPU groups' kernels (each run
of consecutive CPU groups one `GraphModule`, compiled for this machine or the board's CPU), and
the boundary Quantize / Dequantize nodes, which run in numpy. The module runs, saves and loads
without the compiler (`runtime.py`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np

from vta.config import VTAConfig
from vta.program import Program

from ..topi.vta.conv2d import Conv2DKnobs
from .accel import (
    Rank,
    choose_knobs,
    compile_qconv,
    estimate_rank,
    fused_program,
    layer_structure,
    worker_pool,
)
from .build_onnx import compile_fused
from .ir import Graph, Group, Node
from .passes.fuse import group_inputs
from .passes.partition import VTA
from .quant import product_qconv
from .runtime import AccelProduct, HybridModule, Step, qconv_of_node


def _accel(node: Node, constants: dict, in_shape, sc_shape, cfg: VTAConfig, **options):
    """The AccelConv of a VTAConv node."""
    q = qconv_of_node(node, constants)
    return compile_qconv(node.name, q, in_shape, cfg, sc_shape, **options)


def _product_layer(graph: Graph, node: Node, cfg: VTAConfig) -> tuple:
    """A VTAMatMul node's (input shape, None, workload, epilogue): its heads as the batch of
    one Program with a weight set each (`Epilogue.batch_weights`; zeros stand for the run-time
    weight here)."""
    heads = node.attrs["heads"]
    n, c, h, w = graph.value(node.inputs[0]).shape
    m, k = graph.value(node.inputs[1]).shape[:2]
    x = (n * heads, c // heads, h, w)
    q = product_qconv(node.attrs, np.zeros((m // heads, k, 1, 1), np.int8))
    wl, ep = layer_structure(node.name, q, x, cfg)
    return x, None, wl, dataclasses.replace(ep, batch_weights=True)


def accelerator_layers(graph: Graph, cfg: VTAConfig) -> dict[str, tuple]:
    """Each accelerator group's (input shape, shortcut input shape, workload, epilogue) on
    configuration `cfg`, by group name (an attention product's heads as its batch)."""
    out = {}
    for g in graph.groups:
        if g.target == VTA and g.nodes[0].op == "VTAMatMul":
            out[g.name] = _product_layer(graph, g.nodes[0], cfg)
        elif g.target == VTA:
            node = g.nodes[0]
            x, sc = (graph.value(t).shape if t else None for t in (node.inputs[0], node.inputs[4]))
            wl, ep = layer_structure(node.name, qconv_of_node(node, graph.constants), x, cfg, sc)
            out[g.name] = (x, sc, wl, ep)
    return out


def cpu_work(graph: Graph, g: Group) -> tuple[int, int]:
    """A CPU group's FLOPs (`Graph.flops` of its nodes) and DRAM bytes (what it reads from
    outside and its last node writes, once each), from the graph's static shapes: the board
    model's inputs before any kernel is compiled."""
    flops = sum(graph.flops(n) for n in g.nodes)
    moved = [*group_inputs(g), *(t for t in g.nodes[-1].outputs if t)]
    values = (graph.value(t) for t in moved)
    return flops, sum(math.prod(v.shape) * np.dtype(v.dtype or "float32").itemsize for v in values)


def board_rows(graph: Graph, cycles: dict[str, int]) -> list[dict]:
    """The quantized graph as the run report's rows that the board model reads
    (`runtime.board_model`), without compiling or running it: each accelerator group with its
    `cycles` (by group name), each CPU group with `cpu_work` (Quantize and Dequantize as the
    numpy steps they run as)."""
    rows = []
    for g in graph.groups:
        if g.target == VTA:
            rows.append({"where": "vta", "cycles": cycles[g.name]})
            continue
        kernel = "numpy" if g.nodes[0].op in ("Quantize", "Dequantize") else "llvm"
        flops, nbytes = cpu_work(graph, g)
        rows.append({"where": "cpu", "kernel": kernel, "flops": flops, "bytes": nbytes})
    return rows


def layer_knobs(
    structures: dict[str, tuple],
    cfg: VTAConfig,
    candidates: int,
    db: str | None,
    pool=None,
    rank: Rank = estimate_rank,
) -> dict[str, Conv2DKnobs]:
    """Each accelerator group's knobs (`accel.choose_knobs`, all searches at once; its layers'
    Programs are built with them)."""
    layers = [(wl, ep) for _, _, wl, ep in structures.values()]
    chosen = choose_knobs(layers, cfg, candidates, db, pool, rank)
    return {g: chosen[(wl, ep.structure())] for g, (_, _, wl, ep) in structures.items()}


def accelerator_programs(
    graph: Graph,
    cfg: VTAConfig,
    candidates: int = 8,
    db: str | None = None,
    pool=None,
    rank: Rank = estimate_rank,
) -> dict[str, Program]:
    """The quantized graph's accelerator groups' Programs, knobs chosen as `compile_hybrid`
    chooses them (or among the candidates `rank` puts first), without compiling its CPU
    kernels (what the co-design search times)."""
    structures = accelerator_layers(graph, cfg)
    knobs = layer_knobs(structures, cfg, candidates, db, pool, rank)
    return {g: fused_program(wl, ep, knobs[g], cfg) for g, (_, _, wl, ep) in structures.items()}


def _is_cpu_run(g: Group) -> bool:
    """Whether group `g` joins a run of CPU groups (not an accelerator or boundary node)."""
    return g.target != VTA and g.nodes[0].op not in ("Quantize", "Dequantize")


def _segments(graph: Graph) -> list[list[Group]]:
    """The groups in runs: consecutive fp32 CPU groups together, every other group alone."""
    runs: list[list[Group]] = []
    for g in graph.groups:
        if _is_cpu_run(g) and runs and _is_cpu_run(runs[-1][0]):
            runs[-1].append(g)
        else:
            runs.append([g])
    return runs


def _subgraph(graph: Graph, groups: list[Group], later: set[str]) -> Graph:
    """A run of CPU groups as a graph of its own: inputs it reads from before, outputs read
    after it (`later`) or by the graph's outputs."""
    nodes = [n for g in groups for n in g.nodes]
    made = {o for n in nodes for o in n.outputs if o}
    reads = [t for g in groups for t in group_inputs(g)]
    inputs = list(dict.fromkeys(t for t in reads if t not in made and t not in graph.constants))
    outputs = [o for n in nodes for o in n.outputs if o and o in later]
    consts = {t: graph.constants[t] for t in reads if t in graph.constants}
    sub = Graph(nodes, inputs, outputs, dict(graph.values), consts, list(groups), groups[0].name)
    return sub


def compile_hybrid(
    graph: Graph,
    cfg: VTAConfig,
    candidates: int = 8,
    db: str | None = None,
    log=None,
    host_target: str = "llvm",
) -> HybridModule:
    """The quantized graph (`passes.quantize`) compiled: Programs for its accelerator groups
    (knobs from `db` or the best of `candidates` on the timing-only simulator), llvm kernels
    for its CPU runs, compiled for `host_target` (another machine's CPU, the board's: saved
    and run there)."""
    start = time.perf_counter()
    runs = _segments(graph)
    subs = {}  # the CPU runs as graphs of their own, by run index
    for k, run in enumerate(runs):
        if _is_cpu_run(run[0]):
            later = set(graph.outputs).union(*(group_inputs(h) for r in runs[k + 1 :] for h in r))
            subs[k] = _subgraph(graph, run, later)
    structures = accelerator_layers(graph, cfg)
    with worker_pool() as pool:  # all searches at once, each building its layers' Programs
        knobs = layer_knobs(structures, cfg, candidates, db, pool)
    search = time.perf_counter() - start
    # after the search: compiled beside it, they slowed its workers more than they saved
    modules = {k: compile_fused(sub, host_target, log=log) for k, sub in subs.items()}
    times = {
        "knob search, Programs": search,
        "CPU kernels": time.perf_counter() - start - search,
    }
    steps: list[Step] = []
    for k, run in enumerate(runs):
        g = run[0]
        if g.target == VTA:
            node = g.nodes[0]
            in_shape, sc_shape, wl, ep = structures[g.name]
            if node.op == "VTAMatMul":
                program = fused_program(wl, ep, knobs[g.name], cfg)
                accel = AccelProduct(g.name, dataclasses.asdict(knobs[g.name]), program)
            else:
                accel = _accel(node, graph.constants, in_shape, sc_shape, cfg, knobs=knobs[g.name])
            step = Step("vta", g.name, [node.inputs[0]], node.outputs, [g.name], g.reason,
                        node=node, accel=accel, shapes=(in_shape, sc_shape))  # fmt: skip
        elif k not in subs:
            node = g.nodes[0]
            step = Step(node.op.lower(), g.name, node.inputs, node.outputs, [g.name], g.reason,
                        node=node)  # fmt: skip
        else:
            why = "; ".join(dict.fromkeys(f"{h.name}: {h.reason}" for h in run))
            step = Step("cpu", g.name, subs[k].inputs, subs[k].outputs, [h.name for h in run],
                        why, module=modules[k])  # fmt: skip
        steps.append(step)
    read = {t for s in steps if s.node is not None for t in s.node.inputs}
    constants = {t: v for t, v in graph.constants.items() if t in read}
    inputs = {t: tuple(graph.value(t).shape) for t in graph.inputs}
    seconds = time.perf_counter() - start
    module = HybridModule(cfg, steps, inputs, list(graph.outputs), constants, seconds)
    module.compile_times = times
    return module


def compile_for_accelerator(
    model: Graph | str | Path,
    cfg: VTAConfig,
    calibration: list[dict[str, np.ndarray]],
    db: str | None = None,
    candidates: int = 8,
    method: str = "mse",
    print_passes: bool = False,
    log=None,
    host_target: str = "llvm",
) -> tuple[HybridModule, Graph]:
    """A model (an ONNX file, or its fused graph) compiled for the accelerator: partitioned,
    calibrated on `calibration` (feeds by input name, one dict per input), quantized and
    compiled (its CPU layers for `host_target`); also the quantized graph (the reference
    executor's program)."""
    from .build_onnx import fused_graph
    from .passes.partition import partition
    from .passes.quantize import calibrate, quantize

    times, mark = {}, time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        times[stage], mark = now - mark, now

    fp32 = model if isinstance(model, Graph) else fused_graph(model, None, print_passes)
    lap("import and graph passes")
    graph = partition(fp32, cfg)  # a new graph: the fp32 one stays as it was
    if print_passes:
        print(f"== partition ==\n{graph}")
    lap("partition")
    observed = calibrate(graph, calibration)
    lap("calibration")
    q = quantize(graph, observed, method)
    if print_passes:
        print(f"== quantize ==\n{q}")
    lap("quantization")
    module = compile_hybrid(q, cfg, candidates, db, log, host_target)
    module.compile_times = {**times, **module.compile_times}
    module.compile_seconds += sum(times.values())
    module.fp32 = fp32
    return module, q


def tuning_tasks(graph: Graph, cfg: VTAConfig) -> list[tuple[tuple, int]]:
    """The quantized graph's distinct conv2d_fused tuning tasks (template arguments) with how
    many of its accelerator groups each one makes; records of them serve `compile_hybrid`'s
    `db`. Attention products are none (the template's arguments hold one weight set: their
    knobs come from the search on the timing-only simulator)."""
    from ..tune.templates.vta import fused_args

    weights: dict[tuple, int] = {}
    for _, _, wl, ep in accelerator_layers(graph, cfg).values():
        if ep.batch_weights:
            continue
        args = fused_args(wl, ep)
        weights[args] = weights.get(args, 0) + 1
    return list(weights.items())


__all__ = [
    "HybridModule",
    "Step",
    "accelerator_programs",
    "compile_for_accelerator",
    "compile_hybrid",
    "tuning_tasks",
]
