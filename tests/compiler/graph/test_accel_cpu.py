"""The CPU layers of an accelerator model as llvm kernels: int8 products exact in fp32 only
while every partial sum stays below 2^24."""

import numpy as np

from compiler.graph import accel_cpu
from compiler.graph import accel_onnx as A
from compiler.graph.quant import quantize_conv


def _dense(weight: np.ndarray) -> tuple[A.Layer, object]:
    o, i = weight.shape
    ly = A.Layer("fc", "dense", ["x"], "y", weight[:, :, None, None], np.zeros(o, np.float32))
    return ly, quantize_conv(ly.weight, ly.bias, -7, -3, False)


def test_int8_products_are_exact_on_the_fp32_kernel():
    rng = np.random.default_rng(0)
    ly, q = _dense(rng.standard_normal((8, 512)).astype(np.float32))
    assert 128 * np.abs(q.weight.astype(np.int64)).sum(axis=1).max() < accel_cpu.EXACT_FP32
    kernel = accel_cpu.CpuKernel(
        accel_cpu.compile_graph(accel_cpu.layer_graph(ly, {"x": (2, 512)}, q)), True
    )
    x = rng.integers(-128, 128, (2, 512)).astype(np.int8)
    want = x.astype(np.int64) @ q.weight[:, :, 0, 0].astype(np.int64).T
    np.testing.assert_array_equal(kernel(x).astype(np.int64), want)


def test_products_that_could_reach_2_to_the_24_stay_in_numpy():
    ly, q = _dense(np.full((4, 3136), 0.5, np.float32))  # 128 * 127 * 3136 > 2^24
    assert accel_cpu.layer_graph(ly, {"x": (1, 3136)}, q) is None
    assert accel_cpu.layer_graph(ly, {"x": (1, 3136)}) is not None  # its fp32 layer is
