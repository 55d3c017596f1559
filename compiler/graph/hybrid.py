"""One compiled module for a quantized, partitioned graph: its accelerator groups as Programs
(`accel.compile_qconv`, run by any device) beside its CPU groups' llvm kernels (each run of
consecutive CPU groups one `GraphModule`, one native call), and the boundary Quantize /
Dequantize nodes in numpy. Activations are packed into the accelerator's layout where the
accelerator first reads them and stay packed between its groups.

`run(feeds, device)` runs it on a device and checks every accelerator group's output bit for
bit against the quantized reference kernel on the same inputs (`reference.vta_conv`); with
device None the accelerator groups run that kernel. Saved to a folder (`model.json`, each CPU
segment's `GraphModule` folder, each accelerator group's Program file, `accel.npz` with the
quantized weights) and loaded without calibrating, searching or compiling.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from vta.config import VTAConfig
from vta.program import Program

from ..errors import OperatorError
from ..topi.vta.conv2d import Conv2DKnobs
from . import quant as Q
from .accel import (
    AccelConv,
    Rank,
    choose_knobs,
    compile_qconv,
    estimate_rank,
    fused_program,
    layer_structure,
    pack_act,
    report_row,
    unpack_act,
    worker_pool,
)
from .build_onnx import compile_fused
from .executor import BoardGraph, GraphModule
from .ir import Graph, Group, Node
from .passes.fuse import group_inputs
from .passes.partition import VTA
from .reference import run_node

FORMAT = "vta-model-1"


@dataclasses.dataclass
class Step:
    """One step: `kind` cpu (a GraphModule over `inputs` -> `outputs`), quantize / dequantize
    (numpy), or vta (an AccelConv); `groups` names the graph's groups it runs."""

    kind: str
    name: str
    inputs: list[str]
    outputs: list[str]
    groups: list[str]
    reason: str = ""
    module: GraphModule | BoardGraph | None = None
    node: Node | None = None
    accel: AccelConv | None = None
    shapes: tuple = ()  # vta: the NCHW shapes of its input and shortcut input (or None)


@dataclasses.dataclass
class HybridModule:
    """A compiled model for one accelerator configuration (see the module's docstring), or,
    with `cfg` None, for the CPU alone (one step: the whole graph's GraphModule): the one
    compiled-model folder format of both targets."""

    cfg: VTAConfig | None
    steps: list[Step]
    inputs: dict[str, tuple[int, ...]]
    outputs: list[str]
    constants: dict[str, np.ndarray]
    compile_seconds: float = 0.0
    calibration: str = ""
    compile_times: dict[str, float] = dataclasses.field(default_factory=dict)  # by stage
    fp32: Graph | None = None  # the fp32 graph it was compiled from (not saved)

    def run(
        self, feeds: dict[str, np.ndarray], device: str | None = None
    ) -> tuple[dict[str, np.ndarray], list[dict]]:
        """(outputs by name, one report row per step) on `device` (None: the accelerator
        groups in numpy); raises OperatorError naming the inputs given wrongly."""
        if set(feeds) != set(self.inputs):
            raise OperatorError(f"inputs: give exactly {sorted(self.inputs)}, got {sorted(feeds)}")
        env = {}
        for t, shape in self.inputs.items():
            env[t] = np.asarray(feeds[t], np.float32)
            if env[t].shape != shape:
                raise OperatorError(f"input '{t}' has shape {list(env[t].shape)}, expected "
                                    f"{list(shape)}")  # fmt: skip
        env.update(self.constants)
        packed: dict[str, np.ndarray] = {}
        rows = []
        for step in self.steps:
            start = time.perf_counter()
            if step.kind == "cpu":
                env.update(step.module.run({t: env[t] for t in step.inputs}))
                rows.append(self._row(step, "llvm", start))
            elif step.kind == "vta" and device is not None:
                rows.append(self._device(step, env, packed, device))
            else:
                node = step.node
                outs = run_node(node, [env[t] if t else None for t in node.inputs])
                env.update(zip(node.outputs, outs, strict=True))
                rows.append(self._row(step, "numpy", start))
        return {t: env[t] for t in self.outputs}, rows

    def _row(self, step: Step, kernel: str, start: float) -> dict:
        took = time.perf_counter() - start
        where = "vta" if step.kind == "vta" else "cpu"
        row = {"name": step.name, "where": where, "why": step.reason, "cpu_seconds": took}
        return {**row, "kernel": kernel, "groups": step.groups}

    def _device(self, step: Step, env: dict, packed: dict, device: str) -> dict:
        """Run an accelerator step on `device`; its output must equal the reference kernel's."""
        node, layer = step.node, step.accel
        x, res, sc = node.inputs[0], node.inputs[3], node.inputs[4]
        for t in filter(None, (x, res, sc)):
            if t not in packed:
                packed[t] = pack_act(env[t], self.cfg)
        res_in, sc_in = (packed[t] if t else None for t in (res, sc))
        out, stats = layer.run(device, packed[x], res_in, sc_in)
        y = unpack_act(out, layer.out_channels)
        expected = run_node(node, [env[t] if t else None for t in node.inputs])[0]
        hi = node.attrs["clip_hi"]
        if hi < 127:  # Clip's upper bound: an int8 minimum on the CPU
            y = np.minimum(y, np.int8(hi))
        else:
            packed[node.outputs[0]] = out
        if not np.array_equal(y, expected):
            bad = int((y != expected).sum())
            raise OperatorError(f"{step.name}: {device} differs from the quantized reference in "
                                f"{bad} of {y.size} values")  # fmt: skip
        env[node.outputs[0]] = y
        return {**report_row(layer, stats), "why": step.reason, "bit_exact": True}

    # ---- save and load ------------------------------------------------------------------
    def save(self, folder: str | Path) -> None:
        """model.json, accel.npz (quantized weights, biases, the constants numpy steps read),
        cpu<k>/ (each CPU segment's GraphModule) and <group>.npz (each accelerator group's
        Program, in the Program file format every device and `vta sim` read)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        steps = []
        for k, s in enumerate(self.steps):
            d = {f: getattr(s, f) for f in ("kind", "name", "inputs", "outputs", "groups",
                                              "reason")}  # fmt: skip
            if s.module is not None:
                d["module"] = f"cpu{k}"
                s.module.save(folder / d["module"])
            if s.node is not None:
                n = s.node
                d["node"] = {"op": n.op, "inputs": n.inputs, "outputs": n.outputs,
                             "attrs": n.attrs, "name": n.name}  # fmt: skip
            if s.accel is not None:
                d["knobs"] = dataclasses.asdict(s.accel.knobs)
                d["program"] = f"{s.name}.npz"
                s.accel.program.save(folder / d["program"])
                d["shapes"] = [None if x is None else list(x) for x in s.shapes]
            steps.append(d)
        manifest = {
            "format": FORMAT,
            "target": "llvm" if self.cfg is None else "vta",
            "config": None if self.cfg is None else self.cfg.to_dict(),
            "inputs": {t: list(v) for t, v in self.inputs.items()},
            "outputs": self.outputs,
            "calibration": self.calibration,
            "steps": steps,
        }
        (folder / "model.json").write_text(json.dumps(manifest, indent=1, default=int))
        np.savez(folder / "accel.npz", **self.constants)

    @staticmethod
    def is_saved(folder: str | Path) -> bool:
        return (Path(folder) / "model.json").is_file()

    @staticmethod
    def saved_target(folder: str | Path) -> str | None:
        """The target a folder `save` wrote was compiled for (llvm or vta), None for any
        other path."""
        try:
            target = json.loads((Path(folder) / "model.json").read_text()).get("target")
        except (OSError, ValueError, AttributeError):
            return None
        return target if target in ("llvm", "vta") else None

    @classmethod
    def cpu_only(cls, module: GraphModule) -> HybridModule:
        """A model compiled for the CPU alone (`vta compile --target llvm`) as one step."""
        inputs = {s.name: tuple(s.shape) for s in module.inputs}
        outputs = [s.name for s in module.outputs]
        step = Step("cpu", "graph", list(inputs), outputs, [], "", module=module)
        return cls(None, [step], inputs, outputs, {})

    @classmethod
    def load(cls, folder: str | Path) -> HybridModule:
        """The module `save` wrote, its Programs read back (validated, as every Program file)."""
        folder = Path(folder)
        try:
            m = json.loads((folder / "model.json").read_text())
            if m.get("format") != FORMAT:
                raise OperatorError(f"{folder}: model.json is not a {FORMAT} manifest")
            cfg = None if m["config"] is None else VTAConfig.from_dict(m["config"])
            with np.load(folder / "accel.npz", allow_pickle=False) as z:
                constants = {k: z[k] for k in z.files}
            steps = []
            for d in m["steps"]:
                node = Node(**d["node"]) if "node" in d else None
                step = Step(d["kind"], d["name"], d["inputs"], d["outputs"], d["groups"],
                            d["reason"], node=node)  # fmt: skip
                if "module" in d:
                    step.module = GraphModule.load(folder / d["module"])
                if "knobs" in d:
                    step.shapes = tuple(None if x is None else tuple(x) for x in d["shapes"])
                    step.accel = _accel(node, constants, *step.shapes, cfg,
                                        knobs=Conv2DKnobs(**d["knobs"]),
                                        program=Program.load(folder / d["program"]))  # fmt: skip
                steps.append(step)
        except (OSError, KeyError, TypeError, ValueError) as e:
            why = f"{type(e).__name__}: {e}"
            raise OperatorError(f"{folder}: not a compiled model ({why})") from None
        inputs = {t: tuple(v) for t, v in m["inputs"].items()}
        return cls(cfg, steps, inputs, m["outputs"], constants, 0.0, m.get("calibration", ""))


def _qconv(node: Node, constants: dict) -> Q.QConv:
    """The QConv of a VTAConv node."""
    w, b = constants[node.inputs[1]], constants[node.inputs[2]]
    return Q.qconv_of(node.attrs, w, b, constants[node.inputs[5]] if node.inputs[5] else None)


def _accel(node: Node, constants: dict, in_shape, sc_shape, cfg: VTAConfig, **options):
    """The AccelConv of a VTAConv node."""
    return compile_qconv(node.name, _qconv(node, constants), in_shape, cfg, sc_shape, **options)


def accelerator_layers(graph: Graph, cfg: VTAConfig) -> dict[str, tuple]:
    """Each accelerator group's (input shape, shortcut input shape, workload, epilogue) on
    configuration `cfg`, by group name."""
    out = {}
    for g in graph.groups:
        if g.target == VTA:
            node = g.nodes[0]
            x, sc = (graph.value(t).shape if t else None for t in (node.inputs[0], node.inputs[4]))
            wl, ep = layer_structure(node.name, _qconv(node, graph.constants), x, cfg, sc)
            out[g.name] = (x, sc, wl, ep)
    return out


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
            in_shape, sc_shape, _, _ = structures[g.name]
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
    module.compile_seconds = sum(module.compile_times.values())
    module.fp32 = fp32
    return module, q


def tuning_tasks(graph: Graph, cfg: VTAConfig) -> list[tuple[tuple, int]]:
    """The quantized graph's distinct conv2d_fused tuning tasks (template arguments) with how
    many of its accelerator groups each one makes; records of them serve `compile_hybrid`'s
    `db`."""
    from ..tune.templates.vta import fused_args

    weights: dict[tuple, int] = {}
    for _, _, wl, ep in accelerator_layers(graph, cfg).values():
        args = fused_args(wl, ep)
        weights[args] = weights.get(args, 0) + 1
    return list(weights.items())


__all__ = [
    "FORMAT",
    "HybridModule",
    "Step",
    "accelerator_programs",
    "compile_for_accelerator",
    "compile_hybrid",
    "tuning_tasks",
]
