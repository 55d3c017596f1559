"""Property-based fuzzing of the compiler in a child process (`testkit.fuzzworker` calling
`testkit.compiler_fuzz`): tensor declarations with random shapes, dtypes and operators (division
by zero and -1, gathers and constant indices out of range) built and run on the CPU; records
databases that are damaged, foreign or random bytes; `vta tune` argument lists. Every input must
end in success or one of the toolkit's errors: a signal, a hang or a foreign exception fails."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testkit.compiler_fuzz import OPS
from testkit.fuzzworker import Worker

SIZES = [pytest.param(1, id="default"), pytest.param(10, id="slow", marks=pytest.mark.slow)]
INPUTS = {"te": 150, "database": 100, "tune": 150}

extent = st.one_of(
    st.integers(0, 9),
    st.integers(-3, -1),
    st.sampled_from([2**31 - 1, 2**31 + 8, 2**62, 2.5, True, "4", None]),
)
shapes = st.one_of(st.lists(extent, min_size=0, max_size=3), st.sampled_from([None, 5, "x"]))
dtypes = st.sampled_from(["int8", "int32", "int64", "uint8", "float32", "bool", "float33", None, 7])


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    """The child works in a scratch directory: fuzzed paths (--db llvm) land there."""
    with Worker(timeout=120, cwd=str(tmp_path_factory.mktemp("cwd"))) as w:
        yield w


def fuzz_settings(kind: str, scale: int, derandomize: bool):
    """Hypothesis settings for INPUTS[kind] x scale examples without deadlines (the fixed
    sequence when `derandomize`, else the one --hypothesis-seed draws)."""
    return settings(
        max_examples=INPUTS[kind] * scale,
        deadline=None,
        derandomize=derandomize,
        suppress_health_check=list(HealthCheck),
    )


def _expect_handled(answer: dict, what: str) -> None:
    assert answer["outcome"] in ("ok", "error"), f"{what}: {answer.get('message')}"


@pytest.mark.parametrize("scale", SIZES)
def test_tensor_programs(worker, scale, derandomize, capsys):
    tried = []

    @fuzz_settings("te", scale, derandomize)
    @given(
        shape=shapes,
        dtype=dtypes,
        op=st.sampled_from(OPS),
        offset=st.integers(-5, 12),
        seed=st.integers(0, 3),
    )
    def case(shape, dtype, op, offset, seed):
        kwargs = dict(shape=shape, dtype=dtype, op=op, offset=offset, seed=seed)
        answer = worker.request(op="call", fn="testkit.compiler_fuzz:te_case", kwargs=kwargs)
        tried.append(answer["outcome"])
        _expect_handled(answer, str(kwargs))

    case()
    with capsys.disabled():
        print(f"\n[fuzz] tensor programs: {len(tried)} inputs, {tried.count('ok')} ran")


def _database_bytes(kind: str, data: bytes, path) -> None:
    if kind == "random":
        path.write_bytes(data)
        return
    conn = sqlite3.connect(path)
    if kind == "foreign":
        conn.execute("CREATE TABLE t (x)")
    else:  # ours, with a damaged row, then a flipped byte somewhere past the header
        conn.close()
        from compiler.tune.database import Database
        from compiler.tune.record import Record

        with Database(path) as db:
            db.add_batch([Record("matmul(1, 1, 1)", "llvm", {"k": 2}, 1, [2e-3])])
        conn = sqlite3.connect(path)
        conn.execute("UPDATE records SET costs = ?", (data[:20].decode("latin-1"),))
    conn.commit()
    conn.close()
    if kind == "flipped" and data:
        raw = bytearray(path.read_bytes())
        pos = 100 + data[0] * len(data) % (len(raw) - 100)
        raw[pos] ^= 0xFF
        path.write_bytes(bytes(raw))


@pytest.mark.parametrize("scale", SIZES)
def test_records_databases(worker, scale, derandomize, tmp_path_factory, capsys):
    tried = []
    root = tmp_path_factory.mktemp("db")

    @fuzz_settings("database", scale, derandomize)
    @given(
        kind=st.sampled_from(["random", "foreign", "damaged", "flipped"]),
        data=st.binary(min_size=1, max_size=200),
    )
    def case(kind, data):
        path = root / f"case{len(tried)}.db"
        _database_bytes(kind, data, path)
        answer = worker.request(
            op="call", fn="testkit.compiler_fuzz:database_case", kwargs={"path": str(path)}
        )
        tried.append(answer["outcome"])
        _expect_handled(answer, f"{kind} {data!r}")

    case()
    with capsys.disabled():
        print(f"\n[fuzz] records databases: {len(tried)} inputs, {tried.count('ok')} opened")


OPTIONS = [
    "--n-trial",
    "--batch-size",
    "--early-stopping",
    "--seed",
    "--build-timeout",
    "--plot",
    "--tuner",
    "--target",
    "--db",
    "--list",
]
VALUES = st.sampled_from(
    [
        "0",
        "-1",
        "1",
        "2",
        "x",
        "1e-9",
        "nan",
        "inf",
        "a.png",
        "a.bad",
        "ansor",
        "random",
        "llvm",
        "vta",
        "cuda",
        "/nonexistent",
        "",
    ]
)
GOOD = {"--n-trial": "2", "--batch-size": "2", "--early-stopping": "3", "--seed": "1",
        "--build-timeout": "10", "--plot": "curve.png", "--tuner": "random", "--target": "llvm",
        "--db": "r.db", "--list": "r.db"}  # fmt: skip
# each option with a good value two times in three, else any value
OPTION_VALUES = st.sampled_from(OPTIONS).flatmap(
    lambda o: st.tuples(st.just(o), st.one_of(st.just(GOOD[o]), st.just(GOOD[o]), VALUES))
)
WORKLOADS = st.sampled_from(
    [
        "matmul:8,8,8",
        "matmul:8,8",
        "matmul:-1,8,8",
        "matmul:0,1,1",
        "nosuch:1",
        "C99",
        "C2",
        "matmul:x",
        "m.onnx",
        ":",
        "",
    ]
)


@pytest.mark.parametrize("scale", SIZES)
def test_tune_arguments(worker, scale, derandomize, capsys):
    tried = []

    @fuzz_settings("tune", scale, derandomize)
    @given(
        workload=WORKLOADS,
        options=st.lists(OPTION_VALUES, max_size=3),
    )
    def case(workload, options):
        argv = ["tune", workload, *[x for pair in options for x in pair]]
        # every argument list is parsed; those that parse are run with one cheap trial
        answer = worker.request(op="parse", argv=argv)
        assert answer.get("exit") in (0, 2), answer
        if answer["exit"] == 0:
            run = [*argv, "--n-trial", "1", "--tuner", "random"]
            answer = worker.request(op="cli", argv=run)
            assert answer["exit"] in (0, 1, 2), answer
            assert "Traceback" not in answer["stderr"], answer["stderr"]
        tried.append(answer["exit"])

    case()
    with capsys.disabled():
        print(f"\n[fuzz] vta tune arguments: {len(tried)} inputs ({tried.count(0)} ran)")
