"""`vta tune --tuner ansor` (compiler/cli/tune.py) and `vta build` (compiler/cli/build.py)
building from the faster tuner's record."""

import dataclasses

import pytest

from compiler.autoschedule.dispatch import best_schedule, faster_program
from compiler.tune.database import Database
from compiler.tune.record import Record
from vta.cli import main


def test_tune_with_ansor_then_build_picks_its_record(tmp_path, capsys):
    db = tmp_path / "r.db"
    assert (
        main(["tune", "matmul:16,32,8", "--tuner", "ansor", "--n-trial", "4", "--db", str(db)]) == 0
    )
    out = capsys.readouterr().out
    assert "matmul:16,32,8: best" in out and "after 4 trials, 0 errors" in out
    assert "cache_write" in out or "split" in out  # the best program is printed
    with Database(db) as d:
        assert len(d.records('["ansor:matmul",[16,32,8]]', "llvm")) == 4
    so = tmp_path / "k.so"
    assert main(["build", "matmul:16,32,8", "--db", str(db), "-o", str(so), "--check"]) == 0
    out = capsys.readouterr().out
    assert "auto-scheduler record" in out and "check against numpy: ok" in out
    s, tensors, source = best_schedule("matmul", (16, 32, 8), "llvm", db)
    assert source == "auto-scheduler" and len(tensors) == 3

    # a faster template record of the same workload wins
    with Database(db) as d:
        ours = d.best('["ansor:matmul",[16,32,8]]', "llvm")
        template = dataclasses.replace(
            ours,
            workload='["matmul",[16,32,8]]',
            config={"tile_y": [-1, 1]},
            costs=[ours.cost / 2],
        )
        d.add_batch([Record.from_json(template.to_json())])
    assert faster_program("matmul", (16, 32, 8), "llvm", db) is None

    # ... unless it was measured with another thread count than the kernel will run with
    other = tmp_path / "other.db"
    assert ours.threads is not None
    twice = dataclasses.replace(template, costs=[ours.cost / 4], threads=ours.threads + 1)
    with Database(other) as d:
        d.add_batch([ours, twice])
    assert faster_program("matmul", (16, 32, 8), "llvm", other, ours.threads) is not None
    assert faster_program("matmul", (16, 32, 8), "llvm", other, ours.threads + 1) is None


def test_ansor_cli_rejects_bad_input(tmp_path, capsys):
    assert main(["tune", "nosuchop:1,2", "--tuner", "ansor", "--n-trial", "1"]) == 1
    assert "unknown auto-scheduler workload 'nosuchop'" in capsys.readouterr().err
    assert main(["tune", "matmul:8,8,8", "--tuner", "ansor", "--target", "vta"]) == 1
    assert "conv2d_packed and dense_packed on the accelerator, not 'matmul'" in (
        capsys.readouterr().err
    )
    assert main(["tune", "matmul:8,8,8", "--tuner", "ansor", "--target", "opencl"]) == 1
    assert "supports --target llvm, cuda or vta" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["tune", "matmul:8,8,8", "--tuner", "nosuch"])
