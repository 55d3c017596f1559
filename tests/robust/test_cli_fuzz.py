"""Property-based fuzzing of the `vta` subcommands' arguments in a child process
(`testkit.fuzzworker`, working in a scratch directory): `sim`, `disasm` and `hw-config` run; the
arguments of `synth-report` and `deploy` (which would synthesize or reach a board) and random
token lists for every subcommand are parsed only. Exit statuses must be 0, 1 (with a summary
line and at most a short list on stderr, no traceback) or 2 (usage); a signal, a hang or any
other status fails the test. Each test prints how many inputs it tried."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testkit.examples import all_examples
from testkit.fuzzworker import Worker

SIZES = [pytest.param(1, id="default"), pytest.param(10, id="slow", marks=pytest.mark.slow)]
INPUTS = {
    "sim": 600,
    "disasm": 400,
    "hw-config": 300,
    "synth-report": 300,
    "deploy": 300,
    "run": 150,
}
TOKEN_INPUTS = 400
MAX_DETAIL_LINES = 8  # after the summary line (docs/robustness.md, "CLI exit codes")
SUBCOMMANDS = [
    "sim", "disasm", "hw-config", "synth-report", "deploy", "tune", "build", "run", "compile",
    "worker",
]  # fmt: skip


@dataclasses.dataclass
class Tally:
    """Invocations per exit status."""

    counts: dict = dataclasses.field(default_factory=dict)

    def add(self, code: int) -> None:
        self.counts[code] = self.counts.get(code, 0) + 1

    def report(self, capsys, what: str) -> None:
        total = sum(self.counts.values())
        by_status = ", ".join(f"exit {k}: {v}" for k, v in sorted(self.counts.items()))
        with capsys.disabled():
            print(f"\n[fuzz] {what}: {total} inputs tried ({by_status})")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A directory with the files the arguments name: Program files, garbage, a raw stream."""
    root = tmp_path_factory.mktemp("cli")
    for i, example in enumerate(all_examples("tiny")[:2] + all_examples("pynq")[:1]):
        example.program.save(root / f"ok{i}.npz")
    rng = np.random.default_rng(0)
    (root / "garbage.npz").write_bytes(rng.bytes(1000))
    (root / "raw.bin").write_bytes(all_examples("tiny")[0].program.insns.tobytes())
    (root / "odd.bin").write_bytes(rng.bytes(37))
    (root / "bad.json").write_bytes(b'{"clock_mhz": true}')
    (root / "dir.npz").mkdir()
    _tiny_model(root)
    return root


def _tiny_model(root) -> None:
    """tiny.onnx (x[1, 8] -> Relu(Gemm) -> y[1, 4]) and input files for `vta run`."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "w")
    graph = helper.make_graph(
        [
            helper.make_node("Gemm", ["x", "w"], ["h"], transB=1),
            helper.make_node("Relu", ["h"], ["y"]),
        ],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    (root / "tiny.onnx").write_bytes(model.SerializeToString())
    np.savez(root / "in.npz", x=rng.standard_normal((1, 8)).astype(np.float32))
    np.savez(root / "wrong.npz", x=np.zeros((2, 8), np.float32), z=np.zeros(3))
    np.savez(root / "ints.npz", x=np.zeros((1, 8), np.int64))
    np.save(root / "one.npy", np.zeros(3))


@pytest.fixture(scope="module")
def worker(scratch):
    with Worker(timeout=120, cwd=str(scratch)) as w:
        yield w


VALID_FILES = st.sampled_from(["ok0.npz", "ok1.npz", "ok2.npz"])
FILES = st.one_of(
    VALID_FILES,
    st.sampled_from(
        ["garbage.npz", "raw.bin", "odd.bin", "missing.npz", "dir.npz", "/dev/null", "bad.json", ""]
    ),
)
VALID_CONFIGS = st.sampled_from(["pynq", "tiny", "ultra96", "1x16_i8w8a32_15_15_18_17"])
CONFIGS = st.one_of(
    VALID_CONFIGS,
    st.sampled_from(
        ["1x4_i8w8a32_15_15_18_17", "2x16_i8w8a32_15_15_18_17", "bad.json", "missing.json",
         "ok0.npz", "../pynq", "/"]
    ),
    st.text(max_size=20),
)  # fmt: skip
OUTPUTS = st.sampled_from(["out.bin", "out.bin", "dir.npz", "sub/none/out.bin", "trace.json"])
BUDGETS = st.one_of(st.integers(-3, 3), st.integers(-(10**6), 10**6), st.just(10**30))


def _option(flag: str, values) -> st.SearchStrategy[list[str]]:
    """Absent two times in three."""
    return st.one_of(st.just([]), st.just([]), values.map(lambda v: [flag, str(v)]))


def _flag(flag: str) -> st.SearchStrategy[list[str]]:
    return st.sampled_from([[], [flag]])


def _argv(*parts) -> st.SearchStrategy[list[str]]:
    return st.tuples(*parts).map(lambda ps: [a for p in ps for a in p])


ARGV = {
    "sim": _argv(
        st.just(["sim"]),
        FILES.map(lambda f: [f]),
        _option("--device", st.sampled_from(["sim", "fsim", "pynq", "nope", ""])),
        _option("--config", CONFIGS),
        _option("--trace", OUTPUTS),
        _option("--dump-dram", OUTPUTS),
        _flag("--timing-only"),
        _flag("--json"),
        _option("--max-cycles", BUDGETS),
        _option("--max-steps", BUDGETS),
    ),
    "disasm": _argv(
        st.just(["disasm"]),
        FILES.map(lambda f: [f]),
        _flag("--raw"),
        _option("--config", CONFIGS),
        _flag("--json"),
    ),
    "hw-config": _argv(
        st.just(["hw-config"]), _option("--config", CONFIGS), _option("--out", OUTPUTS)
    ),
    "synth-report": _argv(
        st.just(["synth-report"]),
        _option("--config", CONFIGS),
        _flag("--json"),
        _option("--log", OUTPUTS),
        st.lists(st.sampled_from(["--bogus", "x", "--config"]), max_size=2),
    ),
    "deploy": _argv(
        st.just(["deploy"]),
        st.lists(FILES, max_size=3),
        _option("--host", st.text(max_size=10)),
        _option("--dir", st.text(max_size=10)),
        _option("--device", st.text(max_size=10)),
        _flag("--dry-run"),
        st.lists(st.sampled_from(["--bogus", "--host"]), max_size=2),
    ),
}
ARGV["run"] = _argv(
    st.just(["run"]),
    st.sampled_from(["tiny.onnx", "tiny.onnx", "garbage.npz", "missing.onnx", "dir.npz", ""]).map(
        lambda f: [f]
    ),
    _option("--inputs", st.sampled_from(["in.npz", "in.npz", "wrong.npz", "ints.npz", "one.npy",
                                         "garbage.npz", "missing.npz", "tiny.onnx"])),
    _option("--output", OUTPUTS),
    _option("--repeat", st.integers(-2, 3)),
    _option("--target", st.sampled_from(["llvm", "vta", "cuda", "", "x"])),
    _option("--shape", st.sampled_from(["x=1,8", "x=", "=1", "x=a", "y=1,2"])),
    _option("--db", st.sampled_from(["garbage.npz", "new.db", "dir.npz"])),
    _flag("--json"),
)  # fmt: skip
PARSE_ONLY = {"synth-report", "deploy"}


def check(answer: dict, argv: list[str], tally: Tally) -> None:
    assert answer["outcome"] == "ok", f"vta {argv}: {answer.get('message')}"
    code, err = answer["exit"], answer["stderr"]
    assert code in (0, 1, 2), f"vta {argv}: exit {code}\n{err}"
    assert "Traceback" not in err, f"vta {argv}:\n{err}"
    if code == 1:  # progress lines (compiling...) may come first, then the error message
        lines = err.strip().splitlines()
        starts = [k for k, ln in enumerate(lines) if ln.startswith(f"vta {argv[0]}: error: ")]
        assert starts, f"vta {argv}:\n{err}"
        assert len(lines) - starts[0] <= 2 + MAX_DETAIL_LINES, f"vta {argv}:\n{err}"
    elif code == 2:
        assert "usage:" in err, f"vta {argv}:\n{err}"
    tally.add(code)


def _fuzz(strategy, examples: int, body) -> None:
    settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )(given(strategy)(body))()


@pytest.mark.parametrize("scale", SIZES)
@pytest.mark.parametrize("command", sorted(INPUTS))
def test_subcommand_arguments(worker, capsys, command, scale):
    tally, op = Tally(), "parse" if command in PARSE_ONLY else "cli"

    def body(argv: list[str]) -> None:
        check(worker.request(op=op, argv=argv), argv, tally)

    _fuzz(ARGV[command], INPUTS[command] * scale, body)
    tally.report(capsys, f"vta {command} ({'parsed' if op == 'parse' else 'run'})")


TOKENS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["--config", "--device", "--json", "--raw", "-h", "--", "-", "--max-cycles"]),
)


@pytest.mark.parametrize("scale", SIZES)
def test_random_tokens_are_parsed_or_refused(worker, capsys, scale):
    tally = Tally()

    def body(argv: list[str]) -> None:
        answer = worker.request(op="parse", argv=argv)
        assert answer["outcome"] == "ok" and answer["exit"] in (0, 2), (argv, answer)
        tally.add(answer["exit"])

    argv = st.tuples(st.sampled_from(SUBCOMMANDS), st.lists(TOKENS, max_size=6)).map(
        lambda t: [t[0], *t[1]]
    )
    _fuzz(argv, TOKEN_INPUTS * scale, body)
    tally.report(capsys, "vta SUBCOMMAND random tokens (parsed)")
