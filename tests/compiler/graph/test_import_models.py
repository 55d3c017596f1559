"""The topologies bundled with the onnx wheel (opset 9, converted to 13; their weights made by
ConstantOfShape are replaced with seeded random ones) import, pass the graph passes and run on
the reference executor as onnxruntime runs them."""

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from compiler.graph import reference  # noqa: E402
from compiler.graph.onnx_import import import_onnx  # noqa: E402
from compiler.graph.passes import run_passes  # noqa: E402

LIGHT = Path(onnx.__file__).parent / "backend/test/data/light"


def seeded(name: str):
    """The bundled model at opset 13 with seeded weights (He-initialized tensors, small biases,
    batch-norm scales and variances in [0.5, 1.5]), ending before its final softmax."""
    from onnx import numpy_helper, version_converter

    m = version_converter.convert_version(onnx.load(str(LIGHT / f"light_{name}.onnx")), 13)
    rng = np.random.default_rng(0)
    positive = {t for n in m.graph.node if n.op_type == "BatchNormalization"
                for t in (n.input[1], n.input[4])}  # fmt: skip
    inits = {t.name: t for t in m.graph.initializer}
    nodes = []
    for n in m.graph.node:
        if n.op_type != "ConstantOfShape":
            nodes.append(n)
            continue
        shape = [int(d) for d in numpy_helper.to_array(inits[n.input[0]])]
        if n.output[0] in positive:
            value = rng.uniform(0.5, 1.5, shape)
        elif len(shape) > 1:
            value = rng.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[1:]))
        else:
            value = rng.standard_normal(shape) * 0.1
        m.graph.initializer.append(numpy_helper.from_array(value.astype(np.float32), n.output[0]))
    if nodes[-1].op_type == "Softmax":  # compare the logits, not a saturated softmax
        m.graph.output[0].name = nodes.pop().input[0]
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m


@pytest.mark.parametrize(
    "name",
    ["resnet50", "squeezenet", "densenet121", "inception_v1", "inception_v2", "shufflenet",
     "bvlc_alexnet", *(pytest.param(n, marks=pytest.mark.slow) for n in ("vgg19", "zfnet512"))],
)  # fmt: skip
def test_bundled_model_matches_onnxruntime(name):
    m = seeded(name)
    imported = import_onnx(m)
    n_imported = len(imported.nodes)
    g, tasks = run_passes(imported)
    assert 0 < len(tasks) <= len(g.groups) < n_imported
    (inp,) = g.inputs
    x = np.random.default_rng(1).standard_normal(g.value(inp).shape).astype(np.float32)
    (got,) = reference.run(g, {inp: x}).values()
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {inp: x})
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize(
    "name",
    ["squeezenet", "bvlc_alexnet",
     *(pytest.param(n, marks=pytest.mark.slow)
       for n in ("resnet50", "densenet121", "inception_v1", "inception_v2", "shufflenet",
                 "zfnet512"))],
)  # fmt: skip
def test_bundled_model_compiles_for_the_cpu(name, tmp_path):
    from compiler.graph.build_onnx import compile_model

    m = seeded(name)
    onnx.save(m, str(tmp_path / "m.onnx"))
    graph = compile_model(tmp_path / "m.onnx")
    (spec,) = graph.inputs
    x = np.random.default_rng(1).standard_normal(spec.shape).astype(np.float32)
    (got,) = graph.run({spec.name: x}).values()
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {spec.name: x})
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * np.abs(want).max())
