"""Generate the RTL's Verilog configuration header `vta_config.vh` from a `VTAConfig`.

Every number the RTL uses (datapath shape, buffer geometry, ISA field positions from
`vta.isa.layouts`, micro-op layout, queue depths, timing-model parameters, register map) comes
from here, so the Verilog never holds a hand-edited constant. The header is a list of
`define`s (usable in port lists); every RTL file includes it.
"""

from __future__ import annotations

from . import regmap
from .config import VTAConfig
from .errors import ConfigError
from .isa import (
    INSN_BITS,
    INSN_BYTES,
    LOAD_ROUTES,
    REQ_RELU_BIT,
    REQ_SHIFT_MASK,
    STORE_TYPES,
    UOP_BITS,
    AluOp,
    MemType,
    Module,
    Opcode,
    layouts,
    uop_layout,
)

# AXI4 signal widths and the constant fields of our masters' requests.
AXI_ADDR_BITS = 32
AXI_LEN_BITS = 8  # AxLEN: bursts of 1..256 beats
AXI_RESP_BITS = 2  # xRESP (0 = OKAY)
AXI_ID_BITS = 1  # one ID per master: its transactions complete in order
AXI_SIZE_BITS = 3  # AxSIZE: log2 bytes per beat (always the full bus)
AXI_BURST_BITS = 2
AXI_BURST_INCR = 1  # incrementing bursts
AXI_CACHE_BITS = 4
AXI_CACHE = 0b1111  # write-back, read- and write-allocate: coherent through the PS's ACP/HPC ports
AXI_PROT_BITS = 3
AXI_PROT = 0b000  # data, secure, unprivileged
AXI_QOS_BITS = 4
PAGE_BYTES = 4096  # AXI bursts never cross a 4 KiB boundary

# vta_compute.v's micro-op pipeline: the stage (cycles after issue) whose combinational result
# enters the first result register, per kind of micro-op. A micro-op's ACC/OUT write happens
# its latency (pipeline depth + issue interval - 1) cycles after issue, so that the last write
# lands in the instruction's last cycle; the register that holds it then is its write tap.
GEMM_RESULT_STAGE = 3
ALU_IMM_RESULT_STAGE = 2
ALU_TENSOR_RESULT_STAGE = 3


def _clog2(value: int) -> int:
    return max(1, (value - 1).bit_length())


def _micro_op_timing(cfg: VTAConfig) -> dict[str, tuple[int, int]]:
    """Kind of micro-op -> (latency from issue to its ACC write, write tap) in vta_compute.v."""
    kinds = {
        "GEMM": (cfg.gemm_pipeline_depth, 1, GEMM_RESULT_STAGE),
        "ALU_IMM": (cfg.alu_pipeline_depth, cfg.alu_ii_imm, ALU_IMM_RESULT_STAGE),
        "ALU_TENSOR": (cfg.alu_pipeline_depth, cfg.alu_ii_tensor, ALU_TENSOR_RESULT_STAGE),
    }
    out = {}
    for kind, (depth, interval, stage) in kinds.items():
        latency = depth + interval - 1
        out[kind] = (latency, latency - stage)
    return out


def _check(cfg: VTAConfig) -> None:
    """Reject timing parameters the RTL pipeline cannot realize, naming the field."""

    def need(cond: bool, field: str, msg: str) -> None:
        if not cond:
            raise ConfigError(f"config {cfg.name!r}: field {field!r} {msg} for the RTL")

    need(cfg.alu_ii_tensor >= 2, "alu_ii_tensor", "must be >= 2 (two ACC reads per micro-op)")
    taps = _micro_op_timing(cfg)
    need(
        taps["GEMM"][1] >= 1,
        "gemm_pipeline_depth",
        f"must be >= {GEMM_RESULT_STAGE + 1}",
    )
    need(
        min(taps["ALU_IMM"][1], taps["ALU_TENSOR"][1]) >= 1,
        "alu_pipeline_depth",
        f"plus the ALU issue interval (alu_ii_imm, alu_ii_tensor - 1) must be >= "
        f"{ALU_IMM_RESULT_STAGE + 2}",
    )
    need(cfg.bus_bytes <= 16, "log_bus_width", "must be <= 7 (fetch takes whole instructions)")
    for buf in (MemType.WGT, MemType.ACC):
        need(
            cfg.elem_bytes[buf] >= cfg.bus_bytes,
            "log_bus_width",
            f"must give a bus no wider than one {buf.name} element",
        )
    need(cfg.max_burst_beats <= 256, "max_burst_beats", "must be <= 256 (AXI4 burst limit)")
    need(
        cfg.max_burst_beats * cfg.bus_bytes <= PAGE_BYTES,
        "max_burst_beats",
        f"x bus bytes must be <= {PAGE_BYTES}",
    )


def _mask(members) -> int:
    return sum(1 << int(m) for m in members)


def _routing() -> list[tuple[str, int]]:
    """Fetch's routing table as bit masks over memory types and opcodes."""
    to_load = [m for m, module in LOAD_ROUTES.items() if module == Module.LOAD]
    compute_ops = [op for op in Opcode if op not in (Opcode.LOAD, Opcode.STORE)]
    return [
        ("LOAD_MODULE_MEMTYPES", _mask(to_load)),  # LOADs of these run on the load module
        ("LOADABLE_MEMTYPES", _mask(LOAD_ROUTES)),  # the rest of these on compute
        ("STORABLE_MEMTYPES", _mask(STORE_TYPES)),
        ("COMPUTE_OPCODES", _mask(compute_ops)),  # always on compute
    ]


def header_params(cfg: VTAConfig) -> dict[str, int]:
    """Name -> value of every parameter in the header (names without the `VTA_` prefix)."""
    _check(cfg)
    timing = _micro_op_timing(cfg)
    pairs: list[tuple[str, int]] = [
        ("INSN_BITS", INSN_BITS),
        ("LOG_INSN_BYTES", INSN_BYTES.bit_length() - 1),
        ("UOP_BITS", UOP_BITS),
        ("BATCH", cfg.batch),
        ("BLOCK_IN", cfg.block_in),
        ("BLOCK_OUT", cfg.block_out),
        ("INP_WIDTH", cfg.inp_width),
        ("WGT_WIDTH", cfg.wgt_width),
        ("ACC_WIDTH", cfg.acc_width),
        ("OUT_WIDTH", cfg.out_width),
        ("ALU_MUL_ENABLED", int(cfg.alu_mul)),
        ("ALU_REQUANT_ENABLED", int(cfg.alu_requant)),
        ("BUS_BITS", cfg.bus_width),
        ("BUS_BYTES", cfg.bus_bytes),
        ("LOG_BUS_BYTES", cfg.bus_bytes.bit_length() - 1),
        ("AXI_ADDR_BITS", AXI_ADDR_BITS),
        ("AXI_LEN_BITS", AXI_LEN_BITS),
        ("AXI_RESP_BITS", AXI_RESP_BITS),
        ("AXI_ID_BITS", AXI_ID_BITS),
        ("AXI_SIZE_BITS", AXI_SIZE_BITS),
        ("AXI_BURST_BITS", AXI_BURST_BITS),
        ("AXI_BURST_INCR", AXI_BURST_INCR),
        ("AXI_CACHE_BITS", AXI_CACHE_BITS),
        ("AXI_CACHE", AXI_CACHE),
        ("AXI_PROT_BITS", AXI_PROT_BITS),
        ("AXI_PROT", AXI_PROT),
        ("AXI_QOS_BITS", AXI_QOS_BITS),
        ("PAGE_BYTES", PAGE_BYTES),
        ("CMD_QUEUE_DEPTH", cfg.cmd_queue_depth),
        ("LOG_CMD_QUEUE_DEPTH", cfg.cmd_queue_depth.bit_length() - 1),
        ("TOKEN_QUEUE_DEPTH", cfg.token_queue_depth),
        ("LOG_TOKEN_QUEUE_DEPTH", cfg.token_queue_depth.bit_length() - 1),
        ("MAX_BURST_BEATS", cfg.max_burst_beats),
        ("MAX_OUTSTANDING", cfg.max_outstanding),
        ("LOG_MAX_OUTSTANDING", _clog2(cfg.max_outstanding + 1)),
        ("GEMM_PIPE", cfg.gemm_pipeline_depth),
        ("ALU_PIPE", cfg.alu_pipeline_depth),
        ("ALU_II_TENSOR", cfg.alu_ii_tensor),
        ("ALU_II_IMM", cfg.alu_ii_imm),
        ("ALU_II_BITS", _clog2(max(cfg.alu_ii_imm, cfg.alu_ii_tensor) + 1)),
        ("ALU_REQ_SHIFT_BITS", REQ_SHIFT_MASK.bit_length()),
        ("ALU_REQ_RELU_BIT", REQ_RELU_BIT.bit_length() - 1),
    ]
    for kind, (latency, tap) in timing.items():
        pairs.append((f"{kind}_LATENCY", latency))
        pairs.append((f"{kind}_WRITE_TAP", tap))
    latencies = [latency for latency, _ in timing.values()]
    taps = max(tap for _, tap in timing.values())
    pairs.append(("WRITE_TAPS", taps))
    pairs.append(("WRITE_TAP_BITS", _clog2(taps + 1)))
    pairs.append(("DRAIN_BITS", _clog2(max(latencies + [cfg.alu_pipeline_depth]) + 1)))
    for buf in cfg.depth:
        key = buf.name
        pairs.append((f"{key}_ELEM_BITS", cfg.elem_bits[buf]))
        pairs.append((f"{key}_ELEM_BYTES", cfg.elem_bytes[buf]))
        pairs.append((f"LOG_{key}_ELEM_BYTES", cfg.elem_bytes[buf].bit_length() - 1))
        pairs.append((f"{key}_DEPTH", cfg.depth[buf]))
        pairs.append((f"LOG_{key}_DEPTH", cfg.log_depth[buf]))
        # an element narrower than the bus: the buffer is split into banks, one per bus lane
        log_banks = max(0, cfg.log_bus_width - 3 - (cfg.elem_bytes[buf].bit_length() - 1))
        pairs.append((f"LOG_{key}_BANKS", log_banks))
        pairs.append((f"{key}_BANKS", 1 << log_banks))
        pairs.append((f"{key}_BANK_AW", cfg.log_depth[buf] - log_banks))
    for field in uop_layout(cfg):
        key = field.name.upper().removesuffix("_IDX")
        pairs.append((f"UOP_{key}_LSB", field.lsb))
        pairs.append((f"UOP_{key}_W", field.width))
    for family, fields in layouts(cfg).items():
        for field in fields:
            name = f"{family.upper()}_{field.name.upper()}"
            pairs.append((f"{name}_LSB", field.lsb))
            pairs.append((f"{name}_W", field.width))
    for enum in (Opcode, MemType, AluOp, Module):
        prefix = {"Opcode": "OP", "MemType": "MEM", "AluOp": "ALUOP", "Module": "MODULE"}
        for member in enum:
            pairs.append((f"{prefix[enum.__name__]}_{member.name}", int(member)))
    pairs += _routing()
    for name, offset in regmap.REGISTERS.items():
        pairs.append((f"REG_{name}", offset))
    pairs.append(("REG_COUNTERS_BASE", regmap.COUNTERS_BASE))
    pairs.append(("COUNTERS", regmap.N_COUNTERS))
    pairs.append(("COUNTER_KINDS", len(regmap.COUNTER_KINDS)))
    for index, unit in enumerate(regmap.COUNTER_UNITS):
        pairs.append((f"COUNTER_UNIT_{unit.upper()}", index))
    for index, kind in enumerate(regmap.COUNTER_KINDS):
        pairs.append((f"COUNTER_{kind.upper()}", index))
    pairs.append(("REG_ADDR_BITS", regmap.ADDR_BITS))
    pairs.append(("REG_BITS", regmap.REG_BITS))
    pairs.append(("CYCLES_BITS", regmap.CYCLES_BITS))
    pairs.append(("CONTROL_START_BIT", regmap.CONTROL_START.bit_length() - 1))
    pairs.append(("CONTROL_DONE_BIT", regmap.CONTROL_DONE.bit_length() - 1))
    pairs.append(("CONTROL_BUSY_BIT", regmap.CONTROL_BUSY.bit_length() - 1))
    for name, bit in regmap.STATUS_BITS.items():
        pairs.append((f"STATUS_{name}_BIT", bit.bit_length() - 1))
    pairs.append(("STATUS_BITS", len(regmap.STATUS_BITS)))
    pairs.append(("HW_ID_VALUE", regmap.HW_ID_VALUE))
    out: dict[str, int] = {}
    for name, value in pairs:
        if name in out:
            raise AssertionError(f"header parameter VTA_{name} is defined twice")
        out[name] = value
    return out


def generate_header(cfg: VTAConfig) -> str:
    """The text of `vta_config.vh` for `cfg` (deterministic: same config, same bytes)."""
    lines = [
        f"// vta_config.vh: generated by vta.hwconfig from config {cfg.name!r} "
        f"({cfg.config_string}). Do not edit.",
        "`ifndef VTA_CONFIG_VH",
        "`define VTA_CONFIG_VH",
    ]
    for name, value in header_params(cfg).items():
        lines.append(f"`define VTA_{name} {value}")
    lines.append("`endif")
    return "\n".join(lines) + "\n"
