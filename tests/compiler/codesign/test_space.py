"""The hardware space (compiler/codesign/space.py): points as configurations, legality, the
nearest legal point, the grid."""

import pytest

from compiler.codesign.space import REDUCED, HardwareSpace, Point, point_of
from vta.config import VTAConfig
from vta.errors import ConfigError
from vta.isa import MemType


@pytest.mark.parametrize("preset,part", [("pynq", "xc7z020"), ("ultra96", "xczu3eg")])
def test_a_preset_is_a_point_of_its_part(preset, part):
    cfg = VTAConfig.load(preset)
    space = HardwareSpace(part)
    again = space.config(point_of(cfg), cfg.clock_mhz)
    assert again.config_string == cfg.config_string
    assert again.bus_width == cfg.bus_width and again.alu_requant == cfg.alu_requant
    assert again.fpga_part == cfg.fpga_part


def test_points_keep_depths_across_gemm_shapes():
    space = HardwareSpace("xc7z020")
    for block in (8, 16, 32):
        cfg = space.config(Point(block=block))
        assert cfg.block_in == block and cfg.log_depth[MemType.INP] == 11
        assert cfg.log_depth[MemType.WGT] == 10 and cfg.log_depth[MemType.ACC] == 11
        assert cfg.buff_bytes[MemType.WGT] == 1024 * block * block


@pytest.mark.parametrize("block,block_out", [(32, 16), (16, 32), (8, 16)])
def test_a_point_with_unequal_blocks_is_that_gemm(block, block_out):
    point = Point(block=block, block_out=block_out)
    cfg = HardwareSpace("xczu3eg").config(point)
    assert (cfg.block_in, cfg.block_out) == (block, block_out)
    assert cfg.log_depth[MemType.WGT] == 10 and cfg.log_depth[MemType.ACC] == 11
    assert cfg.buff_bytes[MemType.WGT] == 1024 * block * block_out
    assert cfg.buff_bytes[MemType.ACC] == 2048 * block_out * 4
    assert point.label.startswith(f"1x{block}x{block_out}-") and point_of(cfg) == point
    # a point stored before BLOCK_OUT was a dimension reads back with equal blocks
    old = {k: v for k, v in Point(block=block).to_dict().items() if k != "block_out"}
    assert Point(**old) == Point(block=block, block_out=block)


def test_an_unencodable_point_is_refused_with_the_reason_and_legalized():
    space = HardwareSpace("xc7z020")
    deep = Point(block=8, inp_depth=13, wgt_depth=12, acc_depth=13)
    why = space.why_illegal(deep)
    assert why is not None and "bits" in why
    with pytest.raises(ConfigError, match="bits"):
        space.config(deep)
    legal, changes = space.legalize(deep)
    assert space.why_illegal(legal) is None and changes
    # nearest: each change made one depth one step shallower
    steps = sum(
        getattr(deep, f) - getattr(legal, f)
        for f in ("inp_depth", "wgt_depth", "acc_depth", "uop_depth")
    )
    assert steps == len(changes)


def test_the_bus_is_no_wider_than_the_parts_port():
    pynq, ultra = HardwareSpace("xc7z020"), HardwareSpace("xczu3eg")
    wide = Point(bus=128)
    assert "port" in pynq.why_illegal(wide) and ultra.why_illegal(wide) is None
    assert pynq.legalize(wide)[0].bus == 64
    assert set(p.bus for p in HardwareSpace("xczu3eg", REDUCED).grid()) == {64, 128}


def test_the_reduced_grid_holds_over_a_hundred_legal_points_per_part():
    for part in ("xc7z020", "xczu3eg"):
        grid = list(HardwareSpace(part, REDUCED).grid())
        assert len(grid) >= 100 and len(set(grid)) == len(grid)


def test_unknown_dimensions_and_parts_are_refused():
    with pytest.raises(ConfigError, match="dimension"):
        HardwareSpace("xc7z020", {"colour": (1,)})
    with pytest.raises(ConfigError, match="part"):
        HardwareSpace("xc9zz")
