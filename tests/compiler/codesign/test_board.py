"""The board latency a co-design point is judged by (`--objective board`): the graph's static
rows model a compiled run's, and an evaluation's board latency is its accelerator time plus its
partition's CPU layers."""

import numpy as np
import pytest

from compiler import zoo
from compiler.codesign.evaluate import evaluate_point, preset_point, workload
from compiler.graph.hybrid import board_rows, compile_hybrid
from compiler.graph.runtime import board_model
from vta.config import VTAConfig


@pytest.fixture(scope="module")
def dqn(tmp_path_factory):
    path = tmp_path_factory.mktemp("board") / "dqn.onnx"
    path.write_bytes(zoo.NETWORKS["dqn"]())
    return str(path)


def test_board_rows_model_a_compiled_run(dqn):
    cfg = VTAConfig.load("pynq")
    q = workload(dqn).quantized(cfg)
    module = compile_hybrid(q, cfg, candidates=1)
    _, rows = module.run(zoo.random_inputs("dqn"), device="sim", check=False)
    cycles = {r["name"]: r["cycles"] for r in rows if r["where"] == "vta"}
    static = board_rows(q, cycles)
    flops = [sum(r["flops"] for r in rs if r["where"] == "cpu") for rs in (rows, static)]
    assert flops[0] == flops[1] > 0  # the dense layers' products, counted alike
    ran, modelled = board_model(rows, cfg), board_model(static, cfg)
    assert modelled["accelerator_ms"] == ran["accelerator_ms"]
    assert modelled["latency_ms"] == pytest.approx(ran["latency_ms"], rel=0.05)


def test_an_evaluation_has_the_board_latency_of_its_partition(dqn):
    point, cfg, clock = preset_point("xc7z020")
    ev = evaluate_point(dqn, point, "xc7z020", candidates=1, base=cfg.name, clock_mhz=clock)
    cpu_ms = workload(dqn).board_cpu_ms(VTAConfig.from_dict(ev.config))
    assert cpu_ms > 0 and ev.board_ms == pytest.approx(ev.latency_ms + cpu_ms)
    assert ev.to_dict()["board_ms"] == ev.board_ms
    assert np.isfinite(ev.board_ms)
