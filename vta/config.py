"""`VTAConfig`: the one description of an accelerator instance.

Every width, depth and ISA field size anywhere (Python, the Verilog header, drivers) is derived
from a `VTAConfig`. Presets live in `vta/configs/*.json`; a config is addressable by its preset
name (``"pynq"``) or by the reference configuration string (``"1x16_i8w8a32_15_15_18_17"``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from functools import cached_property
from pathlib import Path

from . import isa
from .errors import ConfigError
from .isa import MemType

CONFIG_DIR = Path(__file__).with_name("configs")
DEFAULT_CONFIG = "pynq"

_CONFIG_STRING = re.compile(r"^(\d+)x(\d+)_i(\d+)w(\d+)a(\d+)_(\d+)_(\d+)_(\d+)_(\d+)$")


def _log2(value: int, field: str) -> int:
    if value <= 0 or value & (value - 1):
        raise ConfigError(f"config field {field!r} = {value} must be a power of two")
    return value.bit_length() - 1


@dataclasses.dataclass(frozen=True)
class VTAConfig:
    """A VTA instance: datapath shape, buffer sizes, clock, memory bus and timing model."""

    name: str = DEFAULT_CONFIG
    description: str = ""
    target: str = "pynq"
    hw_ver: str = "0.0.2"
    log_inp_width: int = 3
    log_wgt_width: int = 3
    log_acc_width: int = 5
    log_batch: int = 0
    log_block: int = 4
    log_uop_buff_size: int = 15
    log_inp_buff_size: int = 15
    log_wgt_buff_size: int = 18
    log_acc_buff_size: int = 17
    clock_mhz: float = 100.0
    log_bus_width: int = 6
    alu_mul: bool = False
    # REQ (requantize) ALU opcode: add + arithmetic shift + clip in one op (our extension; False
    # is the reference ISA exactly).
    alu_requant: bool = False
    fpga_part: str = "xc7z020clg484-1"
    # Queues (reference block design: command FIFOs 512 deep, token FIFOs 1024 deep).
    cmd_queue_depth: int = 512
    token_queue_depth: int = 1024
    # Timing model shared by the cycle simulator and the RTL (calibrated against each other).
    dram_latency: int = 32
    max_burst_beats: int = 16
    max_outstanding: int = 4
    gemm_pipeline_depth: int = 4
    alu_pipeline_depth: int = 4
    alu_ii_tensor: int = 2
    alu_ii_imm: int = 1

    def __post_init__(self) -> None:
        self._check()

    # ----------------------------------------------------------------------------- loading
    @classmethod
    def load(cls, name_or_path: str | Path | None = None) -> VTAConfig:
        """Load a preset by name, a reference configuration string, or a JSON file path."""
        if name_or_path is None:
            name_or_path = DEFAULT_CONFIG
        if isinstance(name_or_path, VTAConfig):
            return name_or_path
        text = str(name_or_path)
        preset = CONFIG_DIR / f"{text}.json"
        if preset.is_file():
            return cls.from_json(preset)
        path = Path(text)
        if text.endswith(".json") and path.is_file():
            return cls.from_json(path)
        match = _CONFIG_STRING.match(text)
        if match:
            for preset_path in sorted(CONFIG_DIR.glob("*.json")):
                cfg = cls.from_json(preset_path)
                if cfg.config_string == text:
                    return cfg
            return cls._from_config_string(text, match)
        raise ConfigError(
            f"unknown configuration {text!r}: use a preset ({', '.join(preset_names())}), "
            "a configuration string such as '1x16_i8w8a32_15_15_18_17', or a .json file"
        )

    @classmethod
    def from_json(cls, path: str | Path) -> VTAConfig:
        """Read a configuration from a JSON file, rejecting unknown keys."""
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ConfigError(f"cannot read configuration {path}: {err}") from err
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: dict, source: str = "<dict>") -> VTAConfig:
        """Build a configuration from a dict, rejecting unknown keys and wrong types."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise ConfigError(f"{source}: unknown config field(s) {unknown}")
        for key, value in data.items():
            default = fields[key].default
            want = type(default)
            ok = isinstance(value, want) or (want is float and isinstance(value, int))
            if not ok or (want is int and isinstance(value, bool)):
                raise ConfigError(
                    f"{source}: config field {key!r} must be {want.__name__}, got {value!r}"
                )
        return cls(**data)

    @classmethod
    def _from_config_string(cls, text: str, match: re.Match) -> VTAConfig:
        batch, block, inp, wgt, acc, uop_s, inp_s, wgt_s, acc_s = (int(g) for g in match.groups())
        return cls(
            name=text,
            log_batch=_log2(batch, "batch"),
            log_block=_log2(block, "block"),
            log_inp_width=_log2(inp, "inp_width"),
            log_wgt_width=_log2(wgt, "wgt_width"),
            log_acc_width=_log2(acc, "acc_width"),
            log_uop_buff_size=uop_s,
            log_inp_buff_size=inp_s,
            log_wgt_buff_size=wgt_s,
            log_acc_buff_size=acc_s,
        )

    def replace(self, **changes) -> VTAConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    # ----------------------------------------------------------------------------- widths
    @property
    def batch(self) -> int:
        return 1 << self.log_batch

    @property
    def block_in(self) -> int:
        return 1 << self.log_block

    @property
    def block_out(self) -> int:
        return 1 << self.log_block

    @property
    def inp_width(self) -> int:
        return 1 << self.log_inp_width

    @property
    def wgt_width(self) -> int:
        return 1 << self.log_wgt_width

    @property
    def acc_width(self) -> int:
        return 1 << self.log_acc_width

    @property
    def out_width(self) -> int:
        return self.inp_width

    @property
    def bus_width(self) -> int:
        """AXI data bus width in bits."""
        return 1 << self.log_bus_width

    @property
    def bus_bytes(self) -> int:
        return self.bus_width // 8

    # ----------------------------------------------------------------------------- buffers
    @cached_property
    def elem_bits(self) -> dict[MemType, int]:
        """Bits of one SRAM element (one tensor) per buffer."""
        return {
            MemType.UOP: isa.UOP_BITS,
            MemType.INP: self.inp_width * self.batch * self.block_in,
            MemType.WGT: self.wgt_width * self.block_out * self.block_in,
            MemType.ACC: self.acc_width * self.batch * self.block_out,
            MemType.OUT: self.out_width * self.batch * self.block_out,
        }

    @cached_property
    def elem_bytes(self) -> dict[MemType, int]:
        return {k: v // 8 for k, v in self.elem_bits.items()}

    @cached_property
    def buff_bytes(self) -> dict[MemType, int]:
        log_out = self.log_acc_buff_size + self.log_inp_width - self.log_acc_width
        return {
            MemType.UOP: 1 << self.log_uop_buff_size,
            MemType.INP: 1 << self.log_inp_buff_size,
            MemType.WGT: 1 << self.log_wgt_buff_size,
            MemType.ACC: 1 << self.log_acc_buff_size,
            MemType.OUT: 1 << log_out,
        }

    @cached_property
    def depth(self) -> dict[MemType, int]:
        """Entries (elements) of each on-chip buffer."""
        return {k: self.buff_bytes[k] // self.elem_bytes[k] for k in self.buff_bytes}

    @cached_property
    def log_depth(self) -> dict[MemType, int]:
        return {k: v.bit_length() - 1 for k, v in self.depth.items()}

    @property
    def macs_per_cycle(self) -> int:
        return self.batch * self.block_in * self.block_out

    @property
    def peak_gops(self) -> float:
        """Peak int8 throughput (2 ops per MAC) at the configured clock."""
        return 2 * self.macs_per_cycle * self.clock_mhz * 1e6 / 1e9

    @property
    def config_string(self) -> str:
        """The reference's bitstream name, e.g. ``1x16_i8w8a32_15_15_18_17``."""
        return (
            f"{self.batch}x{self.block_in}_i{self.inp_width}w{self.wgt_width}a{self.acc_width}"
            f"_{self.log_uop_buff_size}_{self.log_inp_buff_size}"
            f"_{self.log_wgt_buff_size}_{self.log_acc_buff_size}"
        )

    # ----------------------------------------------------------------------------- checks
    def _check(self) -> None:
        def need(cond: bool, field: str, msg: str) -> None:
            if not cond:
                raise ConfigError(f"config {self.name!r}: field {field!r} {msg}")

        need(self.log_inp_width == 3, "log_inp_width", "must be 3 (int8 inputs are supported)")
        need(self.log_wgt_width == 3, "log_wgt_width", "must be 3 (int8 weights are supported)")
        need(self.log_acc_width == 5, "log_acc_width", "must be 5 (int32 accumulators)")
        need(0 <= self.log_batch <= 4, "log_batch", "must be in [0, 4]")
        need(1 <= self.log_block <= 6, "log_block", "must be in [1, 6]")
        need(3 <= self.log_bus_width <= 9, "log_bus_width", "must be in [3, 9] (8..512-bit bus)")
        need(self.clock_mhz > 0, "clock_mhz", "must be positive")
        for mem, field in isa.DEPTH_FIELDS.items():
            value = getattr(self, field)
            need(value >= 0, field, "must be non-negative")
            elem_bytes = self.elem_bytes[mem]
            need(
                (1 << value) >= elem_bytes,
                field,
                f"= {value}: the buffer must hold at least one {elem_bytes}-byte element",
            )
            depth_bits = value - (elem_bytes.bit_length() - 1)
            need(
                depth_bits <= isa.MEM_SRAM_BASE_WIDTH,
                field,
                f"= {value}: {1 << depth_bits} entries overflow the {isa.MEM_SRAM_BASE_WIDTH}-bit "
                "sram_base field",
            )
        need(
            self.elem_bytes[MemType.WGT] <= 4096,
            "log_block",
            "gives weight tiles above the 4 KiB page size",
        )
        isa.check_encodable(self)
        for field in ("cmd_queue_depth", "token_queue_depth", "max_burst_beats"):
            _log2(getattr(self, field), field)
        for field in (
            "dram_latency",
            "max_outstanding",
            "gemm_pipeline_depth",
            "alu_pipeline_depth",
            "alu_ii_tensor",
            "alu_ii_imm",
        ):
            need(getattr(self, field) >= 1, field, "must be >= 1")


def preset_names() -> list[str]:
    """Names of the shipped configuration presets."""
    return sorted(p.stem for p in CONFIG_DIR.glob("*.json"))


def load_config(name: str | Path | VTAConfig | None = None) -> VTAConfig:
    """Shorthand for `VTAConfig.load`."""
    return VTAConfig.load(name)
