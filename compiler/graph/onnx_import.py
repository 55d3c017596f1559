"""ONNX (opsets 11-18) -> graph IR with static shapes. A model of a newer opset imports where
its operators are defined as at opset 18.

Every attribute ONNX defines for a supported operator is present on the IR node, defaults
filled from the operator's schema at the model's opset; inputs that must be constant
(Clip min/max, Pad pads, Reshape shape, Slice starts/ends/axes/steps, Split split,
Squeeze/Unsqueeze axes, Resize scales/sizes, Reduce* axes) become attributes, and what
depends on shapes is resolved: auto_pad into explicit pads, Reshape's 0 and -1, Slice bounds
clamped, Resize's output sizes. Nodes whose inputs are all constant (Constant, Shape, and the
shape arithmetic after them) fold into constants. Problems are collected over the whole graph
and raised as one OperatorError listing every node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import OperatorError
from .ir import Graph, Node, Value
from .passes.infer import infer_node
from .reference import run_node

OPSETS = range(11, 19)

SUPPORTED = (
    "Conv ConvTranspose BatchNormalization Relu LeakyRelu Clip Sigmoid Tanh HardSigmoid "
    "HardSwish Add Sub Mul Div Pow MaxPool AveragePool GlobalAveragePool GlobalMaxPool Gemm "
    "MatMul Flatten Reshape Transpose Concat Split Slice Squeeze Unsqueeze Pad Softmax "
    "LogSoftmax ReduceMean ReduceSum ReduceMax Resize Identity Dropout Constant Shape Gather Cast "
    "ConstantOfShape Sum"
).split()
FOLD_ONLY = ("Shape", "Gather", "Cast", "ConstantOfShape")  # where they fold to constants


class Unsupported(Exception):
    """One problem of one node (collected, then reported together)."""


class _Unknown(Exception):
    """A node reads a value downstream of a failed node (its checks that need it are skipped)."""


def load(model: Any):
    """An onnx.ModelProto from a path, serialized bytes or a ModelProto."""
    import onnx

    if isinstance(model, onnx.ModelProto):
        return model
    try:
        if isinstance(model, bytes):
            return onnx.load_from_string(model)
        return onnx.load(str(model))
    except Exception as e:
        raise OperatorError(f"{model if not isinstance(model, bytes) else 'model'}: not an ONNX "
                            f"model: {e}") from e  # fmt: skip


def opset_of(model) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            if o.version < OPSETS[0]:
                raise OperatorError(
                    f"the model uses ONNX opset {o.version}; supported are {OPSETS[0]}-{OPSETS[-1]}"
                )
            return int(o.version)
    raise OperatorError("the model imports no default-domain (ai.onnx) opset")


def _dtype(elem_type: int) -> str:
    from onnx import helper

    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name


def _input_shape(inp, given: dict | None) -> tuple[int, ...]:
    """The graph input's static shape: the model's, or `given[name]` where it is symbolic."""
    dims = inp.type.tensor_type.shape.dim
    model = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in dims]
    if given and inp.name in given:
        shape = tuple(int(v) for v in given[inp.name])
        fixed = [(m, v) for m, v in zip(model, shape, strict=False) if isinstance(m, int)]
        if len(shape) != len(model) or any(m != v for m, v in fixed):
            raise OperatorError(
                f"--shape {inp.name}={','.join(map(str, shape))} does not fit the model's input "
                f"{inp.name} of shape {model}"
            )
        if min(shape, default=1) < 1:
            raise OperatorError(f"--shape {inp.name}: every dimension must be >= 1")
        return shape
    if not all(isinstance(m, int) and m > 0 for m in model):
        raise OperatorError(
            f"input {inp.name} has the shape {model} with symbolic dimensions; give it with "
            f"--shape {inp.name}=D1,D2,..."
        )
    return tuple(model)


class _Importer:
    def __init__(self, model, shapes: dict | None):
        from onnx import numpy_helper

        self.opset = opset_of(model)
        g = model.graph
        self.graph = Graph([], [], [o.name for o in g.output], name=g.name or "graph")
        for t in g.initializer:
            self.graph.add_constant(t.name, numpy_helper.to_array(t))
        inputs = [i for i in g.input if i.name not in self.graph.constants]
        unknown = set(shapes or ()) - {i.name for i in inputs}
        if unknown:
            names = ", ".join(i.name for i in inputs)
            its = f"its input is {names}" if len(inputs) == 1 else f"its inputs are {names}"
            raise OperatorError(
                f"--shape {sorted(unknown)[0]}: the model has no input of that name ({its})"
            )
        for i in inputs:
            self.graph.inputs.append(i.name)
            elem = i.type.tensor_type.elem_type
            self.graph.values[i.name] = Value(i.name, _input_shape(i, shapes), _dtype(elem))
        for n in g.node:  # reserved, so that names made up while importing differ
            for t in n.output:
                self.graph.values.setdefault(t, Value(t))
        self.problems: list[str] = []
        self.blocked: set[str] = set()  # values downstream of a failed node
        self.extra_outputs: dict[str, Any] = {}  # optional outputs not computed

    def check_version(self, op: str) -> None:
        """A model of a newer opset imports where its operators are defined as at opset 18."""
        import onnx

        since = onnx.defs.get_schema(op, self.opset).since_version
        if since > OPSETS[-1]:
            raise Unsupported(
                f"{op} as redefined at opset {since} is not supported (opsets {OPSETS[0]}-"
                f"{OPSETS[-1]})"
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
        if name not in self.graph.constants:
            raise Unsupported(f"input {k} ({what}) must be a constant, {name} is computed")
        return self.graph.constants[name]

    def shape(self, name: str) -> tuple[int, ...]:
        if name in self.blocked:
            raise _Unknown(name)
        v = self.graph.values.get(name)
        if v is None or v.shape is None:
            raise Unsupported(f"the shape of {name} is not known")
        return v.shape

    # -- the walk --------------------------------------------------------------------------
    def run(self, model) -> Graph:
        blocked = self.blocked
        for node in model.graph.node:
            label = f"node {node.name or node.output[0]} ({node.op_type})"
            try:
                if node.domain not in ("", "ai.onnx"):
                    raise Unsupported(f"operator domain {node.domain!r} is not supported")
                if node.op_type not in SUPPORTED:
                    raise Unsupported("operator not supported")
                self.check_version(node.op_type)
                attrs = self.attrs(node)
                self.add(node, attrs)
            except _Unknown:  # after a failed node: its checks needing shapes are skipped
                blocked.update(node.output)
            except Unsupported as e:
                self.problems.append(f"{label}: {e}")
                blocked.update(node.output)
            except OperatorError as e:
                self.problems.append(f"{label}: {e}" if label not in str(e) else str(e))
                blocked.update(node.output)
            except (ArithmeticError, ValueError, TypeError, IndexError, KeyError) as e:
                self.problems.append(f"{label}: invalid ({type(e).__name__}: {e})")
                blocked.update(node.output)
        for t in self.graph.outputs:
            known = t in self.graph.constants or self.graph.value(t).shape is not None
            if not known and t not in blocked:
                self.problems.append(f"graph output {t} is not computed by any node")
        if self.problems:
            raise OperatorError(
                f"{len(self.problems)} node(s) cannot be imported: " + "; ".join(self.problems)
            )
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
        if op == "ConstantOfShape":
            shape = [int(d) for d in self.const(node, 0, "shape")]
            value = attrs.get("value")
            fill = _constant({"value": value}) if value is not None else np.zeros(1, np.float32)
            self.graph.add_constant(node.output[0], np.full(shape, fill.reshape(-1)[0]))
            return
        inputs = list(node.input)
        normalize = NORMALIZE.get(op)
        if normalize is not None:
            inputs = normalize(self, node, attrs) or inputs
        outputs = list(node.output)
        ir = Node(op, inputs, outputs, attrs, node.name)
        if op in ("Dropout", "MaxPool", "BatchNormalization"):
            ir.outputs = outputs[:1]  # the optional outputs (mask, indices, statistics)
            self.used_extra_outputs(node, outputs[1:])
        if op == "Sum":  # variadic: a chain of Adds
            acc = inputs[0]
            for k, t in enumerate(inputs[1:], 1):
                out = outputs[0] if k == len(inputs) - 1 else self.graph.fresh(f"{outputs[0]}_{k}")
                self.emit(Node("Add", [acc, t], [out], {}, f"{node.name}_{k}" if node.name else ""))
                acc = out
            if len(inputs) == 1:
                self.emit(Node("Identity", inputs, outputs, {}, node.name))
            return
        if op in ("Softmax", "LogSoftmax") and self.expand_coerced_softmax(ir):
            return
        self.emit(ir)

    def used_extra_outputs(self, node, extra: list[str]) -> None:
        for t in extra:
            if t:
                self.extra_outputs.setdefault(t, node)

    def emit(self, ir: Node) -> None:
        """Type the node's outputs; fold it when every input is constant."""
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
        if all(t in g.constants for t in ins):
            try:
                outs = run_node(ir, [g.constants[t] if t else None for t in ir.inputs])
            except (ArithmeticError, ValueError, TypeError, IndexError) as e:
                raise Unsupported(f"folding it failed ({type(e).__name__}: {e})") from None
            for name, value, (_, dtype) in zip(ir.outputs, outs, types, strict=False):
                if name:
                    g.add_constant(name, value.astype(dtype) if dtype else value)
            return
        if ir.op in FOLD_ONLY:
            raise Unsupported(f"{ir.op} is supported only where its inputs are constant")
        for name, (shape, dtype) in zip(ir.outputs, types, strict=False):
            if name:
                g.values[name] = Value(name, shape, dtype)
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
    from onnx import TensorProto, numpy_helper

    set_ = {k: v for k, v in attrs.items() if v is not None}
    if "value" in set_ and isinstance(set_["value"], TensorProto):
        return numpy_helper.to_array(set_["value"])
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):  # fmt: skip
        if key in set_:
            return np.array(set_[key], dtype)
    raise Unsupported(f"Constant with {', '.join(set_) or 'no value'}: only tensors and numbers")


def _axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise Unsupported(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


def _choice(attrs: dict, key: str, allowed: tuple) -> None:
    """An error unless the attribute (where the opset defines it) has an allowed value."""
    if key in attrs and attrs[key] not in allowed:
        raise Unsupported(f"attribute {key}={attrs.get(key)!r} is not supported "
                          f"(supported: {', '.join(map(str, allowed))})")  # fmt: skip


def _same_pads(size, k, s, d, upper: bool) -> tuple[int, int]:
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    small, big = total // 2, total - total // 2
    return (small, big) if upper else (big, small)


def _window(imp: _Importer, node, attrs: dict, kernel, dilations: bool = True) -> None:
    """Conv/pool attributes completed: strides, dilations and explicit pads."""
    _choice(attrs, "auto_pad", ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"))
    if len(kernel) != 2:
        raise Unsupported(f"kernel_shape {list(kernel)}: only 2-d windows are supported")
    attrs["kernel_shape"] = list(kernel)
    attrs["strides"] = attrs.get("strides") or [1, 1]
    if dilations:
        attrs["dilations"] = attrs.get("dilations") or [1, 1]
    attrs["pads"] = attrs.get("pads") or [0, 0, 0, 0]
    for key, low, n in (("kernel_shape", 1, 2), ("strides", 1, 2), ("dilations", 1, 2),
                        ("pads", 0, 4)):  # fmt: skip
        value = attrs.get(key)
        if value is not None and (len(value) != n or min(value) < low):
            raise Unsupported(f"attribute {key}={value}: {n} values >= {low} expected")
    mode = attrs["auto_pad"]
    if mode == "VALID":
        attrs["pads"] = [0, 0, 0, 0]
    elif mode != "NOTSET":
        size = imp.shape(node.input[0])[2:]
        d = attrs.get("dilations", [1, 1])
        begin, end = zip(*(
            _same_pads(size[i], kernel[i], attrs["strides"][i], d[i], mode == "SAME_UPPER")
            for i in range(2)
        ), strict=True)  # fmt: skip
        attrs["pads"] = [*begin, *end]
    attrs["auto_pad"] = "NOTSET"


def _conv(imp, node, attrs):
    _window(imp, node, attrs, attrs.get("kernel_shape") or list(imp.shape(node.input[1])[2:]))
    return None


def _conv_transpose(imp, node, attrs):
    kernel = attrs.get("kernel_shape") or list(imp.shape(node.input[1])[2:])
    auto = attrs.get("auto_pad", "NOTSET")
    attrs["auto_pad"] = "NOTSET"  # SAME_* is resolved below, against the output size
    _window(imp, node, attrs, kernel)
    attrs["output_padding"] = attrs.get("output_padding") or [0, 0]
    if len(attrs["output_padding"]) != 2 or min(attrs["output_padding"]) < 0:
        raise Unsupported(f"attribute output_padding={attrs['output_padding']}: 2 values >= 0")
    shape = attrs.pop("output_shape", None)
    h, w = imp.shape(node.input[0])[2:]
    s, d, op = attrs["strides"], attrs["dilations"], attrs["output_padding"]
    if auto in ("SAME_UPPER", "SAME_LOWER") and not shape:
        shape = [h * s[0], w * s[1]]
    if shape or auto == "VALID":
        target = shape[-2:] if shape else None
        pads = [0, 0, 0, 0]
        for i, size in enumerate((h, w)):
            full = s[i] * (size - 1) + op[i] + (kernel[i] - 1) * d[i] + 1
            total = full - target[i] if target else 0
            if total < 0:
                raise Unsupported(f"output_shape {shape} is larger than the full output")
            upper = auto == "SAME_UPPER"
            pads[i], pads[i + 2] = (
                (total // 2, total - total // 2) if upper else (total - total // 2, total // 2)
            )
        attrs["pads"] = pads
    attrs["output_shape"] = []
    return None


def _pool(imp, node, attrs):
    _choice(attrs, "ceil_mode", (0, 1))
    if node.op_type == "MaxPool":
        _choice(attrs, "storage_order", (0,))
    _window(imp, node, attrs, attrs["kernel_shape"], node.op_type == "MaxPool")
    return None


def _batch_norm(imp, node, attrs):
    _choice(attrs, "training_mode", (0,))
    return None


def _clip(imp, node, attrs):
    lo = imp.const(node, 1, "min")
    hi = imp.const(node, 2, "max")
    attrs["min"] = float(lo) if lo is not None else float(attrs.get("min", -np.inf))
    attrs["max"] = float(hi) if hi is not None else float(attrs.get("max", np.inf))
    return list(node.input[:1])


def _gemm(imp, node, attrs):
    attrs["transA"], attrs["transB"] = int(attrs["transA"]), int(attrs["transB"])
    return None


def _flatten(imp, node, attrs):
    rank = len(imp.shape(node.input[0]))
    if not -rank <= attrs["axis"] <= rank:
        raise Unsupported(f"axis {attrs['axis']} is out of range for rank {rank}")
    attrs["axis"] += rank if attrs["axis"] < 0 else 0
    return None


def _reshape(imp, node, attrs):
    target = [int(v) for v in imp.const(node, 1, "shape")]
    shape = imp.shape(node.input[0])
    out = [shape[i] if v == 0 and not attrs.get("allowzero", 0) else v
           for i, v in enumerate(target)]  # fmt: skip
    if out.count(-1) > 1:
        raise Unsupported(f"shape {target} has more than one -1")
    if -1 in out:
        known = int(np.prod([v for v in out if v != -1]))
        if known == 0 or int(np.prod(shape)) % known:
            raise Unsupported(f"shape {target} does not fit the input's {list(shape)}")
        out[out.index(-1)] = int(np.prod(shape)) // known
    if int(np.prod(out)) != int(np.prod(shape)):
        raise Unsupported(f"shape {target} does not fit the input's {list(shape)}")
    attrs["shape"] = out
    return list(node.input[:1])


def _transpose(imp, node, attrs):
    rank = len(imp.shape(node.input[0]))
    perm = attrs.get("perm") or list(range(rank))[::-1]
    if sorted(perm) != list(range(rank)):
        raise Unsupported(f"perm {perm} is not a permutation of {rank} axes")
    attrs["perm"] = perm
    return None


def _concat(imp, node, attrs):
    attrs["axis"] = _axis(attrs["axis"], len(imp.shape(node.input[0])))
    return None


def _split(imp, node, attrs):
    shape = imp.shape(node.input[0])
    attrs["axis"] = ax = _axis(attrs["axis"], len(shape))
    split = imp.const(node, 1, "split") if imp.opset >= 13 else attrs.get("split")
    n = len(node.output)
    if split is None or len(split) == 0:
        parts = attrs.pop("num_outputs", None) or n
        if parts < 1:
            raise Unsupported(f"num_outputs={parts} must be positive")
        size = -(-shape[ax] // parts)
        split = [size] * (shape[ax] // size) + ([shape[ax] % size] if shape[ax] % size else [])
    attrs.pop("num_outputs", None)
    attrs["split"] = [int(v) for v in split]
    if len(attrs["split"]) != n:
        raise Unsupported(f"split {attrs['split']} makes {len(split)} parts for {n} outputs")
    return list(node.input[:1])


def _slice(imp, node, attrs):
    starts = [int(v) for v in imp.const(node, 1, "starts")]
    ends = [int(v) for v in imp.const(node, 2, "ends")]
    shape = imp.shape(node.input[0])
    axes = imp.const(node, 3, "axes")
    axes = list(range(len(starts))) if axes is None else [_axis(int(a), len(shape)) for a in axes]
    steps = imp.const(node, 4, "steps")
    steps = [1] * len(starts) if steps is None else [int(v) for v in steps]
    if 0 in steps:
        raise Unsupported("steps must not be 0")
    norm_s, norm_e = [], []
    for s, e, ax, st in zip(starts, ends, axes, steps, strict=True):
        dim = shape[ax]
        s, e = s + dim if s < 0 else s, e + dim if e < 0 else e
        lo, hi = (0, dim) if st > 0 else (-1, dim - 1)
        norm_s.append(min(max(s, lo), hi))
        norm_e.append(min(max(e, lo), hi))
    attrs.update(starts=norm_s, ends=norm_e, axes=axes, steps=steps)
    return list(node.input[:1])


def _squeeze(imp, node, attrs):
    shape = imp.shape(node.input[0])
    axes = imp.const(node, 1, "axes") if imp.opset >= 13 else attrs.get("axes")
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = sorted(_axis(int(a), len(shape)) for a in axes)
    bad = [a for a in axes if shape[a] != 1]
    if bad:
        raise Unsupported(f"axes {bad} of shape {list(shape)} are not 1")
    attrs["axes"] = axes
    return list(node.input[:1])


def _unsqueeze(imp, node, attrs):
    axes = imp.const(node, 1, "axes") if imp.opset >= 13 else attrs.get("axes")
    if axes is None:
        raise Unsupported("axes are missing")
    rank = len(imp.shape(node.input[0])) + len(axes)
    attrs["axes"] = sorted(_axis(int(a), rank) for a in axes)
    if len(set(attrs["axes"])) != len(attrs["axes"]):
        raise Unsupported(f"axes {list(axes)} repeat an axis")
    return list(node.input[:1])


def _pad(imp, node, attrs):
    _choice(attrs, "mode", ("constant", "reflect", "edge"))
    pads = [int(v) for v in imp.const(node, 1, "pads")]
    value = imp.const(node, 2, "constant_value")
    axes = imp.const(node, 3, "axes")
    rank = len(imp.shape(node.input[0]))
    if axes is not None:
        axes = [_axis(int(a), rank) for a in axes]
        full = [0] * (2 * rank)
        for k, a in enumerate(axes):
            full[a], full[a + rank] = pads[k], pads[k + len(axes)]
        pads = full
    if len(pads) != 2 * rank:
        raise Unsupported(f"pads {pads} do not have 2 x {rank} entries")
    if min(pads) < 0:
        raise Unsupported(f"negative pads {pads} are not supported")
    attrs.update(pads=pads, value=float(value) if value is not None and value.size else 0.0)
    return list(node.input[:1])


def _softmax(imp, node, attrs):
    attrs["axis"] = _axis(attrs["axis"], len(imp.shape(node.input[0])))
    return None


def _reduce(imp, node, attrs):
    as_input = node.op_type == "ReduceSum" and imp.opset >= 13 or imp.opset >= 18
    axes = imp.const(node, 1, "axes") if as_input else attrs.get("axes")
    rank = len(imp.shape(node.input[0]))
    if axes is None or len(axes) == 0:
        if attrs.get("noop_with_empty_axes", 0):
            raise Unsupported("noop_with_empty_axes=1 with no axes is not supported")
        axes = range(rank)
    attrs["axes"] = sorted({_axis(int(a), rank) for a in axes})
    return list(node.input[:1])


def _resize(imp, node, attrs):
    _choice(attrs, "mode", ("nearest", "linear"))
    _choice(attrs, "coordinate_transformation_mode", (
        "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"
    ))  # fmt: skip
    _choice(attrs, "nearest_mode", ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"))
    _choice(attrs, "antialias", (0,))
    shape = imp.shape(node.input[0])
    scales = imp.const(node, 2, "scales")
    sizes = imp.const(node, 3, "sizes")
    axes = attrs.get("axes") or list(range(len(shape)))
    axes = [_axis(int(a), len(shape)) for a in axes]
    if sizes is not None and sizes.size:
        _choice(attrs, "keep_aspect_ratio_policy", ("stretch",))
        full = list(shape)
        for a, v in zip(axes, sizes, strict=True):
            full[a] = int(v)
        attrs["sizes"] = full
        attrs["scales"] = [o / i for o, i in zip(full, shape, strict=True)]
    elif scales is not None and scales.size:
        full = [1.0] * len(shape)
        for a, v in zip(axes, scales, strict=True):
            full[a] = float(v)
        attrs["scales"] = full
        attrs["sizes"] = [int(np.floor(d * s)) for d, s in zip(shape, full, strict=True)]
    else:
        raise Unsupported("neither scales nor sizes is given")
    if min(attrs["sizes"]) < 1 or min(attrs["scales"]) <= 0:
        raise Unsupported(f"output sizes {attrs['sizes']} (scales {attrs['scales']}) not positive")
    attrs["axes"] = axes
    return list(node.input[:1])


def _dropout(imp, node, attrs):
    training = imp.const(node, 2, "training_mode")
    if training is not None and bool(training):
        raise Unsupported("training_mode=1 is not supported (inference only)")
    return list(node.input[:1])


def _gather(imp, node, attrs):
    attrs["axis"] = _axis(attrs["axis"], len(imp.shape(node.input[0])))
    return None


def _cast(imp, node, attrs):
    try:
        attrs["to"] = _dtype(attrs["to"])
    except (KeyError, TypeError) as e:
        raise Unsupported(f"attribute to={attrs.get('to')!r} is not a tensor type") from e
    return None


NORMALIZE = {
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "MaxPool": _pool,
    "AveragePool": _pool,
    "BatchNormalization": _batch_norm,
    "Clip": _clip,
    "Gemm": _gemm,
    "Flatten": _flatten,
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Concat": _concat,
    "Split": _split,
    "Slice": _slice,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Pad": _pad,
    "Softmax": _softmax,
    "LogSoftmax": _softmax,
    "ReduceMean": _reduce,
    "ReduceSum": _reduce,
    "ReduceMax": _reduce,
    "Resize": _resize,
    "Dropout": _dropout,
    "Gather": _gather,
    "Cast": _cast,
}


def import_onnx(model: str | Path | bytes | Any, shapes: dict | None = None) -> Graph:
    """The ONNX model (a path, serialized bytes or a ModelProto) as a graph IR with static
    shapes; `shapes` gives inputs' shapes where the model leaves dimensions symbolic."""
    m = load(model)
    return _Importer(m, shapes).run(m)


__all__ = ["SUPPORTED", "import_onnx"]
