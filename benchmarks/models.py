"""Whole networks against onnxruntime in the same run (scripts/bench_models.py).

ResNet-18, MobileNet-v1, a DQN-style Atari network and two BERT-style encoders on 128 int64
token ids (4 layers of hidden 256, 4 heads, feed-forward 1024; BERT-base's 12 layers of 768, 12
heads, 3072), batch 1, float32, both runtimes on the same thread count (2). Per model: compile
time, the largest error against onnxruntime and whether every output is within tolerance of it
(`TOLERANCE`), the latency of each (ours and onnxruntime's calls interleaved, so a slow spell of
the shared machine hits both), their ratio (ours / onnxruntime: below 1, ours is faster), the arena
against its lower bound, the executor's own overhead, and a per-layer table (each kernel timed
alone: ms, GFLOPS, share of the machine's peak; and each kernel timed within an inference, its
inputs and weights as the kernels before it left the caches, against onnxruntime's time for the
same nodes within its inference, from its profiler). With `load`, the comparison runs in rounds
alternating with and without a process spinning on one core, and the ratio's change is
reported.
"""

from __future__ import annotations

import functools
import math
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from compiler.codegen.target import cpu_facts
from compiler.errors import CompilerError
from compiler.runtime import set_num_threads

from .harness import ForeignLoad, alternate
from .peers import ort_session

# latency ratio ours / onnxruntime
GOALS = {"resnet18": 0.9, "mobilenet_v1": 1.0, "dqn": 1.0, "encoder4": 1.0, "bert_base": 1.0}
TOLERANCE = (1e-3, 1e-4)  # rtol, and atol as a share of max|onnxruntime's output|
LOAD_GOAL = 1.10  # the ratio under load may grow by at most 10%
LOAD_ROUNDS = 3  # quiet and loaded comparisons alternate (`load_effect`)
COMPILE_GOAL_S = 10.0
THREADS = 2


@contextmanager
def spinning_process() -> Iterator[subprocess.Popen]:
    """A foreign process keeping one core busy for the duration of the block."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)  # let it start spinning
        yield proc
    finally:
        proc.kill()
        proc.wait()


def interleaved(
    ours: Callable[[], Any],
    peer: Callable[[], Any],
    reps: int,
    min_time: float,
    block: int = 5,
    settle: float = 0.12,
    block_time: float = 0.02,
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Seconds per call of each, in alternating blocks of timed calls (at least `block`, and
    more until the block has run `block_time` seconds), each block after `settle` seconds idle
    and one untimed call. onnxruntime's threads spin for 50-60 ms after a run and slow the calls
    of ours that follow (MobileNet-v1: 7.8 ms interleaved, 5.0 ms alone; after 50 ms of
    settling our first call still ran 1.4-1.5x onnxruntime's, 1.04-1.06x after 120 ms). On this
    project's virtual machines both runtimes' calls after an idle spell run slow for a few
    milliseconds (DQN's first five 2-3x), so short networks' blocks run by time, not by count,
    to measure steady inference; the untimed first calls after idle are returned too. At least
    `reps` timed calls each, and more until both add up to `min_time` seconds. Returns (ours,
    peer, ours' first calls, peer's first calls)."""
    a: list[float] = []
    b: list[float] = []
    first: tuple[list[float], list[float]] = ([], [])
    while len(a) < reps or sum(a) + sum(b) < min_time:
        for fn, ts, cold in ((ours, a, first[0]), (peer, b, first[1])):
            time.sleep(settle)
            t = start = time.perf_counter()
            fn()
            cold.append(time.perf_counter() - t)
            n = 0
            while n < block or time.perf_counter() - start < block_time:
                t = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t)
                n += 1
    return a, b, first[0], first[1]


def latency(times: list[float]) -> dict:
    ms = np.array(times) * 1e3
    return {"median": float(np.median(ms)), "min": float(ms.min()), "max": float(ms.max())}


CHAIN = 100  # dependent multiplies per inline-assembly block
IMUL_LATENCY = 3  # cycles of a 64-bit integer multiply on x86-64 (Intel and AMD cores alike)


@functools.cache
def measured_clock_ghz() -> float:
    """The core's clock while busy, measured: a chain of dependent 64-bit multiplies takes
    IMUL_LATENCY cycles each on x86-64 (adds will not do: recent cores fold chains of
    add-immediates in the renamer), so multiplies x latency per second is the clock, turbo
    included, which /proc/cpuinfo's nominal figure leaves out. Best of several timings."""
    import ctypes

    import llvmlite.binding as llvm
    from llvmlite import ir

    from compiler.codegen.target import Target, parse_ir, target_machine

    target = Target.parse("llvm")
    if not target.triple.startswith("x86_64"):
        raise CompilerError(f"measuring the clock needs x86-64, not {target.triple}")
    i64 = ir.IntType(64)
    mod = ir.Module("clock")
    fn = ir.Function(mod, ir.FunctionType(i64, [i64]), "chain")
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    i, x = b.phi(i64), b.phi(i64)
    muls = ir.InlineAsm(ir.FunctionType(i64, [i64]), "imul $$3, $0, $0\n" * CHAIN, "=r,0")
    x2 = b.call(muls, [x])
    i2 = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(ir.Constant(i64, 0), entry)
    i.add_incoming(i2, loop)
    x.add_incoming(ir.Constant(i64, 1), entry)
    x.add_incoming(x2, loop)
    b.cbranch(b.icmp_unsigned("<", i2, fn.args[0]), loop, done)
    b.position_at_end(done)
    b.ret(x2)
    tm = target_machine(target)
    llvm.initialize_native_asmparser()  # the inline assembly is parsed when the JIT compiles
    engine = llvm.create_mcjit_compiler(parse_ir(str(mod), tm, target.triple), tm)
    engine.finalize_object()
    chain = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(engine.get_function_address("chain"))
    blocks, best = 50_000, math.inf
    expected = pow(3, blocks * CHAIN, 1 << 64)
    for _ in range(7):
        start = time.perf_counter()
        if chain(blocks) % (1 << 64) != expected:
            raise CompilerError("the clock's multiply chain computed a wrong product")
        best = min(best, time.perf_counter() - start)
    return blocks * CHAIN * IMUL_LATENCY / best / 1e9


def peak_gflops(threads: int = THREADS) -> float:
    """The target's float32 FMA peak: 2 FMA units x lanes x 2 flops per cycle per core, at the
    measured clock (`measured_clock_ghz`)."""
    return 2 * 2 * cpu_facts().lanes("float32") * measured_clock_ghz() * threads


def compare(
    graph: Any, model: bytes, inputs: dict, reps: int, min_time: float, threads: int = THREADS
) -> dict:
    """Our graph and onnxruntime on the same inputs, both on `threads` threads: errors and
    interleaved latencies."""
    sess, numerics = _session(graph, model, inputs, threads)
    return _summary(numerics, [_timed(graph, sess, inputs, reps, min_time)])


def load_effect(graph: Any, model: bytes, inputs: dict, reps: int, min_time: float) -> dict:
    """The comparison beside a process spinning on one core against the quiet one, measured in
    LOAD_ROUNDS alternating rounds (quiet, loaded, quiet, ...; each a share of `reps` and
    `min_time`), so that a slow or fast spell of the shared machine falls on both figures, not
    on one: measured once each, seconds apart, the change moved with the quiet figure (one
    run's quiet ratio was its lowest of nine, and the change 1.12). Returns {"quiet",
    "loaded": `compare`'s figures over their rounds, "change": the loaded ratio / the quiet}."""
    sess, numerics = _session(graph, model, inputs, THREADS)
    part_reps, part_time = -(-reps // LOAD_ROUNDS), min_time / LOAD_ROUNDS
    quiet = functools.partial(_timed, graph, sess, inputs, part_reps, part_time)

    def loaded() -> tuple:
        with spinning_process():
            return quiet()

    rounds = alternate(LOAD_ROUNDS, {"quiet": quiet, "loaded": loaded})
    out: dict[str, Any] = {k: _summary(numerics, v) for k, v in rounds.items()}
    out["change"] = out["loaded"]["ratio"] / out["quiet"]["ratio"]
    return out


def _session(graph: Any, model: bytes, inputs: dict, threads: int) -> tuple[Any, dict]:
    """onnxruntime's session on `threads` threads (ours set to the same) and our outputs'
    numerics against its: the largest error relative to its largest magnitude
    (`max_rel_err`), and whether every element is within `TOLERANCE` (`within_tolerance`)."""
    set_num_threads(threads)
    sess = ort_session(model, threads)
    rtol, atol = TOLERANCE
    errors, close = [], []
    for o, r in zip(graph.run(inputs).values(), sess.run(None, inputs), strict=True):
        scale = max(float(np.abs(r).max()), 1e-30)
        errors.append(float(np.abs(o - r).max()) / scale)
        close.append(bool(np.allclose(o, r, rtol=rtol, atol=atol * scale)))
    return sess, {"max_rel_err": max(errors), "within_tolerance": all(close)}


def _timed(graph: Any, sess: Any, inputs: dict, reps: int, min_time: float) -> tuple:
    """`interleaved` calls of ours and onnxruntime's, with the foreign cores meanwhile."""
    with ForeignLoad() as load:
        times = interleaved(
            lambda: graph.run(inputs), lambda: sess.run(None, inputs), reps, min_time
        )
    return (*times, load.cores)


def _summary(numerics: dict, parts: list[tuple]) -> dict:
    """The figures of one or more `_timed` measurements taken together."""
    a, b, a_first, b_first = ([t for part in parts for t in part[i]] for i in range(4))
    ours, peer = latency(a), latency(b)
    return {
        **numerics,
        "ours_ms": ours,
        "onnxruntime_ms": peer,
        "ratio": ours["median"] / peer["median"],
        "first_call_ratio": latency(a_first)["median"] / latency(b_first)["median"],
        "foreign_cores": float(np.mean([part[4] for part in parts])),
    }


def layer_table(graph: Any, inputs: dict, peak: float, peer: dict[str, float]) -> list[dict]:
    """Each kernel alone: ms, GFLOPS and share of peak (convolutions and dense layers); in the
    network, and onnxruntime's ms for the same nodes in its network where `peer`
    (`ort_layer_ms`) has them."""
    rows = graph.profile(inputs, reps=10)
    for r in rows:
        r["gflops"] = r["flops"] / (r["ms"] * 1e6) if r["flops"] else None
        r["share_of_peak"] = r["gflops"] / peak if r["gflops"] else None
        r["onnxruntime_ms"] = peer.get(r["label"])
    return rows


def ort_layer_ms(path: Any, inputs: dict, reps: int = 30) -> dict[str, float]:
    """onnxruntime's time for each of our fused kernels within its own inference: its profiler's
    per-node times over `reps` runs of the whole model (medians), each onnxruntime node credited
    to our kernel whose ONNX nodes include the node its name comes from (onnxruntime names a
    fused node after one of the nodes it fuses, "relu_8_nchwc" or "fused gemm_16"), keyed by
    the kernel's label. Our kernels are matched through the subgraph of the ONNX model between
    their inputs and output (the packed copies our layout makes are named `<tensor>_nchwc`);
    kernels without one (packing, or tensors a pass made) are left out, and so are
    onnxruntime's nodes of its own (its layout reorders)."""
    import json
    import tempfile
    from pathlib import Path

    import onnx
    from onnx.utils import Extractor

    from compiler.codegen.target import target_scope
    from compiler.graph.build_onnx import import_groups

    with target_scope("llvm"):
        groups, _, params, _, _ = import_groups(path, None, False)
    model = onnx.shape_inference.infer_shapes(onnx.load(path))
    known = {i.name for i in model.graph.input} | {o for n in model.graph.node for o in n.output}
    extractor = Extractor(model)
    owner = {}  # ONNX node name -> our kernel's label
    for g in groups:
        ins = [t.removesuffix("_nchwc") for t in g.inputs if t not in params]
        dst = g.output.removesuffix("_nchwc")
        if ins and {*ins, dst} <= known and dst not in ins:
            for node in extractor.extract_model(ins, [dst]).graph.node:
                owner.setdefault(node.name, g.name)
    with tempfile.TemporaryDirectory() as tmp:
        sess = ort_session(Path(path).read_bytes(), THREADS, profile_prefix=f"{tmp}/ort")
        for _ in range(reps):
            sess.run(None, inputs)
        events = json.loads(Path(sess.end_profiling()).read_text())
    per_node: dict[str, list[float]] = {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            per_node.setdefault(e["name"].removesuffix("_kernel_time"), []).append(e["dur"])
    out: dict[str, float] = {}
    for node, durations in per_node.items():
        label = owner.get(node.removeprefix("fused ").removesuffix("_nchwc"))
        if label:
            out[label] = out.get(label, 0.0) + float(np.median(durations)) / 1e3
    return out


def bench_model(
    name: str,
    reps: int = 20,
    min_time: float = 1.0,
    load: bool = False,
    db: str | None = None,
    one_thread: bool = False,
) -> dict:
    """One network: compile time, numerics and latency against onnxruntime, per-layer table,
    arena, the executor's overhead; with `load`, `load_effect` (beside a spinning process);
    with `one_thread`, the comparison with one thread each (a host whose two vCPUs share a
    physical core part of the time moves the two-thread ratio; the one-thread one stays)."""
    import tempfile
    from pathlib import Path

    from compiler.graph.build_onnx import compile_model
    from compiler.zoo import ENCODERS, NETWORKS, random_inputs

    model = {**NETWORKS, **ENCODERS}[name]()
    inputs = random_inputs(name)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.onnx"
        path.write_bytes(model)
        t = time.perf_counter()
        graph = compile_model(path, target="llvm", db=db)
        compile_s = time.perf_counter() - t
        peer_layers = ort_layer_ms(path, inputs)
    out = {
        "compile_s": compile_s,
        "quiet": compare(graph, model, inputs, reps, min_time),
        "arena_bytes": graph.manifest["arena_bytes"],
        "arena_lower_bound": graph.manifest.get("arena_lower_bound"),
        "kernels": len({s["kernel"] for s in graph.manifest["steps"]}),
        "steps": len(graph.manifest["steps"]),
        "executor_overhead_us": graph.overhead_us(inputs),
        "layers": layer_table(graph, inputs, peak_gflops(), peer_layers),
        "untuned": graph.manifest.get("untuned", []),
        "tuned_from": graph.manifest.get("tuned_from", {}),
        "winograd": graph.manifest.get("winograd", 0),
        "pointwise": graph.manifest.get("pointwise", 0),
    }
    if load:
        effect = load_effect(graph, model, inputs, reps, min_time)
        out["loaded"], out["load_quiet"] = effect["loaded"], effect["quiet"]
        out["load_change"] = effect["change"]
    if one_thread:
        out["one_thread"] = compare(graph, model, inputs, reps, min_time, threads=1)
        set_num_threads(THREADS)
    return out


def convergence(db_path: str, tolerance: float = 0.05) -> dict:
    """How much tuning each task of a records database needed to come within `tolerance` of
    its best record: per workload the trials (in measurement order) and the seconds they took
    (each record's share of its batch's building and running), and their totals."""
    from compiler.tune.database import Database

    tasks = {}
    with Database(db_path) as db:
        for workload in db.workloads("llvm"):
            records = sorted(db.records(workload, "llvm"), key=lambda r: r.timestamp)
            costs = [r.cost for r in records]
            best = min(costs, default=math.inf)
            if not math.isfinite(best):
                continue
            k = next(i for i, c in enumerate(costs) if c <= best * (1 + tolerance))
            tasks[workload] = {
                "trials": k + 1,
                "of": len(records),
                "seconds": sum(r.all_cost for r in records[: k + 1]),
                "best_ms": best * 1e3,
            }
    return {
        "tolerance": tolerance,
        "tasks": tasks,
        "trials": sum(t["trials"] for t in tasks.values()),
        "seconds": sum(t["seconds"] for t in tasks.values()),
    }


def print_convergence(res: dict) -> None:
    tol = res["tolerance"]
    print(f"tuning to within {tol:.0%} of each task's best record")
    print(f"{'trials':>6} {'of':>5} {'seconds':>8} {'best ms':>8}  task")
    for workload, t in res["tasks"].items():
        print(f"{t['trials']:6} {t['of']:5} {t['seconds']:8.1f} {t['best_ms']:8.3f}  {workload}")
    print(f"{res['trials']:6} {'':5} {res['seconds']:8.1f} {'':8}  all {len(res['tasks'])} tasks")


def run(
    names: list[str],
    reps: int,
    min_time: float,
    load: bool,
    db: str | None,
    one_thread: bool = False,
) -> dict:
    return {n: bench_model(n, reps, min_time, load, db, one_thread) for n in names}


def _side_table(res: dict, key: str, title: str, change: bool = False) -> None:
    """The models' second comparison under `key` (with `change`: the quiet ratio of the same
    rounds, the ratio's change against it and the load goal's verdict)."""
    if not any(key in r for r in res.values()):
        return
    print(f"\n{title}")
    extra = f" {'quiet':>6} {'change':>7} {'goal':>5}" if change else ""
    print(f"{'model':>13} {'ours ms':>9} {'ORT ms':>9} {'ratio':>6}{extra}")
    for name, r in res.items():
        if key not in r:
            continue
        c = r[key]
        tail = ""
        if change:
            verdict = "met" if r["load_change"] <= LOAD_GOAL else "NOT"
            tail = f" {r['load_quiet']['ratio']:6.2f} {r['load_change']:7.2f} {verdict:>5}"
        print(
            f"{name:>13} {c['ours_ms']['median']:9.2f} "
            f"{c['onnxruntime_ms']['median']:9.2f} {c['ratio']:6.2f}{tail}"
        )


def print_tables(res: dict, layers: bool = True) -> None:
    """The ratio table (with the goals' verdicts; `cold`: the ratio of the first calls after
    idle), then each model's per-layer table."""
    print(f"whole networks, batch 1, float32, {THREADS} threads; ratio = ours / onnxruntime")
    print(
        f"{'model':>13} {'ours ms':>17} {'ORT ms':>17} {'ratio':>6} {'goal':>5} {'cold':>5} "
        f"{'err':>8} {'tol':>3} {'compile s':>9} {'arena MB':>8} {'bound MB':>8} {'exec us':>7} "
        f"{'foreign':>7}  tuned kernels"
    )
    for name, r in res.items():
        q = r["quiet"]
        bound = r["arena_lower_bound"]
        verdict = "met" if q["ratio"] <= GOALS[name] else "NOT"
        print(
            f"{name:>13} {q['ours_ms']['median']:8.2f}/{q['ours_ms']['min']:8.2f} "
            f"{q['onnxruntime_ms']['median']:8.2f}/{q['onnxruntime_ms']['min']:8.2f} "
            f"{q['ratio']:6.2f} {verdict:>5} {q['first_call_ratio']:5.2f} "
            f"{q['max_rel_err']:8.1e} {'ok' if q['within_tolerance'] else 'NO':>3} "
            f"{r['compile_s']:9.2f} "
            f"{r['arena_bytes'] / 2**20:8.2f} "
            f"{(bound / 2**20 if bound else float('nan')):8.2f} "
            f"{r['executor_overhead_us']:7.1f} {q['foreign_cores']:7.2f}  "
            + (", ".join(f"{n} from {src}" for src, n in r["tuned_from"].items()) or "none")
            + (f"; {r['winograd']} by Winograd" if r["winograd"] else "")
            + (f"; {r['pointwise']} 1x1 by chunks" if r["pointwise"] else "")
        )
    title = "under load (one core spinning in another process; quiet: the same rounds without)"
    _side_table(res, "loaded", title, change=True)
    _side_table(res, "one_thread", "one thread each")
    if not layers:
        return
    for name, r in res.items():
        print(
            f"\n{name}: each kernel alone (median ms, GFLOPS, share of peak) and in the network "
            "(called in order, data and weights as an inference leaves them), against "
            "onnxruntime's profile of the same nodes in its network"
        )
        print(
            f"  {'kernel':>28} {'alone ms':>8} {'GFLOPS':>8} {'peak':>6} {'in net':>8} "
            f"{'ORT net':>8} {'ratio':>6}"
        )
        for row in r["layers"]:
            peer = row["onnxruntime_ms"]
            g = f"{row['gflops']:8.1f} {row['share_of_peak']:6.1%}" if row["gflops"] else f"{'':15}"
            net = row["in_network_ms"]
            vs = f"{peer:8.3f} {net / peer:6.2f}" if peer else ""
            print(f"  {row['label']:>28} {row['ms']:8.3f} {g} {net:8.3f} {vs}")
        alone = sum(row["ms"] for row in r["layers"])
        in_net = sum(row["in_network_ms"] for row in r["layers"])
        print(f"  {'sum':>28} {alone:8.3f} {'':15} {in_net:8.3f}")
