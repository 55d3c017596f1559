"""scripts/bench_vta.py --board (benchmarks.vta_board): a network's modelled latency on a board,
its CPU share and the offloaded layers' time on the board's CPU, from a real compile and run
(the seeded DQN network here: small)."""

import json

import pytest

from benchmarks.vta_board import bench_board, print_board
from hw.parts import part_for
from vta.config import VTAConfig


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return [bench_board("dqn", config, efficiency=0.5) for config in ("pynq", "ultra96")]


def test_the_latency_is_the_accelerators_cycles_plus_the_cpu_layers(rows):
    for r in rows:
        cfg = VTAConfig.load(r["config"])
        assert r["bit_exact"] and r["accelerator_layers"] == 3
        assert r["accelerator_ms"] == pytest.approx(r["accelerator_cycles"] / (cfg.clock_mhz * 1e3))
        assert r["cpu_ms"] == pytest.approx(sum(c["board_ms"] for c in r["cpu_layers"]))
        assert r["latency_ms"] == pytest.approx(r["accelerator_ms"] + r["cpu_ms"])
        assert r["cpu_share"] == pytest.approx(r["cpu_ms"] / r["latency_ms"])
        assert r["cpu"] == part_for(cfg.fpga_part).cpu.describe()
        # the offloaded layers would take longer on the board's CPU than on the accelerator
        assert r["offload_speedup"] == pytest.approx(r["offloaded_on_cpu_ms"] / r["accelerator_ms"])
        assert r["offload_speedup"] > 1


def test_the_dense_layers_stay_on_the_cpu_and_a_faster_cpu_takes_them_faster(rows):
    pynq, ultra96 = rows
    dense = [c for c in pynq["cpu_layers"] if c["kernel"] == "llvm"]
    assert dense and sum(c["flops"] for c in dense) > 1e6
    assert ultra96["cpu_ms"] < pynq["cpu_ms"]
    # the modelled time is inversely proportional to the efficiency
    again = bench_board("dqn", "pynq", efficiency=1.0)
    assert again["cpu_ms"] == pytest.approx(pynq["cpu_ms"] / 2)


def test_the_table_and_json(rows, capsys):
    print_board(rows)
    out = capsys.readouterr().out
    assert "dqn           pynq" in out and "2x Cortex-A9 at 650 MHz" in out
    assert json.loads(json.dumps(rows)) == rows
