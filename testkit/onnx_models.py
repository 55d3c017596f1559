"""One-node ONNX models made with onnx.helper and the check the graph tests apply to them: the
reference executor's and the compiled CPU graph's outputs against onnxruntime's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def one_node(
    op: str,
    feeds: dict[str, np.ndarray],
    attrs: dict | None = None,
    consts: dict | None = None,
    opset: int = 18,
    outputs: tuple[str, ...] = ("y",),
    out: Any = np.float32,
) -> bytes:
    """A model of one `op` node reading the graph inputs `feeds` (name -> array), then the
    initializers `consts` (name -> array, None for an omitted input), in order; its
    outputs of dtype `out` (one, or one per output) (serialized)."""
    from onnx import helper, numpy_helper

    consts = consts or {}
    types = out if isinstance(out, (list, tuple)) else [out] * len(outputs)
    names = [*feeds, *(k if v is not None else "" for k, v in consts.items())]
    node = helper.make_node(op, names, list(outputs), **(attrs or {}))
    graph = helper.make_graph(
        [node],
        op,
        [
            helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
            for k, v in feeds.items()
        ],
        [
            helper.make_tensor_value_info(o, helper.np_dtype_to_tensor_dtype(np.dtype(d)), None)
            for o, d in zip(outputs, types, strict=True)
        ],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items() if v is not None],
    )
    ir_version = 8 if opset <= 18 else 10
    m = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version
    )
    return m.SerializeToString()


def reference_outputs(model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The model's outputs by onnxruntime, or by the onnx package's reference evaluator where
    onnxruntime has no kernel for the node's dtype (its Max and Min of int8, int16, ...)."""
    import onnxruntime as ort
    from onnx.reference import ReferenceEvaluator

    try:
        session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    except ort.capi.onnxruntime_pybind11_state.NotImplemented:
        return [np.asarray(v) for v in ReferenceEvaluator(model).run(None, feeds)]
    return session.run(None, feeds)


def check(tmp_path: Path, model: bytes, feeds: dict[str, np.ndarray], rtol: float = 1e-4) -> None:
    """The reference executor's and the compiled CPU graph's outputs equal onnxruntime's
    (`reference_outputs`; dtype, shape, values within `rtol` and 1e-5 of the largest magnitude)."""
    from compiler.graph import reference
    from compiler.graph.build_onnx import compile_model
    from compiler.graph.onnx_import import import_onnx

    want = reference_outputs(model, feeds)
    (tmp_path / "m.onnx").write_bytes(model)
    ref = reference.run(import_onnx(model), feeds)
    cpu = compile_model(tmp_path / "m.onnx").run(feeds)
    for got in (ref, cpu):
        for value, expected in zip(got.values(), want, strict=True):
            assert value.shape == expected.shape and value.dtype == expected.dtype
            scale = float(np.abs(expected).max()) if expected.size else 0.0
            np.testing.assert_allclose(value, expected, rtol=rtol, atol=1e-5 * scale)
