"""The end-to-end board latency model of a run's report (`runtime.board_model`): the
accelerator's cycles at the configuration's clock plus each CPU row on the board's CPU
(`hw.parts.CPU`), the CPU's share, and the offloaded layers' time on that CPU."""

import pytest

from compiler.graph.runtime import board_model
from hw.parts import CPU
from vta.config import VTAConfig

CORE = CPU("core", cores=2, clock_mhz=500, flops_per_cycle=4, dram_gbps=1.0)  # 4 GFLOPS


def _rows(cycles: int | None = 1_000_000) -> list[dict]:
    return [
        {"name": "stem", "where": "cpu", "kernel": "llvm", "flops": 400_000_000, "bytes": 0},
        {"name": "q", "where": "cpu", "kernel": "numpy", "flops": 0, "bytes": 2_000_000},
        {"name": "c1", "where": "vta", "cycles": cycles, "flops": 8_000_000_000,
         "dram_bytes": 1_000},
    ]  # fmt: skip


def test_accelerator_cycles_plus_the_cpu_rows_on_the_boards_cpu():
    cfg = VTAConfig.load("pynq")  # 100 MHz: 1e6 cycles are 10 ms
    rows = _rows()
    board = board_model(rows, cfg, efficiency=0.5, cpu=CORE)
    # stem: 0.4 GFLOP on both cores at 4 GFLOPS, at half the peak: 200 ms; q: 2 MB at 1 GB/s
    # at half the bandwidth on one core: 4 ms
    assert [r.get("board_ms") for r in rows] == pytest.approx([200.0, 4.0, None])
    assert board["accelerator_ms"] == pytest.approx(10.0)
    assert board["cpu_ms"] == pytest.approx(204.0)
    assert board["latency_ms"] == pytest.approx(214.0)
    assert board["cpu_share"] == pytest.approx(204 / 214)
    # the offloaded layer on that CPU: 8 GFLOP at 2 GFLOPS = 4 s, 400x the accelerator's 10 ms
    assert board["offloaded_on_cpu_ms"] == pytest.approx(4000.0)
    assert board["offload_speedup"] == pytest.approx(400.0)
    assert board["cpu"] == CORE.describe() and board["efficiency"] == 0.5


def test_the_configurations_part_gives_the_cpu():
    rows = _rows()
    board = board_model(rows, VTAConfig.load("ultra96"))
    assert board["cpu"].startswith("4x Cortex-A53 at 1200 MHz")
    assert board["accelerator_ms"] == pytest.approx(1_000_000 / 333e3)


def test_without_cycles_there_is_no_latency_and_without_a_cpu_table_no_model():
    board = board_model(_rows(None), VTAConfig.load("pynq"), cpu=CORE)
    assert board["latency_ms"] is None and board["cpu_share"] is None
    assert board["cpu_ms"] > 0
    other = VTAConfig.load("pynq").replace(fpga_part="xcvu9p-flga2104-2L-e")
    assert board_model(_rows(), other) is None
