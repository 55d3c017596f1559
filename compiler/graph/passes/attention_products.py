"""An `Attention` node's two products on the accelerator: per head, QK^T and softmax(...)·V as
1x1 convs over the T query positions whose weight is a run-time activation (K, then V^T), one
grouped `Conv` each (a group per head, marked `PRODUCT`), with the scale, the mask and the
Softmax on the CPU between them. The scores come out as (1, H*T, T/w, w): a channel per key and
head, a position per query, which is the layout the context product reads its probabilities in,
so the Softmax runs over the channel axis and nothing is transposed between the products.
"""

from __future__ import annotations

import math

import numpy as np

from vta.config import VTAConfig

from ..ir import Graph, Group, Node, Pattern
from .partition import (
    CONTEXT,
    CPU,
    PRODUCT,
    ROW_WIDTH,
    SCORES,
    VTA,
    _value,
    board_times,
    compare,
)


def _shapes(graph: Graph, node: Node) -> tuple[tuple[int, ...], ...]:
    return tuple(graph.value(t).shape or () for t in node.inputs[:3])


def attention_fits(graph: Graph, node: Node, cfg: VTAConfig) -> str | None:
    """Why the accelerator cannot run this Attention node's products (None: it can): Q
    [..., T, d], K^T [..., d, T], V [..., T, dv] with T at least a block of rows, T and d
    multiples of BLOCK_IN, T and dv of BLOCK_OUT (each head's channels are whole blocks),
    batch 1."""
    q, kt, v = _shapes(graph, node)
    if len(q) < 3 or len(kt) != len(q) or len(v) != len(q) or q[-1] != kt[-2] or q[-2] != v[-2]:
        return "attention: Q [..., T, d], K^T [..., d, T] and V [..., T, dv] only"
    t, d, dv = q[-2], q[-1], v[-1]
    if kt[-1] != t:
        return f"attention over {kt[-1]} keys for {t} queries: self-attention only"
    if t < cfg.block_in:
        return f"attention over {t} rows, fewer than a block of {cfg.block_in}"
    if cfg.batch != 1:
        return f"attention: rows run at batch 1, the configuration's batch is {cfg.batch}"
    bi, bo = cfg.block_in, cfg.block_out
    if t % bi or d % bi or t % bo or dv % bo:
        return (f"attention: {t} tokens, head sizes {d} and {dv} are not whole blocks "
                f"(BLOCK_IN {bi}, BLOCK_OUT {bo})")  # fmt: skip
    return None


def _last_two(rank: int) -> list[int]:
    """The permutation swapping the last two of `rank` axes."""
    return [*range(rank - 2), rank - 1, rank - 2]


def _swap(graph: Graph, x: str, base: str) -> tuple[str, Node]:
    """x with its last two axes swapped."""
    shape = graph.value(x).shape
    y = _value(graph, base, (*shape[:-2], shape[-1], shape[-2]))
    return y, Node("Transpose", [x], [y], {"perm": _last_two(len(shape))}, y)


def _reshape(graph: Graph, x: str, base: str, shape: tuple[int, ...]) -> tuple[str, Node]:
    y = _value(graph, base, shape)
    return y, Node("Reshape", [x], [y], {"allowzero": 0, "shape": list(shape)}, y)


def _product(graph: Graph, name: str, x: str, w: str, heads: int, out: tuple, kind: str) -> Node:
    """The grouped 1x1 Conv of input x by run-time weight w, a group per head (`kind`: SCORES
    or CONTEXT)."""
    y = _value(graph, f"{name}_nchw", out)
    attrs = {"group": heads, "auto_pad": "NOTSET", "kernel_shape": [1, 1], "strides": [1, 1],
             "dilations": [1, 1], "pads": [0, 0, 0, 0], PRODUCT: kind}  # fmt: skip
    return Node("Conv", [x, w], [y], attrs, name)


def attention_as_convs(graph: Graph, group: Group) -> list[Group]:
    """An Attention group (`attention_fits`) as eight, adding their values to `graph`: the CPU
    lays out Q as NCHW (1, H*d, T/w, w) (`ROW_WIDTH`) and K as the weight (H*T, d, 1, 1); the
    accelerator's scores (1, H*T, T/w, w); the CPU scales them, adds the mask (its last two
    axes swapped), takes the Softmax over the keys (the channels) and lays out V^T as the
    weight (H*dv, T, 1, 1); the accelerator's context (1, H*dv, T/w, w); the CPU turns it back
    into [..., T, dv]."""
    node, name = group.nodes[0], group.name
    q, kt, v = node.inputs[:3]
    mask = node.inputs[3] if len(node.inputs) > 3 else ""
    (*lead, t, d), dv = graph.value(q).shape, graph.value(v).shape[-1]
    heads, w = math.prod(lead), max(c for c in range(1, min(t, ROW_WIDTH) + 1) if t % c == 0)
    grid = (t // w, w)  # the T positions

    q_t, n1 = _swap(graph, q, f"{name}_q_t")
    q_in, n2 = _reshape(graph, q_t, f"{name}_q_nchw", (1, heads * d, *grid))
    k, n3 = _swap(graph, kt, f"{name}_k")
    k_w, n4 = _reshape(graph, k, f"{name}_k_w", (heads * t, d, 1, 1))
    qk = _product(graph, f"{name}_qk", q_in, k_w, heads, (1, heads * t, *grid), SCORES)
    scores, n5 = _reshape(graph, qk.outputs[0], f"{name}_scores", (*lead, t, t))
    nodes = [n5]  # scores [..., key, query]: the softmax runs over axis -2
    scale = node.attrs["scale"]
    if scale != 1.0:
        c = graph.add_constant(graph.fresh(f"{name}_scale"), np.array(scale, np.float32))
        scaled = _value(graph, f"{name}_scaled", (*lead, t, t))
        nodes.append(Node("Mul", [scores, c], [scaled], {}, scaled))
        scores = scaled
    if mask:
        m = graph.value(mask).shape
        if len(m) < len(lead) + 2:
            full, n = _reshape(graph, mask, f"{name}_mask_r", (1,) * (len(lead) + 2 - len(m)) + m)
            nodes.append(n)
            mask = full
        mask_t, n = _swap(graph, mask, f"{name}_mask_t")
        masked = _value(graph, f"{name}_masked", (*lead, t, t))
        nodes += [n, Node("Add", [scores, mask_t], [masked], {}, masked)]
        scores = masked
    probs = _value(graph, f"{name}_probs", (*lead, t, t))
    nodes.append(Node("Softmax", [scores], [probs], {"axis": len(lead)}, probs))
    p_in, n6 = _reshape(graph, probs, f"{name}_p_nchw", (1, heads * t, *grid))
    v_t, n7 = _swap(graph, v, f"{name}_v_t")
    v_w, n8 = _reshape(graph, v_t, f"{name}_v_w", (heads * dv, t, 1, 1))
    pv = _product(graph, f"{name}_pv", p_in, v_w, heads, (1, heads * dv, *grid), CONTEXT)
    ctx, n9 = _reshape(graph, pv.outputs[0], f"{name}_ctx_t", (*lead, dv, t))
    back = Node("Transpose", [ctx], node.outputs, {"perm": _last_two(len(lead) + 2)}, f"{name}_ctx")
    what = "attention {} per head as a 1x1 conv with a run-time weight: requant"
    return [
        Group(f"{name}_q", Pattern.INJECTIVE, [n1, n2], CPU, "attention Q to NCHW"),
        Group(f"{name}_k", Pattern.INJECTIVE, [n3, n4], CPU, "attention K to a weight"),
        Group(qk.name, Pattern.OUT_FUSABLE, [qk], VTA, what.format("QK^T")),
        Group(f"{name}_softmax", Pattern.OPAQUE, nodes, CPU,
              "attention scale, mask and Softmax over the keys"),
        Group(f"{name}_p", Pattern.INJECTIVE, [n6], CPU, "attention probabilities to NCHW"),
        Group(f"{name}_v", Pattern.INJECTIVE, [n7, n8], CPU, "attention V^T to a weight"),
        Group(pv.name, Pattern.OUT_FUSABLE, [pv], VTA, what.format("softmax(QK^T)V")),
        Group(f"{name}_out", Pattern.INJECTIVE, [n9, back], CPU, "NCHW back to the context"),
    ]  # fmt: skip


def attention_pays(graph: Graph, groups: list[Group], cfg: VTAConfig) -> tuple[bool, str]:
    """Whether an Attention's products rewritten by `attention_as_convs` (its `groups`) run
    faster on the accelerator than in fp32 on the board's CPU (`board_times`), the accelerator
    side adding the Quantize, Dequantize and layout changes of their inputs, weights and
    outputs (13 bytes per element). A configuration of no board offloads them."""
    accel = on_cpu = 0.0
    for g in groups:
        if g.target != VTA:
            continue
        conv = g.nodes[0]
        moved = sum(math.prod(graph.value(t).shape) for t in (*conv.inputs, conv.outputs[0]))
        times = board_times(graph, conv, False, cfg, 13 * moved)
        if times is None:
            return True, "no board CPU to compare"
        accel, on_cpu = accel + times[0] + times[2], on_cpu + times[1]
    what = "accelerator with layout changes, Quantize and Dequantize"
    return compare(accel, what, on_cpu, "CPU products")


__all__ = ["attention_as_convs", "attention_fits", "attention_pays"]
