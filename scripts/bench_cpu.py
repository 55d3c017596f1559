#!/usr/bin/env python
"""CPU operator benchmark against peers measured in the same run (issue 3, section 7).

float32 matmul 1024^3 (x86.matmul_pack + schedule_dense_pack) against numpy/OpenBLAS with the
machine's OPENBLAS_* environment and with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset (OpenBLAS's
AVX-512 kernel), 1 and 2 threads; a non-divisible 1024x1000x1024 matmul (tail tiles partitioned)
against the AVX-512 kernel; ResNet-18 layers C2, C6, C9 (conv2d_NCHWc, packed data and
weights, padding included) against a one-node onnxruntime Conv on NCHW. Prints best / median
times, GFLOPS and ratios (ours / peer, higher is better); --json prints the same as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import compiler
from compiler import te, topi
from compiler.runtime import set_num_threads
from compiler.topi import testing, x86

MATMUL_N = 1024
TAIL_COLS = 1000  # the non-divisible matmul: the last 64-wide column tile has 40 columns
GOAL_VS_AVX512 = 0.8
# (name, size, in_ch, out_ch, kernel, stride) from perf-anchors.md section 4; pad k // 2
CONV_LAYERS = [("C2", 56, 64, 64, 3, 1), ("C6", 28, 128, 128, 3, 1), ("C9", 14, 256, 256, 3, 1)]
IC_BN, OC_BN = 16, 32

NUMPY_PROBE = """
import json, sys, time
import numpy as np
from threadpoolctl import threadpool_info
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


def stats(times: list[float], flops: float) -> dict:
    best, median = min(times), float(np.median(times))
    return {
        "best_ms": best * 1e3,
        "median_ms": median * 1e3,
        "gflops_best": flops / best / 1e9,
        "gflops_median": flops / median / 1e9,
    }


def timeit(fn, args: tuple, reps: int, min_time: float = 0.0) -> list[float]:
    fn(*args)
    ts: list[float] = []
    while len(ts) < reps or sum(ts) < min_time:
        t = time.perf_counter()
        fn(*args)
        ts.append(time.perf_counter() - t)
    return ts


class ForeignLoad:
    """Cores used by other processes during a block: busy time in /proc/stat minus ours."""

    def __enter__(self):
        self.t0, self.busy0, self.own0 = time.perf_counter(), self._busy(), self._own()
        return self

    def __exit__(self, *exc) -> None:
        wall = time.perf_counter() - self.t0
        foreign = (self._busy() - self.busy0) - (self._own() - self.own0)
        self.cores = max(0.0, foreign / wall)

    @staticmethod
    def _busy() -> float:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")  # minus idle and iowait

    @staticmethod
    def _own() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system


def numpy_matmul(n: int, threads: int, unset: bool, reps: int, cols: int | None = None) -> dict:
    """numpy's [n, n] @ [n, cols] in a subprocess (OpenBLAS reads its environment at load)."""
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
        "kernel": r["architecture"],
        "blas_threads": r["num_threads"],
    }


def build_matmul(n: int):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    C = x86.matmul_pack(A, B, bn=64)
    s = x86.schedule_dense_pack(C, tile_m=4)
    t = time.perf_counter()
    mod = compiler.build(s, [A, B, C], name="matmul")
    return mod, time.perf_counter() - t


def bench_matmul(reps: int, thread_counts: list[int]) -> dict:
    n = MATMUL_N
    mod, build_s = build_matmul(n)
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    mod(a, b, c)
    err = float(np.abs(c - a @ b).max() / np.abs(a @ b).max())
    out: dict = {"n": n, "build_s": build_s, "max_rel_err": err, "threads": {}}
    for th in thread_counts:
        set_num_threads(th)
        with ForeignLoad() as load:
            ours = stats(timeit(mod, (a, b, c), reps), 2.0 * n**3)
            peers = {
                "numpy_env": numpy_matmul(n, th, unset=False, reps=reps),
                "numpy_avx512": numpy_matmul(n, th, unset=True, reps=reps),
            }
        out["threads"][th] = {"ours": ours, **peers, "foreign_cores": load.cores}
    return out


def build_tail_matmul(n: int, cols: int):
    """[n, n] @ [n, cols] with unpacked B, 4 x 64 register tiles, column panels outermost and
    parallel: cols % 64 != 0 needs loop partitioning to keep the tiles vectorized."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, cols), name="B")
    k = te.reduce_axis(n, "k")
    C = te.compute((n, cols), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    acc = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(*C.op.axis, 4, 64)
    s[C].reorder(jo, io, ii, ji)
    tile = s[C].fuse(jo, io)
    s[C].parallel(tile)
    s[C].vectorize(ji)
    s[acc].compute_at(s[C], tile)
    x, y = s[acc].op.axis
    s[acc].reorder(*s[acc].op.reduce_axis, x, y)
    s[acc].unroll(x)
    s[acc].vectorize(y)
    return compiler.build(s, [A, B, C], name="matmul_tail")


def bench_tail_matmul(reps: int, thread_counts: list[int]) -> dict:
    n, cols = MATMUL_N, TAIL_COLS
    mod = build_tail_matmul(n, cols)
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, cols), dtype=np.float32)
    c = np.zeros((n, cols), np.float32)
    mod(a, b, c)
    err = float(np.abs(c - a @ b).max() / np.abs(a @ b).max())
    out: dict = {"n": n, "cols": cols, "max_rel_err": err, "threads": {}}
    for th in thread_counts:
        set_num_threads(th)
        with ForeignLoad() as load:
            ours = stats(timeit(mod, (a, b, c), reps), 2.0 * n * n * cols)
            peer = numpy_matmul(n, th, unset=True, reps=reps, cols=cols)
        out["threads"][th] = {"ours": ours, "numpy_avx512": peer, "foreign_cores": load.cores}
    return out


def conv_model(c: int, oc: int, size: int, k: int, stride: int, w: np.ndarray):
    import onnx
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


def ort_session(model: bytes, threads: int):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def bench_conv(reps: int, thread_counts: list[int]) -> dict:
    rng = np.random.default_rng(0)
    out = {}
    for name, size, c, oc, k, stride in CONV_LAYERS:
        x = rng.standard_normal((1, c, size, size)).astype(np.float32)
        w = (rng.standard_normal((oc, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
        xp, wp = testing.nchw_pack(x, IC_BN), testing.oihw_pack(w, IC_BN, OC_BN)
        X, W = te.placeholder(xp.shape, name="X"), te.placeholder(wp.shape, name="W")
        Y = topi.nn.conv2d_NCHWc(X, W, stride, k // 2)
        t = time.perf_counter()
        mod = compiler.build(x86.schedule_conv2d_NCHWc(Y), [X, W, Y], name=name)
        build_s = time.perf_counter() - t
        y = np.zeros(Y.shape, np.float32)
        mod(xp, wp, y)
        flops = 2.0 * np.prod(Y.shape) * c * k * k
        model = conv_model(c, oc, size, k, stride, w)
        row: dict = {"mflop": flops / 1e6, "build_s": build_s, "threads": {}}
        for th in thread_counts:
            set_num_threads(th)
            sess = ort_session(model, th)
            ref = sess.run(None, {"x": x})[0]
            row["max_abs_err"] = float(np.abs(testing.nchwc_unpack(y) - ref).max())
            with ForeignLoad() as load:
                ours = stats(timeit(mod, (xp, wp, y), reps, 0.2), flops)
                peer = stats(timeit(sess.run, (None, {"x": x}), reps, 0.2), flops)
            row["threads"][th] = {"ours": ours, "onnxruntime": peer, "foreign_cores": load.cores}
        out[name] = row
    return out


def ratio(ours: dict, peer: dict, key: str = "best_ms") -> float:
    return peer[key] / ours[key]


def add_ratios(res: dict) -> None:
    for per in res["matmul"]["threads"].values():
        per["ratio_vs_numpy_env"] = ratio(per["ours"], per["numpy_env"])
        per["ratio_vs_numpy_avx512"] = ratio(per["ours"], per["numpy_avx512"])
        per["ratio_vs_numpy_avx512_median"] = ratio(per["ours"], per["numpy_avx512"], "median_ms")
    for per in res["matmul_tail"]["threads"].values():
        per["ratio_vs_numpy_avx512"] = ratio(per["ours"], per["numpy_avx512"])
    for row in res["conv2d"].values():
        for per in row["threads"].values():
            per["ratio_vs_onnxruntime"] = ratio(per["ours"], per["onnxruntime"])
            per["ratio_vs_onnxruntime_median"] = ratio(per["ours"], per["onnxruntime"], "median_ms")


def print_table(res: dict) -> None:
    mm = res["matmul"]
    print(
        f"matmul {mm['n']}^3 float32: build {mm['build_s']:.2f} s, "
        f"max rel err {mm['max_rel_err']:.1e}; GFLOPS best / median; ratio = ours / peer (best)"
    )
    print(
        f"{'threads':>7} {'ours':>13} {'numpy env':>13} {'kernel':>9} {'numpy unset':>13} "
        f"{'kernel':>9} {'vs env':>7} {'vs unset':>10} {'foreign':>7}"
    )
    for th, per in mm["threads"].items():
        o, e, u = per["ours"], per["numpy_env"], per["numpy_avx512"]
        print(
            f"{th:>7} {o['gflops_best']:6.1f}/{o['gflops_median']:6.1f} "
            f"{e['gflops_best']:6.1f}/{e['gflops_median']:6.1f} {e['kernel']:>9} "
            f"{u['gflops_best']:6.1f}/{u['gflops_median']:6.1f} {u['kernel']:>9} "
            f"{per['ratio_vs_numpy_env']:6.2f}x {per['ratio_vs_numpy_avx512']:9.2f}x "
            f"{per['foreign_cores']:7.2f}"
        )
    worst = min(per["ratio_vs_numpy_avx512"] for per in mm["threads"].values())
    verdict = "met" if worst >= GOAL_VS_AVX512 else "NOT met"
    print(f"goal >= {GOAL_VS_AVX512}x numpy's AVX-512 kernel: {verdict} (worst {worst:.2f}x)")
    tail = res["matmul_tail"]
    print(
        f"\nmatmul {tail['n']}x{tail['cols']}x{tail['n']} (non-divisible 4x64 tiles, unpacked B), "
        f"max rel err {tail['max_rel_err']:.1e}"
    )
    print(f"{'threads':>7} {'ours':>13} {'numpy unset':>13} {'vs unset':>10} {'foreign':>7}")
    for th, per in tail["threads"].items():
        o, u = per["ours"], per["numpy_avx512"]
        print(
            f"{th:>7} {o['gflops_best']:6.1f}/{o['gflops_median']:6.1f} "
            f"{u['gflops_best']:6.1f}/{u['gflops_median']:6.1f} "
            f"{per['ratio_vs_numpy_avx512']:9.2f}x {per['foreign_cores']:7.2f}"
        )
    print(f"\nconv2d NCHWc (ic_bn {IC_BN}, oc_bn {OC_BN}, padding included) vs onnxruntime Conv")
    print(
        f"{'layer':>5} {'threads':>7} {'ours ms':>15} {'ORT ms':>15} {'ours GFLOPS':>11} "
        f"{'ratio':>7} {'foreign':>7}"
    )
    for name, row in res["conv2d"].items():
        for th, per in row["threads"].items():
            o, p = per["ours"], per["onnxruntime"]
            print(
                f"{name:>5} {th:>7} {o['best_ms']:7.3f}/{o['median_ms']:7.3f} "
                f"{p['best_ms']:7.3f}/{p['median_ms']:7.3f} {o['gflops_best']:11.1f} "
                f"{per['ratio_vs_onnxruntime']:6.2f}x {per['foreign_cores']:7.2f}"
            )
    print("foreign: cores used by other processes during the measurement (0 = a quiet machine)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--reps", type=int, default=10, help="timed repetitions per measurement")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--skip-conv", action="store_true", help="matmul only")
    args = ap.parse_args()
    res = {
        "matmul": bench_matmul(args.reps, args.threads),
        "matmul_tail": bench_tail_matmul(args.reps, args.threads),
        "conv2d": {},
    }
    if not args.skip_conv:
        res["conv2d"] = bench_conv(args.reps, args.threads)
    add_ratios(res)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print_table(res)


if __name__ == "__main__":
    main()
