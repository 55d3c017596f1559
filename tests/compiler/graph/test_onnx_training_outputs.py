"""Training-mode outputs where ONNX defines them deterministically, and optional outputs:
Dropout (inference, a ratio of 0, or a seed: the onnx package's reference draws its mask from
numpy's RandomState(seed)) and its mask, BatchNormalization in training mode (the batch's
statistics, the running ones updated), MaxPool's Indices, through the reference executor and
the CPU against the onnx package's reference evaluator."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from compiler.errors import OperatorError
from compiler.graph import reference
from compiler.graph.build_onnx import compile_model
from compiler.graph.onnx_import import import_onnx
from testkit.onnx_models import one_node

rng = np.random.default_rng(0)
X = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)


def check(tmp_path, model: bytes, feeds: dict, rtol: float = 1e-5) -> None:
    """The reference executor's and the compiled CPU graph's outputs equal the onnx
    package's reference evaluator's (dtype, shape, values)."""
    want = ReferenceEvaluator(model).run(None, feeds)
    (tmp_path / "m.onnx").write_bytes(model)
    ref = reference.run(import_onnx(model), feeds)
    cpu = compile_model(tmp_path / "m.onnx").run(feeds)
    for got in (ref, cpu):
        assert len(got) == len(want)
        for value, expected in zip(got.values(), want, strict=True):
            assert value.shape == expected.shape and value.dtype == expected.dtype
            np.testing.assert_allclose(value, expected, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize(
    "ratio, training, seed",
    [(0.5, False, None), (0.0, True, None), (0.3, True, 0), (0.75, True, 7)],
)
def test_dropout_and_its_mask(tmp_path, ratio, training, seed):
    attrs = {} if seed is None else {"seed": seed}
    consts = {"r": np.float32(ratio), "t": np.bool_(training)}
    model = one_node("Dropout", {"x": X}, attrs, consts, 13, ("y", "z"), [np.float32, bool])
    check(tmp_path, model, {"x": X})


def test_dropout_without_a_seed_in_training_is_refused(tmp_path):
    consts = {"r": np.float32(0.5), "t": np.bool_(True)}
    with pytest.raises(OperatorError, match="no seed: its mask is random"):
        import_onnx(one_node("Dropout", {"x": X}, {}, consts, 13))


@pytest.mark.parametrize("outputs", [("y",), ("y", "m", "v"), ("y", "", "v")])
def test_batch_norm_in_training_mode(tmp_path, outputs):
    c = X.shape[1]
    consts = {"s": rng.uniform(0.5, 2, c).astype(np.float32),
              "b": rng.standard_normal(c).astype(np.float32),
              "mean": rng.standard_normal(c).astype(np.float32),
              "var": rng.uniform(0.5, 2, c).astype(np.float32)}  # fmt: skip
    attrs = {"training_mode": 1, "momentum": 0.8, "epsilon": 1e-3}
    model = one_node("BatchNormalization", {"x": X}, attrs, consts, 15, outputs)
    if "" in outputs:  # an omitted output: the model's outputs are the others
        graph = helper.make_graph(
            [helper.make_node("BatchNormalization", ["x", *consts], list(outputs), **attrs)],
            "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, X.shape)],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o],
            [helper.make_tensor(k, TensorProto.FLOAT, v.shape, v) for k, v in consts.items()],
        )  # fmt: skip
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)],
                                  ir_version=8).SerializeToString()  # fmt: skip
    check(tmp_path, model, {"x": X}, rtol=1e-4)


@pytest.mark.parametrize(
    "shape, attrs",
    [((1, 2, 9), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
     ((2, 3, 5, 5), {"kernel_shape": [2, 2], "strides": [2, 2], "storage_order": 1}),
     ((1, 2, 5, 6), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "dilations": [1, 2]}),
     ((1, 1, 5, 5), {"kernel_shape": [2, 3], "strides": [2, 2], "ceil_mode": 1}),
     ((1, 2, 4, 5, 3), {"kernel_shape": [2, 2, 2], "storage_order": 1})],
)  # fmt: skip
def test_max_pool_indices(tmp_path, shape, attrs):
    """Ties included (values rounded to halves): the first largest value in scan order;
    against onnxruntime (the onnx package's reference indexes 3-d windows otherwise)."""
    from testkit.onnx_models import check as check_ort

    x = np.round(rng.standard_normal(shape) * 2).astype(np.float32) / 2
    model = one_node("MaxPool", {"x": x}, attrs, outputs=("y", "i"), out=[np.float32, np.int64])
    check_ort(tmp_path, model, {"x": x})
