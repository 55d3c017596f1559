"""Seeded random CNN-like graphs of the supported operators (convs, depthwise convs, batch
norms, activations, pools, residual adds, channel concats, per-channel scales): after import and
every pass the reference executor, and the compiled CPU graph, agree with onnxruntime."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.graph import reference
from compiler.graph.build_onnx import compile_model
from compiler.graph.onnx_import import import_onnx
from compiler.graph.passes import run_passes

ort = pytest.importorskip("onnxruntime")


def random_model(seed: int) -> tuple[bytes, dict]:
    """A chain of random layers on a [1, C, H, W] tensor, with residual adds and branches."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    shapes = {"x": (1, int(rng.choice([3, 8, 16])), 12, 12)}
    n = 0

    def new(op, ins, shape, **attrs):
        nonlocal n
        n += 1
        out = f"{op.lower()}{n}"
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        shapes[out] = shape
        return out

    def const(value):
        name = f"c{len(inits)}"
        inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    cur = "x"
    for _ in range(int(rng.integers(3, 8))):
        _, c, h, w = shapes[cur]
        kind = rng.choice(["conv", "dw", "bn", "act", "pool", "res", "mul", "cat"])
        if kind == "conv" or (kind == "dw" and c == 3):
            oc, k, s = (
                int(rng.choice([8, 16, 32])),
                int(rng.choice([1, 3])),
                int(rng.choice([1, 2])),
            )
            p = k // 2
            wt = rng.standard_normal((oc, c, k, k)) * np.sqrt(2 / (c * k * k))
            oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
            cur = new(
                "Conv",
                [cur, const(wt), const(rng.standard_normal(oc) * 0.1)],
                (1, oc, oh, ow),
                kernel_shape=[k, k],
                pads=[p] * 4,
                strides=[s, s],
            )
        elif kind == "dw":
            wt = rng.standard_normal((c, 1, 3, 3)) * 0.5
            cur = new(
                "Conv", [cur, const(wt)], (1, c, h, w), kernel_shape=[3, 3], pads=[1] * 4, group=c
            )
        elif kind == "bn":
            params = [
                const(rng.uniform(0.5, 1.5, c)),
                const(rng.uniform(-0.5, 0.5, c)),
                const(rng.uniform(-0.5, 0.5, c)),
                const(rng.uniform(0.5, 1.5, c)),
            ]
            cur = new("BatchNormalization", [cur, *params], (1, c, h, w))
        elif kind == "act":
            op = str(rng.choice(["Relu", "Sigmoid", "Tanh", "HardSwish", "LeakyRelu", "Clip"]))
            ins = [cur, const(-1.0), const(2.0)] if op == "Clip" else [cur]
            cur = new(op, ins, (1, c, h, w))
        elif kind == "pool" and h >= 4:
            op = str(rng.choice(["MaxPool", "AveragePool"]))
            cur = new(
                op,
                [cur],
                (1, c, (h - 1) // 2 + 1, (w - 1) // 2 + 1),
                kernel_shape=[3, 3],
                strides=[2, 2],
                pads=[1] * 4,
            )
        elif kind == "res":
            wt = rng.standard_normal((c, c, 3, 3)) * np.sqrt(1 / (c * 9))
            branch = new("Conv", [cur, const(wt)], (1, c, h, w), kernel_shape=[3, 3], pads=[1] * 4)
            cur = new("Add", [branch, cur], (1, c, h, w))
        elif kind == "cat":  # a branch concatenated on the channels (dense-block style)
            oc = int(rng.choice([8, 16, 32]))
            wt = rng.standard_normal((oc, c, 1, 1)) * np.sqrt(1 / c)
            branch = new("Conv", [cur, const(wt)], (1, oc, h, w), kernel_shape=[1, 1])
            cur = new("Concat", [cur, branch], (1, c + oc, h, w), axis=1)
        else:
            cur = new("Mul", [cur, const(rng.uniform(0.5, 1.5, (1, c, 1, 1)))], (1, c, h, w))
    _, c, h, w = shapes[cur]
    gap = new("GlobalAveragePool", [cur], (1, c, 1, 1))
    flat = new("Flatten", [gap], (1, c))
    y = new("Gemm", [flat, const(rng.standard_normal((5, c)) / np.sqrt(c))], (1, 5), transB=1)
    graph = helper.make_graph(
        nodes, "random",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shapes["x"])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, (1, 5))], inits,
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    x = rng.standard_normal(shapes["x"]).astype(np.float32)
    return m.SerializeToString(), {"x": x}


def expected(data: bytes, feeds: dict) -> np.ndarray:
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


@pytest.mark.parametrize("seed", range(12))
def test_passes_keep_random_graphs(seed):
    data, feeds = random_model(seed)
    graph, tasks = run_passes(import_onnx(data))
    assert sum(t.weight for t in tasks) == len(graph.groups)
    (got,) = reference.run(graph, feeds).values()
    want = expected(data, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("seed", range(4))
def test_cpu_runs_random_graphs(seed, tmp_path):
    data, feeds = random_model(seed)
    (tmp_path / "m.onnx").write_bytes(data)
    (got,) = compile_model(tmp_path / "m.onnx").run(feeds).values()
    want = expected(data, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * np.abs(want).max())
