"""Workload arguments no tensor can have (an extent of 2**70, 0 or below) are refused with one
line naming the argument and the valid range, before any search space is built: `vta tune
matmul:2**70,8,8` enumerated divisors for minutes."""

import subprocess
import sys

import pytest

from compiler.autoschedule.program import SearchTask
from compiler.errors import TuningError
from compiler.tune import create_task
from compiler.tune.task import check_workload_args
from compiler.tune.templates import cpu  # noqa: F401 - registers matmul

HUGE = 2**70


@pytest.mark.parametrize("n", [HUGE, 2**62, 0, -3])
def test_a_template_task_refuses_an_extent_no_tensor_can_have(n):
    with pytest.raises(TuningError, match=rf"matmul argument n = {n}: must be in 1\.\.2\*\*62-1"):
        create_task("matmul", (n, 8, 8), "llvm")


def test_the_largest_extent_is_accepted():
    task = create_task("matmul", (2**62 - 1, 8, 8), "llvm")
    with pytest.raises(Exception, match="2\\*\\*62 or more elements"):  # C has 8 times as many
        task.config_space  # noqa: B018


@pytest.mark.parametrize("n", [HUGE, 0])
def test_an_auto_scheduler_task_refuses_it_too(n):
    with pytest.raises(TuningError, match=rf"matmul argument n = {n}: must be in 1\.\.2\*\*62-1"):
        SearchTask("matmul", (n, 8, 8), "llvm")


def test_other_integer_arguments_are_bounded_by_magnitude_only():
    check_workload_args("op", (1, 0, -1, 2**62 - 1), ("a", "pad", "shift"), extents=("a",))
    with pytest.raises(TuningError, match=r"op argument pad = -4611686018427387904: .*\+-\("):
        check_workload_args("op", (1, -(2**62)), ("a", "pad"), extents=("a",))
    with pytest.raises(TuningError, match=rf"op argument #3 = {HUGE}"):
        check_workload_args("op", (1, 2, HUGE), ("a",))


def test_the_command_exits_1_with_one_line_at_once():
    # without the check this ran for minutes (the timeout fails it) or ended with another message
    done = subprocess.run(
        [sys.executable, "-c", "from vta.cli import main; raise SystemExit(main())"]
        + ["tune", f"matmul:{HUGE},8,8", "--n-trial", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"matmul argument n = {HUGE}: must be in 1..2**62-1" in lines[0]
