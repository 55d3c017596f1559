"""The numpy reference executor against onnxruntime: seeded one-node models covering the
supported operators and attribute values, and the benchmark networks; the same one-node models
compiled for the CPU."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.graph import reference
from compiler.graph.build_onnx import compile_model
from compiler.graph.onnx_import import import_onnx
from compiler.zoo import NETWORKS, random_inputs

ort = pytest.importorskip("onnxruntime")


def one_node(op, shapes, attrs=None, consts=None, opset=17, outputs=1, **kw):
    """A seeded model of one `op` node: float inputs x0.. of `shapes` (computed), then
    constant inputs `consts` (name -> array, None for an omitted one), in order."""
    rng = np.random.default_rng(0)
    names = [f"x{k}" for k in range(len(shapes))]
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in zip(names, shapes)}  # noqa: B905
    consts = consts or {}
    inputs = names + [k if v is not None else "" for k, v in consts.items()]
    outs = [f"y{k}" for k in range(outputs)]
    node = helper.make_node(op, inputs, outs, **(attrs or {}))
    graph = helper.make_graph(
        [node],
        op,
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
            for n, s in zip(names, shapes, strict=True)
        ],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items() if v is not None],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    return m.SerializeToString(), feeds


def w(*shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
f32 = lambda *v: np.array(v, np.float32)  # noqa: E731

CASES = {
    "conv_group_dilation_asym": ("Conv", [(1, 4, 9, 10)],
        dict(group=2, dilations=[2, 1], strides=[1, 2], pads=[1, 0, 2, 1]),
        {"w": w(6, 2, 3, 3), "b": w(6)}),
    "conv_depthwise_same_lower": ("Conv", [(1, 4, 7, 7)],
        dict(group=4, auto_pad="SAME_LOWER", strides=[2, 2]), {"w": w(4, 1, 4, 4)}),
    "conv_valid": ("Conv", [(2, 3, 6, 5)], dict(auto_pad="VALID"), {"w": w(5, 3, 3, 2)}),
    "conv_transpose": ("ConvTranspose", [(1, 4, 5, 5)],
        dict(strides=[2, 2], pads=[1, 0, 1, 1], output_padding=[1, 0], group=2),
        {"w": w(4, 3, 3, 3), "b": w(6)}),
    "conv_transpose_output_shape": ("ConvTranspose", [(1, 2, 4, 4)],
        dict(strides=[2, 2], output_shape=[9, 8], dilations=[1, 2]), {"w": w(2, 3, 3, 3)}),
    "batchnorm": ("BatchNormalization", [(2, 3, 4, 4)], dict(epsilon=1e-3),
        {"s": w(3), "b": w(3, seed=2), "m": w(3, seed=3), "v": np.abs(w(3, seed=4)) + 0.5}),
    "relu": ("Relu", [(3, 4)]),
    "leaky_relu": ("LeakyRelu", [(3, 4)], dict(alpha=0.3)),
    "leaky_relu_default": ("LeakyRelu", [(3, 4)]),
    "clip_inputs": ("Clip", [(3, 4)], None, {"lo": f32(-0.5)[0], "hi": f32(0.7)[0]}),
    "clip_min_only": ("Clip", [(3, 4)], None, {"lo": f32(-0.5)[0]}),
    "clip_max_only": ("Clip", [(3, 4)], None, {"lo": None, "hi": f32(0.2)[0]}),
    "sigmoid": ("Sigmoid", [(3, 4)]),
    "tanh": ("Tanh", [(3, 4)]),
    "hard_sigmoid": ("HardSigmoid", [(3, 4)], dict(alpha=0.3, beta=0.4)),
    "hard_swish": ("HardSwish", [(3, 5)]),
    "add_broadcast": ("Add", [(2, 3, 4), (3, 1)]),
    "sub_broadcast": ("Sub", [(4,), (2, 3, 4)]),
    "mul_const": ("Mul", [(2, 3, 4)], None, {"c": w(1, 4)}),
    "div": ("Div", [(2, 3), (2, 3)]),
    "pow_const": ("Pow", [(2, 3)], None, {"e": f32(2.0)}),
    "maxpool_ceil_dilation": ("MaxPool", [(1, 2, 9, 8)],
        dict(kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1], ceil_mode=1,
             dilations=[1, 2])),
    "maxpool_same_upper": ("MaxPool", [(1, 2, 7, 7)],
        dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
    "avgpool_exclude_pad": ("AveragePool", [(1, 2, 7, 6)],
        dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    "avgpool_include_pad_ceil": ("AveragePool", [(1, 2, 8, 7)],
        dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 0, 0], ceil_mode=1,
             count_include_pad=1)),
    "global_avg": ("GlobalAveragePool", [(2, 3, 5, 4)]),
    "global_max": ("GlobalMaxPool", [(2, 3, 5, 4)]),
    "gemm_trans": ("Gemm", [(5, 3)], dict(alpha=0.5, beta=2.0, transA=1, transB=1),
        {"b": w(4, 5), "c": w(4)}),
    "gemm_no_c": ("Gemm", [(3, 5)], None, {"b": w(5, 4)}),
    "matmul_batched": ("MatMul", [(2, 1, 3, 4), (3, 4, 5)]),
    "matmul_vector": ("MatMul", [(4,), (2, 4, 3)]),
    "flatten_axis0": ("Flatten", [(2, 3, 4)], dict(axis=0)),
    "flatten_neg": ("Flatten", [(2, 3, 4)], dict(axis=-1)),
    "reshape_zero_minus1": ("Reshape", [(2, 3, 4)], None, {"s": i64(0, -1, 2)}),
    "transpose_default": ("Transpose", [(2, 3, 4)]),
    "transpose_perm": ("Transpose", [(2, 3, 4)], dict(perm=[1, 2, 0])),
    "concat_neg_axis": ("Concat", [(2, 3), (2, 5)], dict(axis=-1)),
    "split_input": ("Split", [(2, 6)], dict(axis=1), {"s": i64(2, 4)}, 17, 2),
    "split_even_18": ("Split", [(2, 7)], dict(axis=1, num_outputs=3), None, 18, 3),
    "slice_negative_step": ("Slice", [(5, 6)], None,
        {"st": i64(-1, 1), "en": i64(-100, 5), "ax": i64(0, 1), "sp": i64(-2, 2)}),
    "squeeze_all": ("Squeeze", [(1, 3, 1)]),
    "unsqueeze": ("Unsqueeze", [(3, 4)], None, {"a": i64(0, -1)}),
    "pad_constant": ("Pad", [(2, 3)], None, {"p": i64(1, 0, 0, 2), "v": f32(1.5)[0]}),
    "pad_reflect": ("Pad", [(1, 2, 4, 4)], dict(mode="reflect"),
        {"p": i64(0, 0, 1, 2, 0, 0, 2, 1)}),
    "pad_edge_axes": ("Pad", [(2, 3, 4)], dict(mode="edge"),
        {"p": i64(1, 2), "v": None, "a": i64(-1)}, 18),
    "softmax": ("Softmax", [(2, 3, 4)], dict(axis=1)),
    "softmax_11": ("Softmax", [(2, 3, 4)], dict(axis=1), None, 11),
    "log_softmax": ("LogSoftmax", [(2, 3, 4)]),
    "reduce_mean": ("ReduceMean", [(2, 3, 4)], dict(axes=[1, -1])),
    "reduce_sum_input": ("ReduceSum", [(2, 3, 4)], dict(keepdims=0), {"a": i64(0)}),
    "reduce_max_all_18": ("ReduceMax", [(2, 3, 4)], None, None, 18),
    "resize_nearest_asym_floor": ("Resize", [(1, 2, 3, 4)],
        dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        {"roi": None, "sc": f32(1, 1, 2, 1.5)}),
    "resize_nearest_half_pixel": ("Resize", [(1, 2, 3, 4)], dict(mode="nearest"),
        {"roi": None, "sc": None, "sz": i64(1, 2, 7, 5)}),
    "resize_linear_align": ("Resize", [(1, 2, 3, 4)],
        dict(mode="linear", coordinate_transformation_mode="align_corners"),
        {"roi": None, "sc": f32(1, 1, 2, 2)}),
    "resize_linear_half_pixel": ("Resize", [(1, 2, 3, 4)], dict(mode="linear"),
        {"roi": None, "sc": None, "sz": i64(1, 2, 5, 9)}),
    "resize_linear_pytorch": ("Resize", [(1, 2, 4, 4)],
        dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
        {"roi": None, "sc": f32(1, 1, 0.5, 1.75)}),
    "resize_nearest_ceil_11": ("Resize", [(1, 1, 3, 3)],
        dict(mode="nearest", nearest_mode="ceil", coordinate_transformation_mode="half_pixel"),
        {"roi": f32(), "sc": f32(1, 1, 2.5, 1.5)}, 11),
    "lrn": ("LRN", [(1, 7, 3, 4)], dict(size=5)),
    "lrn_attrs": ("LRN", [(2, 6, 5, 3)], dict(size=3, alpha=0.02, beta=0.6, bias=2.0)),
    "identity": ("Identity", [(3,)]),
    "dropout": ("Dropout", [(3, 4)], None, {"r": f32(0.5)[0]}),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_one_node_matches_onnxruntime(case):
    data, feeds = one_node(*CASES[case])
    got = reference.run(import_onnx(data), feeds)
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    expected = sess.run(None, feeds)
    names = [o.name for o in sess.get_outputs()]
    for name, ref in zip(names, expected, strict=True):
        assert got[name].shape == ref.shape, name
        np.testing.assert_allclose(got[name], ref, rtol=1e-4, atol=1e-5 * np.abs(ref).max())


@pytest.mark.parametrize("case", [c for c, spec in CASES.items() if spec[4:5] != (18,)])
def test_one_node_at_other_opsets(case):
    """The case's model converted (onnx.version_converter) to opsets 11, 13 and 18 where the
    converter can (always up to 18): the other forms of the operators import the same."""
    import onnx
    from onnx import version_converter

    data, feeds = one_node(*CASES[case])
    model = onnx.load_from_string(data)
    compared = 0
    for opset in (11, 13, 18):
        if opset == model.opset_import[0].version:
            continue
        try:
            converted = version_converter.convert_version(model, opset)
        except Exception:  # the converter has no adapter for this op and direction
            continue
        got = reference.run(import_onnx(converted), feeds)
        sess = ort.InferenceSession(
            converted.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        for value, want in zip(got.values(), sess.run(None, feeds), strict=True):
            np.testing.assert_allclose(value, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
        compared += 1
    assert compared


@pytest.mark.parametrize("name", list(NETWORKS))
def test_network_matches_onnxruntime(name):
    data = NETWORKS[name]()
    feeds = random_inputs(name)
    (got,) = reference.run(import_onnx(data), feeds).values()
    (ref,) = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(got, ref, rtol=1e-3, atol=1e-4 * np.abs(ref).max())


@pytest.mark.parametrize(
    "shape, size",
    [((1, 6, 5), 4), ((1, 5, 2, 3, 2), 2), ((1, 3, 4, 4), 7), ((1, 3, 2, 2), 1 << 40)],
)
def test_lrn_beyond_onnxruntime(tmp_path, shape, size):
    """Even windows, windows wider than the channels and other ranks (onnxruntime takes odd
    sizes and 4-d inputs only): the reference and the CPU against the operator's definition."""
    data, feeds = one_node("LRN", [shape], dict(size=size, alpha=0.3, beta=0.7, bias=1.5))
    x = feeds["x0"].astype(np.float64)
    want = np.empty_like(x)
    for c in range(shape[1]):
        lo, hi = max(0, c - (size - 1) // 2), min(shape[1] - 1, c + size // 2)
        sq = (x[:, lo : hi + 1] ** 2).sum(axis=1)
        want[:, c] = x[:, c] / (1.5 + 0.3 / size * sq) ** 0.7
    (got,) = reference.run(import_onnx(data), feeds).values()
    np.testing.assert_allclose(got, want, rtol=1e-5)
    (tmp_path / "m.onnx").write_bytes(data)
    (got,) = compile_model(tmp_path / "m.onnx").run(feeds).values()
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_missing_and_misshaped_inputs_are_errors():
    from compiler.errors import OperatorError

    g = import_onnx(one_node("Relu", [(3, 4)])[0])
    with pytest.raises(OperatorError, match="missing input"):
        reference.run(g, {})
    with pytest.raises(OperatorError, match=r"input x0 has shape \(4,\)"):
        reference.run(g, {"x0": np.zeros(4)})


@pytest.mark.parametrize("case", list(CASES))
def test_every_one_node_case_runs_on_the_cpu(tmp_path, case):
    data, feeds = one_node(*CASES[case])
    (tmp_path / "m.onnx").write_bytes(data)
    got = compile_model(tmp_path / "m.onnx").run(feeds)
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for value, want in zip(got.values(), sess.run(None, feeds), strict=True):
        assert value.shape == want.shape
        np.testing.assert_allclose(value, want, rtol=1e-3, atol=1e-4 * np.abs(want).max())
