"""VTAConfig: presets, derived values, and invalid configurations naming the field."""

import json

import pytest

from vta.config import VTAConfig, load_config, preset_names
from vta.errors import ConfigError
from vta.isa import MemType, uop_layout


def test_presets_are_shipped():
    assert {"pynq", "tiny", "ultra96"} <= set(preset_names())


def test_default_is_the_reference_pynq_configuration():
    cfg = load_config()
    assert cfg.name == "pynq"
    assert cfg.config_string == "1x16_i8w8a32_15_15_18_17"
    assert cfg.clock_mhz == 100
    assert cfg.bus_width == 64
    assert not cfg.alu_mul
    assert cfg.alu_requant  # our REQ extension; the other fields are the reference's


def test_configuration_string_finds_the_preset():
    assert VTAConfig.load("1x16_i8w8a32_15_15_18_17").name == "pynq"


def test_requant_is_a_preset_choice_and_off_by_default():
    assert [load_config(n).alu_requant for n in ("pynq", "ultra96", "tiny")] == [True, True, False]
    assert not VTAConfig().alu_requant  # the dataclass default is the reference ISA
    assert not VTAConfig.load("1x8_i8w8a32_15_14_16_16").alu_requant
    ref = load_config("pynq").replace(alu_requant=False)
    assert VTAConfig.from_dict(ref.to_dict()) == ref
    assert VTAConfig.from_dict(load_config("pynq").to_dict()).alu_requant


def test_configuration_string_without_preset_builds_one():
    cfg = VTAConfig.load("1x8_i8w8a32_15_14_16_16")
    assert cfg.block_in == 8
    assert cfg.config_string == "1x8_i8w8a32_15_14_16_16"


def test_unequal_blocks_size_each_buffer_by_its_own_block():
    cfg = load_config("pynq").replace(log_block_out=3, log_wgt_buff_size=17, log_acc_buff_size=16)
    assert (cfg.block_in, cfg.block_out, cfg.macs_per_cycle) == (16, 8, 128)
    mem = MemType
    assert cfg.elem_bytes == {mem.UOP: 4, mem.INP: 16, mem.WGT: 128, mem.ACC: 32, mem.OUT: 8}
    assert cfg.depth == {mem.UOP: 8192, mem.INP: 2048, mem.WGT: 1024, mem.ACC: 2048, mem.OUT: 2048}
    assert cfg.config_string == "1x16x8_i8w8a32_15_15_17_16"
    back = VTAConfig.load(cfg.config_string)
    assert (back.block_in, back.block_out, back.depth) == (16, 8, cfg.depth)
    assert VTAConfig.from_dict(cfg.to_dict()) == cfg


def test_log_block_alone_sets_both_blocks():
    cfg = VTAConfig.from_dict({"log_block": 3, "log_inp_buff_size": 14, "log_acc_buff_size": 16,
                               "log_wgt_buff_size": 16})  # fmt: skip
    assert (cfg.block_in, cfg.block_out) == (8, 8)
    assert "log_block_out" not in cfg.to_dict()  # equal blocks keep the reference's fields
    assert load_config("pynq").replace(log_block_out=4) == load_config("pynq")
    assert load_config("tiny").replace(log_block=3).block_out == 8
    wide = load_config("tiny").replace(log_block_out=3)
    assert (wide.replace(log_block=1).block_in, wide.replace(log_block=1).block_out) == (2, 8)


def test_unequal_blocks_that_overflow_the_isa_name_the_buffers():
    with pytest.raises(ConfigError, match="GEMM word 1 needs 68 bits.*log_acc_buff_size"):
        load_config("pynq").replace(log_block_out=3)


def test_wide_bus_preset():
    cfg = load_config("ultra96")
    assert cfg.clock_mhz == 333
    assert cfg.bus_width == 128
    assert cfg.bus_bytes == 16


def test_pynq_derived_values_match_the_reference():
    cfg = load_config("pynq")
    mem = MemType
    assert cfg.elem_bytes == {mem.UOP: 4, mem.INP: 16, mem.WGT: 256, mem.ACC: 64, mem.OUT: 16}
    assert cfg.depth == {mem.UOP: 8192, mem.INP: 2048, mem.WGT: 1024, mem.ACC: 2048, mem.OUT: 2048}
    widths = {f.name: f.width for f in uop_layout(cfg)}
    assert widths == {"dst_idx": 11, "src_idx": 11, "wgt_idx": 10}
    assert cfg.macs_per_cycle == 256
    assert cfg.peak_gops == pytest.approx(51.2)


def test_tiny_preset_is_small_and_has_mul():
    cfg = load_config("tiny")
    assert cfg.block_in == 4
    assert cfg.alu_mul
    assert cfg.macs_per_cycle == 16


def test_load_from_json_file(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(
        json.dumps(
            {
                "name": "mine",
                "log_block": 3,
                "log_inp_buff_size": 14,
                "log_wgt_buff_size": 16,
                "log_acc_buff_size": 16,
                "clock_mhz": 200,
            }
        )
    )
    cfg = VTAConfig.load(path)
    assert (cfg.name, cfg.block_out, cfg.clock_mhz) == ("mine", 8, 200)


def test_replace_revalidates():
    with pytest.raises(ConfigError, match="cmd_queue_depth"):
        load_config().replace(cmd_queue_depth=500)


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"log_inp_width": 4}, "log_inp_width"),
        ({"log_acc_width": 4}, "log_acc_width"),
        ({"log_block": 7}, "log_block"),
        ({"log_bus_width": 2}, "log_bus_width"),
        ({"token_queue_depth": 1000}, "token_queue_depth"),
        ({"log_acc_buff_size": 22}, "log_acc_buff_size"),
        ({"log_uop_buff_size": 1}, "log_uop_buff_size"),
        ({"clock_mhz": 0}, "clock_mhz"),
        ({"dram_latency": 0}, "dram_latency"),
    ],
)
def test_invalid_configuration_names_the_field(changes, field):
    with pytest.raises(ConfigError, match=field):
        VTAConfig(**changes)


def test_unknown_name_lists_the_presets():
    with pytest.raises(ConfigError, match="pynq"):
        VTAConfig.load("no-such-config")


def test_non_power_of_two_in_configuration_string():
    with pytest.raises(ConfigError, match="batch"):
        VTAConfig.load("3x16_i8w8a32_15_15_18_17")


def test_unknown_and_mistyped_json_fields(tmp_path):
    with pytest.raises(ConfigError, match="bogus"):
        VTAConfig.from_dict({"bogus": 1})
    with pytest.raises(ConfigError, match="log_block"):
        VTAConfig.from_dict({"log_block": "4"})
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot read"):
        VTAConfig.from_json(bad)
