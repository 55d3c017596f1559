"""The graph IR: typed values, operator nodes with ONNX op types and attributes, constants as
numpy arrays, graph inputs and outputs, and (after fusion) the fused groups with their pattern
kind. Every pass takes and returns a `Graph`; `str(graph)` prints it one node a line:

    %y = Conv(%x, %w) {dilations=[1,1], group=1, ...} : float32[1,64,112,112]
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class Pattern(enum.IntEnum):
    """How an operator fuses (ordered as in TVM: lower kinds fuse into higher ones)."""

    ELEMWISE = 0  # out[i] = f(in[i])
    BROADCAST = 1  # elementwise with broadcast operands
    INJECTIVE = 2  # each output element reads one input element (reshape, transpose, slice)
    REDUCTION = 3  # reduces axes
    OUT_FUSABLE = 4  # complex-out-fusable: conv, dense, pools absorb elementwise followers
    OPAQUE = 8  # fuses with nothing


@dataclass
class Value:
    """A tensor of the graph: its name, static shape and numpy dtype name."""

    name: str
    shape: tuple[int, ...] | None = None
    dtype: str | None = None

    def type_str(self) -> str:
        if self.shape is None:
            return f"{self.dtype or '?'}[?]"
        return f"{self.dtype or '?'}[{','.join(map(str, self.shape))}]"


@dataclass
class Node:
    """One operator: op type, input value names ('' for an omitted optional input), attributes
    (Python values: int, float, str, lists), output value names."""

    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    name: str = ""

    @property
    def label(self) -> str:
        """The node's name, or its first output's when it has none."""
        return self.name or self.outputs[0]


@dataclass
class Group:
    """Fused nodes run as one kernel: its pattern kind and its nodes in order; after
    partitioning, the `target` that runs it (cpu or vta) and why."""

    name: str
    pattern: Pattern
    nodes: list[Node]
    target: str = "cpu"
    reason: str = ""

    @property
    def anchor(self) -> Node:
        """The node of the highest pattern kind (the first of them): it picks the schedule."""
        return max(self.nodes, key=lambda n: (pattern_of(n.op), -self.nodes.index(n)))


def attention_flops(q: tuple[int, ...], kt: tuple[int, ...], v: tuple[int, ...]) -> int:
    """2 x the multiply-adds of an Attention's two products: Q [..., T, d] by K^T [..., d, S],
    the scores by V [..., S, dv]."""
    heads, t, s = int(np.prod(q[:-2])), q[-2], kt[-1]
    return 2 * heads * t * s * (q[-1] + v[-1])


@dataclass
class Graph:
    """Nodes in topological order over named values; constants are values with an array."""

    nodes: list[Node]
    inputs: list[str]
    outputs: list[str]
    values: dict[str, Value] = field(default_factory=dict)
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    groups: list[Group] | None = None
    name: str = "graph"

    def value(self, name: str) -> Value:
        """The value `name` (created untyped when first seen)."""
        if name not in self.values:
            self.values[name] = Value(name)
        return self.values[name]

    def add_constant(self, name: str, array: np.ndarray) -> str:
        self.constants[name] = array
        self.values[name] = Value(name, tuple(array.shape), array.dtype.name)
        return name

    def fresh(self, base: str) -> str:
        """A value name not used yet, derived from `base`."""
        name, k = base, 0
        while name in self.values or name in self.constants:
            k += 1
            name = f"{base}_{k}"
        self.values[name] = Value(name)
        return name

    def flops(self, node: Node) -> int:
        """2 x the multiply-adds of a Conv, Gemm, MatMul or Attention node from the static
        shapes (0 for any other: its work is elementwise)."""
        out = int(np.prod(self.value(node.outputs[0]).shape))
        if node.op == "Conv":
            return 2 * out * int(np.prod(self.value(node.inputs[1]).shape[1:]))
        if node.op in ("Gemm", "MatMul"):
            return 2 * out * self.value(node.inputs[0]).shape[-1]
        if node.op == "Attention":
            return attention_flops(*(self.value(t).shape for t in node.inputs[:3]))
        return 0

    def producers(self) -> dict[str, Node]:
        return {o: n for n in self.nodes for o in n.outputs if o}

    def consumers(self) -> dict[str, list[Node]]:
        users: dict[str, list[Node]] = {}
        for n in self.nodes:
            for t in n.inputs:
                if t:
                    users.setdefault(t, []).append(n)
        return users

    def prune(self) -> Graph:
        """Drop nodes and constants no graph output depends on (in place)."""
        needed = set(self.outputs)
        kept = []
        for n in reversed(self.nodes):
            if any(o in needed for o in n.outputs):
                kept.append(n)
                needed.update(t for t in n.inputs if t)
        self.nodes = kept[::-1]
        self.constants = {k: v for k, v in self.constants.items() if k in needed}
        live = needed | set(self.inputs) | {o for n in self.nodes for o in n.outputs}
        self.values = {k: v for k, v in self.values.items() if k in live}
        return self

    def __str__(self) -> str:
        return format_graph(self)


# Pattern kinds of the operators (unknown ones are opaque).
PATTERNS: dict[str, Pattern] = {
    **dict.fromkeys(
        (
            "Relu LeakyRelu Clip Sigmoid Tanh HardSigmoid HardSwish Exp Identity Cast Neg Sqrt "
            "Abs Erf Log Reciprocal Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh "
            "Floor Ceil Round Sign Elu Selu Celu ThresholdedRelu Softplus Softsign Mish Gelu "
            "Not IsNaN IsInf"
        ).split(),
        Pattern.ELEMWISE,
    ),
    **dict.fromkeys(
        (
            "Add Sub Mul Div Pow Max Min PRelu BatchNormalization Equal Less Greater "
            "LessOrEqual GreaterOrEqual And Or Xor Where"
        ).split(),
        Pattern.BROADCAST,
    ),
    **dict.fromkeys(
        (
            "Reshape Flatten Transpose Concat Split Slice Squeeze Unsqueeze Pad Resize Gather "
            "GatherElements Expand Tile DepthToSpace SpaceToDepth PackNCHWc UnpackNCHWc OneHot"
        ).split(),
        Pattern.INJECTIVE,
    ),
    **dict.fromkeys(
        (
            "ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 "
            "ReduceSumSquare ReduceLogSum ReduceLogSumExp Normalize ArgMax ArgMin"
        ).split(),
        Pattern.REDUCTION,
    ),
    **dict.fromkeys(
        (
            "Conv ConvTranspose Gemm MatMul MaxPool AveragePool GlobalAveragePool GlobalMaxPool"
        ).split(),
        Pattern.OUT_FUSABLE,
    ),
}


def pattern_of(op: str) -> Pattern:
    return PATTERNS.get(op, Pattern.OPAQUE)


def format_attr(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(format_attr(x) for x in v) + "]"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, np.ndarray):
        return f"array{v.dtype.name}{list(v.shape)}"
    if isinstance(v, str):
        return repr(v)
    return str(v)


def format_node(graph: Graph, node: Node) -> str:
    outs = ", ".join(f"%{o}" for o in node.outputs)
    ins = ", ".join(f"%{t}" if t else "_" for t in node.inputs)
    attrs = ", ".join(f"{k}={format_attr(v)}" for k, v in sorted(node.attrs.items()))
    types = ", ".join(graph.value(o).type_str() for o in node.outputs)
    return f"{outs} = {node.op}({ins})" + (f" {{{attrs}}}" if attrs else "") + f" : {types}"


def format_graph(graph: Graph) -> str:
    """The graph as text: a header with the inputs, one line per constant's type, one per node
    (indented under its group's header after fusion), then the outputs."""
    ins = ", ".join(f"%{t}: {graph.value(t).type_str()}" for t in graph.inputs)
    lines = [f"graph {graph.name}({ins}) {{"]
    for name, array in graph.constants.items():
        lines.append(f"  const %{name} : {array.dtype.name}[{','.join(map(str, array.shape))}]")
    if graph.groups is None:
        lines += [f"  {format_node(graph, n)}" for n in graph.nodes]
    else:
        for g in graph.groups:
            where = f" on {g.target} ({g.reason})" if g.reason else ""
            lines.append(f"  group {g.name} [{g.pattern.name.lower()}]{where} {{")
            lines += [f"    {format_node(graph, n)}" for n in g.nodes]
            lines.append("  }")
    lines.append(f"  return {', '.join(f'%{t}' for t in graph.outputs)}")
    lines.append("}")
    return "\n".join(lines)


__all__ = ["Graph", "Group", "Node", "Pattern", "Value", "format_graph", "pattern_of"]
