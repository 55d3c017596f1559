"""`VTAConfig`: the one description of an accelerator instance.

Every width, depth and ISA field size anywhere (Python, the Verilog header, drivers) is derived
from a `VTAConfig`. Presets live in `vta/configs/*.json`; a config is addressable by its preset
name (``"pynq"``) or by the reference configuration string (``"1x16_i8w8a32_15_15_18_17"``;
``"1x16x8_..."`` names a core whose BLOCK_OUT differs from its BLOCK_IN).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from functools import cached_property
from pathlib import Path

from . import isa
from .errors import ConfigError
from .isa import MemType

CONFIG_DIR = Path(__file__).with_name("configs")
DEFAULT_CONFIG = "pynq"

_CONFIG_STRING = re.compile(r"^(\d+)x(\d+)(?:x(\d+))?_i(\d+)w(\d+)a(\d+)_(\d+)_(\d+)_(\d+)_(\d+)$")
# A configuration name: a preset file's stem or a configuration string, never a path.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")
MAX_CONFIG_FILE_BYTES = 1 << 20
MAX_TEXT_CHARS = 1024  # description, target, hw_ver, fpga_part

# Inclusive ranges of the numeric fields (docs/robustness.md, "Configuration ranges"). The
# power-of-two and datapath rules of `_check` narrow some of them further.
RANGES: dict[str, tuple[float, float]] = {
    "log_uop_buff_size": (0, 30),
    "log_inp_buff_size": (0, 30),
    "log_wgt_buff_size": (0, 30),
    "log_acc_buff_size": (0, 30),
    "clock_mhz": (1, 2000),
    # One command-queue entry is not enough for the RTL's FIFO (its pointers need a bit).
    "cmd_queue_depth": (2, 1 << 16),
    "token_queue_depth": (1, 1 << 16),
    "dram_latency": (1, 1 << 16),
    "dram_beat_interval": (1, 1 << 10),
    "max_burst_beats": (1, 256),
    "max_outstanding": (1, 256),
    "gemm_pipeline_depth": (1, 64),
    "alu_pipeline_depth": (1, 64),
    "alu_ii_tensor": (1, 64),
    "alu_ii_imm": (1, 64),
}


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
    # BLOCK_IN; also BLOCK_OUT unless `log_block_out` is set (None: equal blocks, as the
    # reference's LOG_BLOCK).
    log_block: int = 4
    log_block_out: int | None = None
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
    fpga_part: str = "xc7z020clg400-1"
    # Queues (reference block design: command FIFOs 512 deep, token FIFOs 1024 deep).
    cmd_queue_depth: int = 512
    token_queue_depth: int = 1024
    # Timing model shared by the cycle simulator and the RTL (calibrated against each other).
    dram_latency: int = 32
    # Cycles between data beats on one master's port (1 = a bus word per cycle); with
    # dram_latency, the memory system's model (the RTL harness serves the same).
    dram_beat_interval: int = 1
    max_burst_beats: int = 16
    max_outstanding: int = 4
    gemm_pipeline_depth: int = 4
    alu_pipeline_depth: int = 4
    alu_ii_tensor: int = 2
    alu_ii_imm: int = 1

    def __post_init__(self) -> None:
        if self.log_block_out is not None and self.log_block_out == self.log_block:
            object.__setattr__(self, "log_block_out", None)  # one form per architecture
        self._check()

    # ----------------------------------------------------------------------------- loading
    @classmethod
    def load(cls, name_or_path: str | Path | None = None) -> VTAConfig:
        """Load a preset by name, a reference configuration string, or a JSON file path."""
        if name_or_path is None:
            name_or_path = DEFAULT_CONFIG
        if isinstance(name_or_path, VTAConfig):
            return name_or_path
        if not isinstance(name_or_path, (str, Path)):
            raise ConfigError(
                f"configuration must be a name or a path, got {type(name_or_path).__name__} "
                f"{name_or_path!r}"[:200]
            )
        text = str(name_or_path)
        if text.endswith(".json"):
            return cls.from_json(text)
        return cls.load_named(text)

    @classmethod
    def load_named(cls, text: str) -> VTAConfig:
        """A preset by name or a reference configuration string (never a file path)."""
        if not isinstance(text, str) or not _NAME.match(text):
            raise ConfigError(
                f"configuration name {text!r} is not a preset name or configuration string "
                "(letters, digits and _.+- only, at most 64 characters)"[:300]
            )
        preset = CONFIG_DIR / f"{text}.json"
        if preset.is_file():
            return cls.from_json(preset)
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
            with open(path, "rb") as fh:
                raw = fh.read(MAX_CONFIG_FILE_BYTES + 1)
        except OSError as err:
            raise ConfigError(f"cannot read configuration {path}: {err}") from err
        if len(raw) > MAX_CONFIG_FILE_BYTES:
            raise ConfigError(
                f"configuration {path}: larger than {MAX_CONFIG_FILE_BYTES:,} bytes, not a "
                "configuration file"
            )
        try:
            data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
        except UnicodeDecodeError as err:
            raise ConfigError(
                f"cannot read configuration {path}: not JSON text (byte {err.start} is not UTF-8)"
            ) from err
        except (ValueError, RecursionError) as err:
            why = _short(err)
            raise ConfigError(f"cannot read configuration {path}: not JSON ({why})") from None
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: dict, source: str = "<dict>") -> VTAConfig:
        """Build a configuration from a dict, rejecting unknown keys and wrong types."""
        if not isinstance(data, dict):
            raise ConfigError(
                f"{source}: a configuration is a JSON object of fields, got {type(data).__name__}"
            )
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(str(key)[:64] for key in set(data) - fields)
        if unknown:
            raise ConfigError(f"{source}: unknown config field(s) {unknown[:8]}")
        for key, value in data.items():
            _check_type(key, value, source)
        return cls(**data)

    @classmethod
    def _from_config_string(cls, text: str, match: re.Match) -> VTAConfig:
        batch, block, block_out, *rest = match.groups()
        inp, wgt, acc, uop_s, inp_s, wgt_s, acc_s = (int(g) for g in rest)
        return cls(
            name=text,
            log_batch=_log2(int(batch), "batch"),
            log_block=_log2(int(block), "block"),
            log_block_out=None if block_out is None else _log2(int(block_out), "block_out"),
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
        fields = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - fields)
        if unknown:
            raise ConfigError(f"config {self.name!r}: unknown config field(s) {unknown[:8]}")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The fields as JSON values; `log_block_out` only where it differs from `log_block`."""
        data = dataclasses.asdict(self)
        if self.log_block_out is None:
            del data["log_block_out"]
        return data

    # ----------------------------------------------------------------------------- widths
    @property
    def batch(self) -> int:
        return 1 << self.log_batch

    @property
    def block_in(self) -> int:
        return 1 << self.log_block

    @property
    def log2_block_out(self) -> int:
        """log2 of BLOCK_OUT."""
        return self.log_block if self.log_block_out is None else self.log_block_out

    @property
    def block_out(self) -> int:
        return 1 << self.log2_block_out

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
        """The reference's bitstream name, e.g. ``1x16_i8w8a32_15_15_18_17``; unequal blocks
        name BATCHxBLOCK_INxBLOCK_OUT, e.g. ``1x16x8_i8w8a32_15_15_18_17``."""
        out = "" if self.block_out == self.block_in else f"x{self.block_out}"
        return (
            f"{self.batch}x{self.block_in}{out}_i{self.inp_width}w{self.wgt_width}a{self.acc_width}"
            f"_{self.log_uop_buff_size}_{self.log_inp_buff_size}"
            f"_{self.log_wgt_buff_size}_{self.log_acc_buff_size}"
        )

    # ----------------------------------------------------------------------------- checks
    def _check(self) -> None:
        def need(cond: bool, field: str, msg: str) -> None:
            if not cond:
                raise ConfigError(f"config {self.name!r}: field {field!r} {msg}")

        source = f"config {str(self.name)[:64]!r}" if isinstance(self.name, str) else "config"
        for f in dataclasses.fields(self):
            _check_type(f.name, getattr(self, f.name), source)
        need(
            bool(_NAME.match(self.name)),
            "name",
            f"= {self.name[:64]!r} must be 1-64 letters, digits or _.+- (no path separators)",
        )
        need(self.log_inp_width == 3, "log_inp_width", "must be 3 (int8 inputs are supported)")
        need(self.log_wgt_width == 3, "log_wgt_width", "must be 3 (int8 weights are supported)")
        need(self.log_acc_width == 5, "log_acc_width", "must be 5 (int32 accumulators)")
        need(0 <= self.log_batch <= 4, "log_batch", "must be in [0, 4]")
        need(1 <= self.log_block <= 6, "log_block", "must be in [1, 6]")
        need(1 <= self.log2_block_out <= 6, "log_block_out", "must be in [1, 6]")
        need(3 <= self.log_bus_width <= 9, "log_bus_width", "must be in [3, 9] (8..512-bit bus)")
        for field, (lo, hi) in RANGES.items():
            value = getattr(self, field)
            need(lo <= value <= hi, field, f"= {value} must be in [{lo}, {hi}]")
        for mem, field in isa.DEPTH_FIELDS.items():
            value = getattr(self, field)
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
            "log_block" if self.log_block_out is None else "log_block_out",
            f"gives {self.block_out}x{self.block_in} weight tiles above the 4 KiB page size",
        )
        isa.check_encodable(self)
        for field in ("cmd_queue_depth", "token_queue_depth", "max_burst_beats"):
            _log2(getattr(self, field), field)


# Fields whose None means "as another field" (`log_block_out`: as `log_block`).
_OPTIONAL = frozenset({"log_block_out"})


def field_type(name: str) -> type | None:
    """The type of a configuration field's values (None for no such field)."""
    if name in _OPTIONAL:
        return int
    defaults = {f.name: f.default for f in dataclasses.fields(VTAConfig)}
    return type(defaults[name]) if name in defaults else None


def _check_type(key: str, value: object, source: str) -> None:
    """Raise ConfigError unless `value` has field `key`'s type (no bool for numbers, finite
    floats, bounded text)."""
    want = field_type(key)
    if value is None and key in _OPTIONAL:
        return
    if want is float:
        ok = isinstance(value, int) and not isinstance(value, bool)
        ok = ok or (isinstance(value, float) and math.isfinite(value))
        what = "a finite number"
    elif want is int:
        ok, what = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif want is bool:
        ok, what = isinstance(value, bool), "true or false"
    else:
        ok = isinstance(value, str) and len(value) <= MAX_TEXT_CHARS
        what = f"a string of at most {MAX_TEXT_CHARS} characters"
    if not ok:
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise ConfigError(
            f"{source}: config field {key!r} must be {what}, got {type(value).__name__} {shown}"
        )


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _short(err: Exception) -> str:
    text = str(err) or type(err).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def preset_names() -> list[str]:
    """Names of the shipped configuration presets."""
    return sorted(p.stem for p in CONFIG_DIR.glob("*.json"))


def load_config(name: str | Path | VTAConfig | None = None) -> VTAConfig:
    """Shorthand for `VTAConfig.load`."""
    return VTAConfig.load(name)
