"""The commands' library entry points take plain arguments and leave them as they were: the
auto-scheduler's tuning once rewrote the command's `target` (adding --arch) and the
accelerator's model tuning its `calibration`; now neither sees the command's namespace, and
the namespace a command runs with is the one it parsed."""

import copy
from types import MappingProxyType

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import TuningError
from compiler.runtime.cuda import gpu_available
from vta.cli import build_parser


def _conv_model(path) -> None:
    """x[1, 16, 8, 8] -> Conv 3x3 (16 -> 16) -> Relu -> y: one accelerator layer."""
    w = np.random.default_rng(0).standard_normal((16, 16, 3, 3)).astype(np.float32) / 12
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1] * 4),
            helper.make_node("Relu", ["c"], ["y"]),
        ],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 8, 8])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path.write_bytes(model.SerializeToString())


def _run_keeping_namespace(argv: list[str]) -> int | str:
    """Run `vta ARGV`'s command function; its namespace must be unchanged afterwards."""
    args = build_parser(argv).parse_args(argv)
    before = copy.deepcopy(vars(args))
    try:
        code = args.func(args)
    except TuningError as err:
        code = str(err)
    assert vars(args) == before
    return code


def test_ansor_with_arch_leaves_the_target_alone():
    if gpu_available():
        pytest.skip("a GPU exists: this would tune")
    argv = ["tune", "matmul:8,8,8", "--tuner", "ansor", "--target", "cuda", "--arch", "sm_80"]
    assert "cannot tune for cuda -arch=sm_80" in _run_keeping_namespace(argv)


def test_tuning_a_model_for_the_accelerator_leaves_the_arguments_alone(tmp_path, capsys):
    _conv_model(tmp_path / "m.onnx")
    argv = ["tune", str(tmp_path / "m.onnx"), "--target", "vta", "--n-trial", "1"]
    argv += ["--batch-size", "1", "--device", "fsim", "--db", str(tmp_path / "r.db")]
    assert _run_keeping_namespace(argv) == 0
    assert "1 conv2d_fused tasks for 1 layers" in capsys.readouterr().out


def test_library_entry_points_leave_their_arguments_alone(tmp_path):
    from compiler.autoschedule.tuning import tune_workloads as ansor_workloads
    from compiler.graph import accel_api
    from compiler.graph.cpu_api import load_model
    from compiler.graph.runtime import time_inferences

    _conv_model(tmp_path / "m.onnx")
    shapes = MappingProxyType({"x": (1, 16, 8, 8)})  # read-only: a write would raise
    graph = load_model(tmp_path / "m.onnx", shapes=shapes)
    inputs = {"x": np.ones((1, 16, 8, 8), np.float32)}
    kept = {k: v.copy() for k, v in inputs.items()}
    assert set(time_inferences(graph, inputs, 2)) == {"median", "min", "max"}
    assert inputs.keys() == kept.keys() and np.array_equal(inputs["x"], kept["x"])

    compiled = accel_api.compile_vta(tmp_path / "m.onnx", "tiny", shapes=shapes)
    report, outputs = accel_api.run_vta(compiled, MappingProxyType(inputs), "fsim")
    assert report["bit_exact"] and len(outputs) == 1
    assert np.array_equal(inputs["x"], kept["x"])

    workloads = (("matmul", (8, 8, 8)),)  # a tuple: tuning must not write to it
    with pytest.raises(TuningError, match="tunes conv2d_packed and dense_packed on the accel"):
        ansor_workloads(workloads, "vta", 1)
    assert shapes == {"x": (1, 16, 8, 8)}
