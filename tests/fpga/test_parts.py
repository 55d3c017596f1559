"""hw/parts.py is the one table of the target parts: their capacity and memory-port width as the
data sheets give them, every board's and preset's part in it, and an unknown part a one-line
ConfigError."""

import pytest

from hw.bitstream import BOARDS
from hw.parts import CPU, PARTS, part_for
from vta.config import VTAConfig, preset_names
from vta.errors import ConfigError


def test_the_parts_table():
    z7, zu = part_for("xc7z020clg400-1"), part_for("xczu3eg-sbva484-1-e")
    assert (z7.name, z7.family, z7.bus_bits, zu.name, zu.family, zu.bus_bits) == (
        ("xc7z020", "xc7", 64, "xczu3eg", "xcup", 128)
    )
    assert zu.capacity == {"LUT": 70_560, "FF": 141_120, "BRAM36": 216, "DSP": 360}
    assert z7.capacity == {"LUT": 53_200, "FF": 106_400, "BRAM36": 140, "DSP": 220}


def test_every_board_and_preset_names_a_known_part():
    for board in BOARDS.values():
        assert part_for(board.part) in PARTS.values()
    for name in preset_names():
        cfg = VTAConfig.load(name)
        part = part_for(cfg.fpga_part)
        assert cfg.bus_width <= part.bus_bits, name


def test_an_unknown_part_is_a_one_line_config_error():
    with pytest.raises(ConfigError) as err:
        part_for("xcvu9p-flga2104-2L-e")
    assert "\n" not in str(err.value) and "xc7z020" in str(err.value)


def test_each_part_has_its_boards_cpu_as_a_throughput_model():
    z7, zu = part_for("xc7z020clg400-1").cpu, part_for("xczu3eg-sbva484-1-e").cpu
    assert (z7.name, z7.cores, z7.clock_mhz, z7.flops_per_cycle) == ("Cortex-A9", 2, 650, 2)
    assert (zu.name, zu.cores, zu.clock_mhz, zu.flops_per_cycle) == ("Cortex-A53", 4, 1200, 8)
    assert z7.describe() == "2x Cortex-A9 at 650 MHz, 2 FLOP/cycle/core, DRAM 2.1 GB/s"


def test_a_cpu_step_takes_the_longer_of_its_flops_and_its_bytes():
    cpu = CPU("core", cores=2, clock_mhz=500, flops_per_cycle=4, dram_gbps=1.0)
    # 4e9 FLOPs on 2 cores at 2 GFLOPS each: 1 s; at half the peak: 2 s
    assert cpu.seconds(4e9, 0, threads=2, efficiency=1.0) == pytest.approx(1.0)
    assert cpu.seconds(4e9, 0, threads=2, efficiency=0.5) == pytest.approx(2.0)
    assert cpu.seconds(4e9, 0, threads=8, efficiency=1.0) == pytest.approx(1.0)  # 2 cores
    assert cpu.seconds(4e9, 0, threads=1, efficiency=1.0) == pytest.approx(2.0)
    # 3e9 bytes at 1 GB/s outlast 2e9 FLOPs (0.5 s)
    assert cpu.seconds(2e9, 3e9, threads=2, efficiency=1.0) == pytest.approx(3.0)
