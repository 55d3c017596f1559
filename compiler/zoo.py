"""Seeded random-weight ONNX models of common networks, built with onnx.helper (no downloads):
ResNet-18, MobileNet-v1 and a DQN-style Atari network, batch 1, float32, and BERT-style
transformer encoders on int64 token ids. The README, the demo, the tests and the benchmarks
take their models from here.

Convolutions are followed by BatchNormalization (random statistics) as exported by training
frameworks; weights are scaled (He initialization) so activations stay of order one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

OPSET = 17


class _Builder:
    """Nodes and initializers of one graph, with fresh tensor names."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self._n = 0

    def name(self, base: str) -> str:
        self._n += 1
        return f"{base}_{self._n}"

    def const(self, base: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        name = self.name(base)
        self.inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def ints(self, base: str, value: list[int]) -> str:
        from onnx import numpy_helper

        name = self.name(base)
        self.inits.append(numpy_helper.from_array(np.array(value, np.int64), name))
        return name

    def node(self, op: str, inputs: list[str], **attrs) -> str:
        from onnx import helper

        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, group: int = 1) -> str:
        fan_in = cin // group * k * k
        w = self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan_in)
        return self.node(
            "Conv",
            [x, self.const("w", w)],
            kernel_shape=[k, k],
            strides=[stride, stride],
            pads=[k // 2] * 4,
            group=group,
        )

    def bn(self, x: str, c: int) -> str:
        scale = self.const("gamma", self.rng.uniform(0.5, 1.5, c))
        bias = self.const("beta", self.rng.uniform(-0.2, 0.2, c))
        mean = self.const("mean", self.rng.uniform(-0.2, 0.2, c))
        var = self.const("var", self.rng.uniform(0.5, 1.5, c))
        return self.node("BatchNormalization", [x, scale, bias, mean, var], epsilon=1e-5)

    def gemm(self, x: str, cin: int, cout: int) -> str:
        w = self.rng.standard_normal((cout, cin)) * np.sqrt(2.0 / cin)
        b = self.rng.uniform(-0.1, 0.1, cout)
        return self.node("Gemm", [x, self.const("fc_w", w), self.const("fc_b", b)], transB=1)

    def dense(self, x: str, cin: int, cout: int) -> str:
        """x @ W + b as exporters write a linear layer (MatMul, then Add of the bias)."""
        w = self.rng.standard_normal((cin, cout)) / np.sqrt(cin)
        b = self.rng.uniform(-0.1, 0.1, cout)
        return self.node("Add", [self.node("MatMul", [x, self.const("w", w)]), self.const("b", b)])

    def layer_norm(self, x: str, c: int) -> str:
        scale = self.const("gamma", self.rng.uniform(0.8, 1.2, c))
        bias = self.const("beta", self.rng.uniform(-0.1, 0.1, c))
        return self.node("LayerNormalization", [x, scale, bias], axis=-1, epsilon=1e-12)

    def model(
        self,
        x: str,
        shape: tuple[int, ...],
        y: str,
        out_shape: tuple[int, ...],
        dtype: str = "float32",
    ) -> bytes:
        import onnx
        from onnx import TensorProto, helper

        elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        graph = helper.make_graph(
            self.nodes,
            "net",
            [helper.make_tensor_value_info(x, elem, list(shape))],
            [helper.make_tensor_value_info(y, TensorProto.FLOAT, list(out_shape))],
            self.inits,
        )
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)
        onnx.checker.check_model(m)
        return m.SerializeToString()


def resnet18(seed: int = 0, classes: int = 1000) -> bytes:
    """ResNet-18 (BasicBlocks, 1x1 stride-2 downsampling shortcuts) on a 1x3x224x224 input."""
    b = _Builder(seed)
    x = b.node("Relu", [b.bn(b.conv("data", 3, 64, 7, 2), 64)])
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for block in range(2):
            s = stride if block == 0 else 1
            y = b.node("Relu", [b.bn(b.conv(x, cin, cout, 3, s), cout)])
            y = b.bn(b.conv(y, cout, cout, 3), cout)
            short = x if s == 1 and cin == cout else b.bn(b.conv(x, cin, cout, 1, s), cout)
            x = b.node("Relu", [b.node("Add", [y, short])])
            cin = cout
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    return b.model("data", (1, 3, 224, 224), b.gemm(x, 512, classes), (1, classes))


def mobilenet_v1(seed: int = 0, classes: int = 1000, width: float = 1.0, size: int = 224) -> bytes:
    """MobileNet-v1: depthwise-separable blocks with ReLU6, on 1x3x`size`x`size`, every
    layer's channels scaled by the `width` multiplier (at least 8)."""
    b = _Builder(seed)

    def chans(c: int) -> int:
        return max(8, int(c * width))

    def relu6(t: str) -> str:
        lo, hi = b.const("lo", np.array(0.0)), b.const("hi", np.array(6.0))
        return b.node("Clip", [t, lo, hi])

    cin = chans(32)
    x = relu6(b.bn(b.conv("data", 3, cin, 3, 2), cin))
    blocks = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)]
    blocks += [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    for cout, stride in blocks:
        cout = chans(cout)
        x = relu6(b.bn(b.conv(x, cin, cin, 3, stride, group=cin), cin))
        x = relu6(b.bn(b.conv(x, cin, cout, 1), cout))
        cin = cout
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])], axis=1)
    return b.model("data", (1, 3, size, size), b.gemm(x, cin, classes), (1, classes))


def dqn(seed: int = 0, actions: int = 18) -> bytes:
    """The DQN Atari network: 4 stacked 84x84 frames, three convolutions, two dense layers."""
    b = _Builder(seed)
    x = "frames"
    for cin, cout, k, s in ((4, 32, 8, 4), (32, 64, 4, 2), (64, 64, 3, 1)):
        w = b.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))
        bias = b.rng.uniform(-0.1, 0.1, cout)
        conv = b.node(
            "Conv", [x, b.const("w", w), b.const("b", bias)], kernel_shape=[k, k], strides=[s, s]
        )
        x = b.node("Relu", [conv])
    x = b.node("Relu", [b.gemm(b.node("Flatten", [x], axis=1), 3136, 512)])
    return b.model("frames", (1, 4, 84, 84), b.gemm(x, 512, actions), (1, actions))


def encoder(
    seed: int = 0,
    layers: int = 4,
    hidden: int = 256,
    heads: int = 4,
    ffn: int = 1024,
    tokens: int = 128,
    vocab: int = 30522,
) -> bytes:
    """A BERT-style encoder as exporters write it: int64 token ids [1, tokens], token and
    position embeddings, LayerNormalization, then `layers` post-norm blocks of multi-head
    self-attention (Q, K and V projections split into heads, QK^T scaled by 1/sqrt(head size)
    plus an additive mask of -10000 where the id is 0, Softmax, the context through an output
    projection) and a feed-forward block with GELU written with Erf, each added to its input and
    normalized; the last hidden states [1, tokens, hidden]."""
    b = _Builder(seed)
    size = hidden // heads
    table = b.const("table", b.rng.standard_normal((vocab, hidden)) * 0.5)
    pos = b.const("pos", b.rng.standard_normal((tokens, hidden)) * 0.5)
    x = b.layer_norm(b.node("Add", [b.node("Gather", [table, "ids"]), pos]), hidden)
    pad = b.node("Cast", [b.node("Equal", ["ids", b.ints("zero", 0)])], to=1)
    mask = b.node("Unsqueeze", [b.node("Mul", [pad, b.const("minus", np.array(-1e4))]),
                                b.ints("axes", [1, 2])])  # fmt: skip
    split, merged = b.ints("split", [1, tokens, heads, size]), b.ints("merged", [1, tokens, hidden])
    scale = b.const("root", np.array(np.sqrt(size)))
    half, root2, one = (b.const(n, np.array(v)) for n, v in
                        (("half", 0.5), ("root2", np.sqrt(2.0)), ("one", 1.0)))  # fmt: skip
    for _ in range(layers):
        q, k, v = (b.node("Reshape", [b.dense(x, hidden, hidden), split]) for _ in "qkv")
        q = b.node("Transpose", [q], perm=[0, 2, 1, 3])
        k = b.node("Transpose", [k], perm=[0, 2, 3, 1])
        v = b.node("Transpose", [v], perm=[0, 2, 1, 3])
        scores = b.node("Add", [b.node("Div", [b.node("MatMul", [q, k]), scale]), mask])
        context = b.node("MatMul", [b.node("Softmax", [scores], axis=-1), v])
        context = b.node("Reshape", [b.node("Transpose", [context], perm=[0, 2, 1, 3]), merged])
        x = b.layer_norm(b.node("Add", [b.dense(context, hidden, hidden), x]), hidden)
        h = b.dense(x, hidden, ffn)
        erf = b.node("Erf", [b.node("Div", [h, root2])])
        h = b.node("Mul", [b.node("Mul", [h, half]), b.node("Add", [erf, one])])
        x = b.layer_norm(b.node("Add", [b.dense(h, ffn, hidden), x]), hidden)
    return b.model("ids", (1, tokens), x, (1, tokens, hidden), "int64")


def bert_base(seed: int = 0) -> bytes:
    """`encoder` of BERT-base's size: 12 layers, hidden 768, 12 heads, feed-forward 3072,
    128 tokens, its 30,522-token vocabulary."""
    return encoder(seed, layers=12, hidden=768, heads=12, ffn=3072)


NETWORKS: dict[str, Callable[[], bytes]] = {
    "resnet18": resnet18,
    "mobilenet_v1": mobilenet_v1,
    "dqn": dqn,
}
INPUTS = {"resnet18": ("data", (1, 3, 224, 224)), "mobilenet_v1": ("data", (1, 3, 224, 224))}
INPUTS["dqn"] = ("frames", (1, 4, 84, 84))
# the encoders, apart: the convolutional networks' tests run every entry of NETWORKS
ENCODERS: dict[str, Callable[[], bytes]] = {"encoder4": encoder, "bert_base": bert_base}
INPUTS["encoder4"] = INPUTS["bert_base"] = ("ids", (1, 128))
VOCAB = 30522  # the encoders' vocabulary


def random_inputs(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    """The network's input, standard normal (uniform [0, 1) frames for the DQN; for an
    encoder, token ids in 1..VOCAB-1 with the last eighth padding, id 0)."""
    rng = np.random.default_rng(seed)
    key, shape = INPUTS[name]
    if name in ENCODERS:
        ids = rng.integers(1, VOCAB, shape)
        ids[:, -shape[1] // 8 :] = 0
        return {key: ids.astype(np.int64)}
    x = rng.random(shape) if name == "dqn" else rng.standard_normal(shape)
    return {key: x.astype(np.float32)}
