"""`vta tune` (compiler/cli/tune.py): workload parsing and the subcommand's options; the
template tuners' registry is the one list of tuner names."""

import argparse

import numpy as np
import pytest

from compiler.cli.args import parse_workload, tuner_names
from compiler.cli.tune import register
from compiler.errors import TuningError
from compiler.tune import TUNERS, Database
from vta.cli import main


def test_workloads_by_op_and_args_or_by_layer_name():
    assert parse_workload("matmul:64,32,16", "llvm") == ("matmul", (64, 32, 16))
    assert parse_workload("C9", "llvm") == ("conv2d_NCHWc", (256, 14, 14, 256, 3, 3, 1))
    op, args = parse_workload("C9", "vta")
    assert op == "conv2d_packed" and args[1] == 16  # 256 channels in blocks of 16
    with pytest.raises(TuningError, match="stays on the CPU"):
        parse_workload("C1", "vta")
    with pytest.raises(TuningError, match="integers"):
        parse_workload("matmul:a,b", "llvm")


def test_tuner_choices_are_the_registry_and_ansor():
    assert tuner_names() == (*TUNERS, "ansor")


def test_tune_subcommand_options():
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        ["tune", "C2", "C6", "--tuner", "ga", "--n-trial", "8", "--db", "x.db", "--plot", "c.png"]
    )
    assert args.workload == ["C2", "C6"] and args.tuner == "ga" and args.n_trial == 8
    assert args.db == "x.db" and args.plot == "c.png" and args.scheduler is None
    assert args.early_stopping is None and not args.no_transfer
    args = parser.parse_args(["tune", "C2", "--early-stopping", "16", "--no-transfer"])
    assert args.early_stopping == 16 and args.no_transfer
    assert parser.parse_args(["tune", "C2", "--tuner", "xgb-knob"]).tuner == "xgb-knob"
    with pytest.raises(SystemExit):
        parser.parse_args(["tune", "C2", "--tuner", "annealing"])


def test_vta_tune_two_cpu_workloads_end_to_end(tmp_path, capsys):
    db, png = tmp_path / "r.db", tmp_path / "curves.png"
    argv = ["tune", "matmul:32,32,32", "matmul:64,32,32", "--n-trial", "60", "--tuner", "random"]
    argv += ["--batch-size", "2", "--early-stopping", "4", "--db", str(db), "--plot", str(png)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out.count("GFLOPS after") == 2 and "[2/2] matmul" in err
    with Database(db) as records:
        assert len(records.workloads()) == 2
        for workload in records.workloads():
            costs = [r.cost for r in records.records(workload)]
            # stopped in the batch that made 4 trials since the best
            assert len(costs) - (int(np.argmin(costs)) + 1) in (4, 5), costs
    assert png.read_bytes()[:4] == b"\x89PNG"
