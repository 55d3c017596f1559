"""A network's fused groups as auto-scheduler workloads.

The template tuner tunes a network's bare convolutions; the auto-scheduler tunes what the
graph executor runs: a fused group (a convolution with its bias, residual add, ReLU or clip,
in the graph's packed layouts). The workload `graph_group` takes one argument, the group's
spec (JSON: its inputs' shapes and its nodes with local tensor names), so records key on the
group's structure and shapes, and measurement workers rebuild the definition from it with the
graph's own operator computes (`compiler.graph.build.group_tensors`). Outputs are checked
against the same group built with the graph's default schedule.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np

from ..errors import TuningError
from ..graph.build import Group, Node, group_tensors, schedule_group, winograd_convs
from ..schedule.schedule import create_schedule
from ..te.tensor import Tensor
from .workload import register_workload

WORKLOAD = "graph_group"


def tunable(group: Group) -> bool:
    """Groups the auto-scheduler tunes: those with a convolution (dense, depthwise or grouped)."""
    return any(n.op == "Conv" for n in group.nodes)


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


def group_tasks(path: str | Path, target: str = "llvm") -> list[tuple[tuple[str, tuple], int]]:
    """The model's distinct tunable groups as ((WORKLOAD, (spec,)), how many kernels of the
    graph each one makes), in the graph's order."""
    from ..codegen.target import target_scope
    from ..graph.build_onnx import import_groups

    with target_scope(target):
        groups, shapes, params, _, _ = import_groups(path, None, False)
        params = dict(params)
        winograd_convs(groups, shapes, params)  # as the graph build will compute them
    shapes = {**shapes, **{k: v.shape for k, v in params.items()}}
    counts = Counter(group_spec(g, shapes) for g in groups if tunable(g))
    return [((WORKLOAD, (spec,)), n) for spec, n in counts.items()]
