"""The CPU graph's tuning tasks and schedules, in one place: what the build compiles, what
`vta tune MODEL.onnx` tunes (template tasks) and what `vta tune MODEL.onnx --tuner ansor`
tunes (the groups' auto-scheduler workloads) are all read off the CPU's lowered groups after
the CPU-layout passes (`passes.cpu_layout`: dense packing, Winograd, pointwise), which mark
each convolution with the kernel that computes it.

- Template tasks: a group's convolution is a `conv2d_NCHWc` task (or `conv2d_1x1_NCHWc` for a
  conv marked `pointwise`) with the graph's channel blocks (`conv_task`); Winograd convs have
  none. A dense layer in one reduction is a `matmul` task with the graph's panel width
  (`dense_task`); an attention kernel an `attention` task (`attention_task`).
  `template_tasks` lists a model's distinct ones with their use counts.
- The auto-scheduler's workload `graph_group`: a fused group (a convolution with its bias,
  residual add, ReLU or clip, in the graph's packed layouts, or a dense layer with its bias,
  residual add or GELU: `tunable`) keyed by its spec (JSON: its
  inputs' shapes and its nodes with local tensor names) and rebuilt from it with the graph's
  own operator computes (`build_ops.group_tensors`). This module registers it in the
  auto-scheduler's workload registry; tasks carry the registering module to measurement
  workers, which import it (`autoschedule.workload.import_workload`). `group_tasks` lists a
  model's distinct groups with their use counts.
- `group_schedule`: a kernel's schedule from the dispatch context (`tune.dispatch
  .ApplyHistoryBest`): its template task's record with the graph's blocks from the first
  source holding one, or the group's auto-scheduler program when it measured faster (or there
  is no template record), with the source it came from.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..autoschedule.program import KIND
from ..autoschedule.workload import register_workload
from ..errors import TuningError
from ..schedule.schedule import create_schedule
from ..te.tensor import Tensor
from ..topi import x86
from ..topi.x86.dense import tile_rows
from ..topi.x86.utils import reduction_unroll
from ..tune.dispatch import ApplyHistoryBest
from ..tune.task import create_task
from ..tune.templates.cpu import attention_knobs
from .build_ops import Group, Node, group_tensors, schedule_group

DIRECT, POINTWISE = "conv2d_NCHWc", "conv2d_1x1_NCHWc"  # the convolution templates
MATMUL = "matmul"  # the dense layers' template (B packed)
ATTENTION = "attention"  # the fused attention kernel's template
WORKLOAD = "graph_group"  # the auto-scheduler's workload of a fused group
AUTO_SCHEDULED = "auto-scheduler records"  # the origin of a kernel scheduled by a program


# ------------------------------------------------------------------------- template tasks
class TemplateTask(NamedTuple):
    """A group's template tuning task: the template (`conv2d_NCHWc`, `conv2d_1x1_NCHWc` for a
    conv marked `pointwise`, `matmul` for a dense layer, `attention`), its args, the graph's
    blocks and the padding on every side (None: the template's default kh // 2)."""

    template: str
    # c, h, w, f, kh, kw, stride (pointwise: c, h, w, f; matmul: m, n, k; attention: heads,
    # tq, tk, d, dv, masked)
    args: tuple[int, ...]
    blocks: tuple[int, ...]  # ic_bn, oc_bn (matmul: the panel width bn; attention: none)
    padding: int | None

    def task_args(self, blocks: bool = True) -> tuple:
        """The template's arguments: with the graph's blocks fixed, or 0s = free."""
        tail = () if self.padding is None else (self.padding,)
        if blocks:
            return (*self.args, *self.blocks, *tail)
        return (*self.args, *(0 for _ in self.blocks), *tail) if tail else self.args

    def label(self) -> str:
        return f"{self.template}{self.task_args()}"


def conv_task(group: Group, shapes: dict) -> TemplateTask | None:
    """The group's tuning task for a batch-1, group-1, undilated convolution with a square
    kernel, equal strides and the same zero padding on every side, else None."""
    for n in group.nodes:
        if n.op != "Conv" or n.attrs.get("winograd"):
            continue
        data, w = shapes[n.inputs[0]], shapes[n.inputs[1]]
        kh, kw = w[2], w[3]
        stride = list(n.attrs.get("strides") or [1, 1])
        pads = list(n.attrs.get("pads") or [0, 0, 0, 0])
        if (
            n.attrs.get("group", 1) != 1
            or data[0] != 1
            or kh != kw
            or stride[0] != stride[1]
            or len(set(pads)) != 1
            or any(d != 1 for d in n.attrs.get("dilations") or [1, 1])
        ):
            return None
        args = (data[1] * data[4], data[2], data[3], w[0] * w[5])
        if n.attrs.get("pointwise"):
            return TemplateTask(POINTWISE, args, (data[4], w[5]), None)
        padding = None if pads[0] == kh // 2 else pads[0]
        return TemplateTask(DIRECT, (*args, kh, kw, stride[0]), (data[4], w[5]), padding)
    return None


def dense_task(group: Group, shapes: dict) -> TemplateTask | None:
    """The group's `matmul` task for a float32 dense layer whose panels tile its columns and
    whose K is one reduction (`x86.reduction_streams`: the rows fill the register tile),
    with the graph's panel width, else None."""
    for n in group.nodes:
        if n.op != "Dense":
            continue
        (m, k), bn, units = shapes[n.inputs[0]], shapes[n.inputs[1]][2], n.attrs["units"]
        if units % bn or group.dtype_of(n.inputs[0]) != "float32":
            return None
        if x86.reduction_streams(m, k, bn) > 1:
            return None
        return TemplateTask(MATMUL, (m, units, k), (bn,), None)
    return None


def attention_task(group: Group, shapes: dict) -> TemplateTask | None:
    """The group's `attention` task for a float32 attention kernel: its batch and head axes as
    one of heads, query rows, keys, widths, and whether it has a mask (any mask tunes as the
    template's mask over the keys, the schedule being the same), else None."""
    for n in group.nodes:
        if n.op != "Attention" or group.dtype_of(n.inputs[0]) != "float32":
            continue
        *batch, tq, d = shapes[n.inputs[0]]
        tk, dv = shapes[n.inputs[1]][-1], shapes[n.inputs[2]][-1]
        heads = int(np.prod(batch, dtype=np.int64))
        return TemplateTask(ATTENTION, (heads, tq, tk, d, dv, int(len(n.inputs) > 3)), (), None)
    return None


def default_config(task: TemplateTask) -> dict | None:
    """The task's template config (knob values, as records hold them) that schedules it as
    the build's default does, in the current target's scope: a dense layer's
    (`x86.schedule_dense_pack`: the register tile's rows for its panel (`tile_rows`), K in
    `reduction_unroll` steps unrolled, panels outside the row tiles, parallel), an attention's
    (`x86.default_attention_knobs`); None for a convolution."""
    if task.template == ATTENTION:
        tq = task.args[1]
        knobs = x86.default_attention_knobs(tq)
        return {
            "tile_q": [tq // knobs["rows"], knobs["rows"]],
            **{k: knobs[k] for k in ("score_vectors", "context_vectors", "unroll", "parallel")},
        }
    if task.template != MATMUL:
        return None
    (m, n, k), (bn,) = task.args, task.blocks
    rows, step = min(tile_rows(bn), m), reduction_unroll(k)
    return {
        "tile_y": [-(-m // rows), rows],
        "tile_x": [n // bn, bn],
        "tile_k": [k // step, step],
        "unroll_k": step > 1,
        "order": [0, 1],
        "ann_outer": ["parallel"],
    }


def template_task(group: Group, shapes: dict) -> TemplateTask | None:
    """The group's template tuning task: its convolution's, its dense layer's or its
    attention's, or None."""
    return conv_task(group, shapes) or dense_task(group, shapes) or attention_task(group, shapes)


def template_tasks(groups: list[Group], shapes: dict) -> list[tuple[TemplateTask, int]]:
    """The distinct template tuning tasks of the groups (after the CPU-layout passes) and
    how many groups use each, in the groups' order."""
    counts: dict[TemplateTask, int] = {}
    for g in groups:
        task = template_task(g, shapes)
        if task:
            counts[task] = counts.get(task, 0) + 1
    return list(counts.items())


def _blocks(template: str, cfg: Any) -> tuple[int, ...]:
    """A template config's blocks, as `TemplateTask.blocks` names them."""
    if template == MATMUL:
        return (cfg["tile_x"].size[1],)
    if template == ATTENTION:
        return ()
    return (cfg["tile_ic"].size[1], cfg["tile_oc"].size[1])


def tuned_knobs(
    records: ApplyHistoryBest, task: TemplateTask
) -> tuple[dict, float, str, str] | None:
    """The task's template knobs from the first records source holding a record with the
    graph's blocks (tuned with them fixed, or freely with these blocks among the configs
    tried; measured with the build's thread count if any source has one): (knobs, cost in
    seconds, the source's name, the thread-count note: `dispatch.thread_note`), or None."""
    variants = dict.fromkeys((task.task_args(), task.task_args(blocks=False)))
    found = records.query(
        [create_task(task.template, args, "llvm") for args in variants],
        lambda cfg: _blocks(task.template, cfg) == task.blocks,
    )
    if found is None:
        return None
    best = found.config
    if task.template == MATMUL:
        knobs = {
            "tile_y": best["tile_y"].size[1],
            "tile_k": best["tile_k"].size[1],
            "unroll_k": best["unroll_k"].val,
            "order": tuple(best["order"].perm),
            "parallel": best["ann_outer"].anns[0] == "parallel",
        }
        return knobs, found.cost, found.source, found.note
    if task.template == ATTENTION:
        return attention_knobs(best), found.cost, found.source, found.note
    if task.template == POINTWISE:
        return {"tile_p": best["tile_p"].size[1]}, found.cost, found.source, found.note
    knobs = {
        "tile_oh": best["tile_oh"].size[1],
        "tile_ow": best["tile_ow"].size[1],
        "unroll_kw": best["unroll_kw"].val,
        "parallel": best["parallel"].val,
        "pad": best["pad"].val,
    }
    return knobs, found.cost, found.source, found.note


def records_keep_direct(records: ApplyHistoryBest | None, direct: TemplateTask | None) -> bool:
    """Whether the first records source holding a record of a 1x1 conv's direct task or of
    its pointwise one holds only the direct one (records tuned before the pointwise kernel
    existed; the AVX-512 records shipped)."""
    if direct is None or records is None:
        return False
    pointwise = direct._replace(template=POINTWISE, args=direct.args[:4])
    for name, db in records.sources:
        one = ApplyHistoryBest([(name, db)], threads=records.threads)
        if tuned_knobs(one, pointwise):
            return False
        if tuned_knobs(one, direct):
            return True
    return False


# ----------------------------------------------------------- the auto-scheduler's workload
# the anchors of the groups the auto-scheduler tunes. Not Attention: its sketch leaves the
# scores and the exponentials (two consumers each) at root, storing the whole score matrix
# that the fused kernel computes a block of rows at a time (template `attention` only)
TUNED_OPS = ("Conv", "Dense")


def tunable(group: Group) -> bool:
    """Groups the auto-scheduler tunes: those with a convolution (dense, depthwise or grouped)
    or a dense layer (a MatMul or Gemm by a constant weight, packed by `passes.cpu_layout`)."""
    return any(n.op in TUNED_OPS for n in group.nodes)


def group_spec(group: Group, shapes: dict) -> str:
    """The group as canonical JSON: inputs' shapes in order, nodes with inputs named `inK`
    (the group's K-th input) or `nK` (its K-th node's output) and their attributes, the
    output's shape."""
    local = {t: f"in{k}" for k, t in enumerate(group.inputs)}
    nodes = []
    for k, n in enumerate(group.nodes):
        # `pointwise` is how the template build computes a 1x1 conv (same function, same
        # weights), not part of what the group computes
        attrs = {a: v for a, v in n.attrs.items() if a != "pointwise"}
        nodes.append([n.op, [local[t] for t in n.inputs], attrs])
        local[n.output] = f"n{k}"
    spec = {
        "inputs": [list(shapes[t]) for t in group.inputs],
        "nodes": nodes,
        "output": list(shapes[group.output]),
    }
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def describe(spec: str) -> str:
    """A group spec in one line: its operators, a convolution's kernel/stride/groups, and
    the shape of its first input, e.g. `Conv(3x3/1)+Add+Relu on [1, 2, 56, 56, 32]`."""
    group, shapes = _group(spec)
    ops = []
    for n in group.nodes:
        if n.op == "Conv":
            kh, kw = n.attrs.get("kernel_shape", ["?", "?"])
            stride = (n.attrs.get("strides") or [1])[0]
            groups = n.attrs.get("group", 1)
            how = f", {groups} groups" if groups > 1 else ""
            how += ", Winograd" if n.attrs.get("winograd") else ""
            ops.append(f"Conv({kh}x{kw}/{stride}{how})")
        else:
            ops.append(n.op)
    return f"{'+'.join(ops)} on {list(shapes['in0'])}"


def _group(spec: str) -> tuple[Group, dict]:
    try:
        d = json.loads(spec)
        shapes = {f"in{k}": tuple(shape) for k, shape in enumerate(d["inputs"])}
        shapes[f"n{len(d['nodes']) - 1}"] = tuple(d["output"])
        nodes = [
            Node(op, list(ins), f"n{k}", dict(attrs))
            for k, (op, ins, attrs) in enumerate(d["nodes"])
        ]
    except (ValueError, KeyError, TypeError) as err:
        raise TuningError(f"graph_group: not a group spec ({err}): {spec[:80]}") from None
    if not nodes:
        raise TuningError("graph_group: the spec has no nodes")
    return Group("graph_group", nodes), shapes


def _reference(inputs: list[np.ndarray], spec: str) -> list[np.ndarray]:
    """The group built with the graph's default schedule, run on the same inputs."""
    from ..driver import build

    tensors = graph_group(spec)
    out = np.zeros(tensors[-1].shape, tensors[-1].dtype)
    build(schedule_group(tensors[-1]), tensors, target="llvm")(*inputs, out)
    return [out]


@register_workload(WORKLOAD, _reference)
def graph_group(spec: str) -> list[Tensor]:
    """The fused group's compute definition: its inputs in order, then its output. Operations
    are renamed apart (a bias and a residual are both `add`): programs name stages by them."""
    group, shapes = _group(spec)
    tensors = group_tensors(group, shapes)
    seen: Counter[str] = Counter()
    for op in [st.op for st in create_schedule([tensors[-1].op]).stages]:
        seen[op.name] += 1
        if seen[op.name] > 1:
            op.name = f"{op.name}_{seen[op.name] - 1}"
    return tensors


def group_similarity(spec: str) -> str:
    """The task scheduler's similarity key of a group: its operators with a convolution's
    kernel, stride and algorithm, without shapes (`Conv(3x3/1, Winograd)+Add+Relu`), so the
    gradient rule compares a group's throughput with groups that compute alike."""
    return describe(spec).split(" on ")[0]


def group_workloads(groups: list[Group], shapes: dict) -> list[tuple[tuple[str, tuple], int]]:
    """The groups' distinct tunable ones (after the CPU-layout passes) as ((WORKLOAD,
    (spec,)), how many groups use each), in the groups' order."""
    counts = Counter(group_spec(g, shapes) for g in groups if tunable(g))
    return [((WORKLOAD, (spec,)), n) for spec, n in counts.items()]


# ------------------------------------------------------------------------ a model's tasks
def model_groups(path: str | Path, target: str, log: Callable[[str], None] | None = None):
    """The model's CPU groups after the graph passes, the lowering and the CPU-layout passes
    without records (`build_onnx.cpu_groups`; what tuning sees: a 1x1 conv is pointwise
    wherever that pays); `log` gets the fused graph's table of distinct kernels first."""
    from .build_onnx import cpu_groups, fused_graph  # build_onnx imports the build, which
    from .passes import extract_tasks, format_tasks  # imports this module

    graph = fused_graph(path)
    if log:
        log(format_tasks(graph, extract_tasks(graph)))
    return cpu_groups(graph, target)


def group_tasks(path: str | Path, target: str = "llvm") -> list[tuple[tuple[str, tuple], int]]:
    """The model's distinct tunable groups as ((WORKLOAD, (spec,)), how many kernels of the
    graph each one makes), in the graph's order (what `vta tune MODEL --tuner ansor` tunes)."""
    cpu = model_groups(path, target)
    return group_workloads(cpu.groups, cpu.shapes)


# ---------------------------------------------------------------------- kernels' schedules
class GroupSchedule(NamedTuple):
    """A kernel's schedule: its template task (None: none), the template knobs or the
    auto-scheduler program to build it with (None: the default schedule), the records
    source they came from (None: the default) and, when the record was measured with another
    thread count than the build's, the note saying so (`dispatch.thread_note`)."""

    task: TemplateTask | None
    knobs: dict | None
    program: Any
    origin: str | None
    note: str = ""


def group_schedule(records: ApplyHistoryBest | None, group: Group, shapes: dict) -> GroupSchedule:
    """The group's schedule from the dispatch context: its template task's knobs from the
    first source with a record of the graph's channel blocks, unless the group's
    auto-scheduler program (the whole group, its fused epilogue included) measured faster
    than that record (or there is none). A record measured with the build's thread count
    wins over one measured with another, whatever their costs (they are not comparable)."""
    task = template_task(group, shapes)
    found = tuned_knobs(records, task) if task and records else None
    if records and tunable(group):
        program = records.program(KIND, WORKLOAD, (group_spec(group, shapes),), "llvm")
        if program is not None and (
            found is None or (bool(program.note), program.cost) < (bool(found[3]), found[1])
        ):
            return GroupSchedule(task, None, program.config, AUTO_SCHEDULED, program.note)
    if found:
        return GroupSchedule(task, found[0], None, found[2], found[3])
    return GroupSchedule(task, None, None, None)


def kernel_signature(g: Group, shapes: dict) -> str:
    """Groups with equal signatures compute the same function of their parameters (one
    kernel)."""
    local = {t: f"in{k}:{tuple(shapes[t])}:{g.dtype_of(t)}" for k, t in enumerate(g.inputs)}
    parts = []
    for k, n in enumerate(g.nodes):
        attrs = sorted((a, repr(v)) for a, v in n.attrs.items())
        parts.append(f"{n.op}({','.join(local[t] for t in n.inputs)}){attrs}")
        local[n.output] = f"n{k}"
    return ";".join(parts) + f":{g.dtype_of(g.output)}"


__all__ = [
    "AUTO_SCHEDULED",
    "GroupSchedule",
    "TemplateTask",
    "WORKLOAD",
    "attention_task",
    "conv_task",
    "default_config",
    "dense_task",
    "describe",
    "graph_group",
    "group_schedule",
    "group_similarity",
    "group_spec",
    "group_tasks",
    "group_workloads",
    "kernel_signature",
    "model_groups",
    "template_task",
    "template_tasks",
    "tunable",
]
