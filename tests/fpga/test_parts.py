"""hw/parts.py is the one table of the target parts: their capacity and memory-port width as the
data sheets give them, every board's and preset's part in it, and an unknown part a one-line
ConfigError."""

import pytest

from hw.bitstream import BOARDS
from hw.parts import PARTS, part_for
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
