"""ONNX models on the accelerator through the one graph IR: partitioning (each group's place
and reason), quantization (observers on the reference executor, Quantize / VTAConv /
Dequantize nodes), the hybrid module (Programs beside llvm kernels), bit-identical on every
device to the quantized reference kernel, saved and loaded."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import OperatorError
from compiler.graph.build_onnx import fused_graph
from compiler.graph.hybrid import HybridModule, compile_for_accelerator, compile_hybrid
from compiler.graph.passes.partition import partition
from compiler.graph.passes.quantize import calibrate, quantize
from compiler.graph.reference import run
from testkit.examples import unequal_blocks
from vta.config import VTAConfig

CFG = VTAConfig.load("pynq")


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
    """(model path, partitioned graph, quantized graph, compiled module, input feeds)."""
    path = tmp_path_factory.mktemp("m") / "small.onnx"
    _small_resnet(path)
    rng = np.random.default_rng(1)
    calib = [{"data": rng.standard_normal((1, 16, 8, 8)).astype(np.float32)} for _ in range(4)]
    module, q = compile_for_accelerator(path, CFG, calib)
    graph = partition(fused_graph(path), CFG)
    feeds = {"data": rng.standard_normal((1, 16, 8, 8)).astype(np.float32)}
    return path, graph, q, module, feeds


def _places(graph) -> dict[str, tuple[str, str]]:
    return {g.name: (g.target, g.reason) for g in graph.groups}


def test_partition_tags_each_group_with_its_place_and_reason(small):
    _, graph, _, _, _ = small
    places = _places(graph)
    assert places["c1"] == ("vta", "conv: fused bias, requant, ReLU")
    assert places["c2"][1].endswith("residual")
    assert places["c3"] == ("vta", "conv: fused bias, requant, ReLU, Clip max on the CPU")
    # on a 4x4 image the CPU's fp32 conv beats the block-diagonal products
    assert places["dw"][0] == "cpu"
    assert places["dw"][1].startswith("depthwise conv: on the board no faster on the accelerator")
    (dense,) = [g for g in graph.groups if g.anchor.op == "Gemm"]
    assert (dense.target, dense.reason.split(":")[0]) == ("cpu", "dense")
    # the 1x1 stride-2 shortcut conv joins the group that adds its output
    (d2,) = [g for g in graph.groups if g.name == "d2"]
    assert [n.op for n in d2.nodes][:2] == ["Conv", "Conv"] and "down" not in places
    assert "1x1 shortcut conv" in places["d2"][1]
    text = str(graph)
    assert "group d2 [out_fusable] on vta (conv: fused bias, requant, ReLU, 1x1 shortcut" in text


def test_partition_leaves_its_input_and_repeats_exactly(small):
    path = small[0]
    fp32 = fused_graph(path)
    before = [(g.name, g.target, g.reason, [n.name for n in g.nodes]) for g in fp32.groups]
    first, second = partition(fp32, CFG), partition(fp32, CFG)
    assert [(g.name, g.target, g.reason, [n.name for n in g.nodes]) for g in fp32.groups] == before
    assert _places(first) == _places(second) == _places(small[1])
    rng = np.random.default_rng(2)
    calib = [{"data": rng.standard_normal((1, 16, 8, 8)).astype(np.float32)}]
    q1, q2 = (quantize(g, calibrate(g, calib)) for g in (first, second))
    assert [(n.name, n.attrs) for n in q1.nodes] == [(n.name, n.attrs) for n in q2.nodes]


def test_quantized_graph_has_boundary_nodes_and_tracks_fp32(small):
    path, _, q, _, feeds = small
    ops = [n.op for n in q.nodes]
    assert ops.count("VTAConv") == 5 and "Quantize" in ops and "Dequantize" in ops
    assert {q.value(n.outputs[0]).dtype for n in q.nodes if n.op == "VTAConv"} == {"int8"}
    f32 = run(fused_graph(path), feeds)["out"]
    got = run(q, feeds)["out"]
    assert np.abs(got - f32).max() < 0.05 * np.abs(f32).max()


@pytest.mark.parametrize("device", ["fsim", "sim", pytest.param("rtl", marks=pytest.mark.rtl)])
def test_every_device_matches_the_reference_bit_for_bit(small, device):
    _, _, q, module, feeds = small
    out, rows = module.run(feeds, device)
    ref, _ = module.run(feeds)  # the accelerator groups by the reference kernel
    np.testing.assert_array_equal(out["out"], ref["out"])
    vta = [r for r in rows if r["where"] == "vta"]
    assert len(vta) == 5 and all(r["bit_exact"] for r in vta)
    if device != "fsim":
        assert all(r["cycles"] > 0 for r in vta)
    cpu = [r for r in rows if r["where"] == "cpu" and r["kernel"] == "llvm"]
    assert {"dw"} <= {g for r in cpu for g in r["groups"]}  # the depthwise conv's llvm kernel


@pytest.mark.parametrize("config", ["pynq-16x8", "pynq-8x16"])
def test_block_out_unlike_block_in_runs_bit_exact(small, config):
    """Every group offloaded as with equal blocks, residual and shortcut conv included; the
    activations between accelerator layers repacked: bit-exact on fsim and sim."""
    path, cfg = small[0], unequal_blocks(config)
    places = _places(partition(fused_graph(path), cfg))
    why = "depthwise conv: its diagonal weight blocks need BLOCK_IN == BLOCK_OUT"
    assert places.pop("dw") == ("cpu", why)
    assert places == {g: p for g, p in _places(small[1]).items() if g != "dw"}
    rng = np.random.default_rng(1)
    calib = [{"data": rng.standard_normal((1, 16, 8, 8)).astype(np.float32)} for _ in range(2)]
    module, _ = compile_for_accelerator(path, cfg, calib)
    ref, _ = module.run(small[4])
    for device in ("fsim", "sim"):
        out, rows = module.run(small[4], device)
        np.testing.assert_array_equal(out["out"], ref["out"])
        assert [r["name"] for r in rows if r["where"] == "vta"] == ["c1", "c2", "d1", "d2", "c3"]


def test_a_device_that_differs_from_the_reference_is_an_error(small, monkeypatch):
    _, _, _, module, feeds = small
    from compiler.graph import accel

    real = accel.AccelConv.run

    def off_by_one(self, *args, **kw):
        out, stats = real(self, *args, **kw)
        return out ^ np.int8(1), stats

    monkeypatch.setattr(accel.AccelConv, "run", off_by_one)
    with pytest.raises(OperatorError, match="c1: fsim differs from the quantized reference"):
        module.run(feeds, "fsim")


def test_saved_module_runs_without_compiling(small, tmp_path):
    _, _, _, module, feeds = small
    module.save(tmp_path / "m")
    # the accelerator groups' Programs are in the folder as Program files any device runs
    from vta.cli import main

    assert main(["sim", str(tmp_path / "m" / "c1.npz"), "--timing-only"]) == 0
    again = HybridModule.load(tmp_path / "m")
    assert HybridModule.is_saved(tmp_path / "m")
    np.testing.assert_array_equal(again.run(feeds, "fsim")[0]["out"], module.run(feeds)[0]["out"])
    (tmp_path / "m" / "model.json").write_text("{")
    with pytest.raises(OperatorError, match="not a compiled model"):
        HybridModule.load(tmp_path / "m")


def _reshape_softmax_model(path) -> None:
    """A conv followed by Reshape to [1, 20, 323] (batch 1 in its shape), Transpose, Softmax."""
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((20, 16, 3, 3)) * 0.2).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="c", kernel_shape=[3, 3], pads=[1] * 4),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Reshape", ["r", "shape"], ["s"]),
        helper.make_node("Transpose", ["s"], ["t"], perm=[0, 2, 1]),
        helper.make_node("Softmax", ["t"], ["y"], axis=-1),
    ]
    consts = [numpy_helper.from_array(w, "w"),
              numpy_helper.from_array(np.array([1, 20, 323], np.int64), "shape")]  # fmt: skip
    graph = helper.make_graph(
        nodes, "rs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 17, 19])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 323, 20])], consts,
    )  # fmt: skip
    path.write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    )


def test_reshape_transpose_softmax_after_a_conv_with_several_calibration_inputs(tmp_path):
    _reshape_softmax_model(tmp_path / "m.onnx")
    rng = np.random.default_rng(6)
    calib = [{"x": rng.standard_normal((1, 16, 17, 19)).astype(np.float32)} for _ in range(5)]
    module, q = compile_for_accelerator(tmp_path / "m.onnx", CFG, calib)
    assert [g.target for g in q.groups if g.nodes[0].op == "VTAConv"] == ["vta"]
    feeds = calib[0]
    out = module.run(feeds, "fsim")[0]["y"]
    f32 = run(fused_graph(tmp_path / "m.onnx"), feeds)["y"]
    assert out.shape == (1, 323, 20)
    assert np.abs(out - f32).max() < 0.05 * np.abs(f32).max()


@pytest.mark.parametrize("device", ["fsim", "sim"])
def test_other_operators_run_on_the_cpu_between_offloaded_convs(tmp_path, device):
    _mixed_model(tmp_path / "m.onnx")
    rng = np.random.default_rng(4)
    calib = [{"x": rng.standard_normal((1, 8, 8, 8)).astype(np.float32)} for _ in range(2)]
    module, q = compile_for_accelerator(tmp_path / "m.onnx", CFG, calib)
    where = {g.name: g.target for g in q.groups if not g.name.startswith(("quantize_", "deq"))}
    assert where == {"c1": "vta", "c2": "vta", "s": "cpu", "c3": "vta", "l": "cpu",
                     "cat": "cpu", "c4": "vta"}  # fmt: skip
    out, rows = module.run(calib[0], device)
    np.testing.assert_array_equal(out["y"], module.run(calib[0])[0]["y"])
    f32 = run(fused_graph(tmp_path / "m.onnx"), calib[0])["y"]
    assert np.abs(out["y"] - f32).max() < 0.05 * np.abs(f32).max()


def test_a_group_whose_quantization_fails_stays_on_the_cpu_in_fp32(tmp_path):
    """A residual far finer than the conv's accumulator cannot enter through an int8 weight."""
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((16, 16, 3, 3)) * 4).astype(np.float32)
    nodes = [
        helper.make_node("Mul", ["x", "tiny"], ["r"], name="r"),
        helper.make_node("Conv", ["x", "w"], ["c"], name="c", kernel_shape=[3, 3], pads=[1] * 4),
        helper.make_node("Add", ["c", "r"], ["y"]),
    ]
    consts = [numpy_helper.from_array(w, "w"),
              numpy_helper.from_array(np.array(1e-7, np.float32), "tiny")]  # fmt: skip
    graph = helper.make_graph(
        nodes, "fine", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 4, 4])], consts,
    )  # fmt: skip
    path = tmp_path / "f.onnx"
    path.write_bytes(helper.make_model(graph).SerializeToString())
    calib = [{"x": (rng.standard_normal((1, 16, 4, 4)) * 100).astype(np.float32)}]
    graph = partition(fused_graph(path), CFG)
    assert [g.target for g in graph.groups] == ["cpu", "vta"]
    q = quantize(graph, calibrate(graph, calib))
    (c,) = [g for g in q.groups if g.name == "c"]
    assert c.target == "cpu" and "finer than the accumulator" in c.reason
    module = compile_hybrid(q, CFG)
    f32 = run(fused_graph(path), calib[0])["y"]
    np.testing.assert_allclose(module.run(calib[0], "fsim")[0]["y"], f32, rtol=1e-4, atol=1e-3)


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


def _zoo(tmp_path, name: str, **options) -> tuple:
    from compiler import zoo

    path = tmp_path / f"{name}.onnx"
    path.write_bytes(getattr(zoo, name)(seed=0, **options))
    graph = fused_graph(path)
    (key,) = graph.inputs
    rng = np.random.default_rng(2)
    draw = rng.random if name == "dqn" else rng.standard_normal
    feeds = [{key: draw(graph.value(key).shape).astype(np.float32)} for _ in range(2)]
    module, q = compile_for_accelerator(path, CFG, feeds, candidates=1)
    return module, q, feeds, run(graph, feeds[1])


@pytest.mark.parametrize("device", ["fsim", "sim"])
def test_dqn_with_padded_channels_on_the_accelerator(tmp_path, device):
    module, q, feeds, f32 = _zoo(tmp_path, "dqn")
    out, rows = module.run(feeds[1], device)  # raises if a group differs from the reference
    assert [r["where"] for r in rows if r["name"].startswith("conv")] == ["vta"] * 3
    (key,) = out
    assert np.abs(out[key] - f32[key]).max() < 0.05 * np.abs(f32[key]).max()


def test_small_mobilenet_offloads_its_pointwise_convs(tmp_path):
    module, q, feeds, f32 = _zoo(tmp_path, "mobilenet_v1", width=0.25, size=32)
    places = {g.name: g.target for g in q.groups if g.nodes[0].op in ("Conv", "VTAConv")}
    convs = list(places.values())
    assert convs[:3] == ["cpu", "cpu", "vta"]  # 3-channel stem, depthwise, pointwise
    # the depthwise convs of 16 to 64 channels on 16x16 to 4x4 images offloaded, those of 8
    # channels (half of each block padding) and of 2x2 images faster on the board's CPU
    assert convs.count("vta") == 17 and convs.count("cpu") == 10
    # a ReLU6 output the CPU made is never negative: quantized with zero point -128 for the
    # unpadded 1x1 convs that read it
    producers = q.producers()
    clipped = [n for n in q.nodes if n.op == "Quantize" and producers[n.inputs[0]].op == "Clip"]
    assert clipped and all(n.attrs["zero"] == -128 for n in clipped)
    out, rows = module.run(feeds[1], "sim")
    (key,) = out
    assert np.abs(out[key] - f32[key]).max() < 0.05 * np.abs(f32[key]).max()


def test_cli_runs_calibrated_on_the_given_inputs_and_reports(small, tmp_path, capsys):
    import json

    from vta.cli import main

    path, _, _, _, feeds = small
    np.savez(tmp_path / "in.npz", **feeds)
    code = main(["run", str(path), "--inputs", str(tmp_path / "in.npz"), "--target", "vta",
                 "--device", "sim", "--json", "--output", str(tmp_path / "out.npz")])  # fmt: skip
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and report["bit_exact"]
    assert report["calibration"].startswith("the inputs given to this run")
    assert report["cycles"] == sum(r["cycles"] for r in report["layers"] if r["where"] == "vta")
    assert report["output_error"] < 0.05
    assert np.load(tmp_path / "out.npz")["out"].shape == (1, 10)
    calib = np.random.default_rng(9).standard_normal((3, 16, 8, 8)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", data=calib)
    code = main(
        [
            "run",
            str(path),
            "--inputs",
            str(tmp_path / "in.npz"),
            "--target",
            "vta",
            "--device",
            "fsim",
            "--json",
            "--calibration",
            str(tmp_path / "calib.npz"),
        ]
    )
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and report["calibration"].startswith(f"{tmp_path / 'calib.npz'} (3 inputs)")


def test_tune_then_compile_and_run_the_saved_folder(small, tmp_path, capsys):
    import json

    from vta.cli import main

    path, _, _, _, feeds = small
    db = tmp_path / "records.db"
    code = main(["tune", str(path), "--target", "vta", "--n-trial", "4", "--db", str(db)])
    assert code == 0 and "5 conv2d_fused tasks for 5 layers (tuner xgb-knob)" in (
        capsys.readouterr().out
    )
    folder = tmp_path / "small.vta"
    assert main(["compile", str(path), "--target", "vta", "-o", str(folder), "--db", str(db)]) == 0
    assert "seeded standard-normal" in capsys.readouterr().err
    np.savez(tmp_path / "in.npz", **feeds)
    code = main(["run", str(folder), "--inputs", str(tmp_path / "in.npz"), "--device", "sim",
                 "--json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and report["bit_exact"] and report["output_error"] is None
    assert report["cycles"] > 0


def test_compile_prints_the_partition_and_quantization_passes(small, tmp_path, capsys):
    from vta.cli import main

    path = small[0]
    folder = tmp_path / "printed"
    assert main(["compile", str(path), "--target", "vta", "-o", str(folder), "--print-passes"]) == 0
    out = capsys.readouterr().out
    assert out.index("== fuse ==") < out.index("== partition ==") < out.index("== quantize ==")
    assert "on cpu (depthwise conv: on the board no faster on the accelerator (" in out
    assert "VTAConv(" in out and "Quantize(" in out and "Dequantize(" in out
