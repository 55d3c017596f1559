"""Measurement: isolated pools, failure classification, CPU wall time, device cycles, Dask."""

from types import SimpleNamespace

import numpy as np
import pytest
from tune_templates import (
    FAULTS,
    SlowToLoad,
    boom,
    build_blocked_matmul,
    build_faulty,
    build_sleep,
    build_vta_gemm,
    where,
)

from compiler.tune import (
    CPURunner,
    DeviceRunner,
    LocalBuilder,
    LocalPool,
    MeasureErrorNo,
    MeasureInput,
    Record,
    create_task,
    measure,
    measure_option,
)
from compiler.tune.measure import time_kernel

E = MeasureErrorNo


def test_local_pool_survives_exceptions_crashes_and_hangs():
    pool = LocalPool(2)
    try:
        # generous deadlines for healthy jobs (a loaded machine is slow), a short one for the hang
        out = pool.map(boom, [("ok",), ("raise",), ("crash",), ("x",)], timeout=60)
        assert [o.status for o in out] == ["ok", "exception", "crash", "ok"]
        assert out[0].value == "okok" and "ValueError: bad" in out[1].message
        assert "signal 6" in out[2].message
        hung = pool.map(boom, [("hang",), ("y",)], timeout=1)
        assert [o.status for o in hung] == ["timeout", "ok"]
        assert [o.value for o in pool.map(boom, [("a",), ("b",)], timeout=60)] == ["aa", "bb"]
    finally:
        pool.close()


def test_local_pool_deadline_starts_when_a_worker_has_loaded_the_job():
    pool, impatient = LocalPool(1, startup_timeout=60), LocalPool(1, startup_timeout=0.5)
    try:  # loading the job takes 2 s, running it microseconds: within a 1 s deadline
        (out,) = pool.map(boom, [(SlowToLoad(2.0, "z"),)], timeout=1)
        assert out.status == "ok" and out.value == "zz"
        (late,) = impatient.map(boom, [(SlowToLoad(5.0, "z"),)], timeout=60)
        assert late.status == "timeout" and "did not start" in late.message
    finally:
        pool.close()
        impatient.close()


def test_every_failure_kind_is_classified_and_the_tuner_goes_on():
    task = create_task("faulty", (32,), "numpy")
    option = measure_option(
        LocalBuilder(build_faulty, timeout=4, n_parallel=2),
        CPURunner(timeout=4, min_repeat_ms=1, repeat=1),
    )
    try:
        inputs = [MeasureInput(task, task.config_space.get(i)) for i in range(len(FAULTS))]
        results = dict(zip(FAULTS, option.measure(inputs), strict=True))
        assert {k: r.error_no for k, r in results.items()} == {
            "ok": E.NO_ERROR,
            "instantiate": E.INSTANTIATION_ERROR,
            "compile": E.COMPILE_ERROR,
            "compile_crash": E.COMPILE_ERROR,
            "compile_hang": E.TIMEOUT,
            "run_error": E.RUNTIME_ERROR,
            "run_crash": E.RUNTIME_ERROR,
            "run_hang": E.TIMEOUT,
            "wrong": E.WRONG_ANSWER,
        }
        assert "SyntaxError: codegen failed" in results["compile"].error_msg
        assert "exit 3" in results["compile_crash"].error_msg
        assert results["ok"].costs[0] > 0
        again = option.measure(inputs[:1])  # pools replaced their dead workers
        assert again[0].ok
    finally:
        option.close()


def test_cpu_runner_measures_wall_seconds_per_call():
    """Kernels that sleep 1 and 30 ms: every timing lasts at least the sleep (a lower bound no
    load can break); how long beyond it depends on the machine, so it is not asserted."""
    task = create_task("sleep", (16,), "numpy")
    space = task.config_space
    option = measure_option(
        LocalBuilder(build_sleep, n_parallel=1),
        CPURunner(repeat=3, min_repeat_ms=20, threads=1, timeout=60),
    )
    try:
        short, long = option.measure([MeasureInput(task, space.get(i)) for i in (0, 1)])
    finally:
        option.close()
    assert short.ok and long.ok and len(long.costs) == 3  # outputs checked against the copy
    assert min(short.costs) >= 1e-3 and min(long.costs) >= 30e-3


def test_time_kernel_divides_each_timing_by_its_calls(monkeypatch):
    """On a clock that advances one tick per call (2^-9 s, exact in binary): a timing of at
    least 5 ticks runs 5 calls and reports one tick, once per repeat, after the checked first
    call, the warm-up and the call that sizes the timings."""
    tick, clock = 2.0**-9, [0.0]

    class Tick:
        arg_specs, n_outputs = [((16,), "float32")] * 2, 1

        def __call__(self, x, out):
            clock[0] += tick
            out[:] = x

    monkeypatch.setattr(measure, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    task = create_task("sleep", (16,), "numpy")
    costs = time_kernel(Tick(), task, True, 0.0, 1, repeat=4, min_repeat_ms=5e3 * tick, warmup=1)
    assert costs == [tick] * 4 and clock[0] == tick * (3 + 4 * 5)


def test_device_runner_reports_simulator_cycles_and_checks_outputs():
    task = create_task("vta_gemm", (16, 64, 64), "vta")
    space = task.config_space
    option = measure_option(LocalBuilder(build_vta_gemm, n_parallel=1), DeviceRunner("sim"))
    bad, small, big = space.get(5), space.get(0), space.get(4)
    assert small["tile_b"].size[1] == 1 and big["tile_b"].size[1] == 16
    try:
        r_bad, r_small, r_big = option.measure([MeasureInput(task, c) for c in (bad, small, big)])
    finally:
        option.close()
    assert option.cost_unit == "cycles"
    assert r_bad.error_no == E.COMPILE_ERROR and "ProgramError" in r_bad.error_msg
    assert r_small.ok and r_big.ok  # outputs checked bit-exactly against the numpy reference
    assert r_small.costs[0] > 3 * r_big.costs[0] > 0  # 1-row tiles waste the 16-row GEMM


def test_a_deterministic_runner_measures_each_config_once():
    task = create_task("vta_gemm", (16, 64, 64), "vta")
    space = task.config_space
    option = measure_option(LocalBuilder(build_vta_gemm, n_parallel=1), DeviceRunner("sim"))
    try:
        first = option.measure([MeasureInput(task, space.get(i)) for i in (0, 4, 5)])
        again = option.measure([MeasureInput(task, space.get(i)) for i in (4, 1, 0, 5)])
    finally:
        option.close()
    assert (option.measured, option.reused) == (4, 3)
    assert again[0].costs == first[1].costs and again[2].costs == first[0].costs
    assert again[0].timestamp > first[1].timestamp and again[0].all_cost == 0
    assert again[3].error_no == first[2].error_no == E.COMPILE_ERROR  # failures are kept too
    assert again[1].ok and again[1].costs != first[0].costs


def test_a_deterministic_runner_reuses_stored_records_but_not_timeouts():
    task = create_task("vta_gemm", (16, 64, 64), "vta")
    space = task.config_space
    stored = [
        Record(task.workload_key, "vta", space.get(0).to_json(), 0, [123.0]),
        Record(task.workload_key, "vta", space.get(4).to_json(), 4, [], int(E.TIMEOUT), "slow"),
    ]
    option = measure_option(LocalBuilder(build_vta_gemm, n_parallel=1), DeviceRunner("sim"))
    try:
        assert option.remember(stored) == 1
        cached, timed_out = option.measure([MeasureInput(task, space.get(i)) for i in (0, 4)])
    finally:
        option.close()
    assert cached.costs == [123.0] and (option.measured, option.reused) == (1, 1)
    assert timed_out.ok and timed_out.costs[0] > 0  # measured afresh
    cpu = measure_option(LocalBuilder(n_parallel=1), CPURunner())
    try:
        assert cpu.remember(stored) == 0  # wall time is not deterministic
    finally:
        cpu.close()


def test_cpu_timings_are_ranked_by_the_fastest():
    assert Record('["op",[1]]', "llvm", {}, 0, [3.0, 1.0, 2.0]).cost == 1.0
    assert Record('["op",[1]]', "llvm", {}, 0, [], E.RUNTIME_ERROR).cost == float("inf")


def test_dask_pool_requests_worker_resources():
    distributed = pytest.importorskip("distributed")
    from compiler.tune import DaskPool

    with (
        distributed.LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=False,
            resources={"pynq": 1},
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        board = DaskPool(client, resources={"pynq": 1})
        (address,) = client.scheduler_info()["workers"]
        assert {o.value for o in board.map(where, [(i,) for i in range(4)], timeout=30)} == {
            address
        }
        nowhere = DaskPool(client, resources={"ultra96": 1})  # no worker declares it
        assert nowhere.map(where, [(0,)], timeout=1)[0].status == "timeout"
        raised = board.map(boom, [("raise",)], timeout=30)[0]
        assert raised.status == "exception" and "bad" in raised.message

        task = create_task("blocked_matmul", (64,), "numpy")
        space = task.config_space
        # blocks of >= 16: a few numpy calls per product, not 64^3 (config 0) on a busy machine
        configs = map(space.get, range(space.range_length))
        big = [c for c in configs if min(c[f"tile_{a}"].size[1] for a in "ijk") >= 16]
        builder = LocalBuilder(build_blocked_matmul, n_parallel=1)
        runner = CPURunner(min_repeat_ms=1, repeat=1, pool=board, timeout=120)
        option = measure_option(builder, runner)
        try:
            results = option.measure([MeasureInput(task, c) for c in big[:3]])
        finally:
            builder.close()
        assert all(r.ok and r.costs[0] > 0 for r in results), [r.error_msg for r in results]


def test_random_inputs_are_deterministic():
    from compiler.tune.measure import random_arrays

    a = random_arrays([((4, 4), "int8"), ((3,), "float32")])
    b = random_arrays([((4, 4), "int8"), ((3,), "float32")])
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert a[0].dtype == np.int8 and a[0].min() >= -8
