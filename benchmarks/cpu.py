"""CPU operators against peers measured in the same run (scripts/bench_cpu.py).

float32 matmul 1024^3 (x86.matmul_pack + schedule_dense_pack) against numpy/OpenBLAS with the
machine's OPENBLAS_* environment and with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset (OpenBLAS's
AVX-512 kernel), 1 and 2 threads; a non-divisible 1024x1000x1024 matmul (tail tiles partitioned)
against the AVX-512 kernel; ResNet-18 layers C2, C6, C9 (conv2d_NCHWc in the networks' channel
blocks, packed data and weights, padding included) against a one-node onnxruntime Conv on NCHW.
Ratios are peer time over ours (higher is better).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np

from compiler import te, topi
from compiler.driver import build
from compiler.runtime import Module, set_num_threads
from compiler.topi import testing, x86
from compiler.tune.templates.resnet18 import LAYERS

from .harness import ForeignLoad, alternate, pooled, round_ratio, stats, timeit
from .peers import NumpyMatmul, conv_model, ort_session

MATMUL_N = 1024
TAIL_COLS = 1000  # the non-divisible matmul: the last 64-wide column tile has 40 columns
GOAL_VS_AVX512 = 0.8
CONV_LAYERS = ("C2", "C6", "C9")  # 3x3, stride 1, 'same' padding
ROUNDS = 10  # rounds in which ours and the peers take turns (harness.alternate)


def build_matmul(n: int) -> tuple[Module, float]:
    """The packed matmul [n, n] @ [n, n] and its build time in seconds."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    C = x86.matmul_pack(A, B)
    s = x86.schedule_dense_pack(C)
    t = time.perf_counter()
    mod = build(s, [A, B, C], name="matmul")
    return mod, time.perf_counter() - t


def checked_matmul(
    mod: Module, n: int, cols: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Random float32 [n, n] and [n, cols] inputs, the output `mod` wrote, and its largest error
    relative to numpy's largest output."""
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, cols), dtype=np.float32)
    c = np.zeros((n, cols), np.float32)
    mod(a, b, c)
    return a, b, c, float(np.abs(c - a @ b).max() / np.abs(a @ b).max())


def turns(rounds: int, measures: dict[str, Callable[[], list[float]]], flops: float) -> dict:
    """`measures` ("ours" and its peers, each returning timings) in `rounds` alternating rounds:
    each one's `stats` over all rounds, each peer's `round_ratio` against ours
    (`ratio_vs_<peer>_median`) and the cores other processes used meanwhile."""
    with ForeignLoad(tree=True) as load:  # the peers' interpreters are ours, alive meanwhile
        per_round = alternate(rounds, measures)
    out: dict = {key: stats(pooled(times), flops) for key, times in per_round.items()}
    for key, times in per_round.items():
        if key != "ours":
            out[f"ratio_vs_{key}_median"] = round_ratio(per_round["ours"], times)
    out["foreign_cores"] = load.cores
    return out


def bench_matmul(
    reps: int, thread_counts: Sequence[int], n: int = MATMUL_N, rounds: int = ROUNDS
) -> dict:
    """Ours against numpy with the machine's OPENBLAS_* environment and without it, `reps`
    calls each in each of `rounds` alternating rounds."""
    mod, build_s = build_matmul(n)
    a, b, c, err = checked_matmul(mod, n, n)
    out: dict = {"n": n, "build_s": build_s, "max_rel_err": err, "threads": {}}
    for th in thread_counts:
        set_num_threads(th)
        with (
            NumpyMatmul(n, th, unset=False, reps=reps) as env,
            NumpyMatmul(n, th, unset=True, reps=reps) as unset,
        ):
            ours = partial(timeit, mod, (a, b, c), reps)
            per = turns(rounds, {"ours": ours, "numpy_env": env, "numpy_avx512": unset}, 2.0 * n**3)
        per["numpy_env"].update(env.info())
        per["numpy_avx512"].update(unset.info())
        out["threads"][th] = per
    return out


def build_tail_matmul(n: int, cols: int) -> Module:
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
    return build(s, [A, B, C], name="matmul_tail")


def bench_tail_matmul(
    reps: int,
    thread_counts: Sequence[int],
    n: int = MATMUL_N,
    cols: int = TAIL_COLS,
    rounds: int = ROUNDS,
) -> dict:
    """The non-divisible matmul against numpy's AVX-512 kernel, in alternating rounds."""
    mod = build_tail_matmul(n, cols)
    a, b, c, err = checked_matmul(mod, n, cols)
    out: dict = {"n": n, "cols": cols, "max_rel_err": err, "threads": {}}
    for th in thread_counts:
        set_num_threads(th)
        with NumpyMatmul(n, th, unset=True, reps=reps, cols=cols) as peer:
            ours = partial(timeit, mod, (a, b, c), reps)
            per = turns(rounds, {"ours": ours, "numpy_avx512": peer}, 2.0 * n * n * cols)
        per["numpy_avx512"].update(peer.info())
        out["threads"][th] = per
    return out


def bench_conv(
    reps: int,
    thread_counts: Sequence[int],
    layers: Sequence[str] = CONV_LAYERS,
    rounds: int = ROUNDS,
) -> dict:
    """Per ResNet-18 layer: our conv2d_NCHWc (packed data and weights) against onnxruntime's
    Conv on NCHW, each timed for >= 0.2 s in each of `rounds` alternating rounds."""
    rng = np.random.default_rng(0)
    out = {}
    for name in layers:
        c, size, oc, k, stride = LAYERS[name]
        x = rng.standard_normal((1, c, size, size)).astype(np.float32)
        w = (rng.standard_normal((oc, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
        ic_bn, oc_bn = x86.channel_block(c), x86.channel_block(oc)  # the networks' blocks
        xp, wp = testing.nchw_pack(x, ic_bn), testing.oihw_pack(w, ic_bn, oc_bn)
        X, W = te.placeholder(xp.shape, name="X"), te.placeholder(wp.shape, name="W")
        Y = topi.nn.conv2d_NCHWc(X, W, stride, k // 2)
        t = time.perf_counter()
        mod = build(x86.schedule_conv2d_NCHWc(Y), [X, W, Y], name=name)
        build_s = time.perf_counter() - t
        y = np.zeros(Y.shape, np.float32)
        mod(xp, wp, y)
        flops = 2.0 * np.prod(Y.shape) * c * k * k
        model = conv_model(c, oc, size, k, stride, w)
        row: dict = {"mflop": flops / 1e6, "build_s": build_s, "blocks": (ic_bn, oc_bn)}
        row["threads"] = {}
        for th in thread_counts:
            set_num_threads(th)
            sess = ort_session(model, th)
            ref = sess.run(None, {"x": x})[0]
            row["max_abs_err"] = float(np.abs(testing.nchwc_unpack(y) - ref).max())
            measures = {
                "ours": partial(timeit, mod, (xp, wp, y), reps, 0.2),
                "onnxruntime": partial(timeit, sess.run, (None, {"x": x}), reps, 0.2),
            }
            row["threads"][th] = turns(rounds, measures, flops)
        out[name] = row
    return out


def ratio(ours: dict, peer: dict, key: str = "best_ms") -> float:
    """Peer time over ours: above 1, ours is faster."""
    return peer[key] / ours[key]


def add_ratios(res: dict) -> None:
    """Add each measurement's ratios of best times against its peers (`turns` gave the
    median-of-rounds ones)."""
    for per in res["matmul"]["threads"].values():
        per["ratio_vs_numpy_env"] = ratio(per["ours"], per["numpy_env"])
        per["ratio_vs_numpy_avx512"] = ratio(per["ours"], per["numpy_avx512"])
    for per in res["matmul_tail"]["threads"].values():
        per["ratio_vs_numpy_avx512"] = ratio(per["ours"], per["numpy_avx512"])
    for row in res["conv2d"].values():
        for per in row["threads"].values():
            per["ratio_vs_onnxruntime"] = ratio(per["ours"], per["onnxruntime"])


def run(reps: int, thread_counts: Sequence[int], conv: bool = True, rounds: int = ROUNDS) -> dict:
    """Every measurement (the conv layers unless `conv` is False), with ratios."""
    res = {
        "matmul": bench_matmul(reps, thread_counts, rounds=rounds),
        "matmul_tail": bench_tail_matmul(reps, thread_counts, rounds=rounds),
        "conv2d": bench_conv(reps, thread_counts, rounds=rounds) if conv else {},
    }
    add_ratios(res)
    return res


def print_table(res: dict) -> None:
    """The figures as tables for people, with the goal's verdict."""
    mm = res["matmul"]
    print(
        f"matmul {mm['n']}^3 float32: build {mm['build_s']:.2f} s, "
        f"max rel err {mm['max_rel_err']:.1e}; GFLOPS best / median; ratio = ours / peer "
        "(median of the rounds' ratios / ratio of best times; ours and the peers take turns)"
    )
    print(
        f"{'threads':>7} {'ours':>13} {'numpy env':>13} {'kernel':>9} {'numpy unset':>13} "
        f"{'kernel':>9} {'vs env':>11} {'vs unset':>11} {'foreign':>7}"
    )
    for th, per in mm["threads"].items():
        o, e, u = per["ours"], per["numpy_env"], per["numpy_avx512"]
        print(
            f"{th:>7} {o['gflops_best']:6.1f}/{o['gflops_median']:6.1f} "
            f"{e['gflops_best']:6.1f}/{e['gflops_median']:6.1f} {e['kernel']!s:>9} "
            f"{u['gflops_best']:6.1f}/{u['gflops_median']:6.1f} {u['kernel']!s:>9} "
            f"{per['ratio_vs_numpy_env_median']:5.2f}/{per['ratio_vs_numpy_env']:4.2f}x "
            f"{per['ratio_vs_numpy_avx512_median']:5.2f}/{per['ratio_vs_numpy_avx512']:4.2f}x "
            f"{per['foreign_cores']:7.2f}"
        )
    # the rounds' ratios: on a shared machine whose speed changes for seconds at a time, the
    # best time of each side is the luckiest moment it caught, and pooled medians can each fall
    # in a different spell; a round compares two measurements taken side by side
    worst = min(per["ratio_vs_numpy_avx512_median"] for per in mm["threads"].values())
    verdict = "met" if worst >= GOAL_VS_AVX512 else "NOT met"
    kernel = next(iter(mm["threads"].values()))["numpy_avx512"]["kernel"]
    print(
        f"goal >= {GOAL_VS_AVX512}x numpy with the kernel OpenBLAS picks ({kernel}; AVX-512 where "
        f"the CPU has it), median ratio: {verdict} (worst {worst:.2f}x)"
    )
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
    blocks = {tuple(row["blocks"]) for row in res["conv2d"].values()}
    names = ", ".join(f"{i}x{o}" for i, o in sorted(blocks))
    print(f"\nconv2d NCHWc (blocks ic_bn x oc_bn {names}, padding included) vs onnxruntime Conv")
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
