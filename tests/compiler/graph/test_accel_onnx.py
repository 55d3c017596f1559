"""ONNX models on the accelerator: import (batch norm folded, residual adds and activations
attached to their conv), quantization, partitioning and execution (the CPU layers on llvm
kernels), bit-identical to the quantized reference (the same CPU kernels, the offloaded layers in
numpy) on fsim, sim and rtl, and `vta run --target vta`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import CompilerError, OperatorError
from compiler.graph import accel_onnx as A
from compiler.graph import accel_store
from vta.cli import main
from vta.config import VTAConfig


def _small_resnet(path, seed: int = 0) -> None:
    """16x8x8 input: a residual block (Add with the input), a downsampling block (a 1x1 stride-2
    shortcut conv), max pool, a 1x1 conv with ReLU6, a depthwise conv, global average pool,
    flatten, dense."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    def conv(x, cin, cout, k, name, group=1, bn=True, stride=1):
        w = const(
            f"{name}_w",
            rng.standard_normal((cout, cin // group, k, k)) / np.sqrt(cin * k * k / group),
        )
        nodes.append(helper.make_node("Conv", [x, w], [f"{name}_c"], name=name, pads=[k // 2] * 4,
                                      group=group, strides=[stride, stride]))  # fmt: skip
        if not bn:
            return f"{name}_c"
        gamma, beta = (
            const(f"{name}_g", rng.uniform(0.5, 1.5, cout)),
            const(f"{name}_b", rng.normal(0, 0.1, cout)),
        )
        mean, var = (
            const(f"{name}_m", rng.normal(0, 0.1, cout)),
            const(f"{name}_v", rng.uniform(0.5, 1.5, cout)),
        )
        nodes.append(
            helper.make_node(
                "BatchNormalization", [f"{name}_c", gamma, beta, mean, var], [f"{name}_bn"]
            )
        )
        return f"{name}_bn"

    y = conv("data", 16, 16, 3, "c1")
    nodes.append(helper.make_node("Relu", [y], ["r1"]))
    y = conv("r1", 16, 16, 3, "c2")
    nodes.append(helper.make_node("Add", [y, "data"], ["add"]))
    nodes.append(helper.make_node("Relu", ["add"], ["r2"]))
    y = conv("r2", 16, 32, 3, "d1", stride=2)
    nodes.append(helper.make_node("Relu", [y], ["r5"]))
    y = conv("r5", 32, 32, 3, "d2")
    short = conv("r2", 16, 32, 1, "down", stride=2)
    nodes.append(helper.make_node("Add", [y, short], ["add2"]))
    nodes.append(helper.make_node("Relu", ["add2"], ["r6"]))
    nodes.append(helper.make_node("MaxPool", ["r6"], ["p"], kernel_shape=[2, 2], strides=[2, 2]))
    y = conv("p", 32, 32, 1, "c3")
    nodes.append(helper.make_node("Clip", [y, const("lo", 0.0), const("hi", 6.0)], ["r3"]))
    y = conv("r3", 32, 32, 3, "dw", group=32)
    nodes.append(helper.make_node("Relu", [y], ["r4"]))
    nodes.append(helper.make_node("GlobalAveragePool", ["r4"], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"]))
    w = const("fc_w", rng.standard_normal((10, 32)) / np.sqrt(32))
    nodes.append(
        helper.make_node(
            "Gemm", ["flat", w, const("fc_b", rng.normal(0, 0.1, 10))], ["out"], transB=1
        )
    )
    graph = helper.make_graph(
        nodes, "small", [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 16, 8, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 10])], inits,
    )  # fmt: skip
    path.write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    )


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = tmp_path_factory.mktemp("m") / "small.onnx"
    _small_resnet(path)
    net = A.import_network(path)
    rng = np.random.default_rng(1)
    qn = A.quantize_network(net, rng.standard_normal((4, 16, 8, 8)).astype(np.float32))
    x = rng.standard_normal((1, 16, 8, 8)).astype(np.float32)
    return path, net, qn, x


def test_import_folds_and_attaches(small):
    _, net, _, _ = small
    kinds = [(ly.kind, ly.relu, ly.clip_max, ly.residual) for ly in net.layers]
    assert kinds == [
        ("conv", True, None, None),
        ("conv", True, None, "data"),
        ("conv", True, None, None),
        ("conv", True, None, None),
        ("maxpool", False, None, None),
        ("conv", True, 6.0, None),
        ("dwconv", True, None, None),
        ("avgpool", False, None, None),
        ("flatten", False, None, None),
        ("dense", False, None, None),
    ]


def test_downsampling_shortcut_is_fused(small):
    _, net, _, _ = small
    d2 = next(ly for ly in net.layers if ly.name == "d2")
    assert d2.shortcut is not None and d2.shortcut.name == "down" and d2.residual is None
    assert "down" not in [ly.name for ly in net.layers]


def test_quantized_reference_tracks_fp32(small):
    _, net, qn, x = small
    f32 = A.forward_f32(net, x)[net.output]
    out = A.dequantized_output(qn, A.run(qn, x)[0])
    assert np.abs(out - f32).max() < 0.1 * np.abs(f32).max()


@pytest.mark.parametrize("device", ["fsim", "sim", "rtl"])
def test_every_device_is_bit_exact(small, device):
    _, net, qn, x = small
    compiled = A.compile_network(qn, VTAConfig.load("pynq"))
    assert sorted(compiled.accel) == ["c1", "c2", "c3", "d1", "d2"]
    # ReLU outputs read without zero padding: zero point -128 (d2 writes it, c3 reads it)
    assert {"d2_bn", "p", "c3_bn"} <= set(qn.zeros) and "c1_bn" not in qn.zeros
    acts, rows, _ = A.run(compiled, x, device)
    ref = A.run(compiled, x)[0]
    for name in ref:
        np.testing.assert_array_equal(acts[name], ref[name], err_msg=name)
    where = {r["name"]: r["where"] for r in rows}
    assert where == {"c1": "vta", "c2": "vta", "d1": "vta", "d2": "vta", "p": "cpu",
                     "c3": "vta", "dw": "cpu", "gap": "cpu", "flat": "cpu",
                     "out": "cpu"}  # fmt: skip
    assert all(r["kernel"] == "llvm" and "cpu_seconds" in r for r in rows if r["where"] == "cpu")
    if device != "fsim":
        assert all(r["cycles"] > 0 for r in rows if r["where"] == "vta")


def test_cli_reports_and_checks(small, tmp_path, capsys):
    path, net, _, x = small
    np.savez(tmp_path / "in.npz", data=x)
    code = main(["run", str(path), "--inputs", str(tmp_path / "in.npz"), "--target", "vta",
                 "--device", "sim", "--json", "--output", str(tmp_path / "out.npz")])  # fmt: skip
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and report["bit_exact"]
    assert report["cycles"] == sum(r["cycles"] for r in report["layers"] if r["where"] == "vta")
    assert {"name", "where", "cycles", "gemm_utilization", "dram_bytes"} <= set(report["layers"][0])
    assert isinstance(report["cpu_seconds"], float) and "seeded" in report["calibration"]
    assert np.load(tmp_path / "out.npz")["out"].shape == (1, 10)


def _mixed_model(path) -> None:
    """Operators beyond the accelerator's layers between offloaded convs: a sigmoid gate (Mul),
    LeakyRelu after a conv, a channel Concat."""
    rng = np.random.default_rng(3)

    def f32(*shape):
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    c = 16
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="c1", kernel_shape=[3, 3], pads=[1]*4),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="c2", kernel_shape=[3, 3], pads=[1]*4),
        helper.make_node("Sigmoid", ["c2"], ["s"], name="s"),
        helper.make_node("Mul", ["r1", "s"], ["m"], name="m"),
        helper.make_node("Conv", ["m", "w3"], ["c3"], name="c3", kernel_shape=[1, 1]),
        helper.make_node("LeakyRelu", ["c3"], ["l"], name="l", alpha=0.1),
        helper.make_node("Concat", ["l", "m"], ["cat"], name="cat", axis=1),
        helper.make_node("Conv", ["cat", "w4"], ["c4"], name="c4", kernel_shape=[3, 3],
                         pads=[1] * 4, strides=[2, 2]),
        helper.make_node("Relu", ["c4"], ["y"]),
    ]  # fmt: skip
    consts = {"w1": f32(c, 8, 3, 3), "w2": f32(c, c, 3, 3), "w3": f32(c, c, 1, 1),
              "w4": f32(c, 2 * c, 3, 3)}  # fmt: skip
    graph = helper.make_graph(
        nodes, "mixed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 4, 4])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )  # fmt: skip
    path.write_bytes(helper.make_model(graph).SerializeToString())  # onnx's newest opset


@pytest.mark.parametrize("device", ["fsim", "sim"])
def test_other_operators_run_on_the_cpu_between_offloaded_convs(tmp_path, device):
    _mixed_model(tmp_path / "m.onnx")
    net = A.import_network(tmp_path / "m.onnx")
    x = np.random.default_rng(4).standard_normal((2, 8, 8, 8)).astype(np.float32)
    qn = A.quantize_network(net, x)
    compiled = A.compile_network(qn, VTAConfig.load("pynq"))
    acts, rows, _ = A.run(compiled, x[:1], device)
    ref = A.run(compiled, x[:1])[0]
    for name in ref:
        np.testing.assert_array_equal(acts[name], ref[name], err_msg=name)
    assert {r["name"]: r["kernel"] for r in rows if r["where"] == "cpu"} == dict.fromkeys(
        ("s", "m", "l", "cat"), "llvm"
    )
    where = {r["name"]: r["where"] for r in rows}
    assert where == {"c1": "vta", "c2": "vta", "s": "cpu", "m": "cpu", "c3": "vta", "l": "cpu",
                     "cat": "cpu", "c4": "vta"}  # fmt: skip
    f32 = A.forward_f32(net, x[:1])[net.output]
    out = A.dequantized_output(qn, ref)
    assert np.abs(out - f32).max() < 0.05 * np.abs(f32).max()
    accel_store.save(compiled, tmp_path / "c")  # the operators' constants and attributes survive
    again = A.run(accel_store.load(tmp_path / "c"), x[:1], device)[0]
    np.testing.assert_array_equal(again[net.output], acts[net.output])


def test_nodes_with_several_outputs_are_listed(tmp_path):
    graph = helper.make_graph(
        [
            helper.make_node("Split", ["x"], ["a", "b"], name="sp", axis=1),
            helper.make_node("Add", ["a", "b"], ["y"]),
        ],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
    )  # fmt: skip
    path = tmp_path / "u.onnx"
    path.write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    )
    with pytest.raises(OperatorError, match=r"1 node\(s\) with several outputs.*: sp \(Split\)"):
        A.import_network(path)


def test_tune_then_run_with_records(small, tmp_path, capsys):
    path, _, _, x = small
    db = tmp_path / "records.db"
    code = main(["tune", str(path), "--target", "vta", "--n-trial", "4", "--db", str(db)])
    out = capsys.readouterr().out
    assert code == 0 and "5 conv2d_fused tasks for 5 layers (tuner xgb-knob)" in out
    np.savez(tmp_path / "in.npz", data=x)
    cycles = {}
    for name, extra in (("records", ["--db", str(db)]), ("none", [])):
        code = main(["run", str(path), "--inputs", str(tmp_path / "in.npz"), "--target", "vta",
                     "--json", *extra])  # fmt: skip
        report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert code == 0 and report["bit_exact"]
        cycles[name] = report["cycles"]
    # the records' knobs are taken only where they beat the estimate's best candidates
    assert cycles["records"] <= cycles["none"]


def test_compile_saves_a_folder_that_runs_without_compiling(small, tmp_path, capsys):
    path, _, _, x = small
    folder = tmp_path / "small.vta"
    assert main(["compile", str(path), "--target", "vta", "-o", str(folder)]) == 0
    np.savez(tmp_path / "in.npz", data=x)
    assert (folder / "cpu" / "kernels.json").is_file()  # the CPU layers' compiled kernels
    reports = []
    for model in (path, folder):
        code = main(["run", str(model), "--inputs", str(tmp_path / "in.npz"), "--target", "vta",
                     "--device", "sim", "--json"])  # fmt: skip
        reports.append(json.loads(capsys.readouterr().out.strip().splitlines()[-1]))
        assert code == 0 and reports[-1]["bit_exact"]
    assert reports[0]["cycles"] == reports[1]["cycles"]
    assert [r.get("kernel") for r in reports[0]["layers"]] == [
        r.get("kernel") for r in reports[1]["layers"]
    ]
    assert reports[1]["output_error"] is None  # the folder keeps no fp32 weights
    (folder / "cpu" / "kernels.json").write_text('{"out": {}}')
    with pytest.raises(CompilerError, match="not the CPU kernels of a compiled model"):
        accel_store.load(folder)
    (folder / "accel.json").write_text("{}")
    with pytest.raises(OperatorError, match="not a compiled accelerator model|format"):
        accel_store.load(folder)


@pytest.mark.parametrize("include_pad", [0, 1])
def test_average_pool_runs_on_the_cpu_bit_exact(tmp_path, include_pad):
    rng = np.random.default_rng(3)
    w1 = numpy_helper.from_array(rng.standard_normal((16, 16, 3, 3)).astype(np.float32) / 12, "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((16, 16, 1, 1)).astype(np.float32) / 4, "w2")
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["a"], ["b"]),
            helper.make_node("AveragePool", ["b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                             strides=[2, 2], count_include_pad=include_pad),
            helper.make_node("Conv", ["c", "w2"], ["y"]),
        ],
        "avg", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 4, 4])], [w1, w2],
    )  # fmt: skip
    path = tmp_path / "avg.onnx"
    path.write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    )
    net = A.import_network(path)
    assert [ly.kind for ly in net.layers] == ["conv", "avgpoolk", "conv"]
    qn = A.quantize_network(net, rng.standard_normal((4, 16, 8, 8)).astype(np.float32))
    x = rng.standard_normal((1, 16, 8, 8)).astype(np.float32)
    compiled = A.compile_network(qn, VTAConfig.load("pynq"))
    acts, rows, _ = A.run(compiled, x, "sim")
    np.testing.assert_array_equal(acts["y"], A.run(compiled, x)[0]["y"])
    assert [r["where"] for r in rows] == ["vta", "cpu", "vta"]
    f32 = A.forward_f32(net, x)
    np.testing.assert_allclose(
        f32["y"], A.dequantized_output(qn, acts), atol=0.1 * np.abs(f32["y"]).max()
    )


@pytest.mark.parametrize("float_cpu", [True, False])
def test_cpu_kernels_match_numpy_int8_bit_for_bit_fp32_to_rounding(small, float_cpu):
    _, net, _, x = small
    rng = np.random.default_rng(1)
    calibration = rng.standard_normal((4, 16, 8, 8)).astype(np.float32)
    qn = A.quantize_network(net, calibration, float_cpu=float_cpu)
    acts, rows, _ = A.run(A.compile_network(qn, VTAConfig.load("pynq"), 1), x, "fsim")
    ref = A.run(qn, x)[0]  # all numpy
    for name in ref:
        if ref[name].dtype == np.int8:
            np.testing.assert_array_equal(acts[name], ref[name], err_msg=name)
        else:
            scale = np.abs(ref[name]).max()
            np.testing.assert_allclose(acts[name], ref[name], atol=1e-6 * scale, err_msg=name)
    kernels = {r["name"]: r["kernel"] for r in rows if r["where"] == "cpu"}
    # an int8 average pool stays in numpy: an fp32 mean would round differently
    assert kernels == {"p": "llvm", "dw": "llvm", "gap": "llvm" if float_cpu else "numpy",
                       "flat": "llvm", "out": "llvm"}  # fmt: skip
    fp32 = {r["name"] for r in rows if r["why"].endswith("fp32")}
    assert fp32 == ({"dw", "gap", "flat", "out"} if float_cpu else set())
    assert (acts["out"].dtype == np.float32) == float_cpu
    f32 = A.forward_f32(net, x)[net.output]
    assert np.abs(A.dequantized_output(qn, acts) - f32).max() < 0.1 * np.abs(f32).max()
