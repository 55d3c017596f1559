"""A small BERT-style encoder with `--target vta`: its dense layers (rows [T, K] by a constant
weight) run on the accelerator as 1x1 convs over T positions, bit-exact against the quantized
reference on every device with its attention products (test_accel_attention.py); a dense layer
of fewer rows than a block stays on the CPU."""

import numpy as np
import pytest

from compiler import zoo
from compiler.graph.build_onnx import fused_graph
from compiler.graph.passes.partition import partition
from testkit.accel import DEVICES, check_groups_on_device, run_report
from vta.config import VTAConfig

CFG = VTAConfig.load("pynq")
DENSE = ["matmul_22", "matmul_27", "matmul_32", "matmul_47", "matmul_55", "matmul_64"]
ACCEL = [*DENSE[:3], "matmul_43_qk", "matmul_43_pv", *DENSE[3:]]  # with the attention products


def _encoder(tokens: int) -> bytes:
    return zoo.encoder(layers=1, hidden=64, heads=2, ffn=128, tokens=tokens, vocab=100)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("enc") / "encoder.onnx"
    path.write_bytes(_encoder(32))
    ids = np.random.default_rng(0).integers(1, 100, (1, 32))
    ids[:, -4:] = 0  # padding, masked
    return path, {"ids": ids.astype(np.int64)}


def test_dense_layers_are_offloaded_as_convs_between_layout_groups(model):
    graph = partition(fused_graph(model[0]), CFG)
    groups = {g.name: g for g in graph.groups}
    for name in DENSE:
        g = groups[name]
        assert g.target == "vta" and [n.op for n in g.nodes] == ["Conv"]
        assert g.reason.startswith("dense as a 1x1 conv over its rows: fused bias, requant (")
        assert "ms against CPU dense" in g.reason
        x, w = (graph.value(t).shape for t in g.nodes[0].inputs[:2])
        assert x[0] == 1 and x[2:] == (2, 16) and w[2:] == (1, 1)
        back = groups[f"{name}_out"]
        assert back.target == "cpu" and [n.op for n in back.nodes][:2] == ["Reshape", "Transpose"]
    assert [n.op for n in groups["matmul_55_out"].nodes] == ["Reshape", "Transpose", "Gelu"]
    assert groups["matmul_55_out"].reason == "NCHW back to dense rows, Gelu"
    for g in graph.groups:
        for n in g.nodes:
            assert all(graph.value(t).shape and graph.value(t).dtype for t in n.outputs)


def test_dense_of_fewer_rows_than_a_block_stays_on_the_cpu():
    graph = partition(fused_graph(_encoder(8)), CFG)
    dense = [g for g in graph.groups if g.nodes[0].op == "MatMul"]
    assert len(dense) == 6 and all(g.target == "cpu" for g in dense)
    assert dense[0].reason.startswith("dense on 8 rows, fewer than a block of 16")
    for g in partition(fused_graph(zoo.dqn()), CFG).groups:  # one-row classifier layers
        assert g.target == ("cpu" if g.nodes[0].op in ("Flatten", "Gemm") else "vta")


def test_partition_leaves_the_fused_graph_as_it_was(model):
    fp32 = fused_graph(model[0])
    values, constants = dict(fp32.values), dict(fp32.constants)
    partition(fp32, CFG)
    assert fp32.values == values and fp32.constants.keys() == constants.keys()


@pytest.mark.parametrize("device", DEVICES)
def test_dense_groups_match_the_reference_bit_for_bit(model, device):
    check_groups_on_device(*model, CFG, device, ACCEL)


def test_cli_reports_the_dense_layers_cycles_and_utilisation(model, tmp_path, capsys):
    code, report = run_report(*model, tmp_path, capsys)
    assert code == 0 and report["bit_exact"] and report["output_error"] < 0.05
    vta = [r for r in report["layers"] if r["where"] == "vta"]
    assert [r["name"] for r in vta] == ACCEL
    assert all(r["cycles"] > 0 and 0 < r["gemm_utilization"] <= 1 for r in vta)
    assert report["cycles"] == sum(r["cycles"] for r in vta)
