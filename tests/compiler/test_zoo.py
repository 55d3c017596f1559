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
