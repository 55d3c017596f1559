"""The `vta` command's exit statuses: 0 success, 1 the input is wrong (a summary line on stderr
and at most a short list, no traceback unless --debug), 2 usage errors, 3 a bug of ours; the
subcommands registered by entry point get the same treatment."""

import subprocess
import sys

import numpy as np
import pytest

from vta import cli
from vta.cli import main
from vta.config import load_config
from vta.isa import FinishInsn, GemmInsn, encode_stream
from vta.program import Program

EXIT_INPUT, EXIT_INTERNAL = 1, 3  # the contract of docs/robustness.md
MAX_DETAIL_LINES = 8


def _vta(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "vta.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def random_file(tmp_path):
    path = tmp_path / "random.npz"
    path.write_bytes(np.random.default_rng(0).bytes(3000))
    return path


@pytest.mark.parametrize(
    "args, message",
    [
        (("sim", "{tmp}/missing.npz"), "No such file"),
        (("sim", "{random}"), "not a Program file (.npz)"),
        (("disasm", "{random}"), "not a Program file (.npz)"),
        (("hw-config", "--config", "nope"), "unknown configuration 'nope'"),
        (("hw-config", "--config", "{random}.json"), "cannot read configuration"),
        (("synth-report", "--config", "nope"), "unknown configuration 'nope'"),
        (("deploy", "{tmp}/nothing.npz", "--host", "b"), "nothing.npz"),
        (("build", "matmul:8,8,8", "--target", "llvm", "--arch", "sm_80", "-o", "{tmp}/k.o"),
         "arch"),
    ],
)  # fmt: skip
def test_wrong_input_exits_1_with_one_line(tmp_path, random_file, args, message):
    args = [a.format(tmp=tmp_path, random=random_file) for a in args]
    if args[-1].endswith(".json"):
        random_file.rename(args[-1])
    run = _vta(*args)
    assert run.returncode == EXIT_INPUT, (run.returncode, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], run.stderr
    assert lines[0].startswith(f"vta {args[0]}: error: ")


def test_usage_errors_exit_2():
    assert _vta("sim").returncode == 2
    assert _vta("nope").returncode == 2
    assert _vta("sim", "x.npz", "--max-cycles", "many").returncode == 2


def test_debug_shows_the_traceback(tmp_path):
    run = _vta("--debug", "sim", tmp_path / "missing.npz")
    assert run.returncode != 0 and "Traceback" in run.stderr


def test_a_long_problem_list_is_cut_short(tmp_path, capsys):
    cfg = load_config("tiny")
    bad = [GemmInsn(uop_bgn=5, uop_end=1, iter_out=0, iter_in=0)] * 20 + [FinishInsn()]
    path = tmp_path / "bad.npz"
    Program(cfg, encode_stream(bad, cfg), np.zeros(64, np.uint8)).save(path)
    assert main(["sim", str(path)]) == EXIT_INPUT
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 + MAX_DETAIL_LINES + 1 and lines[-1].startswith("  ... and ")
    assert "problem(s) in program" in lines[0]


def test_a_bug_exits_3_without_a_traceback(monkeypatch, capsys):
    def broken(args):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(cli, "_cmd_hw_config", broken)
    assert main(["hw-config"]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.startswith("vta hw-config: internal error") and "ZeroDivisionError" in err
    assert "Traceback" not in err
    with pytest.raises(ZeroDivisionError):
        main(["--debug", "hw-config"])


def test_disasm_raw_reads_a_bounded_prefix():
    """`vta disasm --raw` read a file whole however large, and a device such as /dev/zero as an
    empty stream ("0 instructions")."""
    run = _vta("disasm", "--raw", "/dev/zero")
    assert run.returncode == EXIT_INPUT and "larger than the limit" in run.stderr, run.stderr


def test_running_out_of_memory_is_bad_input(monkeypatch, capsys):
    """An input that needs more memory than the machine has is the input's problem (exit 1),
    not a bug."""

    def hungry(args):
        raise MemoryError("Unable to allocate 74.5 GiB for an array")

    monkeypatch.setattr(cli, "_cmd_hw_config", hungry)
    assert main(["hw-config"]) == EXIT_INPUT
    assert capsys.readouterr().err.startswith("vta hw-config: error: out of memory: Unable")
