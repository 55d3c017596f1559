"""The ONNX model as given, before its graph is imported (`onnx_import`): loading, its opset
(upgraded from 1-10 by `onnx.version_converter`), ONNX's rules the importer relies on
(`validate`), and its graph inputs' static shapes and given values."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import OperatorError
from ..te.tensor import MAX_EXTENT
from .onnx_normalize import onnx_dtype

OPSETS = range(11, 19)
OLDEST = 1  # opsets OLDEST..OPSETS[0]-1 are upgraded to UPGRADE_TO
UPGRADE_TO = 13


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
    """The model's default-domain opset: OLDEST up to the newest the onnx package knows."""
    import onnx

    newest = onnx.defs.onnx_opset_version()
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            if o.version < OLDEST:
                raise OperatorError(
                    f"the model uses ONNX opset {o.version}; supported are {OLDEST} and later "
                    f"(below {OPSETS[0]} upgraded to {UPGRADE_TO})"
                )
            if o.version > newest:
                raise OperatorError(
                    f"the model uses ONNX opset {o.version}; the installed onnx package knows "
                    f"opsets up to {newest}"
                )
            return int(o.version)
    raise OperatorError("the model imports no default-domain (ai.onnx) opset")


def upgrade(model, log=None):
    """The model at opset UPGRADE_TO when its opset is below OPSETS (`log` gets one line),
    else the model itself."""
    version = opset_of(model)
    if version >= OPSETS[0]:
        return model
    import onnx
    from onnx import version_converter

    if model.ir_version < 4:  # before IR 4 the converter sees only initializers listed as inputs
        model = onnx.ModelProto.FromString(model.SerializeToString())
        model.ir_version = 4
    try:
        upgraded = version_converter.convert_version(model, UPGRADE_TO)
    except Exception as e:  # the converter's own errors (RuntimeError, ValueError, ...)
        message = " ".join(str(e).split()) or type(e).__name__
        raise OperatorError(
            f"the model's ONNX opset {version} cannot be upgraded to {UPGRADE_TO}: {message}"
        ) from None
    if log is not None:
        log(
            f"upgraded the model from ONNX opset {version} to {UPGRADE_TO} (onnx.version_converter)"
        )
    return upgraded


def tensor_array(t, what: str) -> np.ndarray:
    """A TensorProto's array, its declared size checked against its data first (a tensor whose
    dims claim more elements than its data holds would have numpy allocate them all)."""
    from onnx import helper, numpy_helper

    dims = [int(d) for d in t.dims]
    if any(d < 0 for d in dims):
        raise OperatorError(f"{what}: negative dimension in {dims}")
    if t.data_location != 1:  # not external data (numpy_helper reads that itself)
        count = math.prod(dims)
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type))
            field = helper.tensor_dtype_to_field(t.data_type)
        except Exception:
            raise OperatorError(f"{what}: unknown element type {t.data_type}") from None
        bits = 4 if "int4" in dtype.name or "float4" in dtype.name else dtype.itemsize * 8
        if t.HasField("raw_data"):
            have, want = len(t.raw_data), (count * bits + 7) // 8
            unit = "bytes"
        else:
            per = 2 if dtype.kind == "c" else 1  # complex: real and imaginary parts
            have, want = len(getattr(t, field)), count * per
            if bits == 4:
                want = (count + 1) // 2
            unit = f"{field} entries"
        if have != want:
            raise OperatorError(
                f"{what}: dims {dims} declare {count} elements ({want} {unit}), the data holds "
                f"{have} {unit}"
            )
    try:
        return numpy_helper.to_array(t)
    except Exception as e:
        message = " ".join(str(e).split()) or type(e).__name__
        raise OperatorError(f"{what}: unreadable ({message})") from None


def validate(model) -> None:
    """ONNX's rules the importer relies on: every value is written once (by one node, or as a
    graph input or initializer), and every initializer's data is as long as its dims claim."""
    g = model.graph
    written: dict[str, str] = {}
    for i in g.input:
        written.setdefault(i.name, f"graph input {i.name}")
    for t in g.initializer:
        if t.name in written and not written[t.name].startswith("graph input"):
            raise OperatorError(f"initializer {t.name} is defined twice")
        written[t.name] = f"initializer {t.name}"
    for n in g.node:
        label = f"node {n.name or (n.output[0] if n.output else '?')} ({n.op_type})"
        for o in n.output:
            if not o:
                continue
            if o in written:
                raise OperatorError(
                    f"{label} writes {o}, which {written[o]} already defines (each value is "
                    f"written once)"
                )
            written[o] = label
    for t in g.initializer:
        tensor_array(t, f"initializer {t.name}")


def check_input_shape(name: str, shape: tuple[int, ...], given: bool = False) -> None:
    """Refuse a graph input's shape no tensor can have, before anything is built for it: a
    tensor holds fewer than 2**62 elements (`te.MAX_EXTENT`; the code generator indexes buffers
    of 2**31 elements or more in int64). `given`: the shape came from `--shape NAME=DIMS`."""
    count = math.prod(shape)
    if count >= MAX_EXTENT:
        what = f"--shape {name}={','.join(map(str, shape))}" if given else f"input {name}"
        raise OperatorError(
            f"{what}: the shape {list(shape)} has {count} elements; a tensor has fewer than "
            f"2**{MAX_EXTENT.bit_length() - 1}"
        )


def input_shape(inp, given: dict | None) -> tuple[int, ...]:
    """The graph input's static shape: the model's, or `given[name]` where it is symbolic."""
    dims = inp.type.tensor_type.shape.dim
    model = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in dims]
    empty = [k for k, m in enumerate(model) if isinstance(m, int) and m < 1]
    if empty:
        raise OperatorError(
            f"input {inp.name} has the shape {model}: dimension {empty[0]} is {model[empty[0]]}, "
            "every dimension must be >= 1"
        )
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
        check_input_shape(inp.name, shape, given=True)
        return shape
    if not all(isinstance(m, int) and m > 0 for m in model):
        raise OperatorError(
            f"input {inp.name} has the shape {model} with symbolic dimensions; give it with "
            f"--shape {inp.name}=D1,D2,..."
        )
    check_input_shape(inp.name, tuple(model))
    return tuple(model)


def static_dims(inp) -> list[int] | None:
    """The graph input's dims where all are numbers, else None."""
    dims = inp.type.tensor_type.shape.dim
    return [d.dim_value for d in dims] if all(d.HasField("dim_value") for d in dims) else None


def bound_value(inp, value: Any) -> np.ndarray:
    """The value given for graph input `inp`, in its dtype, its shape checked against the
    model's."""
    array = np.asarray(value, onnx_dtype(inp.type.tensor_type.elem_type))
    dims = inp.type.tensor_type.shape.dim
    model = [d.dim_value if d.HasField("dim_value") else None for d in dims]
    fits = len(model) == array.ndim and all(
        m in (None, n) for m, n in zip(model, array.shape, strict=True)
    )
    if not fits:
        raise OperatorError(
            f"input {inp.name}: the value given has the shape {list(array.shape)}, the model's "
            f"input {[m if m is not None else '?' for m in model]}"
        )
    return array
