"""`vta run`/`vta compile` on bad models and input files: one line naming the file and what is
wrong (exit 1), bad option values are usage errors (exit 2); never a traceback."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from vta.cli import main


def _run(capsys, *argv) -> tuple[int, str]:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err


@pytest.fixture
def files(tmp_path) -> tuple:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)],  # no bias input
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [w],
    )
    model = tmp_path / "tiny.onnx"
    model.write_bytes(helper.make_model(graph).SerializeToString())
    np.savez(tmp_path / "in.npz", x=np.ones((1, 8), np.float32))
    np.save(tmp_path / "one.npy", np.zeros(3))
    (tmp_path / "random.bin").write_bytes(rng.bytes(3000))
    np.savez(tmp_path / "objects.npz", x=np.array([None, 1], dtype=object))
    return tmp_path, rng.standard_normal((4, 8)).astype(np.float32)


def test_gemm_without_bias_runs(files, capsys):
    root, _ = files
    code, err = _run(capsys, "run", root / "tiny.onnx", "--inputs", root / "in.npz",
                     "--output", root / "out.npz")  # fmt: skip
    assert code == 0, err
    w = numpy_helper.to_array(onnx.load(str(root / "tiny.onnx")).graph.initializer[0])
    np.testing.assert_allclose(np.load(root / "out.npz")["y"], np.ones((1, 8)) @ w.T, rtol=1e-5)


@pytest.mark.parametrize(
    "inputs, message",
    [
        ("random.bin", "--inputs {root}/random.bin: not an .npz file: not a zip archive"),
        ("one.npy", "not an .npz file: a single .npy array"),
        ("objects.npz", "has dtype |O; numbers only"),
        ("missing.npz", "No such file"),
    ],
)
def test_bad_input_files(files, capsys, inputs, message):
    root, _ = files
    code, err = _run(capsys, "run", root / "tiny.onnx", "--inputs", root / inputs)
    assert code == 1
    assert message.format(root=root) in err
    assert "Traceback" not in err


def test_random_bytes_as_a_model(files, capsys):
    root, _ = files
    code, err = _run(capsys, "run", root / "random.bin", "--inputs", root / "in.npz")
    assert code == 1 and "not an ONNX model" in err


def test_empty_target_is_a_usage_error(files, capsys):
    root, _ = files
    code, err = _run(capsys, "run", root / "tiny.onnx", "--inputs", root / "in.npz", "--target", "")
    assert code == 2 and "--target: the target is empty" in err


@pytest.mark.parametrize("repeat", ["0", "-3", "x"])
def test_bad_repeat_is_a_usage_error(files, capsys, repeat):
    root, _ = files
    code, err = _run(
        capsys, "run", root / "tiny.onnx", "--inputs", root / "in.npz", "--repeat", repeat
    )
    assert code == 2 and "--repeat" in err


def _gemm_model(path, input_dims, nodes=None) -> None:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "w")
    nodes = nodes or [helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, input_dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [input_dims[0], 4])],
        [w],
    )
    path.write_bytes(helper.make_model(graph).SerializeToString())


@pytest.mark.parametrize(
    "shape, code, message",
    [
        (None, 1, "input x has the shape ['N', 8] with symbolic dimensions; give it with --shape"),
        ("x=1,8", 0, ""),
        ("x=1,9", 1, "--shape x=1,9 does not fit the model's input x of shape ['N', 8]"),
        ("z=1,8", 1, "--shape z: the model has no input of that name (its input is x)"),
        ("x=0,8", 1, "every dimension must be >= 1"),
        ("x=1,a", 1, "expected NAME=D1,D2"),
    ],
)
def test_symbolic_input_needs_shape(files, capsys, shape, code, message):
    root, _ = files
    _gemm_model(root / "sym.onnx", ["N", 8])
    extra = ["--shape", shape] if shape else []
    got, err = _run(capsys, "run", root / "sym.onnx", "--inputs", root / "in.npz", *extra)
    assert got == code, err
    assert message in err


def test_an_input_with_an_empty_dimension_is_named(files, capsys):
    root, _ = files
    _gemm_model(root / "empty.onnx", [1, 0])
    got, err = _run(capsys, "compile", root / "empty.onnx", "-o", root / "empty")
    assert got == 1
    assert "input x has the shape [1, 0]: dimension 1 is 0, every dimension must be >= 1" in err


def test_every_unsupported_node_is_listed_at_once(files, capsys):
    root, _ = files
    nodes = [
        helper.make_node("Hardmax", ["x"], ["a"], name="s1"),
        helper.make_node("Shrink", ["a"], ["b"], name="sm"),
        helper.make_node("Gemm", ["b", "w"], ["y"], transB=1),
    ]
    _gemm_model(root / "uns.onnx", [1, 8], nodes)
    code, err = _run(capsys, "run", root / "uns.onnx", "--inputs", root / "in.npz")
    assert code == 1
    assert "2 node(s) cannot be imported: node s1 (Hardmax): operator not supported; " in err
    assert "node sm (Shrink): operator not supported" in err


def _broken_model(path, case: str) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    nodes, inits, opset = [helper.make_node("Add", ["x", "w"], ["y"])], [], 13
    if case == "ssa":
        nodes = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Tanh", ["x"], ["y"])]
    elif case == "undefined":
        nodes = [helper.make_node("Relu", ["x"], ["t"])]
    elif case == "opset":
        nodes, opset = [helper.make_node("Relu", ["x"], ["y"])], 1000
    else:  # 1.6e12 elements claimed over 16 bytes
        inits = [onnx.TensorProto(name="w", data_type=TensorProto.FLOAT,
                                  dims=[1_600_000, 1_000_000], raw_data=bytes(16))]  # fmt: skip
    graph = helper.make_graph(nodes, "g", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    path.write_bytes(model.SerializeToString())


@pytest.mark.parametrize(
    "case, message",
    [
        ("ssa", "node y (Tanh) writes y, which node y (Relu) already defines"),
        ("undefined", "graph output y is not computed by any node"),
        ("opset", "the model uses ONNX opset 1000; the installed onnx package knows opsets up to"),
        ("huge", "initializer w: dims [1600000, 1000000] declare 1600000000000 elements"),
    ],
)
def test_models_breaking_onnx_rules_are_refused_in_one_line(files, capsys, case, message):
    root, _ = files
    _broken_model(root / f"{case}.onnx", case)
    code, err = _run(capsys, "compile", root / f"{case}.onnx", "-o", root / case)
    assert code == 1, err
    assert message in err and f"{root / case}.onnx: " in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_an_old_opset_is_upgraded_and_the_log_says_so(files, capsys):
    root, _ = files
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Dropout", ["r"], ["y"])],
        "old",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)], ir_version=3)
    (root / "old.onnx").write_bytes(model.SerializeToString())
    line = "upgraded the model from ONNX opset 7 to 13 (onnx.version_converter)"
    code, err = _run(capsys, "compile", root / "old.onnx", "-o", root / "old")
    assert code == 0, err
    assert line in err
    code, err = _run(capsys, "run", root / "old.onnx", "--inputs", root / "in.npz", "--target",
                     "vta")  # fmt: skip
    assert code == 0, err
    assert line in err
