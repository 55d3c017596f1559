"""Shape and dtype inference: every node's output types from its inputs' types and its
(normalized) attributes, with numpy broadcasting for the elementwise operators."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import OperatorError
from ..ir import PATTERNS, Graph, Node, Pattern
from ..reference import pool_out_size

Shape = tuple[int, ...]
ShapeFn = Callable[[list[Shape], dict[str, Any]], list[Shape]]


def _same(ins: list[Shape], a: dict) -> list[Shape]:
    return [ins[0]]


def _broadcast(ins: list[Shape], a: dict) -> list[Shape]:
    try:
        return [tuple(np.broadcast_shapes(*ins))]
    except ValueError:
        raise OperatorError(f"shapes {' and '.join(map(str, ins))} do not broadcast") from None


def _unidirectional(ins: list[Shape], a: dict) -> list[Shape]:
    """The first input's shape, the second broadcast to it (PRelu's slope)."""
    if _broadcast(ins, a)[0] != ins[0]:
        raise OperatorError(f"{ins[1]} does not broadcast to {ins[0]}")
    return [ins[0]]


def _conv(ins: list[Shape], a: dict) -> list[Shape]:
    (n, c, *size), (oc, cg, *kernel) = ins[0], ins[1]
    if c != cg * a["group"] or oc % a["group"] or len(size) != len(kernel):
        raise OperatorError(
            f"input {list(ins[0])} and weight {list(ins[1])} with group {a['group']} do not fit"
        )
    if len(ins) > 2 and ins[2] != (oc,):
        raise OperatorError(f"bias of shape {ins[2]}, expected ({oc},)")
    p, s, d, r = a["pads"], a["strides"], a["dilations"], len(size)
    out = [(size[i] + p[i] + p[i + r] - (kernel[i] - 1) * d[i] - 1) // s[i] + 1 for i in range(r)]
    if min(out) < 1:
        raise OperatorError(f"the {kernel} kernel does not fit the {size} input")
    return [(n, oc, *out)]


def _conv_transpose(ins: list[Shape], a: dict) -> list[Shape]:
    (n, c, *size), (wc, ocg, *kernel) = ins[0], ins[1]
    if c != wc or c % a["group"] or len(size) != len(kernel):
        raise OperatorError(f"input has {c} channels, the weight {ins[1]} with group {a['group']}")
    if len(ins) > 2 and ins[2] != (ocg * a["group"],):
        raise OperatorError(f"bias of shape {ins[2]}, expected ({ocg * a['group']},)")
    p, s, d, op, r = a["pads"], a["strides"], a["dilations"], a["output_padding"], len(size)
    out = [(size[i] - 1) * s[i] + (kernel[i] - 1) * d[i] + 1 + op[i] - p[i] - p[i + r]
           for i in range(r)]  # fmt: skip
    if min(out) < 1:
        raise OperatorError(f"pads {p} leave no output")
    return [(n, ocg * a["group"], *out)]


def _batch_norm(ins: list[Shape], a: dict) -> list[Shape]:
    c = ins[0][1] if len(ins[0]) > 1 else None
    if any(s != (c,) for s in ins[1:]):
        raise OperatorError(f"scale, bias, mean and var {ins[1:]} must be ({c},)")
    return [ins[0]]


def _pool(ins: list[Shape], a: dict) -> list[Shape]:
    (n, c, *size), r = ins[0], len(ins[0]) - 2
    k, s, p = a["kernel_shape"], a["strides"], a["pads"]
    d = a.get("dilations") or [1] * r
    if len(k) != r:
        raise OperatorError(f"kernel_shape {k} for an input of {r} spatial axes")
    out = [pool_out_size(size[i], k[i], s[i], d[i], p[i], p[i + r], a["ceil_mode"])
           for i in range(r)]  # fmt: skip
    if min(out) < 1:
        raise OperatorError(f"the {k} window does not fit the {size} input")
    for axis in range(r):
        empty = _empty_window(size[axis], out[axis], k[axis], s[axis], d[axis], p[axis])
        if empty is not None:  # its max or average has nothing to take
            raise OperatorError(
                f"pads {list(p)}, dilations {list(d)}: the {k} window of output index {empty} "
                f"along spatial axis {axis} lies wholly in the padding"
            )
    return [(n, c, *out)]


def _empty_window(size: int, out: int, k: int, s: int, d: int, lo: int) -> int | None:
    """The first output index along an axis whose window has no tap on the input, or None."""
    taps = np.arange(out)[:, None] * s - lo + np.arange(k) * d
    empty = np.flatnonzero(~((taps >= 0) & (taps < size)).any(axis=1))
    return int(empty[0]) if empty.size else None


def _gemm(ins: list[Shape], a: dict) -> list[Shape]:
    (m, k) = ins[0][::-1] if a["transA"] else ins[0]
    (k2, n) = ins[1][::-1] if a["transB"] else ins[1]
    if k != k2:
        raise OperatorError(f"A is {m}x{k} but B is {k2}x{n}")
    if len(ins) > 2:
        _broadcast([(m, n), ins[2]], a)
    return [(m, n)]


def _matmul(ins: list[Shape], a: dict) -> list[Shape]:
    x, y = ins
    x2, y2 = (1, *x) if len(x) == 1 else x, (*y, 1) if len(y) == 1 else y
    if x2[-1] != y2[-2]:
        raise OperatorError(f"MatMul of {x} and {y}: inner dimensions differ")
    batch = _broadcast([x2[:-2], y2[:-2]], a)[0]
    out = (*batch, x2[-2], y2[-1])
    if len(x) == 1:
        out = out[:-2] + out[-1:]
    if len(y) == 1:
        out = out[:-1]
    return [out]


def _concat(ins: list[Shape], a: dict) -> list[Shape]:
    ax = a["axis"]
    rest = {s[:ax] + s[ax + 1 :] for s in ins}
    if len(rest) != 1:
        raise OperatorError(f"Concat on axis {ax} of shapes {ins}: the other axes differ")
    out = list(ins[0])
    out[ax] = sum(s[ax] for s in ins)
    return [tuple(out)]


def _split(ins: list[Shape], a: dict) -> list[Shape]:
    ax = a["axis"]
    if sum(a["split"]) != ins[0][ax]:
        raise OperatorError(f"split {a['split']} does not add up to axis {ax}'s {ins[0][ax]}")
    return [ins[0][:ax] + (k,) + ins[0][ax + 1 :] for k in a["split"]]


def _slice(ins: list[Shape], a: dict) -> list[Shape]:
    out = list(ins[0])
    for s, e, ax, st in zip(a["starts"], a["ends"], a["axes"], a["steps"], strict=True):
        out[ax] = len(range(s, e, st))
    return [tuple(out)]


def _reduce(ins: list[Shape], a: dict) -> list[Shape]:
    axes = set(a["axes"])
    if a["keepdims"]:
        return [tuple(1 if i in axes else d for i, d in enumerate(ins[0]))]
    return [tuple(d for i, d in enumerate(ins[0]) if i not in axes)]


def _blocks(shape: Shape, b: int, way: int) -> Shape:
    """SpaceToDepth's output shape (way 1: H and W blocks into channels), DepthToSpace's
    (way -1)."""
    n, c, h, w = shape
    if way > 0:
        return (n, c * b * b, h // b, w // b)
    return (n, c // (b * b), h * b, w * b)


def _einsum(ins: list[Shape], a: dict) -> list[Shape]:
    """The output's extent of each subscript: the largest of the inputs' (1 broadcasts)."""
    terms, out = a["equation"].split("->")
    extent: dict[str, int] = {}
    for term, shape in zip(terms.split(","), ins, strict=True):
        for c, n in zip(term, shape, strict=True):
            extent[c] = max(extent.get(c, 1), n)
    return [tuple(extent[c] for c in out)]


def _unsqueeze(ins: list[Shape], a: dict) -> list[Shape]:
    out = list(ins[0])
    for ax in sorted(a["axes"]):
        out.insert(ax, 1)
    return [tuple(out)]


SHAPES: dict[str, ShapeFn] = {
    **{op: _same for op, kind in PATTERNS.items() if kind == Pattern.ELEMWISE},
    **{op: _broadcast for op, kind in PATTERNS.items() if kind == Pattern.BROADCAST},
    **dict.fromkeys("Dropout Softmax LogSoftmax LRN".split(), _same),
    "PRelu": _unidirectional,
    "BatchNormalization": _batch_norm,
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "MaxPool": _pool,
    "MaxPoolIndices": _pool,
    "AveragePool": _pool,
    "LpPool": _pool,
    "GlobalAveragePool": lambda ins, a: [ins[0][:2] + (1,) * (len(ins[0]) - 2)],
    "GlobalMaxPool": lambda ins, a: [ins[0][:2] + (1,) * (len(ins[0]) - 2)],
    "Gemm": _gemm,
    "MatMul": _matmul,
    "Flatten": lambda ins, a: [
        (int(np.prod(ins[0][: a["axis"]])), int(np.prod(ins[0][a["axis"] :])))
    ],
    "Reshape": lambda ins, a: [tuple(a["shape"])],
    "Transpose": lambda ins, a: [tuple(ins[0][p] for p in a["perm"])],
    "Concat": _concat,
    "Split": _split,
    "Slice": _slice,
    "Squeeze": lambda ins, a: [tuple(d for i, d in enumerate(ins[0]) if i not in a["axes"])],
    "Unsqueeze": _unsqueeze,
    "Pad": lambda ins, a: [
        tuple(d + a["pads"][i] + a["pads"][i + len(ins[0])] for i, d in enumerate(ins[0]))
    ],
    **{op: _reduce for op, kind in PATTERNS.items() if op.startswith("Reduce")},
    "Normalize": _same,
    "Attention": lambda ins, a: [ins[0][:-1] + ins[2][-1:]],
    **dict.fromkeys(
        ("ArgMax", "ArgMin"),
        lambda ins, a: _reduce(ins, {"axes": [a["axis"]], "keepdims": a["keepdims"]}),
    ),
    "CumSum": _same,
    "Expand": lambda ins, a: [tuple(a["shape"])],
    "Tile": lambda ins, a: [tuple(d * r for d, r in zip(ins[0], a["repeats"], strict=True))],
    "Range": lambda ins, a: [(a["count"],)],
    "DepthToSpace": lambda ins, a: [_blocks(ins[0], a["blocksize"], -1)],
    "SpaceToDepth": lambda ins, a: [_blocks(ins[0], a["blocksize"], 1)],
    "Resize": lambda ins, a: [tuple(a["sizes"])],
    "Gather": lambda ins, a: [ins[0][: a["axis"]] + tuple(ins[1]) + ins[0][a["axis"] + 1 :]],
    "GatherElements": lambda ins, a: [tuple(ins[1])],
    "OneHot": lambda ins, a: [ins[0][: a["axis"]] + (a["depth"],) + ins[0][a["axis"] :]],
    "GatherND": lambda ins, a: [ins[1][:-1] + ins[0][a["batch_dims"] + ins[1][-1] :]],
    "ScatterElements": _same,
    "TopKIndices": lambda ins, a: [ins[0][: a["axis"]] + (a["k"],) + ins[0][a["axis"] + 1 :]],
    "ScatterND": _same,
    "Einsum": _einsum,
    "PackNCHWc": lambda ins, a: [(ins[0][0], ins[0][1] // a["block"], *ins[0][2:], a["block"])],
    "UnpackNCHWc": lambda ins, a: [(ins[0][0], ins[0][1] * ins[0][4], *ins[0][2:4])],
}


BOOLEAN = tuple(
    "Equal Less Greater LessOrEqual GreaterOrEqual And Or Xor Not IsNaN IsInf".split()
)  # operators whose outputs are bool


def out_dtype(node: Node, dtypes: list[str | None]) -> str | None:
    """The dtype of the node's outputs: its first input's, unless the operator says."""
    if node.op == "Cast":
        return node.attrs["to"]
    if node.op in BOOLEAN:
        return "bool"
    if node.op in ("ArgMax", "ArgMin", "TopKIndices", "MaxPoolIndices"):
        return "int64"
    if node.op in ("Where", "OneHot"):
        return dtypes[1]
    return dtypes[0] if dtypes else None


def infer_node(node: Node, shapes: list[Shape], dtypes: list[str | None]) -> list[tuple]:
    """[(shape, dtype)] of the node's outputs; an OperatorError names the node when its
    inputs do not fit."""
    if node.op not in SHAPES:
        raise OperatorError(f"node {node.label} ({node.op}): no shape inference for {node.op}")
    try:
        out = SHAPES[node.op](shapes, node.attrs)
    except OperatorError as e:
        raise OperatorError(f"node {node.label} ({node.op}): {e}") from None
    except (ValueError, IndexError, KeyError, TypeError) as e:
        raise OperatorError(
            f"node {node.label} ({node.op}): inputs {shapes} do not fit ({type(e).__name__}: {e})"
        ) from None
    return [(tuple(int(d) for d in s), out_dtype(node, dtypes)) for s in out]


def infer_shapes(graph: Graph) -> Graph:
    """Every value's shape and dtype from the inputs' and constants' (in place)."""
    for node in graph.nodes:
        ins = [graph.value(t) for t in node.inputs if t]
        if any(v.shape is None for v in ins):
            missing = next(v.name for v in ins if v.shape is None)
            raise OperatorError(f"node {node.label} ({node.op}): input {missing} has no shape")
        types = infer_node(node, [v.shape for v in ins], [v.dtype for v in ins])
        for name, (shape, dtype) in zip(node.outputs, types, strict=False):
            if name:
                v = graph.value(name)
                v.shape, v.dtype = shape, dtype
    return graph


__all__ = ["BOOLEAN", "SHAPES", "infer_node", "infer_shapes"]
