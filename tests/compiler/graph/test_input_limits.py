"""An ONNX input shape no tensor can have (`--shape x=2**70,4`) is refused by the importer in one
line naming the option and the limit, before anything is built."""

import subprocess
import sys

import pytest

from compiler.errors import OperatorError
from compiler.graph.onnx_import import import_onnx
from compiler.graph.onnx_model import check_input_shape

onnx = pytest.importorskip("onnx")
HUGE = 2**70


def symbolic_relu() -> bytes:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model.SerializeToString()


def test_a_given_shape_of_2_62_elements_or_more_is_refused():
    limit = r"a tensor has fewer than 2\*\*62"
    with pytest.raises(OperatorError, match=rf"^--shape x={HUGE},4: .*{limit}"):
        import_onnx(symbolic_relu(), shapes={"x": (HUGE, 4)})
    with pytest.raises(OperatorError, match=rf"^--shape x={2**60},4: .* {2**62} elements"):
        import_onnx(symbolic_relu(), shapes={"x": (2**60, 4)})  # 2**62 exactly
    graph = import_onnx(symbolic_relu(), shapes={"x": (2**60 - 1, 4)})
    assert graph.values["x"].shape == (2**60 - 1, 4)


def test_the_check_names_a_model_input_without_the_option():
    check_input_shape("x", (2**31, 2**30))
    with pytest.raises(OperatorError, match=rf"^input x: the shape \[4, {2**61}\]"):
        check_input_shape("x", (4, 2**61))


def test_the_command_exits_1_with_one_line(tmp_path):
    model = tmp_path / "relu.onnx"
    model.write_bytes(symbolic_relu())
    done = subprocess.run(
        [sys.executable, "-c", "from vta.cli import main; raise SystemExit(main())"]
        + ["compile", str(model), "-o", str(tmp_path / "out"), "--shape", f"x={HUGE},4"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"--shape x={HUGE},4" in lines[0] and "2**62" in lines[0]
