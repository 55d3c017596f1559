"""Operator fusion by pattern kind, and task extraction.

Nodes are visited in order; a node joins the group of the producer of one of its inputs when
that value has no other reader and is no graph output, and the kinds fit:
- a complex-out-fusable group (conv, dense, pool) absorbs elementwise and broadcast followers
  of its output's shape;
- injective nodes fuse with each other, and a reduction absorbs the injective nodes before it;
- a reduction group absorbs elementwise and broadcast followers of its output's shape;
- opaque nodes fuse with nothing;
- a group holds at most MAX_GROUP_NODES nodes: its kernel inlines them into one expression,
  which the lowering passes follow recursively (a chain of thousands of nodes becomes a
  chain of groups).
Each group runs as one kernel; a group only reads its nodes' inputs from earlier groups (its
intermediate values have one reader each, inside the group), so groups run in order.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph, Group, Pattern, format_attr, pattern_of

MAX_GROUP_NODES = 64


def _joined(group: Pattern, node: Pattern) -> Pattern | None:
    """The kind of a group of kind `group` after absorbing a node of kind `node`, or None."""
    if group == Pattern.OUT_FUSABLE and node <= Pattern.BROADCAST:
        return Pattern.OUT_FUSABLE
    if group <= Pattern.INJECTIVE and node <= Pattern.INJECTIVE:
        return max(group, node)
    if group <= Pattern.INJECTIVE and node == Pattern.REDUCTION:
        return Pattern.REDUCTION
    if group == Pattern.REDUCTION and node <= Pattern.BROADCAST:
        return Pattern.REDUCTION
    return None


def fuse(graph: Graph) -> Graph:
    """Partition the nodes into fused groups (`graph.groups`, in run order; in place)."""
    users = graph.consumers()
    group_of: dict[str, Group] = {}  # value -> the group computing it
    groups: list[Group] = []
    for node in graph.nodes:
        kind = pattern_of(node.op)
        target = None
        for t in node.inputs:
            g = group_of.get(t)
            readers = {id(n) for n in users.get(t, [])}
            if g is None or len(readers) != 1 or t in graph.outputs:
                continue
            if len(g.nodes) >= MAX_GROUP_NODES:
                continue
            if g.nodes[-1].outputs[0] != t or len(g.nodes[-1].outputs) != 1:
                continue  # only the group's last value can be extended
            joined = _joined(g.pattern, kind)
            if g.pattern >= Pattern.REDUCTION and joined is not None:  # followers keep shape
                if graph.value(node.outputs[0]).shape != graph.value(t).shape:
                    joined = None
            if joined is not None:
                target, kind = g, joined
                break
        if target is None or len(node.outputs) != 1:
            target = Group(node.label, kind, [])
            groups.append(target)
        else:
            groups.remove(target)  # the group now runs where its last node is
            groups.append(target)
        target.pattern = kind
        target.nodes.append(node)
        for o in node.outputs:
            group_of[o] = target
    for g in groups:
        g.name = g.anchor.label
    graph.groups = groups
    graph.nodes = [n for g in groups for n in g.nodes]
    return graph


@dataclass
class Task:
    """A distinct fused kernel: its signature, one group computing it, how many groups do."""

    key: str
    group: Group
    weight: int

    def describe(self, graph: Graph) -> str:
        ops = "+".join(n.op for n in self.group.nodes)
        ins = ", ".join(graph.value(t).type_str() for t in group_inputs(self.group))
        return f"{ops}({ins}) x{self.weight}"


def group_inputs(group: Group) -> list[str]:
    """The values a group reads from outside it, in order of first use."""
    inner = {o for n in group.nodes for o in n.outputs}
    seen: dict[str, None] = {}
    for n in group.nodes:
        for t in n.inputs:
            if t and t not in inner:
                seen.setdefault(t, None)
    return list(seen)


def signature(graph: Graph, group: Group) -> str:
    """Groups with equal signatures compute the same function of their inputs."""
    local = {t: f"in{k}:{graph.value(t).type_str()}" for k, t in enumerate(group_inputs(group))}
    parts = []
    for k, n in enumerate(group.nodes):
        attrs = ",".join(f"{a}={format_attr(v)}" for a, v in sorted(n.attrs.items()))
        parts.append(f"{n.op}({','.join(local.get(t, '_') for t in n.inputs)}){{{attrs}}}")
        local.update({o: f"n{k}.{j}" for j, o in enumerate(n.outputs)})
    return ";".join(parts)


def extract_tasks(graph: Graph) -> list[Task]:
    """The distinct kernels of a fused graph, each with how many groups use it."""
    if graph.groups is None:
        fuse(graph)
    tasks: dict[str, Task] = {}
    for g in graph.groups or []:
        key = signature(graph, g)
        if key in tasks:
            tasks[key].weight += 1
        else:
            tasks[key] = Task(key, g, 1)
    return list(tasks.values())


def format_tasks(graph: Graph, tasks: list[Task]) -> str:
    lines = [f"{len(tasks)} tasks in {len(graph.groups or [])} groups:"]
    lines += [f"  task {k}: {t.describe(graph)}" for k, t in enumerate(tasks)]
    return "\n".join(lines)


__all__ = [
    "MAX_GROUP_NODES",
    "Task",
    "extract_tasks",
    "format_tasks",
    "fuse",
    "group_inputs",
    "signature",
]
