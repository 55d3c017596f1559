"""A seeded ResNet-18 quantized for the accelerator and run end to end (scripts/demo.py,
scripts/bench_vta.py --model): fp32 in numpy (batch norm folded into the convolutions), int8
power-of-two quantization calibrated on seeded random inputs (no pretrained weights or data sets
are available offline), the quantized network in numpy as the bit-exact reference, and the same
network with every convolution after the first and the final dense layer offloaded (fused
kernels: bias, requant, ReLU and the residual add or the 1x1 downsampling conv in one Program)
while the first convolution (3 input channels), max pooling and global average pooling run on
the CPU in numpy.

Max pooling could run on the ALU (MAX of tensor operands) only after an identity GEMM copies the
int8 input into the accumulator, about 0.25 M cycles for ResNet-18's pool; since its producer
(the first convolution) runs on the CPU anyway, the pool stays there and the packing boundary
sits after it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from compiler.graph.accel import AccelConv, compile_qconv, pack_act, report_row, unpack_act
from compiler.graph.quant import (
    QConv,
    conv_f32,
    depthwise,
    dequantize,
    magnitude,
    pow2_exponent,
    quantize,
    quantize_conv,
    run_qconv,
)
from vta.config import VTAConfig

STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))  # (channels, first block's stride)


def _conv_bn(rng: np.random.Generator, o: int, i: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """He-initialized conv weights with a random batch norm folded in: (weight, bias)."""
    w = rng.standard_normal((o, i, k, k)).astype(np.float32) * np.sqrt(2.0 / (i * k * k))
    gamma = rng.uniform(0.5, 1.0, o).astype(np.float32)
    beta = rng.normal(0.0, 0.1, o).astype(np.float32)
    mean = rng.normal(0.0, 0.1, o).astype(np.float32)
    var = rng.uniform(0.5, 1.5, o).astype(np.float32)
    scale = gamma / np.sqrt(var + 1e-5)
    return w * scale[:, None, None, None], beta - mean * scale


def resnet18_params(seed: int = 0, classes: int = 1000) -> dict:
    """Seeded fp32 weights of ResNet-18 (batch norms folded)."""
    rng = np.random.default_rng(seed)
    p = {"conv1": _conv_bn(rng, 64, 3, 7)}
    c_in = 64
    for s, (c, stride) in enumerate(STAGES):
        for b in range(2):
            name = f"layer{s + 1}.{b}"
            p[f"{name}.a"] = _conv_bn(rng, c, c_in if b == 0 else c, 3)
            p[f"{name}.b"] = _conv_bn(rng, c, c, 3)
            if b == 0 and (stride != 1 or c_in != c):
                p[f"{name}.down"] = _conv_bn(rng, c, c_in, 1)
        c_in = c
    fc = rng.standard_normal((classes, 512)).astype(np.float32) / np.sqrt(512)
    p["fc"] = (fc[:, :, None, None], rng.normal(0, 0.01, classes).astype(np.float32))
    return p


def maxpool(x: np.ndarray) -> np.ndarray:
    """3x3, stride 2, padding 1 (any dtype; padding never wins)."""
    low = np.iinfo(x.dtype).min if x.dtype.kind == "i" else -np.inf
    x = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=low)
    oh, ow = (x.shape[2] - 3) // 2 + 1, (x.shape[3] - 3) // 2 + 1
    return np.max(
        [x[:, :, i : i + 2 * oh : 2, j : j + 2 * ow : 2] for i in range(3) for j in range(3)],
        axis=0,
    )


def _blocks():
    c_in = 64
    for s, (c, stride) in enumerate(STAGES):
        for b in range(2):
            yield f"layer{s + 1}.{b}", (stride if b == 0 else 1), (b == 0 and c_in != c)
        c_in = c


def forward_f32(p: dict, x: np.ndarray) -> dict[str, np.ndarray]:
    """Every named activation of the fp32 network."""
    acts = {"input": x}
    relu = lambda t: np.maximum(t, 0)  # noqa: E731
    h = relu(conv_f32(x, *p["conv1"], 2, 3))
    acts["conv1"] = h
    h = acts["pool"] = maxpool(h)
    for name, stride, down in _blocks():
        y = acts[f"{name}.a"] = relu(conv_f32(h, *p[f"{name}.a"], stride, 1))
        short = conv_f32(h, *p[f"{name}.down"], stride, 0) if down else h
        h = acts[f"{name}.b"] = relu(conv_f32(y, *p[f"{name}.b"], 1, 1) + short)
    acts["avgpool"] = h.mean(axis=(2, 3), keepdims=True)
    acts["fc"] = conv_f32(acts["avgpool"], *p["fc"], 1, 0)
    return acts


def calibrate(p: dict, inputs: np.ndarray, method: str) -> dict[str, int]:
    """Each activation's exponent from the fp32 network on calibration inputs."""
    acts = forward_f32(p, inputs)
    return {k: pow2_exponent(magnitude(v, method)) for k, v in acts.items()}


@dataclass
class QNet:
    """The quantized ResNet-18: exponents, quantized layers and avgpool's output exponent."""

    exps: dict[str, int]
    layers: dict[str, QConv] = field(default_factory=dict)


def quantize_resnet18(p: dict, exps: dict[str, int]) -> QNet:
    q = QNet(dict(exps))
    e = q.exps
    q.layers["conv1"] = quantize_conv(*p["conv1"], e["input"], e["conv1"], True, 2, 3)
    e["conv1"] = q.layers["conv1"].e_out  # raised where the shift needed it
    prev = "pool"
    e["pool"] = e["conv1"]
    for name, stride, down in _blocks():
        q.layers[f"{name}.a"] = quantize_conv(
            *p[f"{name}.a"], e[prev], e[f"{name}.a"], True, stride, 1
        )
        e[f"{name}.a"] = q.layers[f"{name}.a"].e_out
        wb, bb = p[f"{name}.b"]
        if down:
            sc = (*p[f"{name}.down"], e[prev], stride)
            q.layers[f"{name}.b"] = quantize_conv(
                wb, bb, e[f"{name}.a"], e[f"{name}.b"], True, 1, 1, shortcut=sc
            )
        else:
            q.layers[f"{name}.b"] = quantize_conv(
                wb, bb, e[f"{name}.a"], e[f"{name}.b"], True, 1, 1, e_residual=e[prev]
            )
        e[f"{name}.b"] = q.layers[f"{name}.b"].e_out
        prev = f"{name}.b"
    q.layers["fc"] = quantize_conv(*p["fc"], e["avgpool"], e["fc"], False)
    return q


def avgpool_int(x: np.ndarray, e_in: int, e_out: int) -> np.ndarray:
    """Global average pooling of int8 at e_in to int8 at e_out (CPU)."""
    total = x.astype(np.int64).sum(axis=(2, 3), keepdims=True)
    return quantize(total * 2.0**e_in / (x.shape[2] * x.shape[3]), e_out)


def forward_int(q: QNet, x: np.ndarray) -> dict[str, np.ndarray]:
    """The quantized network in numpy: the bit-exact reference of every device."""
    acts = {"input": quantize(x, q.exps["input"])}
    h = acts["conv1"] = run_qconv(q.layers["conv1"], acts["input"])
    h = acts["pool"] = maxpool(h)
    for name, _, down in _blocks():
        y = acts[f"{name}.a"] = run_qconv(q.layers[f"{name}.a"], h)
        lb = q.layers[f"{name}.b"]
        h = acts[f"{name}.b"] = run_qconv(lb, y, None if down else h, h if down else None)
    acts["avgpool"] = avgpool_int(h, q.exps["layer4.1.b"], q.exps["avgpool"])
    acts["fc"] = run_qconv(q.layers["fc"], acts["avgpool"])
    return acts


@dataclass
class AccelNet:
    """The compiled network: offloaded layers in order, with where each runs."""

    q: QNet
    cfg: VTAConfig
    layers: dict[str, AccelConv]
    compile_seconds: float


def compile_resnet18(
    q: QNet,
    cfg: VTAConfig,
    candidates: int = 8,
    db: str | None = None,
    batch: int = 1,
    in_hw: int = 224,
    offload_dense: bool = False,
) -> AccelNet:
    """Offload every conv after the first (and the dense layer if `offload_dense`: it is
    memory-bound there, about 0.03 GEMM utilization and 71 k cycles for ResNet-18's 512x1000
    weights, so by default it stays on the CPU); the rest stays on the CPU."""
    start = time.perf_counter()
    layers = {}
    shape = (batch, 64, in_hw // 4, in_hw // 4)
    for name, stride, down in _blocks():
        qa, qb = q.layers[f"{name}.a"], q.layers[f"{name}.b"]
        layers[f"{name}.a"] = compile_qconv(f"{name}.a", qa, shape, cfg, None, candidates, db)
        c = qa.weight.shape[0]
        mid = (batch, c, (shape[2] - 1) // stride + 1, (shape[3] - 1) // stride + 1)
        sc = shape if down else None
        layers[f"{name}.b"] = compile_qconv(f"{name}.b", qb, mid, cfg, sc, candidates, db)
        shape = mid
    if offload_dense:
        fc = q.layers["fc"]
        layers["fc"] = compile_qconv("fc", fc, (batch, 512, 1, 1), cfg, None, candidates, db)
    return AccelNet(q, cfg, layers, time.perf_counter() - start)


def run_resnet18(net: AccelNet, x: np.ndarray, device: str) -> tuple[dict, list[dict], float]:
    """Run on `device`: activations (NCHW int8), per-layer report rows, CPU seconds."""
    q, cfg = net.q, net.cfg
    acts, rows, cpu = {}, [], 0.0
    t = time.perf_counter()
    acts["input"] = quantize(x, q.exps["input"])
    h = acts["conv1"] = run_qconv(q.layers["conv1"], acts["input"])
    h = acts["pool"] = maxpool(h)
    packed = pack_act(h, cfg)
    cpu += time.perf_counter() - t
    rows += [_cpu_row("conv1", "first conv: 3 input channels"), _cpu_row("pool", "max pool")]
    for name, _, down in _blocks():
        la, lb = net.layers[f"{name}.a"], net.layers[f"{name}.b"]
        y, st = la.run(cfg, device, packed)
        rows.append(report_row(la, st))
        out, st = lb.run(cfg, device, y, None if down else packed, packed if down else None)
        rows.append(report_row(lb, st))
        acts[f"{name}.a"] = unpack_act(y, la.out_channels)
        acts[f"{name}.b"] = unpack_act(out, lb.out_channels)
        packed = out
    t = time.perf_counter()
    acts["avgpool"] = avgpool_int(acts["layer4.1.b"], q.exps["layer4.1.b"], q.exps["avgpool"])
    rows.append(_cpu_row("avgpool", "global average pool"))
    if "fc" not in net.layers:
        acts["fc"] = run_qconv(q.layers["fc"], acts["avgpool"])
        cpu += time.perf_counter() - t
        rows.append(_cpu_row("fc", "dense: memory-bound on the accelerator"))
        return acts, rows, cpu
    pooled = pack_act(acts["avgpool"], cfg)
    cpu += time.perf_counter() - t
    fc = net.layers["fc"]
    logits, st = fc.run(cfg, device, pooled)
    rows.append(report_row(fc, st))
    acts["fc"] = unpack_act(logits, fc.out_channels)
    return acts, rows, cpu


def _cpu_row(name: str, why: str) -> dict:
    return {"name": name, "where": "cpu", "why": why}


def quant_errors(f32: dict, qacts: dict, exps: dict) -> dict[str, float]:
    """Per activation: max |dequantized - fp32| / max |fp32|."""
    out = {}
    for k, v in f32.items():
        if k in qacts:
            ref = float(np.abs(v).max()) or 1.0
            out[k] = float(np.abs(dequantize(qacts[k], exps[k]) - v).max()) / ref
    return out


# ------------------------------------------------------------------------ sequential networks
@dataclass(frozen=True)
class Layer:
    """One step of a sequential network: conv (offloaded), dw (depthwise 3x3, CPU), dense
    (offloaded), flatten or avgpool (CPU)."""

    name: str
    kind: str
    out: int = 0
    k: int = 1
    stride: int = 1
    relu: bool = False
    pad: int = 0


# A DQN-style network (Atari frames 4x84x84 -> 18 actions): convolutions with 4 and 32 input
# channels and 18 outputs, which the accelerator takes with channels padded to its block.
DQN = (
    Layer("conv1", "conv", 32, 8, 4, True),
    Layer("conv2", "conv", 64, 4, 2, True),
    Layer("conv3", "conv", 64, 3, 1, True),
    Layer("flatten", "flatten"),
    Layer("fc1", "dense", 512, relu=True),
    Layer("fc2", "dense", 18),
)


def _mobilenet_v1() -> tuple[Layer, ...]:
    out = [Layer("conv0", "conv", 32, 3, 2, True, 1)]
    widths = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)]
    widths += [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    for i, (c, s) in enumerate(widths, 1):
        out += [Layer(f"dw{i}", "dw", 0, 3, s, True, 1), Layer(f"pw{i}", "conv", c, 1, 1, True)]
    return (*out, Layer("avgpool", "avgpool"), Layer("fc", "dense", 1000))


# MobileNet-v1 (224x224): pointwise and the first convs offloaded, depthwise convs on the CPU
# (one channel per product: the GEMM's 16x16 blocks would be 1/16 used).
MOBILENET_V1 = _mobilenet_v1()


def chain_params(layers, in_shape: tuple[int, int, int], seed: int = 0) -> dict:
    """Seeded fp32 weights of a sequential network on (C, H, W) inputs."""
    rng = np.random.default_rng(seed)
    c, h, w = in_shape
    p = {}
    for ly in layers:
        if ly.kind in ("flatten", "avgpool"):
            c, h, w = (c * h * w if ly.kind == "flatten" else c), 1, 1
            continue
        if ly.kind == "dw":
            wt, b = _conv_bn(rng, c, 1, ly.k)
            p[ly.name] = (wt, b)
        else:
            p[ly.name] = _conv_bn(rng, ly.out, c, ly.k)
            c = ly.out
        h = (h + 2 * ly.pad - ly.k) // ly.stride + 1
        w = (w + 2 * ly.pad - ly.k) // ly.stride + 1
    return p


def chain_f32(layers, p: dict, x: np.ndarray) -> dict[str, np.ndarray]:
    acts = {"input": x}
    for ly in layers:
        if ly.kind == "flatten":
            x = x.reshape(x.shape[0], -1, 1, 1)
        elif ly.kind == "avgpool":
            x = x.mean(axis=(2, 3), keepdims=True)
        else:
            conv = depthwise if ly.kind == "dw" else conv_f32
            x = conv(x, *p[ly.name], ly.stride, ly.pad)
            x = np.maximum(x, 0) if ly.relu else x
        acts[ly.name] = x
    return acts


def quantize_chain(layers, p: dict, exps: dict[str, int]) -> QNet:
    q = QNet(dict(exps))
    prev = "input"
    for ly in layers:
        if ly.kind == "flatten":
            q.exps[ly.name] = q.exps[prev]
        elif ly.kind != "avgpool":
            e_in, e_out = q.exps[prev], q.exps[ly.name]
            ql = quantize_conv(*p[ly.name], e_in, e_out, ly.relu, ly.stride, ly.pad)
            q.layers[ly.name] = ql
            q.exps[ly.name] = ql.e_out
        prev = ly.name
    return q


def _cpu_step(ly: Layer, q: QNet, h: np.ndarray, prev: str) -> np.ndarray:
    if ly.kind == "flatten":
        return h.reshape(h.shape[0], -1, 1, 1)
    if ly.kind == "avgpool":
        return avgpool_int(h, q.exps[prev], q.exps[ly.name])
    ql = q.layers[ly.name]  # depthwise: run_qconv's arithmetic, one channel per product
    acc = depthwise(h.astype(np.int64), ql.weight, ql.bias, ql.stride, ql.pad)
    return np.clip(acc >> ql.shift, 0 if ql.relu else -128, 127).astype(np.int8)


def chain_int(layers, q: QNet, x: np.ndarray) -> dict[str, np.ndarray]:
    h = quantize(x, q.exps["input"])
    acts, prev = {"input": h}, "input"
    for ly in layers:
        if ly.kind in ("conv", "dense"):
            h = run_qconv(q.layers[ly.name], h)
        else:
            h = _cpu_step(ly, q, h, prev)
        acts[ly.name], prev = h, ly.name
    return acts


def run_chain(
    layers, q: QNet, x: np.ndarray, cfg: VTAConfig, device: str, candidates: int = 8
) -> tuple[dict, list[dict]]:
    """Convs and dense layers offloaded (activations stay packed between them), the other
    steps on the CPU (an unpack/pack boundary each)."""
    h = quantize(x, q.exps["input"])
    acts, rows, packed, prev = {"input": h}, [], None, "input"
    for ly in layers:
        if ly.kind not in ("conv", "dense"):
            h = acts[ly.name] = _cpu_step(ly, q, h, prev)
            packed, prev = None, ly.name
            rows.append(_cpu_row(ly.name, ly.kind))
            continue
        if packed is None:
            packed = pack_act(h, cfg)
        layer = compile_qconv(ly.name, q.layers[ly.name], h.shape, cfg, None, candidates)
        packed, st = layer.run(cfg, device, packed)
        rows.append(report_row(layer, st))
        h = acts[ly.name] = unpack_act(packed, layer.out_channels)
        prev = ly.name
    return acts, rows


CHAINS = {"dqn": (DQN, (4, 84, 84)), "mobilenet_v1": (MOBILENET_V1, (3, 224, 224))}


def accuracy(model: str, method: str, inputs: int, seed: int = 0) -> dict:
    """Quantized (numpy reference, the devices' bit-exact oracle) against fp32 on `inputs`
    seeded inputs, calibrated by `method` on 4 other seeded inputs: the worst output error in
    units of max|fp32 output| and top-1 agreement. Weights are seeded (no pretrained ones)."""
    rng = np.random.default_rng(seed)
    if model == "resnet18":
        p = resnet18_params(seed)
        cal = rng.standard_normal((4, 3, 224, 224)).astype(np.float32)
        q = quantize_resnet18(p, calibrate(p, cal, method))
        shape, f32, qint = (3, 224, 224), lambda x: forward_f32(p, x), lambda x: forward_int(q, x)
    elif model in CHAINS:
        layers, shape = CHAINS[model]
        p = chain_params(layers, shape, seed)
        acts = chain_f32(layers, p, rng.random((4, *shape)).astype(np.float32))
        exps = {k: pow2_exponent(magnitude(v, method)) for k, v in acts.items()}
        q = quantize_chain(layers, p, exps)
        f32, qint = (lambda x: chain_f32(layers, p, x)), (lambda x: chain_int(layers, q, x))
    else:
        raise ValueError(f"model {model!r} is unknown (valid: resnet18, {', '.join(CHAINS)})")
    out = "fc2" if model == "dqn" else "fc"
    worst, agree = 0.0, 0
    for _ in range(inputs):
        x = (rng.standard_normal if model == "resnet18" else rng.random)((1, *shape))
        f = f32(x.astype(np.float32))[out]
        r = dequantize(qint(x.astype(np.float32))[out], q.exps[out])
        worst = max(worst, float(np.abs(r - f).max() / np.abs(f).max()))
        agree += int(f.argmax() == r.argmax())
    return {"model": model, "calibration": method, "inputs": inputs, "max_error": worst,
            "top1_agreement": agree}  # fmt: skip
