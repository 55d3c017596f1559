"""The generated Verilog header and the register map: every number derived, none invented."""

import re

import pytest

from testkit.examples import UNEQUAL_BLOCKS, unequal_blocks
from vta import hwconfig, regmap
from vta.config import VTAConfig, preset_names
from vta.errors import ConfigError
from vta.hwconfig import generate_header, header_params
from vta.isa import AluOp, MemType, Opcode, layouts, uop_layout

DEFINE = re.compile(r"^`define (VTA_\w+) (-?\d+)$")


def parse(text: str) -> dict[str, int]:
    values = {}
    for line in text.splitlines():
        match = DEFINE.match(line)
        if match:
            assert match.group(1) not in values, f"{match.group(1)} defined twice"
            values[match.group(1)] = int(match.group(2))
    return values


@pytest.mark.parametrize("preset", preset_names())
def test_header_carries_every_isa_field_position(preset):
    cfg = VTAConfig.load(preset)
    values = parse(generate_header(cfg))
    for family, fields in layouts(cfg).items():
        for field in fields:
            name = f"VTA_{family.upper()}_{field.name.upper()}"
            assert values[f"{name}_LSB"] == field.lsb
            assert values[f"{name}_W"] == field.width
    for field in uop_layout(cfg):
        key = field.name.upper().removesuffix("_IDX")
        assert (values[f"VTA_UOP_{key}_LSB"], values[f"VTA_UOP_{key}_W"]) == (
            field.lsb,
            field.width,
        )
    for enum, prefix in ((Opcode, "OP"), (MemType, "MEM"), (AluOp, "ALUOP")):
        for member in enum:
            assert values[f"VTA_{prefix}_{member.name}"] == member.value


@pytest.mark.parametrize("preset", [*preset_names(), *UNEQUAL_BLOCKS])
def test_header_geometry_and_timing_come_from_the_config(preset):
    cfg = unequal_blocks(preset) if preset in UNEQUAL_BLOCKS else VTAConfig.load(preset)
    values = parse(generate_header(cfg))
    assert (values["VTA_BLOCK_IN"], values["VTA_BLOCK_OUT"]) == (cfg.block_in, cfg.block_out)
    assert values["VTA_BUS_BITS"] == cfg.bus_width
    assert values["VTA_ALU_MUL_ENABLED"] == int(cfg.alu_mul)
    assert values["VTA_ALU_REQUANT_ENABLED"] == int(cfg.alu_requant)
    for buf in (MemType.UOP, MemType.INP, MemType.WGT, MemType.ACC, MemType.OUT):
        key = buf.name
        assert values[f"VTA_{key}_ELEM_BITS"] == cfg.elem_bits[buf]
        assert values[f"VTA_{key}_DEPTH"] == cfg.depth[buf]
        banks = values[f"VTA_{key}_BANKS"]
        assert banks * cfg.elem_bytes[buf] == max(cfg.bus_bytes, cfg.elem_bytes[buf])
        assert values[f"VTA_{key}_BANK_AW"] + values[f"VTA_LOG_{key}_BANKS"] == cfg.log_depth[buf]
    assert "VTA_DRAM_LATENCY" not in values  # the memory system is the harness's, set per run
    assert values["VTA_MAX_BURST_BEATS"] == cfg.max_burst_beats
    assert values["VTA_MAX_OUTSTANDING"] == cfg.max_outstanding
    assert values["VTA_GEMM_PIPE"] == cfg.gemm_pipeline_depth
    assert values["VTA_CMD_QUEUE_DEPTH"] == cfg.cmd_queue_depth
    assert values["VTA_TOKEN_QUEUE_DEPTH"] == cfg.token_queue_depth


@pytest.mark.parametrize("preset", preset_names())
def test_micro_op_write_taps_follow_the_timing_contract(preset):
    """A micro-op's ACC write lands latency = depth + interval - 1 cycles after its issue (so
    the last one lands in its instruction's last cycle), in the result register its kind's
    result stage leaves for it; the pipeline holds the deepest tap."""
    cfg = VTAConfig.load(preset)
    values = parse(generate_header(cfg))
    kinds = {
        "GEMM": (cfg.gemm_pipeline_depth, 1, hwconfig.GEMM_RESULT_STAGE),
        "ALU_IMM": (cfg.alu_pipeline_depth, cfg.alu_ii_imm, hwconfig.ALU_IMM_RESULT_STAGE),
        "ALU_TENSOR": (
            cfg.alu_pipeline_depth,
            cfg.alu_ii_tensor,
            hwconfig.ALU_TENSOR_RESULT_STAGE,
        ),
    }
    taps = []
    for kind, (depth, interval, stage) in kinds.items():
        assert values[f"VTA_{kind}_LATENCY"] == depth + interval - 1
        assert values[f"VTA_{kind}_WRITE_TAP"] == depth + interval - 1 - stage >= 1
        taps.append(values[f"VTA_{kind}_WRITE_TAP"])
    assert values["VTA_WRITE_TAPS"] == max(taps)
    assert 1 << values["VTA_WRITE_TAP_BITS"] > max(taps)


def test_header_is_deterministic_and_differs_per_config():
    tiny, pynq = VTAConfig.load("tiny"), VTAConfig.load("pynq")
    assert generate_header(tiny) == generate_header(VTAConfig.load("tiny"))
    assert generate_header(tiny) != generate_header(pynq)
    deeper = tiny.replace(cmd_queue_depth=tiny.cmd_queue_depth * 2)
    assert parse(generate_header(deeper))["VTA_CMD_QUEUE_DEPTH"] == tiny.cmd_queue_depth * 2
    slower = tiny.replace(dram_latency=tiny.dram_latency + 1)  # no rebuild of the RTL model
    assert generate_header(slower) == generate_header(tiny)


@pytest.mark.parametrize(
    "field, value",
    [("gemm_pipeline_depth", 2), ("alu_ii_tensor", 1), ("log_bus_width", 8)],
)
def test_header_rejects_what_the_rtl_cannot_build(field, value):
    cfg = VTAConfig.load("tiny").replace(**{field: value})
    with pytest.raises(ConfigError, match=field):
        header_params(cfg)


def test_register_map_is_consistent():
    offsets = list(regmap.REGISTERS.values())
    assert len(set(offsets)) == len(offsets)
    assert all(off % 4 == 0 and off < 1 << regmap.ADDR_BITS for off in offsets)
    bits = list(regmap.STATUS_BITS.values())
    assert all(b & (b - 1) == 0 for b in bits) and len(set(bits)) == len(bits)
    values = parse(generate_header(VTAConfig.load("pynq")))
    for name, off in regmap.REGISTERS.items():
        assert values[f"VTA_REG_{name}"] == off
    assert values["VTA_HW_ID_VALUE"] == regmap.HW_ID_VALUE
    assert regmap.describe_status(0) == "ok"
    assert regmap.describe_status(regmap.STATUS_AXI_ERROR | regmap.STATUS_BAD_OPCODE) == (
        "BAD_OPCODE, AXI_ERROR"
    )


def test_cli_writes_the_header(tmp_path):
    from vta.cli import main

    out = tmp_path / "vta_config.vh"
    assert main(["hw-config", "--config", "tiny", "--out", str(out)]) == 0
    assert out.read_text() == generate_header(VTAConfig.load("tiny"))
