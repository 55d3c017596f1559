"""Simplification: Identity and inference Dropout removed, a MatMul of an N-d value by a
constant matrix made 2-d (`_flatten_matmuls`), chains of Reshape/Flatten merged into one
Reshape, reshapes to the same shape removed."""

from __future__ import annotations

import math

import numpy as np

from ..ir import Graph, Node, Pattern, Value, pattern_of

_RESHAPES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")


def _replace_uses(graph: Graph, old: str, new: str) -> None:
    for n in graph.nodes:
        n.inputs = [new if t == old else t for t in n.inputs]


def _bypass(graph: Graph, node: Node, producers: dict[str, Node]) -> bool:
    """Remove a node computing a copy of its input; False where the copy must stay (a graph
    output that is a graph input, a constant or another output)."""
    src, dst = node.inputs[0], node.outputs[0]
    if dst not in graph.outputs:
        _replace_uses(graph, dst, src)
        return True
    producer = producers.get(src)
    if producer is None or src in graph.outputs:
        return False
    producer.outputs = [dst if o == src else o for o in producer.outputs]
    _replace_uses(graph, src, dst)
    return True


def _remove_copies(graph: Graph) -> None:
    kept: list[Node] = []
    for node in graph.nodes:
        earlier = {o: n for n in kept for o in n.outputs}
        if node.op in ("Identity", "Dropout") and _bypass(graph, node, earlier):
            continue
        kept.append(node)
    graph.nodes = kept


def _merge_reshapes(graph: Graph) -> None:
    """A reshape of a single-use reshape reads the original; a reshape to the same shape
    becomes an Identity."""
    users, producers = graph.consumers(), graph.producers()
    for node in graph.nodes:
        if node.op not in _RESHAPES:
            continue
        inner = producers.get(node.inputs[0])
        out_shape = list(graph.value(node.outputs[0]).shape or [])
        if (
            inner is not None
            and inner.op in _RESHAPES
            and len(users.get(node.inputs[0], [])) == 1
            and node.inputs[0] not in graph.outputs
        ):
            node.op, node.attrs = "Reshape", {"shape": out_shape, "allowzero": 0}
            node.inputs = [inner.inputs[0]]
        if list(graph.value(node.inputs[0]).shape or []) == out_shape:
            node.op, node.attrs = "Identity", {}


def _reshape(graph: Graph, src: str, dst: str, shape: tuple[int, ...]) -> Node:
    """A Reshape node writing `dst` (given its value) from `src`."""
    graph.values[dst] = Value(dst, tuple(shape), graph.value(src).dtype)
    return Node("Reshape", [src], [dst], {"shape": list(shape), "allowzero": 0})


def _row_operand(graph: Graph, t: str, flat: dict[str, str], rows: tuple[int, int]) -> str | None:
    """Operand t of an elementwise node on 2-d `rows` values: a flattened value's 2-d source,
    a constant that varies along the last axis only (as a vector), else None."""
    if t in flat:
        return flat[t] if graph.value(flat[t]).shape == rows else None
    c = graph.constants.get(t)
    if c is None or c.shape[-1:] not in ((), (1,), (rows[1],)):
        return None
    if c.ndim <= 1:
        return t
    if math.prod(c.shape[:-1]) != 1:
        return None
    return graph.add_constant(graph.fresh(f"{t}_row"), np.ascontiguousarray(c.reshape(-1)))


def _flatten_matmuls(graph: Graph) -> None:
    """A MatMul of an N-d value (N > 2) by a constant matrix becomes the 2-d MatMul of the
    value's rows between two Reshapes, so the dense kernel computes it; the Reshape back moves
    past the elementwise nodes after it whose other operands are rows of the same shape or
    constants along the last axis (a bias, GELU's arithmetic), so they run on the rows in the
    dense kernel's group."""
    flat: dict[str, str] = {}  # an N-d value -> the 2-d value it is a Reshape of
    nodes: list[Node] = []
    for n in graph.nodes:
        x = n.inputs[0] if n.inputs else ""
        shape = graph.value(n.outputs[0]).shape if n.outputs else None
        w = graph.constants.get(n.inputs[1]) if n.op == "MatMul" else None
        if w is not None and w.ndim == 2 and shape and len(shape) > 2:
            rows, y = graph.fresh(f"{x}_rows"), graph.fresh(f"{n.outputs[0]}_rows")
            nodes.append(_reshape(graph, x, rows, (math.prod(shape[:-1]), w.shape[0])))
            graph.values[y] = Value(y, (math.prod(shape[:-1]), w.shape[1]), "float32")
            nodes.append(Node("MatMul", [rows, n.inputs[1]], [y], n.attrs, n.name))
            nodes.append(_reshape(graph, y, n.outputs[0], shape))
            flat[n.outputs[0]] = y
            continue
        nodes.append(n)
        if (
            shape is None
            or len(n.outputs) != 1
            or pattern_of(n.op) > Pattern.BROADCAST
            or n.op in ("BatchNormalization", "PRelu")  # operands along axis 1, not numpy's
            or not any(t in flat for t in n.inputs)
        ):
            continue
        rows_shape = (math.prod(shape[:-1]), shape[-1])
        operands = [_row_operand(graph, t, flat, rows_shape) for t in n.inputs]
        if None in operands or any(graph.value(t).shape != shape for t in n.inputs if t in flat):
            continue
        y = graph.fresh(f"{n.outputs[0]}_rows")
        graph.values[y] = Value(y, rows_shape, graph.value(n.outputs[0]).dtype)
        n.inputs, out, n.outputs = operands, n.outputs[0], [y]
        nodes.append(_reshape(graph, y, out, shape))
        flat[out] = y
    graph.nodes = nodes


def simplify(graph: Graph) -> Graph:
    """(In place.)"""
    _remove_copies(graph)
    _flatten_matmuls(graph)
    _merge_reshapes(graph)
    _remove_copies(graph)
    return graph.prune()


__all__ = ["simplify"]
