"""`vta compile` and `vta run` on an ONNX model: outputs match onnxruntime, a compiled folder
runs without compiling, bad inputs are one-line errors naming the tensor."""

import json
import re

import numpy as np
import pytest

from compiler.zoo import dqn, encoder, random_inputs
from vta.cli import main

ort = pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("dqn")
    (d / "dqn.onnx").write_bytes(dqn())
    np.savez(d / "in.npz", **random_inputs("dqn"))
    return d


def test_compile_then_run_matches_onnxruntime(model, capsys):
    assert main(["compile", str(model / "dqn.onnx"), "-o", str(model / "c")]) == 0
    args = ["run", str(model / "c"), "--inputs", str(model / "in.npz")]
    assert main([*args, "--output", str(model / "out.npz"), "--repeat", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(result["latency_ms"]) == {"median", "min", "max"}
    out = np.load(model / "out.npz")
    sess = ort.InferenceSession(dqn(), providers=["CPUExecutionProvider"])
    (ref,) = sess.run(None, random_inputs("dqn"))
    (name,) = out.files
    np.testing.assert_allclose(out[name], ref, rtol=1e-3, atol=1e-4 * np.abs(ref).max())
    # the one compiled-model folder: model.json and the CPU's GraphModule, as an accelerator
    # model's folder holds its CPU segments
    manifest = json.loads((model / "c" / "model.json").read_text())
    assert manifest["target"] == "llvm" and manifest["config"] is None
    assert [s["module"] for s in manifest["steps"]] == ["cpu0"]


def test_run_refuses_a_folder_of_another_format(model, tmp_path, capsys):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "graph.json").write_text("{}")
    args = ["run", str(tmp_path / "other"), "--inputs", str(model / "in.npz")]
    assert main(args) == 1
    assert "not a model folder `vta compile --target llvm` wrote" in capsys.readouterr().err


def test_run_names_a_missing_and_an_extra_input(model, tmp_path, capsys):
    np.savez(tmp_path / "bad.npz", wrong=np.zeros((1, 4, 84, 84), np.float32))
    assert main(["run", str(model / "dqn.onnx"), "--inputs", str(tmp_path / "bad.npz")]) == 1
    err = capsys.readouterr().err.splitlines()[-1]  # after the compile log
    assert err.startswith("vta run: error:") and "missing frames; unknown wrong" in err


def test_run_names_a_misshaped_input(model, tmp_path, capsys):
    np.savez(tmp_path / "bad.npz", frames=np.zeros((1, 4, 80, 84), np.float32))
    assert main(["run", str(model / "dqn.onnx"), "--inputs", str(tmp_path / "bad.npz")]) == 1
    assert "'frames' has shape [1, 4, 80, 84], expected [1, 4, 84, 84]" in capsys.readouterr().err


def test_missing_model_is_an_error(tmp_path, capsys):
    np.savez(tmp_path / "in.npz", x=np.zeros(1))
    assert main(["run", str(tmp_path / "nope.onnx"), "--inputs", str(tmp_path / "in.npz")]) == 1
    assert "no such model" in capsys.readouterr().err


def tiny_conv_model() -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).standard_normal((16, 16, 3, 3)).astype(np.float32)
    nodes = [
        # strided: a template task on every target (Winograd takes stride-1 3x3 convs)
        helper.make_node(
            "Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1] * 4, strides=[2, 2]
        ),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 4, 4])],
        [numpy_helper.from_array(w, "w")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return m.SerializeToString()


def test_tune_model_then_compile_uses_the_records(tmp_path, capsys):
    (tmp_path / "m.onnx").write_bytes(tiny_conv_model())
    db = str(tmp_path / "r.db")
    args = ["tune", str(tmp_path / "m.onnx"), "--n-trial", "2", "--batch-size", "2"]
    assert main([*args, "--db", db]) == 0
    out = capsys.readouterr().out
    assert "1 tasks" in out and "conv2d_NCHWc(16, 8, 8, 16, 3, 3, 2," in out
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "c"), "--db", db]) == 0
    assert "1 kernels from records" in capsys.readouterr().err


def test_tune_encoder_then_its_dense_and_attention_kernels_use_the_records(tmp_path, capsys):
    """A transformer's dense layers are `matmul` tasks with the graph's panel width, its fused
    attention an `attention` task; their records make the compiled encoder's dense and
    attention kernels, which compute what the defaults do."""
    path = tmp_path / "e.onnx"
    path.write_bytes(encoder(layers=1, hidden=64, heads=2, ffn=128, tokens=8, vocab=50))
    db = str(tmp_path / "r.db")
    args = ["tune", str(path), "--n-trial", "2", "--batch-size", "2", "--db", db]
    assert main(args) == 0
    out = capsys.readouterr().out
    # Q, K, V and the output projection share a task; the feed-forward layers one each; the
    # attention (2 heads of 8 tokens, 32 wide, masked) one
    assert "4 tunable tasks" in out
    assert re.search(r"matmul\(8, 64, 64, \d+\) x4", out)
    assert re.search(r"matmul\(8, 128, 64, \d+\) x1", out)
    assert "attention(2, 8, 8, 32, 32, 1) x1" in out
    ids = np.random.default_rng(0).integers(1, 50, (1, 8))
    ids[:, -2:] = 0  # padding: the attention's mask
    np.savez(tmp_path / "in.npz", ids=ids)
    outputs = {}
    for name, records in (("plain", []), ("tuned", ["--db", db])):
        folder = str(tmp_path / name)
        assert main(["compile", str(path), "-o", folder, *records]) == 0
        outputs[name] = tmp_path / f"{name}.npz"
        argv = ["run", folder, "--inputs", str(tmp_path / "in.npz")]
        assert main([*argv, "--output", str(outputs[name])]) == 0
    assert "; 4 kernels from records" in capsys.readouterr().err
    tuned, plain = np.load(outputs["tuned"]), np.load(outputs["plain"])
    for name in plain.files:
        np.testing.assert_allclose(tuned[name], plain[name], rtol=1e-5, atol=1e-5)


def test_unpadded_convolutions_are_tuning_tasks(tmp_path):
    from compiler.graph.cpu_api import model_tasks
    from compiler.zoo import dqn

    (tmp_path / "dqn.onnx").write_bytes(dqn())
    # AVX-512: its 3x3 conv's 7x7 output stays direct (AVX2 runs it by Winograd)
    avx512 = "llvm -mcpu=skylake-avx512"
    found = model_tasks(str(tmp_path / "dqn.onnx"), avx512, log=lambda m: None)
    tasks = [t.task_args() for t, _ in found]
    # three unpadded convolutions (8x8 stride 4, 4x4 stride 2, 3x3): padding 0 ends the args
    assert len(tasks) == 3 and all(args[-1] == 0 and args[4:7] for args in tasks)
    assert {args[4:7] for args in tasks} == {(8, 8, 4), (4, 4, 2), (3, 3, 1)}


def test_wide_1x1_convolutions_are_pointwise_tuning_tasks(tmp_path):
    from compiler.graph.cpu_api import model_tasks
    from compiler.zoo import mobilenet_v1

    (tmp_path / "m.onnx").write_bytes(mobilenet_v1())
    avx2 = "llvm -mcpu=haswell -mattr=+avx2,+fma,-avx512f"
    found = model_tasks(str(tmp_path / "m.onnx"), avx2, log=lambda m: None)
    pointwise = sorted(t.args for t, _ in found if t.template == "conv2d_1x1_NCHWc")
    # the 1x1 convs of 256 input channels and more (chunks of 128 on AVX2); narrower stay direct
    assert pointwise == [
        (256, 14, 14, 512),
        (256, 28, 28, 256),
        (512, 7, 7, 1024),
        (512, 14, 14, 512),
        (1024, 7, 7, 1024),
    ]
    assert dict((t.args, n) for t, n in found)[(512, 14, 14, 512)] == 5
    assert any(t.template == "conv2d_NCHWc" and t.args[4] == 1 for t, _ in found)
