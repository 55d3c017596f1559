"""Accuracy of the accelerator's ONNX path (`vta run MODEL.onnx --target vta`) against fp32 on
the seeded ONNX networks of `compiler.zoo` (random weights: no pretrained weights or
data sets are available offline).

The model is imported, partitioned and quantized as `vta run` does, calibrated by one method on
a few seeded inputs drawn like the evaluation inputs (standard normal images, uniform [0, 1)
frames for the DQN); the quantized graph runs on the reference executor (the oracle every
device matches) on other seeded inputs. Reported: the worst output error in units of
max|fp32 output| of the same input, top-1 agreement, and each tensor's worst error (where the
error comes from).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from compiler import zoo
from compiler.graph.build_onnx import fused_graph
from compiler.graph.ir import Graph
from compiler.graph.passes.partition import partition
from compiler.graph.passes.quantize import calibrate, quantize
from compiler.graph.reference import run
from vta.config import VTAConfig

CALIBRATION_INPUTS = 4


def _inputs(model: str, rng: np.random.Generator, n: int) -> list[dict[str, np.ndarray]]:
    key, shape = zoo.INPUTS[model]
    draw = rng.random if model == "dqn" else rng.standard_normal
    return [{key: draw(shape).astype(np.float32)} for _ in range(n)]


def import_model(model: str, seed: int = 0) -> Graph:
    """The seeded ONNX network `model` after the graph passes, partitioned for the accelerator."""
    if model not in zoo.NETWORKS:
        raise ValueError(f"model {model!r} is unknown (valid: {', '.join(zoo.NETWORKS)})")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{model}.onnx"
        path.write_bytes(zoo.NETWORKS[model](seed))
        return partition(fused_graph(path), VTAConfig.load(None))


def _values(graph: Graph, feeds: dict) -> dict[str, np.ndarray]:
    seen: dict[str, np.ndarray] = {}
    run(graph, feeds, observe=seen.__setitem__)
    return seen


def onnx_accuracy(model: str, method: str, inputs: int, seed: int = 0) -> dict:
    """Quantized (calibration `method`) against fp32 on `inputs` seeded inputs: max output error
    (fraction of max|fp32|), top-1 agreement, and per fp32 tensor of the quantized graph (the
    CPU's and the dequantized accelerator outputs) the worst error."""
    graph = import_model(model, seed)
    rng = np.random.default_rng(seed + 1)
    q = quantize(graph, calibrate(graph, _inputs(model, rng, CALIBRATION_INPUTS)), method)
    (output,) = graph.outputs
    worst, agree, layers = 0.0, 0, {}
    for feeds in _inputs(model, rng, inputs):
        f32, got = _values(graph, feeds), _values(q, feeds)
        for name, v in got.items():
            if name in f32 and v.dtype == np.float32 and name not in feeds:
                err = float(np.abs(v - f32[name]).max() / max(np.abs(f32[name]).max(), 1e-30))
                layers[name] = max(layers.get(name, 0.0), err)
        worst = max(worst, layers[output])
        agree += int(f32[output].argmax() == got[output].argmax())
    return {"model": model, "path": "onnx", "calibration": method, "inputs": inputs,
            "max_error": worst, "top1_agreement": agree, "layers": layers}  # fmt: skip
