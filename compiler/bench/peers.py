"""The peers our CPU kernels are measured against, in the same run: numpy's matmul (OpenBLAS)
in a subprocess, and a one-node onnxruntime Conv.

OpenBLAS reads its environment when it loads, so each numpy configuration (thread count, the
machine's OPENBLAS_* settings or none of them, which selects OpenBLAS's AVX-512 kernel on a
machine that has it) runs in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import numpy as np

from .harness import stats

NUMPY_PROBE = """
import json, sys, time
import numpy as np
try:
    from threadpoolctl import threadpool_info  # names the BLAS kernel (the 'bench' extra)
except ImportError:
    threadpool_info = list
n, cols, reps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
a, b = rng.random((n, n), dtype=np.float32), rng.random((n, cols), dtype=np.float32)
c = a @ b
ts = []
for _ in range(reps):
    t = time.perf_counter(); np.matmul(a, b, out=c); ts.append(time.perf_counter() - t)
blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
print(json.dumps({"times": ts, "architecture": blas[0].get("architecture") if blas else None,
                  "num_threads": blas[0].get("num_threads") if blas else None}))
"""


def numpy_matmul(n: int, threads: int, unset: bool, reps: int, cols: int | None = None) -> dict:
    """numpy's float32 [n, n] @ [n, cols] on `threads` threads, timed `reps` times in a
    subprocess; `unset` drops OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE from its environment.
    Returns `harness.stats` of the timings, the timings (`times`, seconds), the BLAS kernel's
    name and its thread count (None without threadpoolctl)."""
    cols = cols or n
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    if unset:
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
    out = subprocess.run(
        [sys.executable, "-c", NUMPY_PROBE, str(n), str(cols), str(reps)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    r = json.loads(out.stdout)
    return {
        **stats(r["times"], 2.0 * n * n * cols),
        "times": r["times"],
        "kernel": r["architecture"],
        "blas_threads": r["num_threads"],
    }


class NumpyMatmul:
    """`numpy_matmul` as a measure for `harness.alternate`: each call times a fresh interpreter
    and returns its timings; the BLAS kernel and thread count of the last call are kept."""

    def __init__(self, n: int, threads: int, unset: bool, reps: int, cols: int | None = None):
        self.args = (n, threads, unset, reps, cols)
        self.last: dict = {}

    def __call__(self) -> list[float]:
        self.last = numpy_matmul(*self.args)
        return self.last["times"]

    def stats(self, times: list[float], flops: float) -> dict:
        """`harness.stats` of pooled timings with the BLAS kernel and thread count."""
        return {
            **stats(times, flops),
            "kernel": self.last["kernel"],
            "blas_threads": self.last["blas_threads"],
        }


def conv_model(c: int, oc: int, size: int, k: int, stride: int, w: np.ndarray) -> bytes:
    """A serialized one-node ONNX model: float32 NCHW Conv of a [1, c, size, size] input with
    weights `w` (OIHW), 'same' padding k // 2."""
    import onnx  # optional (the 'bench' extra)
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node(
        "Conv", ["x", "w"], ["y"], kernel_shape=[k, k], pads=[k // 2] * 4, strides=[stride] * 2
    )
    osize = (size + 2 * (k // 2) - k) // stride + 1
    graph = helper.make_graph(
        [node],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, oc, osize, osize])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def ort_session(model: bytes, threads: int, profile_prefix: str | None = None) -> Any:
    """An onnxruntime CPU session of `model` on `threads` intra-op threads, all graph
    optimizations on; with `profile_prefix`, its profiler on (`end_profiling()` writes each
    node's time per run to a JSON file of that prefix)."""
    import onnxruntime as ort  # optional (the 'bench' extra)

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    if profile_prefix:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
