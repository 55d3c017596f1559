"""Simplification: Identity and inference Dropout removed, GELU written with Erf made one
Gelu node (`_fuse_gelu`), a MatMul of an N-d value by a constant matrix made 2-d
(`_flatten_matmuls`), chains of Reshape/Flatten merged into one Reshape, reshapes to the same
shape removed."""

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


def _scalar_near(graph: Graph, t: str | None, value: float) -> bool:
    """Whether t is a constant of one element within 1e-4 of `value`."""
    c = graph.constants.get(t) if t else None
    return c is not None and c.size == 1 and abs(float(c.reshape(-1)[0]) - value) < 1e-4


def _gelu_at(graph: Graph, erf: Node, users: dict, producers: dict) -> tuple | None:
    """(x, the nodes of x * 0.5 * (1 + erf(x / sqrt 2)) around `erf`, the last one) where
    every value between them has one reader, as exporters write GELU: (x * 0.5) * (1 + e)
    or (x * (1 + e)) * 0.5, x / sqrt 2 or x * (1 / sqrt 2), operands in either order."""

    def only(t: str) -> Node | None:
        readers = users.get(t, [])
        return readers[0] if len(readers) == 1 and t not in graph.outputs else None

    def other(n: Node, t: str) -> str | None:
        return n.inputs[1 - n.inputs.index(t)] if n.inputs.count(t) == 1 else None

    scaled = producers.get(erf.inputs[0])
    if scaled is None or only(scaled.outputs[0]) is not erf:
        return None
    x = scaled.inputs[0]
    root = {"Div": np.sqrt(2.0), "Mul": np.sqrt(0.5)}.get(scaled.op)
    if root is None or not _scalar_near(graph, scaled.inputs[1], root):
        return None
    add = only(erf.outputs[0])
    if add is None or add.op != "Add" or not _scalar_near(graph, other(add, erf.outputs[0]), 1):
        return None
    mul = only(add.outputs[0])
    if mul is None or mul.op != "Mul":
        return None
    m = other(mul, add.outputs[0])
    half = producers.get(m) if m else None
    if half is not None and half.op == "Mul" and only(m) is mul and x in half.inputs:
        if _scalar_near(graph, other(half, x), 0.5):
            return x, [scaled, erf, add, half, mul], mul
    last = only(mul.outputs[0]) if m == x else None
    if last is not None and last.op == "Mul":
        if _scalar_near(graph, other(last, mul.outputs[0]), 0.5):
            return x, [scaled, erf, add, mul, last], last
    return None


def _fuse_gelu(graph: Graph) -> None:
    """GELU written with Erf (x * 0.5 * (1 + erf(x / sqrt 2)), as exporters write it) becomes
    one Gelu node, which fuses into a dense or conv group as any activation does."""
    users, producers = graph.consumers(), graph.producers()
    replace: dict[int, Node | None] = {}
    for n in graph.nodes:
        if n.op != "Erf" or id(n) in replace or graph.value(n.outputs[0]).dtype != "float32":
            continue
        found = _gelu_at(graph, n, users, producers)
        if found is None or any(id(m) in replace for m in found[1]):
            continue
        x, nodes, last = found
        replace.update({id(m): None for m in nodes})
        replace[id(last)] = Node("Gelu", [x], last.outputs, {"approximate": "none"}, last.name)
    graph.nodes = [replace.get(id(n), n) for n in graph.nodes if replace.get(id(n), n)]


def simplify(graph: Graph) -> Graph:
    """(In place.)"""
    _remove_copies(graph)
    _fuse_gelu(graph)
    _flatten_matmuls(graph)
    _merge_reshapes(graph)
    _remove_copies(graph)
    return graph.prune()


__all__ = ["simplify"]
