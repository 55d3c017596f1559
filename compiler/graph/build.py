"""Compile a planned graph for the CPU: every fused group becomes one kernel (topi computes from
`build_ops`, the default x86 schedule of the group's anchor operator with the others fused
into it, or the schedule the dispatch context holds for it: `tasks.group_schedule`), and
`executor.compile_graph` links them into a `graph_module.GraphModule` that runs them on the
planned arena.

A group is a list of nodes in order; the tensors it reads from outside are its kernel's
parameters (activations at arena offsets, graph inputs, constants), its last node's output is
written by the kernel. The groups come after the CPU-layout passes (`passes.cpu_layout`:
dense weights packed, Winograd and pointwise convolutions chosen).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..codegen.target import Target, target_scope
from ..driver import lower
from ..errors import OperatorError
from ..tir import stmt as S
from ..tune.dispatch import ApplyHistoryBest
from .build_ops import Group, Node, group_tensors, schedule_group
from .executor import Step, compile_graph
from .graph_module import ALIGN, GraphModule, Slot, TensorSpec
from .ir import attention_flops
from .objects import Kernel
from .tasks import group_schedule, kernel_signature


def group_kernel(
    group: Group,
    shapes: dict[str, tuple[int, ...]],
    name: str | None = None,
    knobs: dict | None = None,
    program: Any = None,
) -> tuple[S.PrimFunc, list[str]]:
    """The group's lowered kernel and the tensor names of its parameters (inputs, output):
    scheduled by an auto-scheduler `program` of the group's workload when given, else by
    `schedule_group`."""
    if program is not None:
        s, tensors = program.schedule()
    else:
        tensors = group_tensors(group, shapes)
        s = schedule_group(tensors[-1], knobs)
    return lower(s, tensors, name or group.name), [*group.inputs, group.output]


def group_flops(group: Group, shapes: dict[str, tuple[int, ...]]) -> int:
    """Multiply-adds x 2 of the group's convolutions, dense layers and attention products (its
    other work is elementwise and not counted)."""
    flops = 0
    for n in group.nodes:
        out = int(np.prod(shapes[n.output]))
        if n.op == "Conv" and n.attrs.get("winograd"):  # the direct convolution's count
            data = shapes[n.inputs[0]]
            flops += 2 * out * data[1] * data[4] * 9
        elif n.op == "Conv":
            w = shapes[n.inputs[1]]  # packed [OC/ob, C/ib, KH, KW, ib, ob]
            flops += 2 * out * w[1] * w[4] * w[2] * w[3]
        elif n.op == "Dense":
            flops += 2 * out * shapes[n.inputs[0]][1]
        elif n.op == "Attention":
            flops += attention_flops(*(shapes[t] for t in n.inputs[:3]))
    return flops


def build_graph(
    groups: list[Group],
    shapes: dict[str, tuple[int, ...]],
    constants: dict[str, np.ndarray],
    inputs: list[str],
    outputs: list[str],
    offsets: dict[str, int],
    arena_bytes: int,
    target: str = "llvm",
    log: Callable[[str], None] | None = None,
    records: ApplyHistoryBest | None = None,
) -> GraphModule:
    """Compile every group (kernels shared by groups of one structure) into a GraphModule.
    The groups, `shapes` and `constants` are the CPU-layout passes' (`passes.cpu_layout`:
    dense weights packed, Winograd and pointwise convolutions marked); `offsets` places every
    intermediate tensor in the arena (bytes, multiples of 64); a group that only views an
    earlier tensor (`view_aliases`) runs no kernel. Each kernel's schedule comes from the
    dispatch context `records` (`tasks.group_schedule`: template knobs, or an auto-scheduler
    program that measured faster); the manifest lists the tasks without a record (`untuned`)
    and counts the kernels by where their schedules came from (`tuned_from`)."""
    t0 = time.perf_counter()
    winograd = sum(bool(n.attrs.get("winograd")) for g in groups for n in g.nodes)
    pointwise = sum(bool(n.attrs.get("pointwise")) for g in groups for n in g.nodes)
    with target_scope(target) as tgt:
        params = list(constants)
        steps = []
        kernels: dict[str, Kernel] = {}
        untuned: dict[str, None] = {}
        notes: list[str] = []  # kernels whose records were measured with another thread count
        used = dict.fromkeys(records.names if records else [], 0)
        views = view_aliases(groups, set(outputs))
        for g in groups:
            if g.output in views or not math.prod(shapes[g.output]):  # no elements: no kernel
                continue
            key = kernel_signature(g, shapes)
            if key not in kernels:
                chosen = group_schedule(records, g, shapes)
                if chosen.origin:
                    used[chosen.origin] = used.get(chosen.origin, 0) + 1
                elif chosen.task:
                    untuned[chosen.task.label()] = None
                name = f"k{len(kernels)}_{g.name}"
                if chosen.note:
                    notes.append(f"{name}: {chosen.note}")
                kernels[key] = Kernel(
                    name,
                    functools.partial(_lowered, tgt, g, shapes, name, chosen.knobs, chosen.program),
                )
            func = kernels[key]
            names = [*g.inputs, g.output]
            slots = [_slot(t, inputs, outputs, params, offsets) for t in names]
            steps.append(Step(func, slots, g.name, group_flops(g, shapes)))
    dtypes = tensor_dtypes(groups)
    graph = compile_graph(
        steps,
        [TensorSpec(t, tuple(shapes[t]), dtypes.get(t, "float32")) for t in inputs],
        [TensorSpec(t, tuple(shapes[t]), dtypes.get(t, "float32")) for t in outputs],
        [np.asarray(constants[p], dtypes.get(p, "float32")) for p in params],
        arena_bytes,
        target,
    )
    if log:
        origin = "".join(f"; {n} kernels from {source}" for source, n in used.items())
        origin += f"; {winograd} convolutions by Winograd F(2x2, 3x3)" if winograd else ""
        origin += f"; {pointwise} 1x1 convolutions (by input-channel chunks)" if pointwise else ""
        log(
            f"compiled {len(groups)} groups into {len(kernels)} kernels "
            f"in {time.perf_counter() - t0:.2f} s{origin}"
        )
        for name in untuned:
            log(f"untuned (default schedule): {name}")
        for note in notes:
            log(note)
    graph.manifest["untuned"] = list(untuned)
    graph.manifest["tuned_from"] = used
    graph.manifest["winograd"] = winograd
    graph.manifest["pointwise"] = pointwise
    return graph


def _lowered(target: Target, *args: Any) -> S.PrimFunc:
    """`group_kernel`'s kernel for `target` (a `Kernel` lowers it when the executor compiles
    it)."""
    with target_scope(target):
        return group_kernel(*args)[0]


def _slot(t: str, inputs: list[str], outputs: list[str], params: list[str], offsets: dict) -> Slot:
    if t in inputs:
        return Slot("input", inputs.index(t))
    if t in outputs:
        return Slot("output", outputs.index(t))
    if t in params:
        return Slot("param", params.index(t))
    if t not in offsets:
        raise OperatorError(f"tensor '{t}' has no place in the memory plan")
    if offsets[t] % ALIGN:
        raise OperatorError(f"tensor '{t}' at arena offset {offsets[t]}: not {ALIGN}-aligned")
    return Slot("arena", offset=int(offsets[t]))


def tensor_dtypes(groups: list[Group]) -> dict[str, str]:
    """The dtype of every tensor the groups read or write that is not float32."""
    return {t: d for g in groups for t, d in g.dtypes.items()}


def tensor_bytes(t: str, shapes: dict, dtypes: dict[str, str]) -> int:
    """Tensor t's size in bytes (its dtype float32 unless `dtypes` says otherwise)."""
    return int(np.prod(shapes[t])) * np.dtype(dtypes.get(t, "float32")).itemsize


VIEWS = ("Reshape", "Copy")  # row-major: the output's bytes are the input's


def view_aliases(groups: list[Group], skip: set[str]) -> dict[str, str]:
    """Groups that only view a tensor an earlier group computed (a lone Reshape or Copy of
    an arena tensor, neither a graph output): their output -> the arena tensor it shares
    bytes with. Such a group runs no kernel."""
    made: set[str] = set()
    aliases: dict[str, str] = {}
    for g in groups:
        n = g.nodes[0]
        if len(g.nodes) == 1 and n.op in VIEWS and n.inputs[0] in made and g.output not in skip:
            aliases[g.output] = aliases.get(n.inputs[0], n.inputs[0])
        made.add(g.output)
    return {t: src for t, src in aliases.items() if src not in skip}


def plan_offsets(groups: list[Group], shapes: dict, skip: set[str]) -> tuple[dict, int, int]:
    """Arena places by liveness (a tensor lives from the group that writes it to its last
    reader, or its views' last reader: `view_aliases`, placed at the tensor's offset),
    largest tensor first, each at the lowest offset clear of the tensors placed before it
    whose lifetimes overlap its own (big tensors placed first leave gaps that small ones
    fill; placed in execution order, MobileNet-v1 needed 1.46x the bound, ResNet-18 1.15x;
    so placed, both meet it): (offsets, arena bytes, lower bound = the most bytes live at
    once)."""
    aliases = view_aliases(groups, skip)
    last = {aliases.get(t, t): k for k, g in enumerate(groups) for t in g.inputs}
    life = {
        g.output: (k, max(k, last.get(g.output, k)))
        for k, g in enumerate(groups)
        if g.output not in skip and g.output not in aliases
    }
    dtypes = tensor_dtypes(groups)
    size = {t: -(-tensor_bytes(t, shapes, dtypes) // ALIGN) * ALIGN for t in life}
    offsets: dict[str, int] = {}
    for t in sorted(life, key=lambda t: (-size[t], life[t][0])):
        a, b = life[t]
        busy = sorted(
            (offsets[u], offsets[u] + size[u])
            for u in offsets
            if life[u][0] <= b and a <= life[u][1]
        )
        start = 0
        for lo, hi in busy:
            if lo - start >= size[t]:
                break
            start = max(start, hi)
        offsets[t] = start
    arena = max((offsets[t] + size[t] for t in offsets), default=0)
    bound = max(
        (sum(size[t] for t, (a, b) in life.items() if a <= k <= b) for k in range(len(groups))),
        default=0,
    )
    return {**offsets, **{t: offsets[src] for t, src in aliases.items()}}, arena, bound


__all__ = [
    "Group",
    "Node",
    "build_graph",
    "group_kernel",
    "group_tensors",
    "plan_offsets",
    "schedule_group",
    "tensor_bytes",
    "tensor_dtypes",
    "view_aliases",
]
