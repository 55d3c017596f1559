"""ONNX -> compiled graph on the CPU: the model is imported into the graph IR
(`onnx_import`), runs the graph passes (`passes`: shape inference, constant and batch-norm
folding, simplification, fusion), every fused group becomes `build.Group`s
(`lower_groups`), the CPU-layout passes choose how dense layers and convolutions are computed
(`passes.cpu_layout`), and `build.build_graph` compiles them with the schedules of a dispatch
context (`tune.dispatch.cpu_history`: `--db` records, then the shipped ones).

Layout: 4-d activations between convolutions and pools stay in NCHW[x]c with the block
`x86.channel_block(C)`, packed once where a plain tensor first meets such a group and
unpacked where a plain-layout group (flatten, reshape, softmax, ...) or a graph output reads
them. A conv or pool group carries its elementwise followers (bias, residual add, activation)
in the packed layout; a dense group (Gemm, 2-d MatMul with a constant weight) carries its
elementwise followers too. Intermediate tensors share the arena by liveness (`plan_offsets`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..codegen.target import target_scope
from ..errors import OperatorError
from ..topi import testing, x86
from ..tune.dispatch import ApplyHistoryBest, cpu_history
from .build import (
    Group,
    Node,
    build_graph,
    plan_offsets,
    tensor_bytes,
    tensor_dtypes,
    view_aliases,
)
from .build_elementwise import UNARY
from .build_ops import OPS
from .graph_module import GraphModule
from .ir import Graph
from .ir import Node as IRNode
from .onnx_import import InputValuesNeeded, import_onnx
from .onnx_normalize import REDUCE_OPS
from .passes import run_passes
from .passes.cpu_layout import run_cpu_passes
from .passes.fuse import group_inputs

_UNARY = ("Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", *UNARY)
_BINARY = ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu")
# operators the CPU runs on tensors of any of its dtypes (integers and bool included)
TYPED = ("Cast", "Gather", "GatherElements", "ArgMax", "ArgMin", "Equal", "Less", "Greater",
         "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor", "IsNaN", "IsInf", "Where",
         "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose", "Concat", "Slice",
         "Expand", "Tile", "Add", "Sub", "Mul", "Div", "Max", "Min", "Clip", "Neg", "Abs",
         "Sign", "Pow", "MaxPool", "OneHot", "Einsum", "GatherND",
         "ScatterElements", "ScatterND", "CumSum", "Pad", "ReduceMax", "ReduceMin", "ReduceSum",
         "ReduceProd", "ReduceMean", "TopKIndices", "MaxPoolIndices")  # fmt: skip
FLOATS = ("float32", "float16", "float64")  # a plain group computes in any of them
CPU_DTYPES = (*FLOATS, "int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8",
              "bool")  # the dtypes of the CPU's tensors  # fmt: skip
_ORDERED = ("Sub", "Div", "Pow", "PRelu")  # binary operators whose operands do not commute
_PLAIN = (*_UNARY, *_BINARY, *TYPED, "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose",
          "Concat", "Softmax", "LogSoftmax", "Identity", "Dropout", "Slice", "Pad",
          "MatMul", "Gemm", "Resize", "ConvTranspose", "Conv", "BatchNormalization", "LRN",
          *REDUCE_OPS, "Normalize", "CumSum", "Expand", "Tile", "DepthToSpace",
          "SpaceToDepth", "Attention", "MaxPool", "AveragePool", "GlobalMaxPool",
          "GlobalAveragePool", "LpPool")  # fmt: skip


def compile_model(
    path: str | Path,
    target: str = "llvm",
    db: str | None = None,
    shapes: dict | None = None,
    log=None,
    print_passes: bool = False,
    records: ApplyHistoryBest | None = None,
    values: dict | None = None,
) -> GraphModule:
    """The ONNX model at `path` compiled into a GraphModule; `shapes` gives inputs' shapes
    where the model leaves dimensions symbolic (`--shape NAME=DIMS`), `values` the values of
    the inputs it reads as constants (`onnx_import.InputValuesNeeded`; the module does not
    take them); `print_passes` prints the graph IR after every pass, then the CPU's groups in
    their layouts, the CPU-layout passes' choices and the memory plan (to stdout). Schedules
    come from the dispatch context `records`, else from `tune.dispatch.cpu_history(db,
    target)`."""
    graph = fused_graph(path, shapes, print_passes, log, values)
    return compile_fused(graph, target, db, log, print_passes, records)


def compile_fused(
    graph: Graph,
    target: str = "llvm",
    db: str | None = None,
    log=None,
    print_passes: bool = False,
    records: ApplyHistoryBest | None = None,
) -> GraphModule:
    """A fused graph compiled into a GraphModule (see `compile_model`)."""
    with target_scope(target):
        groups, tensor_shapes, params, inputs, outputs = lower_groups(graph)
    if print_passes:
        print(f"== layout (NCHW[x]c) ==\n{format_groups(groups, tensor_shapes, params)}")
    own = records is None
    records = cpu_history(db, target) if records is None else records
    try:
        return compile_groups(
            groups, tensor_shapes, params, inputs, outputs, target, log, records, print_passes
        )
    finally:
        if own:
            records.close()


def compile_groups(
    groups: list[Group],
    shapes: dict,
    params: dict,
    inputs: list[str],
    outputs: list[str],
    target: str = "llvm",
    log=None,
    records: ApplyHistoryBest | None = None,
    print_passes: bool = False,
) -> GraphModule:
    """Lowered groups (`lower_groups`) compiled into a GraphModule: the CPU-layout passes
    (`passes.cpu_layout`, with the dispatch context `records` for the pointwise choice), the
    memory plan, then the build with the schedules `records` holds (none: the defaults)."""
    with target_scope(target):
        cpu = run_cpu_passes(groups, shapes, params, records, print_passes)
    offsets, arena, bound = plan_offsets(groups, cpu.shapes, set(outputs))
    if print_passes:
        views = view_aliases(groups, set(outputs))
        plan = format_plan(offsets, cpu.shapes, arena, bound, views, tensor_dtypes(groups))
        print(f"== memory plan ==\n{plan}")
    graph = build_graph(
        groups, cpu.shapes, cpu.constants, inputs, outputs, offsets, arena, target, log, records
    )
    graph.manifest["arena_lower_bound"] = bound
    return graph


@dataclass
class CPUGroups:
    """A fused graph lowered for the CPU and through the CPU-layout passes: its groups, tensor
    shapes (constants' included), constants, input and output names."""

    groups: list[Group]
    shapes: dict
    params: dict
    inputs: list[str]
    outputs: list[str]


def cpu_groups(graph: Graph, target: str, records: ApplyHistoryBest | None = None) -> CPUGroups:
    """The fused graph's groups as the build compiles them (`lower_groups`, then the
    CPU-layout passes with the dispatch context `records`; none: a 1x1 conv is pointwise
    wherever that pays), for task extraction (`tasks`)."""
    with target_scope(target):
        groups, shapes, params, inputs, outputs = lower_groups(graph)
        cpu = run_cpu_passes(groups, shapes, params, records)
    return CPUGroups(groups, cpu.shapes, cpu.constants, inputs, outputs)


def format_groups(groups: list[Group], shapes: dict, params: dict) -> str:
    """The lowered groups, one line per node with its tensors' shapes."""

    def t(name: str) -> str:
        shape = params[name].shape if name in params else shapes[name]
        return f"%{name}[{','.join(map(str, shape))}]"

    lines = []
    for g in groups:
        lines.append(f"group {g.name}:")
        lines += [f"  {t(n.output)} = {n.op}({', '.join(map(t, n.inputs))})" for n in g.nodes]
    return "\n".join(lines)


def format_plan(
    offsets: dict, shapes: dict, arena: int, bound: int, views: dict, dtypes: dict
) -> str:
    """Every arena tensor's offset and size (a view: the tensor whose bytes it shares), the
    arena against its lower bound."""
    lines = [
        f"  %{name} at {off}: "
        + (
            f"view of %{views[name]}"
            if name in views
            else f"{tensor_bytes(name, shapes, dtypes)} bytes"
        )
        for name, off in sorted(offsets.items(), key=lambda kv: kv[1])
    ]
    lines.append(f"arena {arena} bytes, lower bound {bound} bytes ({arena / max(bound, 1):.2f}x)")
    return "\n".join(lines)


def fused_graph(
    path: str | Path,
    given_shapes: dict | None = None,
    print_passes: bool = False,
    log=None,
    values: dict | None = None,
) -> Graph:
    """The model's graph IR after the passes (fused); `log` gets the import's notes (an
    opset upgrade); `values` binds inputs to constants (`compile_model`)."""
    try:
        graph = import_onnx(path, given_shapes, log, values)
    except InputValuesNeeded as e:
        raise InputValuesNeeded(e.names, f"{path}: {e}") from None
    except OperatorError as e:
        raise OperatorError(f"{path}: {e}") from None
    graph, _ = run_passes(graph, print_passes)
    return graph


def import_groups(
    path: str | Path, given_shapes: dict | None = None, print_passes: bool = False
) -> tuple[list[Group], dict, dict, list[str], list[str]]:
    """(groups, tensor shapes, constant parameters, input names, output names) of a model
    after the graph passes, lowered to the CPU's packed layout."""
    return lower_groups(fused_graph(path, given_shapes, print_passes))


class _Missing(OperatorError):
    """A group reads a value no earlier group computed."""


class _Lowering:
    """The fused IR's groups as `build.Group`s, tracking each value's layouts."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.groups: list[Group] = []
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.params: dict[str, np.ndarray] = {}
        self.packed: dict[str, str] = {}  # value -> its NCHW[x]c tensor
        self.flat_order: dict[str, np.ndarray] = {}  # packed flatten -> its plain positions
        self.readers = graph.consumers()
        self.plain: set[str] = set(graph.inputs)  # values computed in their own layout
        for t in graph.inputs:
            self.shapes[t] = graph.value(t).shape
        self.problems: list[str] = []

    def shape(self, t: str) -> tuple[int, ...]:
        return tuple(self.graph.value(t).shape)

    def as_packed(self, t: str) -> str:
        """The NCHW[x]c tensor of value t (packed by a group of its own on first use)."""
        if t in self.packed:
            return self.packed[t]
        src = self.as_plain(t)
        n, c, h, w = self.shape(t)
        b = x86.channel_block(c)
        p = f"{t}_nchwc"
        self.groups.append(Group(f"pack_{t}", [Node("PackNCHWc", [src], p, {"block": b})]))
        self.shapes[p] = (n, c // b, h, w, b)
        self.packed[t] = p
        return p

    def as_plain(self, t: str, members: list[Node] | None = None, floats: str = "float32") -> str:
        """Value t in its own layout: a constant (as a parameter; a float one as `floats`), a
        plain value, or the unpacking of a packed one (inside `members`' group when given,
        else its own)."""
        if t in self.graph.constants:
            value = self.graph.constants[t]
            self.params.setdefault(t, value.astype(floats) if value.dtype.kind == "f" else value)
            return t
        if t in self.plain:
            return t
        if t not in self.packed:
            raise _Missing(f"value {t} was not computed before it is read")
        node = Node("UnpackNCHWc", [self.packed[t]], t if members is None else f"{t}_nchw")
        self.shapes[node.output] = self.shape(t)
        if members is None:
            self.groups.append(Group(f"unpack_{t}", [node]))
            self.plain.add(t)
        else:
            members.append(node)
        return node.output

    # -- groups ----------------------------------------------------------------------------
    def lower(self, nodes: list[IRNode], name: str) -> None:
        """The fused group's nodes as `build.Group`s: the anchor's kernel with the followers
        that run in its layout, then the rest (if any) as a group of its own."""
        while nodes:  # a loop over the group's parts, not recursion
            nodes, name = self.lower_part(nodes, name)

    def lower_part(self, nodes: list[IRNode], name: str) -> tuple[list[IRNode], str]:
        """The first part of `nodes` lowered; the rest (empty when all are) and its name."""
        anchor, first, packed = nodes[0], 1, True
        x = anchor.inputs[0] if anchor.inputs else ""
        if not self.is_float32(anchor):  # the packed and dense kernels take float32 only
            self.plain_group(name, nodes)
            return [], name
        if anchor.op == "Conv" and self.is_packed_conv(anchor):
            members, out = self.conv(anchor)
        elif anchor.op in ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool") and (
            len(self.shape(x)) == 4
        ):
            members, out = self.pool(anchor)
        elif anchor.op == "Concat" and self.is_packed_concat(anchor):
            members, out = self.concat(anchor)
        elif x in self.packed and x not in self.plain and self.follows(anchor, x, True):
            members, out, first = [], self.packed[x], 0  # e.g. a batch norm after a concat
        elif anchor.op in ("Gemm", "MatMul") and self.is_dense(anchor):
            (members, out), packed = self.dense(anchor), False
        elif anchor.op == "Split":
            self.split(anchor)
            return [], name
        elif len(nodes) == 1 and self.is_packed_flatten(anchor):
            self.packed_flatten(anchor)
            return [], name
        else:
            self.plain_group(name, nodes)
            return [], name
        start = x if first == 0 else anchor.outputs[0]
        end, prev = first, start
        while end < len(nodes) and self.follows(nodes[end], prev, packed):
            prev = nodes[end].outputs[0]
            end += 1
        self.finish(name, nodes[first:end], members, out, start, packed)
        return nodes[end:], nodes[end].label if end < len(nodes) else name

    def follows(self, n: IRNode, prev: str, packed: bool) -> bool:
        """Whether n, reading value `prev`, runs in prev's layout inside its kernel: an
        elementwise node whose other operand fits (the fused value first for Sub, Div, Pow),
        or (packed) a Resize, Pad or Slice on H and W only."""
        if n.op in ("Resize", "Pad", "Slice"):
            return packed and n.inputs[0] == prev and self.is_spatial(n)
        if n.op not in (*_UNARY, *_BINARY) or prev not in n.inputs:
            return False
        if self.shape(n.outputs[0]) != self.shape(prev):
            return False
        if n.op in _ORDERED and n.inputs[0] != prev:
            return False
        other = next((t for t in n.inputs if t != prev), prev)
        if n.op in _UNARY or other == prev:
            return True
        if other not in self.graph.constants and self.dtype_of(other) != "float32":
            return False  # a computed integer exponent: Pow in a plain group
        if packed:
            return self.fits_packed(other, n)
        return other in self.graph.constants or self.shape(other) == self.shape(prev)

    def finish(self, name, followers, members, out, prev: str, packed: bool) -> None:
        """Append the `followers` of value `prev` (computed as tensor `out` by `members`, in
        the layout `packed` says; each `follows`) and the group."""
        for n in followers:
            if n.op in ("Resize", "Pad", "Slice"):
                member, dst = self.spatial(n, out)
            else:
                ins = [out]
                if n.op in _BINARY:
                    other = next((t for t in n.inputs if t != prev), prev)
                    ins.append(out if other == prev else self.operand(other, n, packed))
                dst = f"{n.outputs[0]}_nchwc" if packed else n.outputs[0]
                member = Node(n.op, ins, dst, _cpu_attrs(n))
                self.shapes[dst] = self.shapes[out]
            members.append(member)
            out, prev = dst, n.outputs[0]
        self.groups.append(Group(name, members))
        if packed:
            self.packed[prev] = out
        else:
            self.plain.add(prev)

    def fits_packed(self, t: str, n: IRNode) -> bool:
        """Whether `operand` can give t packed as n's second operand."""
        out_shape = self.shape(n.outputs[0])
        if len(out_shape) != 4:
            return False
        if t in self.graph.constants:
            value = np.broadcast_to(self.graph.constants[t], out_shape)
            return np.array_equal(np.broadcast_to(value[:1, :, :1, :1], out_shape), value)
        return self.shape(t) in (out_shape, (*out_shape[:2], 1, 1))

    def is_spatial(self, node: IRNode) -> bool:
        """A Resize, Pad or Slice of a 4-d value touching only H and W."""
        shape = self.shape(node.inputs[0])
        if len(shape) != 4:
            return False
        a = node.attrs
        if node.op == "Resize":
            return list(a["scales"][:2]) == [1.0, 1.0] and list(a["sizes"][:2]) == list(shape[:2])
        if node.op == "Pad":
            return not any(a["pads"][k] for k in (0, 1, 4, 5))
        return all(ax in (2, 3) for ax in a["axes"])

    def spatial(self, node: IRNode, x: str) -> tuple[Node, str]:
        """The node on the NCHW[x]c tensor x: its attributes widened to the block axis."""
        b = self.shapes[x][4]
        a = dict(_cpu_attrs(node))
        if node.op == "Resize":
            a["sizes"] = [*self.shapes[x][:2], *a["sizes"][2:], b]
            a["scales"] = [*a["scales"], 1.0]
        elif node.op == "Pad":
            p = a["pads"]
            a["pads"] = [*p[:4], 0, *p[4:], 0]
        out = f"{node.outputs[0]}_nchwc"
        n_, c, h, w = self.shape(node.outputs[0])
        self.shapes[out] = (n_, c // b, h, w, b)
        return Node(node.op, [x], out, a), out

    def is_packed_concat(self, node: IRNode) -> bool:
        """A channel concat of 4-d values, one of them packed already, whose channel blocks
        all equal the output's."""
        shapes = [self.shape(t) for t in node.inputs]
        out = self.shape(node.outputs[0])
        return (
            node.attrs["axis"] == 1
            and len(out) == 4
            and all(len(s) == 4 and t not in self.graph.constants
                    for s, t in zip(shapes, node.inputs, strict=True))
            and any(t in self.packed for t in node.inputs)
            and all(x86.channel_block(s[1]) == x86.channel_block(out[1]) for s in shapes)
        )  # fmt: skip

    def concat(self, node: IRNode) -> tuple[list[Node], str]:
        ins = [self.as_packed(t) for t in node.inputs]
        out = f"{node.outputs[0]}_nchwc"
        n_, c, h, w = self.shape(node.outputs[0])
        b = x86.channel_block(c)
        self.shapes[out] = (n_, c // b, h, w, b)
        return [Node("Concat", ins, out, {"axis": 1})], out

    def operand(self, t: str, n: IRNode, packed: bool) -> str:
        """The second operand of a fused binary node: an activation of the output's shape
        (or, packed, of shape [N, C, 1, 1]: a per-channel gate) or a constant broadcast per
        channel (packed like the output) or everywhere."""
        out_shape = self.shape(n.outputs[0])
        if t not in self.graph.constants:
            shape = self.shape(t)
            gate = packed and shape == (*out_shape[:2], 1, 1)
            if shape != out_shape and not gate:
                raise OperatorError(f"node {n.label} ({n.op}): operand {t} would broadcast")
            return self.as_packed(t) if packed else self.as_plain(t)
        value = np.broadcast_to(self.graph.constants[t], out_shape).astype(np.float32)
        name = f"{t}_{n.label}"
        if packed:
            c = out_shape[1]
            per_channel = value[:1, :, :1, :1]
            if not np.array_equal(np.broadcast_to(per_channel, out_shape), value):
                raise OperatorError(f"node {n.label} ({n.op}): constant {t} is not per channel")
            b = x86.channel_block(c)
            value = np.ascontiguousarray(per_channel.reshape(1, c // b, b, 1, 1)
                                         .transpose(0, 1, 3, 4, 2))  # fmt: skip
        self.params[name] = value
        self.shapes[name] = value.shape
        return name

    def is_packed_conv(self, node: IRNode) -> bool:
        """A 2-d conv with a constant weight, groups 1 or depthwise: the NCHW[x]c kernels
        (else a generic conv in a plain group)."""
        w = self.graph.constants.get(node.inputs[1])
        c = self.shape(node.inputs[0])[1]
        return (
            w is not None
            and w.ndim == 4
            and node.attrs["group"] in (1, c if c == w.shape[0] else 1)
        )

    def conv(self, node: IRNode) -> tuple[list[Node], str]:
        a = node.attrs
        x = self.as_packed(node.inputs[0])
        w = self.graph.constants[node.inputs[1]]
        oc, c = w.shape[0], self.shape(node.inputs[0])[1]
        bias_name = node.inputs[2] if len(node.inputs) > 2 else ""
        bias = self.graph.constants[bias_name] if bias_name else np.zeros(oc, np.float32)
        ib, ob = self.shapes[x][4], x86.channel_block(oc)
        kh, kw = w.shape[2:]
        wname, bname = f"{node.outputs[0]}_w", f"{node.outputs[0]}_b"  # node names may repeat
        if a["group"] == 1:
            self.params[wname] = testing.oihw_pack(w.astype(np.float32), ib, ob)
        else:  # depthwise (ib == ob: both are the block of the same channel count)
            self.params[wname] = np.ascontiguousarray(
                w.reshape(c // ob, ob, kh, kw).transpose(0, 2, 3, 1)
            )[:, None, :, :, None].astype(np.float32)
        self.params[bname] = np.ascontiguousarray(bias.reshape(oc // ob, 1, 1, ob), np.float32)
        self.shapes[wname], self.shapes[bname] = (
            self.params[wname].shape,
            self.params[bname].shape,
        )
        attrs = {
            "kernel_shape": [kh, kw], "pads": list(a["pads"]), "strides": list(a["strides"]),
            "group": a["group"],
        }  # fmt: skip
        if a["dilations"] != [1, 1]:
            attrs["dilations"] = list(a["dilations"])
        out = f"{node.outputs[0]}_nchwc"
        n_, _, oh, ow = self.shape(node.outputs[0])
        self.shapes[out] = (n_, oc // ob, oh, ow, ob)
        return [Node("Conv", [x, wname, bname], out, attrs)], out

    def pool(self, node: IRNode) -> tuple[list[Node], str]:
        x = self.as_packed(node.inputs[0])
        attrs = {}
        if not node.op.startswith("Global"):
            keys = ("kernel_shape", "pads", "strides", "dilations", "ceil_mode",
                    "count_include_pad")  # fmt: skip
            attrs = {k: node.attrs[k] for k in keys if k in node.attrs}
        out = f"{node.outputs[0]}_nchwc"
        n_, cb, _, _, b = self.shapes[x]
        self.shapes[out] = (n_, cb, *self.shape(node.outputs[0])[2:], b)
        return [Node(node.op, [x], out, attrs)], out

    def is_dense(self, node: IRNode) -> bool:
        """A[M, K] (not transposed) times a constant 2-d B, plus a constant row or scalar C:
        the packed dense kernel (else a generic matmul in a plain group)."""
        c = node.inputs[2] if len(node.inputs) > 2 else ""
        bias = self.graph.constants.get(c) if c else None
        return (
            node.inputs[1] in self.graph.constants
            and self.graph.constants[node.inputs[1]].ndim == 2
            and len(self.shape(node.inputs[0])) == 2
            and not (node.op == "Gemm" and node.attrs["transA"])
            and (not c or (bias is not None and (bias.ndim < 2 or bias.shape[0] == 1)))
        )

    def is_packed_flatten(self, node: IRNode) -> bool:
        """A Flatten (or Reshape) of a packed [N, C, H, W] value (not unpacked) to [N, CHW]
        that only dense layers read."""
        x, out = node.inputs[0], node.outputs[0]
        if node.op not in ("Flatten", "Reshape") or len(self.shape(x)) != 4:
            return False
        shape, readers = self.shape(x), self.readers.get(out, [])
        return (
            x in self.packed
            and x not in self.plain
            and self.shape(out) == (shape[0], int(np.prod(shape[1:])))
            and out not in self.graph.outputs
            and bool(readers)
            and all(n.op in ("Gemm", "MatMul") and n.inputs[0] == out and self.is_dense(n)
                    for n in readers)
        )  # fmt: skip

    def packed_flatten(self, node: IRNode) -> None:
        """The flatten as a view of the NCHW[x]c tensor (channel blocks outermost, the block's
        lanes innermost); its dense readers take their weights' columns in that order, so no
        unpacking runs between the layers."""
        src, out = self.packed[node.inputs[0]], node.outputs[0]
        n_, cb, h, w, b = self.shapes[src]
        self.shapes[out] = self.shape(out)
        self.groups.append(
            Group(node.label, [Node("Reshape", [src], out, {"shape": list(self.shape(out))})])
        )
        self.flat_order[out] = np.arange(cb * b * h * w).reshape(cb, b, h, w).transpose(0, 2, 3, 1)

    def dense(self, node: IRNode) -> tuple[list[Node], str]:
        a = node.attrs
        w = self.graph.constants[node.inputs[1]]
        alpha = a.get("alpha", 1.0)
        weight = (w if node.op == "Gemm" and a["transB"] else w.T) * alpha
        x = node.inputs[0]
        if x in self.flat_order:  # a packed flatten: columns in its order
            weight = weight[:, self.flat_order[x].reshape(-1)]
        units = weight.shape[0]
        c = node.inputs[2] if len(node.inputs) > 2 else ""
        bias = self.graph.constants[c] if c else np.zeros(units)
        bias = np.broadcast_to(bias.reshape(-1) * a.get("beta", 1.0), (units,))
        wname, bname = f"{node.outputs[0]}_w", f"{node.outputs[0]}_b"  # node names may repeat
        self.params[wname] = np.ascontiguousarray(weight, np.float32)
        self.params[bname] = np.ascontiguousarray(bias, np.float32)
        self.shapes[wname], self.shapes[bname] = (units, weight.shape[1]), (units,)
        out = node.outputs[0]
        self.shapes[out] = self.shape(out)
        src = x if x in self.flat_order else self.as_plain(x)
        return [Node("Dense", [src, wname, bname], out)], out

    def plain_group(self, name: str, nodes: list[IRNode]) -> None:
        """A group in the plain layout (NCHW for 4-d): packed inputs unpacked inside it."""
        members: list[Node] = []
        local: dict[str, str] = {}
        for n in nodes:
            if n.op not in _PLAIN:
                raise OperatorError(f"node {n.label} ({n.op}): no CPU kernel for {n.op}")
            floats = self.float_dtype(n)
            ins = [local.get(t) or self.operand_plain(t, members, floats) for t in n.inputs if t]
            op, attrs = n.op, _cpu_attrs(n)
            if op in ("Squeeze", "Unsqueeze", "Flatten", "Identity", "Dropout", "Reshape"):
                same = self.shape(n.outputs[0]) == self.shape(n.inputs[0])
                op, attrs = (
                    ("Copy", {}) if same else ("Reshape", {"shape": list(self.shape(n.outputs[0]))})
                )
            if op == "Conv":  # not a packed one: grouped, 3-d or with a computed weight
                op = "ConvGeneric"
            if op in ("MaxPool", "AveragePool"):  # of another rank or dtype than packed ones
                op = f"{op}ND"
            self.check_dtypes(n)
            members.append(Node(op, ins, n.outputs[0], attrs))
            self.shapes[n.outputs[0]] = self.shape(n.outputs[0])
            local[n.outputs[0]] = n.outputs[0]
        self.groups.append(self.typed(Group(name, members)))
        self.plain.add(nodes[-1].outputs[0])

    def is_float32(self, n: IRNode) -> bool:
        """Whether n's tensors (computed ones and outputs) are all float32."""
        names = [t for t in (*n.inputs, *n.outputs) if t and t not in self.graph.constants]
        return all(self.dtype_of(t) == "float32" for t in names)

    def float_dtype(self, n: IRNode) -> str:
        """The float dtype n computes in (its float constants are given it): its output's,
        else its first computed float input's, else float32."""
        names = [*n.outputs, *(t for t in n.inputs if t and t not in self.graph.constants)]
        return next((d for t in names if (d := self.dtype_of(t)) in FLOATS[1:]), "float32")

    def check_dtypes(self, n: IRNode) -> None:
        """An error unless n's tensors are of `CPU_DTYPES` and floats (`FLOATS`, which every
        plain-layout kernel computes in), or n one of the operators the CPU runs on integers
        and bool too (`TYPED`)."""
        inputs = n.inputs[:1] if n.op == "Pow" else n.inputs  # its exponent may be integer
        other = {self.dtype_of(t) for t in (*inputs, *n.outputs) if t} - {"float32"}
        if other - set(CPU_DTYPES):
            raise OperatorError(
                f"node {n.label} ({n.op}): {', '.join(sorted(other))} tensors; the CPU runs "
                f"{', '.join(CPU_DTYPES)} tensors"
            )
        if other - set(FLOATS) and n.op not in TYPED:
            raise OperatorError(
                f"node {n.label} ({n.op}): {', '.join(sorted(other))} tensors; the CPU runs "
                f"{n.op} on {', '.join(FLOATS)} only"
            )

    def dtype_of(self, t: str) -> str:
        """The dtype of tensor t: a parameter's, else its graph value's (float32 for the
        tensors the lowering makes up)."""
        if t in self.params:
            return self.params[t].dtype.name
        value = self.graph.values.get(t)
        return value.dtype if value is not None and value.dtype else "float32"

    def typed(self, group: Group) -> Group:
        """The group with the dtypes of its inputs and output that are not float32."""
        names = [*group.inputs, group.output]
        group.dtypes = {t: d for t in names if (d := self.dtype_of(t)) != "float32"}
        return group

    def split(self, node: IRNode) -> None:
        """Split as one Slice group per output."""
        x, ax = node.inputs[0], node.attrs["axis"]
        start = 0
        for k, (out, size) in enumerate(zip(node.outputs, node.attrs["split"], strict=True)):
            start += size
            if not out:  # an output no one reads, or one without elements (a constant)
                continue
            attrs = {"starts": [start - size], "ends": [start], "axes": [ax], "steps": [1]}
            members: list[Node] = []
            src = self.operand_plain(x, members)
            members.append(Node("Slice", [src], out, attrs))
            self.shapes[out] = self.shape(out)
            self.groups.append(self.typed(Group(f"{node.label}_{k}", members)))
            self.plain.add(out)

    def operand_plain(self, t: str, members: list[Node], floats: str = "float32") -> str:
        out = self.as_plain(t, members, floats)
        self.shapes.setdefault(out, self.shape(t) if t not in self.graph.constants else
                               self.graph.constants[t].shape)  # fmt: skip
        return out


def _cpu_attrs(n: IRNode) -> dict:
    """The IR node's attributes as `build_ops` reads them."""
    a = dict(n.attrs)
    if n.op == "Clip":
        a["min"] = None if a["min"] == -np.inf else a["min"]
        a["max"] = None if a["max"] == np.inf else a["max"]
    return a


def lower_groups(graph: Graph) -> tuple[list[Group], dict, dict, list[str], list[str]]:
    """(groups, tensor shapes, constant parameters, input names, output names) of a fused
    graph; an OperatorError lists every group the CPU cannot run."""
    low = _Lowering(graph)
    bad = [t for t in graph.inputs if graph.value(t).dtype not in CPU_DTYPES]
    if bad:
        raise OperatorError(
            f"inputs {', '.join(bad)}: the CPU graph runs {', '.join(CPU_DTYPES)} inputs only"
        )
    failed: set[str] = set()  # values of groups that failed
    for g in graph.groups or []:
        outs = {o for n in g.nodes for o in n.outputs}
        try:
            low.lower(g.nodes, g.name)
        except _Missing as e:  # reported already where a group reads a failed one
            if not failed & set(group_inputs(g)):
                low.problems.append(str(e))
            failed |= outs
        except OperatorError as e:
            low.problems.append(str(e))
            failed |= outs
        except (KeyError, IndexError, ValueError, TypeError) as e:
            low.problems.append(f"group {g.name}: cannot lower it ({type(e).__name__}: {e})")
            failed |= outs
    for t in graph.outputs:
        if not low.problems:
            low.as_plain(t)
    if low.problems:
        raise OperatorError(
            f"{len(low.problems)} group(s) cannot run on the CPU: " + "; ".join(low.problems)
        )
    for op in {n.op for g in low.groups for n in g.nodes} - set(OPS):
        raise OperatorError(f"op {op} has no CPU kernel")
    return low.groups, low.shapes, low.params, list(graph.inputs), list(graph.outputs)


__all__ = [
    "CPUGroups",
    "compile_fused",
    "compile_groups",
    "compile_model",
    "cpu_groups",
    "fused_graph",
    "import_groups",
    "lower_groups",
]
