"""The benchmark networks are valid ONNX and run on onnxruntime with finite outputs."""

import numpy as np
import pytest

from compiler.zoo import NETWORKS, random_inputs

ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("name,classes", [("resnet18", 1000), ("mobilenet_v1", 1000), ("dqn", 18)])
def test_network_runs_on_onnxruntime(name, classes):
    sess = ort.InferenceSession(NETWORKS[name](), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, random_inputs(name))
    assert y.shape == (1, classes) and np.isfinite(y).all() and np.abs(y).max() > 0


def test_encoder_compiles_for_the_cpu_and_matches_onnxruntime(tmp_path):
    """A small encoder (2 layers, hidden 32, 4 heads, 8 tokens of which the padding is masked)
    through our CPU path against onnxruntime; the benchmark's sizes' inputs have ids in range
    and padding at the end."""
    from compiler.graph.build_onnx import compile_model
    from compiler.zoo import ENCODERS, VOCAB, encoder

    model = encoder(seed=1, layers=2, hidden=32, heads=4, ffn=64, tokens=8, vocab=50)
    ids = {"ids": np.array([[7, 1, 49, 3, 3, 20, 0, 0]], np.int64)}
    (want,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, ids)
    (tmp_path / "m.onnx").write_bytes(model)
    (got,) = compile_model(tmp_path / "m.onnx").run(ids).values()
    assert got.shape == (1, 8, 32) and np.abs(want).max() > 0.5
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * np.abs(want).max())
    for name in ENCODERS:
        x = random_inputs(name)["ids"]
        assert x.shape == (1, 128) and (x[0, -16:] == 0).all() and 0 < x[0, :-16].min()
        assert x.max() < VOCAB
