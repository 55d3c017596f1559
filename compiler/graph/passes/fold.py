"""Constant folding (numpy, through the reference kernels) and batch-norm folding into the
preceding convolution or dense layer."""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..reference import run_node


def fold_constants(graph: Graph) -> Graph:
    """Nodes whose inputs are all constants become constants (in place)."""
    kept = []
    for node in graph.nodes:
        ins = [t for t in node.inputs if t]
        if ins and all(t in graph.constants for t in ins) and not _output(graph, node):
            outs = run_node(node, [graph.constants[t] if t else None for t in node.inputs])
            for name, value in zip(node.outputs, outs, strict=False):
                if name:
                    dtype = graph.value(name).dtype or value.dtype
                    graph.add_constant(name, value.astype(dtype))
        else:
            kept.append(node)
    graph.nodes = kept
    return graph.prune()


def _output(graph: Graph, node: Node) -> bool:
    """The node writes a graph output (which stays computed by a node)."""
    return any(o in graph.outputs for o in node.outputs)


def _bn_scale(graph: Graph, bn: Node) -> tuple[np.ndarray, np.ndarray] | None:
    """(scale, shift) with bn(x) = x * scale + shift per channel, or None if its parameters
    are not constant."""
    if not all(t in graph.constants for t in bn.inputs[1:5]):
        return None
    gamma, beta, mean, var = (graph.constants[t].astype(np.float64) for t in bn.inputs[1:5])
    scale = gamma / np.sqrt(var + bn.attrs["epsilon"])
    return scale, beta - mean * scale


def fold_batch_norm(graph: Graph) -> Graph:
    """A BatchNormalization right after a Conv or Gemm (its only reader, with constant
    weights) is folded into that layer's weight and bias (in place)."""
    producers, users = graph.producers(), graph.consumers()
    removed: set[int] = set()
    for bn in graph.nodes:
        if bn.op != "BatchNormalization":
            continue
        layer = producers.get(bn.inputs[0])
        if (
            layer is None
            or layer.op not in ("Conv", "Gemm")
            or len(users.get(bn.inputs[0], [])) != 1
            or bn.inputs[0] in graph.outputs
            or not all(t in graph.constants for t in layer.inputs[1:] if t)
        ):
            continue
        folded = _bn_scale(graph, bn)
        if folded is None:
            continue
        scale, shift = folded
        if layer.op == "Conv":
            _fold_into_conv(graph, layer, scale, shift)
        elif not _fold_into_gemm(graph, layer, scale, shift):
            continue
        layer.outputs = [bn.outputs[0]]
        removed.add(id(bn))
    graph.nodes = [n for n in graph.nodes if id(n) not in removed]
    return graph.prune()


def _fold_into_conv(graph: Graph, conv: Node, scale: np.ndarray, shift: np.ndarray) -> None:
    w = graph.constants[conv.inputs[1]]
    bias = graph.constants[conv.inputs[2]] if len(conv.inputs) > 2 and conv.inputs[2] else 0.0
    dtype = w.dtype
    new_w = (w * scale.reshape(-1, *([1] * (w.ndim - 1)))).astype(dtype)
    new_b = (bias * scale + shift).astype(dtype)
    conv.inputs = [
        conv.inputs[0],
        graph.add_constant(graph.fresh(f"{conv.label}_w_bn"), new_w),
        graph.add_constant(graph.fresh(f"{conv.label}_b_bn"), new_b),
    ]


def _fold_into_gemm(graph: Graph, gemm: Node, scale: np.ndarray, shift: np.ndarray) -> bool:
    """Y = alpha A B + beta C, then per-column scale and shift: B's columns scaled, C
    replaced by beta C * scale + shift (beta becomes 1). False if A is transposed into a
    shape where the columns are not the BN's channels."""
    b = graph.constants[gemm.inputs[1]]
    n = b.shape[0] if gemm.attrs["transB"] else b.shape[1]
    if scale.shape != (n,):
        return False
    new_b = b * (scale[:, None] if gemm.attrs["transB"] else scale[None, :])
    c = graph.constants[gemm.inputs[2]] if len(gemm.inputs) > 2 and gemm.inputs[2] else 0.0
    new_c = np.broadcast_to(gemm.attrs["beta"] * np.asarray(c) * scale + shift, (n,))
    gemm.inputs = [
        gemm.inputs[0],
        graph.add_constant(graph.fresh(f"{gemm.label}_w_bn"), new_b.astype(b.dtype)),
        graph.add_constant(graph.fresh(f"{gemm.label}_c_bn"), new_c.astype(b.dtype)),
    ]
    gemm.attrs["beta"] = 1.0
    return True


__all__ = ["fold_batch_norm", "fold_constants"]
