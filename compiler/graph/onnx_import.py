"""ONNX (opsets 1 and later) -> graph IR with static shapes. A model of opset 1-10 is first
upgraded to opset 13 by `onnx.version_converter` (`onnx_model.upgrade`); one after 18 (and no
newer than the installed onnx package knows) imports where its operators are defined as at
opset 18. A model that breaks ONNX's rules (a value written twice, an initializer whose data is
not as long as its dims claim) is refused before anything is converted
(`onnx_model.validate`).

Every attribute ONNX defines for a supported operator is present on the IR node, defaults
filled from the operator's schema at the model's opset; inputs that must be constant
(Clip min/max, Pad pads, Reshape shape, Slice starts/ends/axes/steps, Split split,
Squeeze/Unsqueeze axes, Resize scales/sizes, Reduce* axes) become attributes, and what
depends on shapes is resolved: auto_pad into explicit pads, Reshape's 0 and -1, Slice bounds
clamped, Resize's output sizes (per operator in `onnx_normalize`). Nodes whose inputs are all
constant (Constant, Shape, Size, and the shape arithmetic after them) fold into constants. Problems
are collected over the whole graph and raised as one OperatorError listing every node.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import OperatorError
from .ir import Graph, Node, Value
from .onnx_model import (
    OPSETS,
    bound_value,
    input_shape,
    load,
    opset_of,
    static_dims,
    tensor_array,
    upgrade,
    validate,
)
from .onnx_normalize import (
    NORMALIZE,
    REDUCE_OPS,
    Unsupported,
    axis_of,
    check_ranks,
    onnx_dtype,
)
from .passes.infer import infer_node
from .reference import resize_matrix, run_node

VALUE_KINDS = {"sequence_type": "a sequence of tensors", "optional_type": "an optional value",
               "map_type": "a map", "sparse_tensor_type": "a sparse tensor"}  # fmt: skip
MAX_CONCAT_INPUTS = 64  # a Concat of more inputs imports as a tree of Concats
VALUE_LIMIT = 64  # graph inputs read as constants compile for their values up to this size

SUPPORTED = (
    "Conv ConvTranspose BatchNormalization Relu LeakyRelu Clip Sigmoid Tanh HardSigmoid "
    "HardSwish Add Sub Mul Div Pow MaxPool AveragePool GlobalAveragePool GlobalMaxPool Gemm "
    "MatMul Flatten Reshape Transpose Concat Split Slice Squeeze Unsqueeze Pad Softmax "
    "GatherElements "
    "LogSoftmax ReduceMean ReduceSum ReduceMax Resize Identity Dropout Constant Shape Size Gather "
    "Cast ConstantOfShape Sum LRN Max Min Mean Abs Neg Exp Log Sqrt Reciprocal Erf Sin Cos Tan "
    "Asin Acos Atan Sinh Cosh Asinh Acosh Atanh Floor Ceil Round Sign Elu Selu Celu PRelu "
    "ThresholdedRelu Softplus Softsign Mish Gelu LayerNormalization InstanceNormalization "
    "GroupNormalization CumSum Expand Tile Range DepthToSpace SpaceToDepth ArgMax ArgMin "
    "Equal Less Greater LessOrEqual GreaterOrEqual Not And Or Xor IsNaN IsInf Where OneHot Einsum "
    "LpPool GatherND ScatterElements ScatterND TopK NonZero"
).split() + list(REDUCE_OPS)
VARIADIC = {"Sum": "Add", "Max": "Max", "Min": "Min", "Mean": "Add"}  # -> chains of this op
NEWER = {"Gelu": 20, "AveragePool": 19, "SpaceToDepth": 28}  # operators (re)defined after
# OPSETS: the opset whose definition imports (AveragePool's dilations, SpaceToDepth's mode)
FOLD_ONLY = ("Shape", "Size", "ConstantOfShape", "Range")  # where they fold to constants
NORMALIZATIONS = ("LayerNormalization", "InstanceNormalization", "GroupNormalization")
WINDOWS_1D = ("Conv", "ConvTranspose", "MaxPool", "AveragePool")  # on [N, C, L]: 2-d, height 1


class _Unknown(Exception):
    """A node reads a value downstream of a failed node (its checks that need it are skipped)."""


class _NeedsValue(Unsupported):
    """A node reads as a constant a value computed from small graph inputs."""


class InputValuesNeeded(OperatorError):
    """The model reads graph inputs as constants (axes, shapes, sizes or bounds given as
    inputs): its graph exists for given values of them, `names` (`import_onnx`'s `values`)."""

    def __init__(self, names: list[str], message: str):
        super().__init__(message)
        self.names = names


class _Importer:
    def __init__(self, model, shapes: dict | None, values: dict | None = None, source: int = 0):
        self.opset = opset_of(model)
        self.source_opset = source or self.opset  # the model's own, before `upgrade`
        g = model.graph
        self.graph = Graph([], [], [o.name for o in g.output], name=g.name or "graph")
        for t in g.initializer:
            self.graph.add_constant(t.name, tensor_array(t, f"initializer {t.name}"))
        inputs = [i for i in g.input if i.name not in self.graph.constants]
        unknown = set(shapes or ()) - {i.name for i in inputs}
        if unknown:
            names = ", ".join(i.name for i in inputs)
            its = f"its input is {names}" if len(inputs) == 1 else f"its inputs are {names}"
            raise OperatorError(
                f"--shape {sorted(unknown)[0]}: the model has no input of that name ({its})"
            )
        unknown = set(values or ()) - {i.name for i in inputs}
        if unknown:
            raise OperatorError(f"a value is given for {sorted(unknown)[0]}, which is not an "
                                "input of the model")  # fmt: skip
        self.empty: dict[str, str] = {}  # graph inputs with an empty dimension -> the error
        self.empty_values: dict[str, np.ndarray] = {}  # their (known: no elements) values
        for i in inputs:
            kind = i.type.WhichOneof("value")
            if kind != "tensor_type":
                what = VALUE_KINDS.get(kind or "", f"a {kind or 'value of no type'}")
                raise OperatorError(f"input {i.name} is {what}: the graph's values are tensors "
                                    "(no sequences, optionals or maps)")  # fmt: skip
            if values and i.name in values:
                self.graph.add_constant(i.name, bound_value(i, values[i.name]))
                continue
            try:
                shape = input_shape(i, shapes)
            except OperatorError as e:  # an empty one is refused where a node reads it
                dims = static_dims(i)
                if dims is None or 0 not in dims:
                    raise
                self.empty[i.name], shape = str(e), tuple(dims)
                self.empty_values[i.name] = np.zeros(
                    shape, onnx_dtype(i.type.tensor_type.elem_type)
                )
            self.graph.inputs.append(i.name)
            elem = i.type.tensor_type.elem_type
            self.graph.values[i.name] = Value(i.name, shape, onnx_dtype(elem))
        self.producers = {t: n for n in g.node for t in n.output}
        self.needed: set[str] = set()  # graph inputs read as constants
        self.value_problems: list[str] = []
        for n in g.node:  # reserved, so that names made up while importing differ
            for t in n.output:
                self.graph.values.setdefault(t, Value(t))
        self.problems: list[str] = []
        self.blocked: set[str] = set()  # values downstream of a failed node
        self.extra_outputs: dict[str, Any] = {}  # optional outputs not computed

    def check_version(self, node) -> None:
        """A model of a newer opset imports where its operators mean what they meant at opset
        18: a newer definition with the same inputs and outputs whose new attributes the node
        leaves unset (most redefinitions after 18 only admit more element types)."""
        import onnx

        try:
            newer = onnx.defs.get_schema(node.op_type, self.opset)
        except onnx.defs.SchemaError:
            raise Unsupported(f"operator not defined at opset {self.opset}") from None
        base = max(OPSETS[-1], NEWER.get(node.op_type, 0))
        if newer.since_version <= base:
            return
        known = onnx.defs.get_schema(node.op_type, base)
        added = set(newer.attributes) - set(known.attributes)
        same_io = [i.name for i in newer.inputs] == [i.name for i in known.inputs] and [
            o.name for o in newer.outputs
        ] == [o.name for o in known.outputs]
        used = {a.name for a in node.attribute} & added - _inert(node)
        if node.op_type == "Cast" and used:  # the attributes of an 8-bit float target
            raise Unsupported(f"Cast to {_cast_target(node)} (it sets {', '.join(sorted(used))}):"
                              " the 8-bit float types are not supported")  # fmt: skip
        if not same_io or used or set(known.attributes) - set(newer.attributes):
            raise Unsupported(
                f"{node.op_type} as redefined at opset {newer.since_version} is not supported "
                f"(opsets {OPSETS[0]}-{OPSETS[-1]}"
                + (f"; it sets {', '.join(sorted(used))}" if used else "")
                + ")"
            )

    def check_types(self, node) -> None:
        """ONNX's type constraints on the node's inputs at the model's opset: each input's
        element type one its type parameter allows, the inputs sharing a parameter of one
        type (as onnxruntime checks a model before running it)."""
        import onnx

        schema = onnx.defs.get_schema(node.op_type, self.opset)
        allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
        bound: dict[str, tuple[int, str]] = {}  # type parameter -> (first input, its dtype)
        for k, name in enumerate(node.input):
            value = self.graph.values.get(name)
            unknown = name in self.blocked or value is None or value.dtype is None
            if not name or unknown or not schema.inputs:
                continue  # omitted, undefined or after a failed node: reported where read
            param = schema.inputs[min(k, len(schema.inputs) - 1)].type_str
            types = allowed.get(param, {param})
            if f"tensor({_onnx_type(value.dtype)})" not in types:
                names = sorted(t.removeprefix("tensor(").removesuffix(")") for t in types)
                raise Unsupported(
                    f"input {k} ({name}) is {value.dtype}; ONNX defines it as {', '.join(names)}"
                )
            first, dtype = bound.setdefault(param, (k, value.dtype))
            if dtype != value.dtype:
                raise Unsupported(
                    f"inputs {first} and {k} are {dtype} and {value.dtype}; ONNX wants one type"
                )

    # -- attribute helpers ---------------------------------------------------------------
    def attrs(self, node) -> dict[str, Any]:
        """The node's attributes with the schema's defaults (at the model's opset) filled."""
        import onnx

        schema = onnx.defs.get_schema(node.op_type, self.opset)
        if not schema.min_input <= len(node.input) <= schema.max_input:
            raise Unsupported(
                f"{len(node.input)} inputs; at opset {self.opset} it takes {schema.min_input}"
                f"-{schema.max_input}"
            )
        out: dict[str, Any] = {}
        for name, a in schema.attributes.items():
            if a.default_value.type:
                out[name] = _py(onnx.helper.get_attribute_value(a.default_value))
        for a in node.attribute:
            if a.name not in schema.attributes:
                raise Unsupported(f"attribute {a.name} is not defined at opset {self.opset}")
            want = schema.attributes[a.name].type
            if a.type != want:
                kinds = onnx.AttributeProto.AttributeType
                raise Unsupported(
                    f"attribute {a.name} is {kinds.Name(a.type)}, ONNX defines it as "
                    f"{kinds.Name(want)}"
                )
            out[a.name] = _py(onnx.helper.get_attribute_value(a))
        return out

    def const(self, node, k: int, what: str, default=None) -> np.ndarray | None:
        """The node's k-th input as a constant array (None when omitted)."""
        if len(node.input) <= k or not node.input[k]:
            return default
        name = node.input[k]
        if name in self.blocked:
            raise _Unknown(name)
        if name in self.empty_values:
            return self.empty_values[name]
        if name not in self.graph.constants:
            sources = self.sources(name)
            if not sources:
                raise Unsupported(f"input {k} ({what}) must be a constant, {name} is computed")
            self.needed |= sources
            origin = ("a graph input" if name in sources else
                      f"computed from the graph input(s) {', '.join(sorted(sources))}")  # fmt: skip
            raise _NeedsValue(f"input {k} ({what}) must be a constant, {name} is {origin}")
        return self.graph.constants[name]

    def sources(self, name: str) -> set[str] | None:
        """The graph inputs value `name` is computed from, where each holds at most
        VALUE_LIMIT elements (the graph can be compiled for their values), else None."""
        found: set[str] = set()
        stack, seen = [name], set()
        while stack:
            t = stack.pop()
            if not t or t in seen or t in self.graph.constants:
                continue
            seen.add(t)
            if t in self.graph.inputs:
                if math.prod(self.graph.values[t].shape) > VALUE_LIMIT:
                    return None
                found.add(t)
            elif t in self.producers:
                stack.extend(self.producers[t].input)
            else:
                return None
        return found or None

    def shape(self, name: str) -> tuple[int, ...]:
        if name in self.blocked:
            raise _Unknown(name)
        v = self.graph.values.get(name)
        if v is None or v.shape is None:
            raise Unsupported(f"the shape of {name} is not known")
        return v.shape

    # -- the walk --------------------------------------------------------------------------
    def run(self, model) -> Graph:
        blocked, failed = self.blocked, set()  # values downstream of, and read by, failed nodes
        for node in model.graph.node:
            label = f"node {node.name or node.output[0]} ({node.op_type})"
            try:
                if node.domain not in ("", "ai.onnx"):
                    raise Unsupported(f"operator domain {node.domain!r} is not supported")
                if node.op_type not in SUPPORTED:
                    raise Unsupported("operator not supported")
                self.check_version(node)
                attrs = self.attrs(node)
                self.check_types(node)
                self.add(node, attrs)
            except _Unknown:  # after a failed node: its checks needing shapes are skipped
                blocked.update(node.output)
            except _NeedsValue as e:
                self.value_problems.append(f"{label}: {e}")
                blocked.update(node.output)
            except (Unsupported, OperatorError, *INVALID) as e:
                self.problems.append(_problem(label, e))
                failed.update(node.input)
                blocked.update(node.output)
        for t in self.graph.outputs:
            known = t in self.graph.constants or self.graph.value(t).shape is not None
            if not known and t not in blocked:
                self.problems.append(f"graph output {t} is not computed by any node")
        if self.needed and not self.problems:
            names = sorted(self.needed)
            raise InputValuesNeeded(
                names,
                f"the graph is compiled for the values of input(s) {', '.join(names)} (`vta run` "
                "compiles it for the run's): " + "; ".join(self.value_problems),
            )
        read = {t for n in self.graph.nodes for t in n.inputs} | failed  # not as a constant
        for name, message in self.empty.items():
            if name in read:
                raise OperatorError(message)
        problems = self.value_problems + self.problems
        if problems:
            count = f"{len(problems)} node(s) cannot be imported: "
            raise OperatorError(count + "; ".join(problems))
        for t in self.graph.outputs:  # a constant output stays a value of the graph
            if t in self.graph.constants:
                self.graph.nodes.append(Node("Identity", [self.fresh_const(t)], [t]))
        return self.graph.prune()

    def fresh_const(self, t: str) -> str:
        array = self.graph.constants.pop(t)
        return self.graph.add_constant(self.graph.fresh(f"{t}_const"), array)

    def add(self, node, attrs: dict) -> None:
        op = node.op_type
        if op == "Constant":
            self.graph.add_constant(node.output[0], _constant(attrs))
            return
        if op == "Shape":
            shape = self.shape(node.input[0])
            start, end = attrs.get("start", 0), attrs.get("end")
            self.graph.add_constant(node.output[0], np.array(shape[start:end], np.int64))
            return
        if op == "Size":
            self.graph.add_constant(node.output[0], np.array(math.prod(self.shape(node.input[0]))))
            return
        if op == "NonZero":  # its output's shape is its input's count of nonzeros: it folds
            x = self.const(node, 0, "X, whose nonzeros size the output")
            self.graph.add_constant(node.output[0], np.argwhere(x).T.astype(np.int64))
            return
        if op == "ConstantOfShape":
            shape = [int(d) for d in self.const(node, 0, "shape")]
            value = attrs.get("value")
            fill = _constant({"value": value}) if value is not None else np.zeros(1, np.float32)
            self.graph.add_constant(node.output[0], np.full(shape, fill.reshape(-1)[0]))
            return
        if op in WINDOWS_1D and len(self.shape(node.input[0])) == 3:
            self.window_1d(node, attrs)
            return
        inputs = list(node.input)
        check_ranks(self, node)
        normalize = NORMALIZE.get(op)
        if normalize is not None:
            inputs = normalize(self, node, attrs) or inputs
        outputs = list(node.output)
        ir = Node(op, inputs, outputs, attrs, node.name)
        if op == "Dropout":
            self.dropout(node, attrs)
            return
        if op == "BatchNormalization" and attrs.get("training_mode"):
            self.normalization(node, attrs)
            return
        if op == "MaxPool" and len(outputs) > 1 and outputs[1]:  # its Indices output
            ir.outputs = outputs[:1]
            self.emit(ir)
            self.emit(Node("MaxPoolIndices", inputs[:1], outputs[1:2], dict(attrs), node.name))
            return
        if op == "BatchNormalization":
            ir.outputs = outputs[:1]  # the optional outputs (statistics, before opset 14)
            self.used_extra_outputs(node, outputs[1:])
        if op in VARIADIC:
            self.variadic(node, inputs)
            return
        if op in NORMALIZATIONS:
            self.normalization(node, attrs)
            return
        if op == "TopK":
            self.top_k(node, inputs[0], attrs)
            return
        if op == "Resize" and attrs.get("antialias"):
            self.resize_antialias(node, inputs[0], attrs)
            return
        if op in ("Softmax", "LogSoftmax") and self.expand_coerced_softmax(ir):
            return
        if op == "Concat":  # an empty part adds nothing; a wide concat becomes a tree
            ir.inputs = [t for t in ir.inputs if math.prod(self.shape(t))] or ir.inputs[:1]
            if len(ir.inputs) == 1:
                ir.op, ir.attrs = "Identity", {}
            while len(ir.inputs) > MAX_CONCAT_INPUTS:
                parts = []
                for k in range(0, len(ir.inputs), MAX_CONCAT_INPUTS):
                    chunk = ir.inputs[k : k + MAX_CONCAT_INPUTS]
                    part = chunk[0] if len(chunk) == 1 else self.graph.fresh(f"{outputs[0]}_part")
                    if len(chunk) > 1:
                        self.emit(Node("Concat", chunk, [part], dict(attrs), ""))
                    parts.append(part)
                ir.inputs = parts
        self.emit(ir)

    def variadic(self, node, inputs: list[str]) -> None:
        """Sum, Max, Min or Mean of any number of inputs (broadcasting) as a chain of binary
        nodes (`VARIADIC`); Mean's sum then divided by the count."""
        out = node.output[0]
        mean = node.op_type == "Mean" and len(inputs) > 1
        final = self.graph.fresh(f"{out}_sum") if mean else out
        acc = inputs[0]
        for k, t in enumerate(inputs[1:], 1):
            dst = final if k == len(inputs) - 1 else self.graph.fresh(f"{out}_{k}")
            name = f"{node.name}_{k}" if node.name else ""
            self.emit(Node(VARIADIC[node.op_type], [acc, t], [dst], {}, name))
            acc = dst
        if len(inputs) == 1:
            self.emit(Node("Identity", inputs, [out], {}, node.name))
        if mean:
            dtype = np.dtype(self.graph.value(final).dtype or "float32")
            count = self.graph.add_constant(self.graph.fresh(f"{out}_count"),
                                            np.array(len(inputs), dtype))  # fmt: skip
            self.emit(Node("Div", [final, count], [out], {}, node.name))

    def normalization(self, node, attrs: dict) -> None:
        """Layer, Instance and Group normalization as the graph's Normalize over the axes
        their statistics span, times the scale, plus the bias: per channel (per group for
        GroupNormalization before opset 21, whose statistics are taken on the input reshaped
        to [N, groups, rest])."""
        x, shape, op = node.input[0], self.shape(node.input[0]), node.op_type
        rank, label = len(shape), node.name or node.output[0]
        per_channel = (shape[1], *[1] * (rank - 2)) if rank > 1 else None
        param = per_channel
        if op == "LayerNormalization":
            axes, param = list(range(axis_of(attrs["axis"], rank), rank)), None
            self.layer_norm_statistics(node, axes, attrs["epsilon"])
        elif op == "InstanceNormalization":
            axes = list(range(2, rank))
        elif op == "BatchNormalization":  # training mode: the batch's statistics
            axes = [0, *range(2, rank)]
            self.running_statistics(node, axes, attrs["momentum"])
        else:
            groups = attrs["num_groups"]
            if groups < 1 or rank < 2 or shape[1] % groups:
                raise Unsupported(f"num_groups={groups} does not divide the {shape[1]} channels")
            x = self.reshaped(x, [shape[0], groups, int(np.prod(shape[1:])) // groups], label)
            axes, param = [2], (groups, 1) if self.opset < 21 else per_channel
        if not axes:
            raise Unsupported(f"the input of rank {rank} has no axes to normalize over")
        y = self.graph.fresh(f"{label}_normalized")
        self.emit(Node("Normalize", [x], [y], {"axes": axes, "epsilon": attrs["epsilon"]}, label))
        if op == "GroupNormalization" and param == per_channel:
            y = self.reshaped(y, list(shape), label)
        for k, binary in ((1, "Mul"), (2, "Add")):
            if len(node.input) > k and node.input[k]:
                p = node.input[k] if param is None else self.reshaped(node.input[k], param, label)
                y2 = self.graph.fresh(f"{label}_{binary.lower()}")
                self.emit(Node(binary, [y, p], [y2], {}, f"{label}_{binary.lower()}"))
                y = y2
        if op == "GroupNormalization" and param != per_channel:
            y = self.reshaped(y, list(shape), label)
        if self.graph.value(y).shape != shape:
            raise Unsupported(f"scale or bias make the output {self.graph.value(y).shape}")
        self.emit(Node("Identity", [y], [node.output[0]], {}, ""))

    def top_k(self, node, x: str, attrs: dict) -> None:
        """TopK as the indices of the k largest (or smallest) values along the axis, sorted, a
        tie to the lower index first (`TopKIndices`), and the values gathered by them."""
        label = node.name or node.output[0]
        indices = node.output[1] if len(node.output) > 1 and node.output[1] else ""
        indices = indices or self.graph.fresh(f"{label}_indices")
        a = {"axis": attrs["axis"], "k": attrs["k"], "largest": attrs["largest"]}
        self.emit(Node("TopKIndices", [x], [indices], a, label))
        if node.output[0]:
            gather = Node("GatherElements", [x, indices], [node.output[0]], {"axis": a["axis"]})
            self.emit(gather)

    def resize_antialias(self, node, x: str, attrs: dict) -> None:
        """Resize with antialias as a product by a constant matrix along each resized axis
        (`reference.resize_matrix`; that axis moved last and back by Transposes)."""
        shape, label = self.shape(x), node.name or node.output[0]
        r, dtype = len(shape), self.graph.value(x).dtype or "float32"
        axes = [
            ax for ax in range(r) if (attrs["sizes"][ax], attrs["scales"][ax]) != (shape[ax], 1.0)
        ]
        if not axes:
            self.emit(Node("Identity", [x], node.output[:1], {}, label))
        for k, ax in enumerate(axes):
            m = resize_matrix(shape[ax], attrs["sizes"][ax], attrs["scales"][ax], attrs)
            perm = [*(a for a in range(r) if a != ax), ax]
            last = k == len(axes) - 1
            t = x if ax == r - 1 else self.step(label, "Transpose", [x], {"perm": perm})
            weight = self.graph.add_constant(self.graph.fresh(f"{label}_weights"),
                                             m.T.astype(dtype))  # fmt: skip
            out = node.output[0] if last and ax == r - 1 else ""
            x = self.step(label, "MatMul", [t, weight], out=out)
            if ax != r - 1:
                back = [perm.index(a) for a in range(r)]
                x = self.step(label, "Transpose", [x], {"perm": back},
                              node.output[0] if last else "")  # fmt: skip

    def window_1d(self, node, attrs: dict) -> None:
        """A 1-d Conv or pool as the 2-d one on [N, C, 1, L]: its input (and a conv's weight)
        unsqueezed at axis 2, its window attributes given a height of 1, its output squeezed
        back."""
        from onnx import helper

        label = node.name or node.output[0]
        inputs = list(node.input)
        for k in range(2 if node.op_type.startswith("Conv") else 1):
            unit = self.graph.fresh(f"{inputs[k]}_2d")
            self.emit(Node("Unsqueeze", [inputs[k]], [unit], {"axes": [2]}, label))
            inputs[k] = unit
        attrs = dict(attrs)
        for key, unit in (("kernel_shape", 1), ("strides", 1), ("dilations", 1),
                          ("output_padding", 0), ("output_shape", 1)):  # fmt: skip
            if attrs.get(key):
                attrs[key] = [unit, *attrs[key]]
        if attrs.get("pads") and len(attrs["pads"]) == 2:
            attrs["pads"] = [0, attrs["pads"][0], 0, attrs["pads"][1]]
        outs = [self.graph.fresh(f"{t}_2d") if t else "" for t in node.output]
        self.add(helper.make_node(node.op_type, inputs, outs, name=label), attrs)
        for y, t in zip(outs, node.output, strict=True):  # a MaxPool's Indices too
            if t:
                self.emit(Node("Squeeze", [y], [t], {"axes": [2]}, label))

    def step(self, label: str, op: str, ins: list[str], attrs: dict | None = None,
             out: str = "") -> str:  # fmt: skip
        """One node of a decomposition (its output `out`, else a fresh value)."""
        out = out or self.graph.fresh(f"{label}_{op.lower()}")
        self.emit(Node(op, ins, [out], attrs or {}, f"{label}_{op.lower()}"))
        return out

    def constant(self, label: str, value: Any, like: str) -> str:
        """A scalar constant in the dtype of value `like`."""
        dtype = self.graph.value(like).dtype or "float32"
        return self.graph.add_constant(self.graph.fresh(label), np.array(value, dtype))

    def statistics(self, x: str, axes: list[int], label: str, mean: str = "") -> tuple[str, str]:
        """The mean (into `mean` if given) and the variance of x over `axes`, kept as 1s, as
        ReduceMean and elementwise nodes."""
        reduce = {"axes": axes, "keepdims": 1, "noop_with_empty_axes": 0}
        mean = self.step(label, "ReduceMean", [x], reduce, mean)
        d = self.step(label, "Sub", [x, mean])
        return mean, self.step(label, "ReduceMean", [self.step(label, "Mul", [d, d])], reduce)

    def layer_norm_statistics(self, node, axes: list[int], epsilon: float) -> None:
        """LayerNormalization's optional outputs: Mean, the mean over `axes` (kept as 1s), and
        InvStdDev, 1 / sqrt(variance + epsilon)."""
        label, outs = node.name or node.output[0], list(node.output[1:3])
        if len(outs) < 2 or not outs[1]:
            if outs and outs[0]:
                reduce = {"axes": axes, "keepdims": 1, "noop_with_empty_axes": 0}
                self.step(label, "ReduceMean", [node.input[0]], reduce, outs[0])
            return
        _, var = self.statistics(node.input[0], axes, label, outs[0])
        eps = self.constant(f"{label}_eps", epsilon, var)
        sqrt = self.step(label, "Sqrt", [self.step(label, "Add", [var, eps])])
        self.step(label, "Reciprocal", [sqrt], out=outs[1])

    def running_statistics(self, node, axes: list[int], momentum: float) -> None:
        """BatchNormalization's training outputs: running_mean and running_var, the inputs'
        mean and var times momentum plus the batch's (over `axes`) times 1 - momentum."""
        label, outs = node.name or node.output[0], list(node.output[1:3])
        if not any(outs):
            return
        stats = self.statistics(node.input[0], axes, label)
        for out, batch, given in zip(outs, stats, node.input[3:5], strict=False):
            if not out:
                continue
            flat = self.reshaped(batch, list(self.shape(given)), label)
            old = self.step(label, "Mul", [given, self.constant(f"{label}_m", momentum, given)])
            new = self.step(label, "Mul", [flat, self.constant(f"{label}_1m", 1 - momentum, flat)])
            self.step(label, "Add", [old, new], out=out)

    def dropout(self, node, attrs: dict) -> None:
        """Dropout: the input in inference, or where the ratio is 0; in training mode with a
        seed, the input times the mask the onnx package's reference draws (numpy's
        RandomState(seed), kept where uniform(0, 1) >= ratio) over 1 - ratio. The optional
        mask output is a constant."""
        x, label, shape = node.input[0], node.name or node.output[0], self.shape(node.input[0])
        ratio = self.const(node, 1, "ratio") if self.opset >= 12 else None
        ratio = float(attrs.get("ratio", 0.5) if ratio is None else ratio)
        training = self.const(node, 2, "training_mode")
        keep = np.ones(shape, bool)
        if training is not None and bool(training) and ratio != 0:
            if attrs.get("seed") is None:
                raise Unsupported(f"training_mode=1 with ratio {ratio} and no seed: its mask "
                                  "is random")  # fmt: skip
            if not 0 <= ratio < 1:
                raise Unsupported(f"ratio {ratio} is not in [0, 1)")
            keep = np.random.RandomState(attrs["seed"]).uniform(0, 1.0, shape) >= ratio
            dtype = self.graph.value(x).dtype or "float32"
            scale = (keep / np.array(1 - ratio, dtype)).astype(dtype)
            factor = self.graph.add_constant(self.graph.fresh(f"{label}_mask"), scale)
            self.step(label, "Mul", [x, factor], out=node.output[0])
        else:
            self.emit(Node("Dropout", [x], node.output[:1], {}, node.name))
        if len(node.output) > 1 and node.output[1]:
            self.graph.add_constant(node.output[1], keep)

    def reshaped(self, t: str, shape: list[int], label: str) -> str:
        """Value t reshaped to `shape` (a new value)."""
        have = self.shape(t)
        if int(np.prod(have)) != int(np.prod(shape)):
            raise Unsupported(f"{t} of shape {list(have)} does not reshape to {list(shape)}")
        out = self.graph.fresh(f"{t}_reshaped")
        self.emit(Node("Reshape", [t], [out], {"shape": list(shape), "allowzero": 0}, label))
        return out

    def used_extra_outputs(self, node, extra: list[str]) -> None:
        for t in extra:
            if t:
                self.extra_outputs.setdefault(t, node)

    def emit(self, ir: Node) -> None:
        """Type the node's outputs; fold it when every input is constant (or an input with no
        elements, whose value is known)."""
        g = self.graph
        ins = [t for t in ir.inputs if t]
        for t in ins:
            if t in self.blocked:
                raise _Unknown(t)
            if t in self.extra_outputs:
                raise Unsupported(f"reads {t}, an optional output this importer does not compute")
            if t not in g.values or g.values[t].shape is None:
                raise Unsupported(f"input {t} is not produced by any earlier node")
        types = infer_node(ir, [g.values[t].shape for t in ins], [g.values[t].dtype for t in ins])
        known = {**self.empty_values, **g.constants}
        if all(t in known for t in ins):
            try:
                outs = run_node(ir, [known[t] if t else None for t in ir.inputs])
            except (ArithmeticError, ValueError, TypeError, IndexError) as e:
                raise Unsupported(f"folding it failed ({type(e).__name__}: {e})") from None
            for name, value, (_, dtype) in zip(ir.outputs, outs, types, strict=False):
                if name:
                    g.add_constant(name, value.astype(dtype) if dtype else value)
            return
        if ir.op in FOLD_ONLY:
            raise Unsupported(f"{ir.op} is supported only where its inputs are constant")
        for k, (name, (shape, dtype)) in enumerate(zip(ir.outputs, types, strict=False)):
            if name and not math.prod(shape):  # no elements: a known value, no kernel
                g.add_constant(name, np.zeros(shape, dtype or "float32"))
                ir.outputs[k] = ""
            elif name:
                g.values[name] = Value(name, shape, dtype)
        if any(ir.outputs):
            g.nodes.append(ir)

    def expand_coerced_softmax(self, ir: Node) -> bool:
        """Before opset 13, Softmax(axis) works on the input flattened to 2-d at `axis`:
        emitted as Flatten, Softmax on axis 1, Reshape back (unless axis is the last)."""
        shape = self.shape(ir.inputs[0])
        axis = ir.attrs["axis"]
        if self.opset >= 13 or axis == len(shape) - 1:
            return False
        flat, soft = self.graph.fresh(f"{ir.outputs[0]}_2d"), self.graph.fresh(ir.outputs[0])
        self.emit(Node("Flatten", ir.inputs[:1], [flat], {"axis": axis}, f"{ir.name}_flatten"))
        self.emit(Node(ir.op, [flat], [soft], {"axis": 1}, ir.name))
        self.emit(
            Node("Reshape", [soft], ir.outputs, {"shape": list(shape), "allowzero": 0},
                 f"{ir.name}_reshape")
        )  # fmt: skip
        return True


INVALID = (ArithmeticError, ValueError, TypeError, IndexError, KeyError)  # a bad node's errors


def _problem(label: str, e: Exception) -> str:
    """A failed node's line in the import's error."""
    if isinstance(e, Unsupported):
        return f"{label}: {e}"
    if isinstance(e, OperatorError):
        return f"{label}: {e}" if label not in str(e) else str(e)
    return f"{label}: invalid ({type(e).__name__}: {e})"


def _onnx_type(dtype: str) -> str:
    """The ONNX name of a numpy dtype's element type (float32 -> float)."""
    from onnx import TensorProto, helper

    return TensorProto.DataType.Name(helper.np_dtype_to_tensor_dtype(np.dtype(dtype))).lower()


def _inert(node) -> set[str]:
    """Attributes of the node that a newer definition added and that do not apply to it:
    Cast's saturate and round_mode, which apply to 8-bit float targets only."""
    target = _cast_target(node) if node.op_type == "Cast" else ""
    return set() if not target or "float8" in target else {"saturate", "round_mode"}


def _cast_target(node) -> str:
    """A Cast's target dtype ("" where `to` names no tensor type: the normalization reports
    it)."""
    to = next((a.i for a in node.attribute if a.name == "to"), 0)
    try:
        return onnx_dtype(to)
    except Exception:
        return ""


def _py(v: Any) -> Any:
    """An attribute value as plain Python (bytes -> str, repeated -> list)."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, (list, tuple)):
        return [_py(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def _constant(attrs: dict) -> np.ndarray:
    from onnx import TensorProto

    set_ = {k: v for k, v in attrs.items() if v is not None}
    if "value" in set_ and isinstance(set_["value"], TensorProto):
        return tensor_array(set_["value"], "value")
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):  # fmt: skip
        if key in set_:
            return np.array(set_[key], dtype)
    raise Unsupported(f"Constant with {', '.join(set_) or 'no value'}: only tensors and numbers")


def import_onnx(
    model: str | Path | bytes | Any,
    shapes: dict | None = None,
    log=None,
    values: dict | None = None,
) -> Graph:
    """The ONNX model (a path, serialized bytes or a ModelProto) as a graph IR with static
    shapes; `shapes` gives inputs' shapes where the model leaves dimensions symbolic; `values`
    binds graph inputs to constants (those a model reads as constants: `InputValuesNeeded`
    names them); `log` gets a line when the model's opset is upgraded."""
    m = load(model)
    source = opset_of(m)
    validate(m)
    m = upgrade(m, log)
    return _Importer(m, shapes, values, source).run(m)


__all__ = ["SUPPORTED", "InputValuesNeeded", "import_onnx"]
