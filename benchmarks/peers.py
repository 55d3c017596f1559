"""The peers our CPU kernels are measured against, in the same run: numpy's matmul (OpenBLAS)
in a subprocess, and a one-node onnxruntime Conv.

OpenBLAS reads its environment when it loads, so each numpy configuration (thread count, the
machine's OPENBLAS_* settings or none of them, which selects OpenBLAS's AVX-512 kernel on a
machine that has it) runs in an interpreter of its own, kept open while it takes turns with
ours.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import numpy as np

from .harness import stats

NUMPY_PEER = """
import json, sys, time
import numpy as np
try:
    from threadpoolctl import threadpool_info  # names the BLAS kernel (the 'bench' extra)
except ImportError:
    threadpool_info = list
n, cols = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
a, b = rng.random((n, n), dtype=np.float32), rng.random((n, cols), dtype=np.float32)
c = a @ b
blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
print(json.dumps({"architecture": blas[0].get("architecture") if blas else None,
                  "num_threads": blas[0].get("num_threads") if blas else None}), flush=True)
for line in sys.stdin:
    ts = []
    for _ in range(int(line)):
        t = time.perf_counter(); np.matmul(a, b, out=c); ts.append(time.perf_counter() - t)
    time.sleep(0.2)  # OpenBLAS's idle threads spin 0.1 s after a call (measured): asleep first
    print(json.dumps(ts), flush=True)
"""


class NumpyMatmul:
    """numpy's float32 [n, n] @ [n, cols] on `threads` threads in an interpreter of its own,
    kept open while in `with`: each call times `reps` products there and returns the seconds
    (a measure for `harness.alternate`). `unset` drops OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
    from its environment; `kernel` and `blas_threads` name the BLAS kernel and its thread
    count (None without threadpoolctl)."""

    def __init__(self, n: int, threads: int, unset: bool, reps: int, cols: int | None = None):
        self.n, self.cols, self.reps = n, cols or n, reps
        self.env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
        if unset:
            self.env.pop("OPENBLAS_CORETYPE", None)
            self.env.pop("OPENBLAS_L2_SIZE", None)
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> NumpyMatmul:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", NUMPY_PEER, str(self.n), str(self.cols)],
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        info = json.loads(self._line())
        self.kernel, self.blas_threads = info["architecture"], info["num_threads"]
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()

    def _line(self) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the numpy peer exited with {self.proc.wait()}")
        return line

    def __call__(self) -> list[float]:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(f"{self.reps}\n")
        self.proc.stdin.flush()
        return json.loads(self._line())

    def info(self) -> dict:
        """The BLAS kernel's name and thread count."""
        return {"kernel": self.kernel, "blas_threads": self.blas_threads}


def numpy_matmul(n: int, threads: int, unset: bool, reps: int, cols: int | None = None) -> dict:
    """`NumpyMatmul`'s figures of one measurement of `reps` products: `harness.stats`, the
    BLAS kernel and its thread count."""
    with NumpyMatmul(n, threads, unset, reps, cols) as peer:
        return {**stats(peer(), 2.0 * n * n * (cols or n)), **peer.info()}


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
