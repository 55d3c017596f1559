"""Constant folding (numpy, through the reference kernels) and batch-norm folding into the
preceding convolution or dense layer."""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, Value
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
    weights) is folded into that layer's weight and bias; one with constant parameters
    elsewhere becomes a per-channel Mul and Add (in place)."""
    producers, users = graph.producers(), graph.consumers()
    nodes: list[Node] = []
    for bn in graph.nodes:
        folded = _bn_scale(graph, bn) if bn.op == "BatchNormalization" else None
        if folded is None:
            nodes.append(bn)
            continue
        scale, shift = folded
        layer = producers.get(bn.inputs[0])
        if (
            layer is not None
            and layer.op in ("Conv", "Gemm")
            and len(users.get(bn.inputs[0], [])) == 1
            and bn.inputs[0] not in graph.outputs
            and all(t in graph.constants for t in layer.inputs[1:] if t)
            and (layer.op == "Conv" or _fold_into_gemm(graph, layer, scale, shift))
        ):
            if layer.op == "Conv":
                _fold_into_conv(graph, layer, scale, shift)
            layer.outputs = [bn.outputs[0]]
        else:
            nodes += _scale_shift(graph, bn, scale, shift)
    graph.nodes = nodes
    return graph.prune()


def _scale_shift(graph: Graph, bn: Node, scale: np.ndarray, shift: np.ndarray) -> list[Node]:
    """bn(x) as Mul(x, scale) and Add(_, shift) with per-channel constants."""
    x = graph.value(bn.inputs[0])
    shape = (-1,) + (1,) * (len(x.shape or (0, 0)) - 2)
    dtype = x.dtype or "float32"
    s = graph.add_constant(graph.fresh(f"{bn.label}_scale"), scale.reshape(shape).astype(dtype))
    b = graph.add_constant(graph.fresh(f"{bn.label}_shift"), shift.reshape(shape).astype(dtype))
    mid = graph.fresh(f"{bn.outputs[0]}_scaled")
    graph.values[mid] = Value(mid, x.shape, x.dtype)
    return [
        Node("Mul", [bn.inputs[0], s], [mid], {}, f"{bn.label}_mul"),
        Node("Add", [mid, b], [bn.outputs[0]], {}, f"{bn.label}_add"),
    ]


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
