"""Simplification: Identity and inference Dropout removed, chains of Reshape/Flatten merged
into one Reshape, reshapes to the same shape removed."""

from __future__ import annotations

from ..ir import Graph, Node

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


def simplify(graph: Graph) -> Graph:
    """(In place.)"""
    _remove_copies(graph)
    _merge_reshapes(graph)
    _remove_copies(graph)
    return graph.prune()


__all__ = ["simplify"]
