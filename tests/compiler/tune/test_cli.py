"""`vta tune`: workload parsing and the subcommand's options."""

import argparse

import pytest

from compiler.tune.cli import parse_workload, register
from vta.errors import TuningError


def test_workloads_by_op_and_args_or_by_layer_name():
    assert parse_workload("matmul:64,32,16", "llvm") == ("matmul", (64, 32, 16))
    assert parse_workload("C9", "llvm") == ("conv2d_NCHWc", (256, 14, 14, 256, 3, 3, 1))
    op, args = parse_workload("C9", "vta")
    assert op == "conv2d_packed" and args[1] == 16  # 256 channels in blocks of 16
    with pytest.raises(TuningError, match="stays on the CPU"):
        parse_workload("C1", "vta")
    with pytest.raises(TuningError, match="integers"):
        parse_workload("matmul:a,b", "llvm")


def test_tune_subcommand_options():
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        ["tune", "C2", "C6", "--tuner", "ga", "--n-trial", "8", "--db", "x.db", "--plot", "c.png"]
    )
    assert args.workload == ["C2", "C6"] and args.tuner == "ga" and args.n_trial == 8
    assert args.db == "x.db" and args.plot == "c.png" and args.scheduler is None
    with pytest.raises(SystemExit):
        parser.parse_args(["tune", "C2", "--tuner", "annealing"])
