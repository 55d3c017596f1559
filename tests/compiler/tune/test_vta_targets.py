"""Accelerator tuning targets name their configuration (compiler/vta/environment.py
`vta_target`): a task's template builds for that configuration, and records of one accelerator
never serve another (`vta tune --target vta --config`, `tuned_fused_knobs`)."""

import numpy as np
import pytest

import compiler.tune.templates  # noqa: F401 - registers the accelerator's templates
from compiler.errors import LoweringError
from compiler.topi.vta.conv2d import Conv2DWorkload
from compiler.topi.vta.fused import Epilogue, fused_knob_space
from compiler.tune import Database, Record, create_task
from compiler.tune.templates.vta import fused_args, tuned_fused_knobs
from compiler.vta.environment import target_config, vta_target
from vta.config import VTAConfig


@pytest.mark.parametrize("name", ["pynq", "ultra96", "tiny"])
def test_a_target_names_its_configurations_architecture(name):
    cfg = VTAConfig.load(name)
    target = vta_target(cfg)
    back = target_config(target)
    assert vta_target(back) == target
    assert back.config_string == cfg.config_string and back.alu_mul == cfg.alu_mul
    assert back.bus_width == cfg.bus_width and back.alu_requant == cfg.alu_requant
    # the clock and part change no Program: the same target
    assert vta_target(cfg.replace(clock_mhz=123.0, name="other")) == target


def test_a_target_names_unequal_blocks():
    cfg = VTAConfig.load("tiny").replace(log_block_out=3)
    target = vta_target(cfg)
    assert "log_block_out:3" in target
    assert target_config(target).block_out == 8 and target_config(target).block_in == 4
    assert "log_block_out" not in vta_target("tiny")


def test_only_vta_targets_of_configuration_fields_are_accepted():
    for bad in ("llvm", "vta -config=colour:1", "vta -config=log_block:x", "vta -mcpu=x",
                "vta -config=clock_mhz:5"):  # fmt: skip
        with pytest.raises(LoweringError):
            target_config(bad)


def test_records_of_one_accelerator_never_serve_another(tmp_path):
    wl = Conv2DWorkload(1, 2, 8, 8, 2, 3, 3, 1, 1)  # channels in blocks
    ep = Epilogue(True, 4, True)
    tiny = VTAConfig.load("tiny")
    task = create_task("conv2d_fused", fused_args(wl, ep), vta_target(tiny))
    assert task.target != "vta"
    # the template builds for tiny: its knob space is tiny's, not the default's
    built = {task.instantiate(int(c)).config.config_string for c in task.config_space.sample(
        np.random.default_rng(0), 3)}  # fmt: skip
    assert built == {tiny.config_string}
    assert len(task.config_space) != len(fused_knob_space(wl, ep, VTAConfig.load(None)))
    path = tmp_path / "r.db"
    best = task.config_space.get(0)
    with Database(path) as db:
        db.add_batch([Record(task.workload_key, task.target, best.to_json(), best.index, [1e5])])
    assert tuned_fused_knobs(wl, ep, path, tiny) is not None
    assert tuned_fused_knobs(wl, ep, path) is None  # the default preset has no record


def test_vta_tune_records_the_configuration_it_tuned_for(tmp_path, capsys):
    from onnx import TensorProto, helper, numpy_helper

    from vta.cli import main

    w = np.random.default_rng(0).standard_normal((16, 16, 3, 3)).astype(np.float32) / 12
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1] * 4)],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 8, 8])],
        [numpy_helper.from_array(w, "w")],
    )
    model = tmp_path / "m.onnx"
    model.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
                      .SerializeToString())  # fmt: skip
    db = tmp_path / "r.db"
    argv = ["tune", str(model), "--target", "vta", "--config", "tiny", "--n-trial", "2"]
    assert main([*argv, "--batch-size", "2", "--db", str(db)]) == 0
    with Database(db) as records:
        targets = {r.target for r in records.records()}
    assert targets == {vta_target("tiny")}
    assert main(["tune", str(model), "--config", "tiny", "--db", str(db)]) == 1
    assert "--target vta" in capsys.readouterr().err
