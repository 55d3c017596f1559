"""Attention recognised: MatMul(Q, K^T), then a scale (Div or Mul by a scalar constant), an
additive mask (Add of a value that broadcasts to the scores), Softmax over the keys and
MatMul by V become one `Attention` node (inputs Q, K^T, V and the mask; attribute `scale`),
which the CPU computes one query row at a time: the score matrix is never stored whole."""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Node


def _single_reader(graph: Graph, users: dict[str, list[Node]], t: str) -> Node | None:
    """The one node reading t, where t is no graph output."""
    readers = users.get(t, [])
    return readers[0] if len(readers) == 1 and t not in graph.outputs else None


def _scalar(graph: Graph, t: str) -> float | None:
    c = graph.constants.get(t)
    return float(c.reshape(-1)[0]) if c is not None and c.size == 1 else None


def _match(graph: Graph, users: dict[str, list[Node]], qk: Node) -> tuple | None:
    """(nodes replaced, inputs, scale, the context MatMul) of the pattern starting at qk."""
    q, k = qk.inputs
    shapes = [graph.value(t).shape for t in (q, k)]
    if any(s is None or len(s) < 3 for s in shapes) or shapes[0][:-2] != shapes[1][:-2]:
        return None
    nodes, scale, mask, t = [qk], 1.0, "", qk.outputs[0]
    n = _single_reader(graph, users, t)
    if n is not None and n.op in ("Div", "Mul") and n.inputs[0] == t:
        c = _scalar(graph, n.inputs[1])
        if c is not None and c != 0:
            scale, t = (1.0 / c if n.op == "Div" else c), n.outputs[0]
            nodes.append(n)
            n = _single_reader(graph, users, t)
    if n is not None and n.op == "Add" and n.inputs.count(t) == 1:
        other = n.inputs[1 - n.inputs.index(t)]
        mask_value, out = graph.value(other), graph.value(n.outputs[0])
        if mask_value.dtype == "float32" and out.shape == graph.value(t).shape:
            mask, t = other, n.outputs[0]
            nodes.append(n)
            n = _single_reader(graph, users, t)
    rank = len(shapes[0])
    if n is None or n.op != "Softmax" or n.attrs.get("axis", -1) % rank != rank - 1:
        return None
    nodes.append(n)
    av = _single_reader(graph, users, n.outputs[0])
    if av is None or av.op != "MatMul" or av.inputs[0] != n.outputs[0]:
        return None
    v_shape = graph.value(av.inputs[1]).shape
    if v_shape is None or v_shape[:-2] != shapes[0][:-2]:
        return None
    if graph.value(qk.outputs[0]).dtype != "float32":
        return None
    return nodes, [q, k, av.inputs[1], *([mask] if mask else [])], scale, av


def fuse_attention(graph: Graph) -> Graph:
    """(In place.) Each attention pattern as one `Attention` node writing the context."""
    users = graph.consumers()
    replaced: dict[int, Node | None] = {}
    for node in graph.nodes:
        if node.op != "MatMul" or id(node) in replaced:
            continue
        found = _match(graph, users, node)
        if found is None:
            continue
        nodes, inputs, scale, av = found
        fused = Node("Attention", inputs, av.outputs, {"scale": float(np.float32(scale))}, av.name)
        for n in nodes:
            replaced[id(n)] = None
        replaced[id(av)] = fused
    graph.nodes = [replaced.get(id(n), n) for n in graph.nodes if replaced.get(id(n), n)]
    return graph.prune()


__all__ = ["fuse_attention"]
