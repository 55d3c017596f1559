"""Accuracy of the accelerator's ONNX path (`vta run MODEL.onnx --target vta`) against fp32 on
the seeded ONNX networks of `compiler.zoo` (random weights: no pretrained weights or
data sets are available offline).

The model is imported and quantized as `vta run` does, calibrated by one method on a few seeded
inputs drawn like the evaluation inputs (standard normal images, uniform [0, 1) frames for the
DQN); the quantized network runs in numpy (the bit-exact reference of every device) on other
seeded inputs. Reported: the worst output error in units of max|fp32 output| of the same input,
top-1 agreement, and each tensor's worst error (where the error comes from).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from compiler import zoo
from compiler.graph import accel_onnx as A

CALIBRATION_INPUTS = 4
CHUNK = 8  # inputs run together (bounds the int64 activations' memory)


def _inputs(model: str, rng: np.random.Generator, n: int) -> np.ndarray:
    shape = zoo.INPUTS[model][1][1:]
    x = rng.random((n, *shape)) if model == "dqn" else rng.standard_normal((n, *shape))
    return x.astype(np.float32)


def import_model(model: str, seed: int = 0) -> A.Network:
    """The seeded ONNX network `model` as the accelerator path imports it."""
    if model not in zoo.NETWORKS:
        raise ValueError(f"model {model!r} is unknown (valid: {', '.join(zoo.NETWORKS)})")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{model}.onnx"
        path.write_bytes(zoo.NETWORKS[model](seed))
        return A.import_network(path)


def onnx_accuracy(model: str, method: str, inputs: int, seed: int = 0) -> dict:
    """Quantized (calibration `method`) against fp32 on `inputs` seeded inputs: max output error
    (fraction of max|fp32|), top-1 agreement, and per tensor the worst error."""
    net = import_model(model, seed)
    rng = np.random.default_rng(seed + 1)
    qn = A.quantize_network(net, _inputs(model, rng, CALIBRATION_INPUTS), method)
    worst, agree, layers = 0.0, 0, {}
    for start in range(0, inputs, CHUNK):
        x = _inputs(model, rng, min(CHUNK, inputs - start))
        f32 = A.forward_f32(net, x)
        t, _, _ = A.run(qn, x)
        for name, v in f32.items():
            if name in t:
                scale = np.abs(v).reshape(len(x), -1).max(axis=1).clip(1e-30)
                err = np.abs(A.dequantized(qn, t, name) - v).reshape(len(x), -1)
                layers[name] = max(layers.get(name, 0.0), float((err.max(axis=1) / scale).max()))
        f, q = f32[net.output], A.dequantized_output(qn, t)
        worst = max(worst, layers[net.output])
        agree += int((f.argmax(axis=1) == q.argmax(axis=1)).sum())
    per_layer = {ly.name: layers[ly.output] for ly in net.layers if ly.output in layers}
    return {"model": model, "path": "onnx", "calibration": method, "inputs": inputs,
            "max_error": worst, "top1_agreement": agree, "layers": per_layer}  # fmt: skip
