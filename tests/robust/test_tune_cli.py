"""`vta tune` checks its arguments before tuning: bad option values are usage errors (exit 2),
bad workloads wrong input (exit 1, one line naming the workload); a run in which nothing could
be measured exits 1."""

from __future__ import annotations

import pytest

from vta.cli import main


def _run(capsys, *argv: str) -> tuple[int, str]:
    try:
        code = main(["tune", *argv])
    except SystemExit as e:  # argparse
        code = e.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "option, message",
    [
        (("--n-trial", "-5"), "--n-trial: -5 is below the minimum 1"),
        (("--n-trial", "0"), "--n-trial: 0 is below the minimum 1"),
        (("--batch-size", "0"), "--batch-size: 0 is below the minimum 1"),
        (("--early-stopping", "-1"), "--early-stopping: -1 is below the minimum 1"),
        (("--seed", "-1"), "--seed: -1 is below the minimum 0"),
        (("--seed", "x"), "--seed: 'x' is not an integer"),
        (("--build-timeout", "0"), "--build-timeout: 0 is not a positive"),
        (("--build-timeout", "inf"), "--build-timeout: inf is not a positive"),
        (("--target", " "), "--target: the target is empty"),
        (("--plot", "curve.badext"), "--plot: 'curve.badext': the extension must be one of"),
    ],
)
def test_bad_option_values_are_usage_errors(capsys, option, message):
    code, err = _run(capsys, "matmul:8,8,8", *option)
    assert code == 2
    assert message in err


@pytest.mark.parametrize(
    "workload, message",
    [
        ("matmul:8,8", "matmul takes arguments (n, m, k[, bn]); got 2"),
        ("matmul:8,8,8,8,8", "got 5"),
        (
            "matmul:-1,8,8",
            "workload 'matmul:-1,8,8': matmul argument n = -1: must be in 1..2**62-1",
        ),
        ("matmul:0,8,8", "matmul argument n = 0: must be in 1..2**62-1"),
        (f"matmul:8,{2**70},8", f"matmul argument m = {2**70}: must be in 1..2**62-1"),
        ("matmul:8,x,8", "arguments must be integers"),
        ("nosuch:1,2", "no template for op 'nosuch'"),
        ("C99", "unknown layer 'C99'"),
    ],
)
def test_bad_workloads_are_wrong_input(capsys, workload, message):
    code, err = _run(capsys, workload, "--n-trial", "1")
    assert code == 1
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_nothing_measured_exits_1(capsys, tmp_path):
    code, err = _run(
        capsys, "matmul:8,8,8", "--n-trial", "2", "--build-timeout", "1e-6", "--tuner", "random"
    )
    assert code == 1
    assert "no trial succeeded for matmul:8,8,8" in err


def test_good_run_exits_0_and_writes_the_plot(capsys, tmp_path):
    plot = tmp_path / "curve.svg"
    code, _ = _run(
        capsys, "matmul:8,8,8", "--n-trial", "2", "--tuner", "random", "--plot", str(plot)
    )
    assert code == 0
    assert plot.stat().st_size > 0


def test_binary_workload_list_is_wrong_input(capsys, tmp_path):
    listing = tmp_path / "list.png"
    listing.write_bytes(bytes(range(256)))
    code, err = _run(capsys, "--list", str(listing))
    assert code == 1
    assert "not a UTF-8 text file" in err
