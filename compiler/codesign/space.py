"""The hardware space: design points over `VTAConfig`'s fields, legal for the ISA's field widths
and a target part's memory port.

A point names its buffers by depth (log2 of the entries), not bytes: the ISA's index fields
(sram_base, the micro-op and GEMM loop fields) are widths of depths, so a depth that encodes for
one GEMM shape encodes for every shape, and a point's bytes follow from its shape. A point the
ISA cannot encode is refused with `VTAConfig`'s reason; `HardwareSpace.legalize` proposes the
nearest legal depths instead.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterator

from hw.parts import Part, part_for
from vta.config import VTAConfig
from vta.errors import ConfigError
from vta.isa import MemType

# The part names each target's preset uses (the full part, package and speed grade).
PRESET_OF_PART = {"xc7z020": "pynq", "xczu3eg": "ultra96"}
# The fastest clock a point may run at on each part: the processing system's fabric clocks
# (Zynq-7000 FCLK and Zynq UltraScale+ PL clocks as the board presets use them).
MAX_CLOCK_MHZ = {"xc7z020": 250.0, "xczu3eg": 333.0}
CLOCK_STEP_MHZ = 5.0  # a point's clock: its estimated Fmax rounded down to this step


@dataclasses.dataclass(frozen=True, order=True)
class Point:
    """One accelerator design: GEMM batch x block (BLOCK_IN) x block_out (BLOCK_OUT; 0, the
    default, makes it `block`), log2 depths of the input, weight, accumulator and micro-op
    buffers, the bus width in bits and the ALU options."""

    batch: int = 1
    block: int = 16
    inp_depth: int = 11
    wgt_depth: int = 10
    acc_depth: int = 11
    uop_depth: int = 13
    bus: int = 64
    requant: bool = True
    mul: bool = False
    block_out: int = 0

    def __post_init__(self) -> None:
        if not self.block_out:  # one form per design: equal blocks name block_out too
            object.__setattr__(self, "block_out", self.block)

    @property
    def label(self) -> str:
        """A configuration name: ``1x16x16-i11w10a11u13-b64-rq`` (batch x BLOCK_IN x
        BLOCK_OUT)."""
        alu = "".join(flag for flag, on in (("rq", self.requant), ("mul", self.mul)) if on)
        return (
            f"{self.batch}x{self.block}x{self.block_out}-i{self.inp_depth}w{self.wgt_depth}"
            f"a{self.acc_depth}u{self.uop_depth}-b{self.bus}" + (f"-{alu}" if alu else "")
        )

    @property
    def shape(self) -> str:
        """The GEMM: batch x BLOCK_IN x BLOCK_OUT."""
        return f"{self.batch}x{self.block}x{self.block_out}"

    def features(self) -> list[float]:
        """The point as numbers for a surrogate model (logarithms of the sizes)."""
        return [
            math.log2(self.batch),
            math.log2(self.block),
            math.log2(self.block_out),
            self.inp_depth,
            self.wgt_depth,
            self.acc_depth,
            self.uop_depth,
            math.log2(self.bus),
            float(self.requant),
            float(self.mul),
        ]

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _log2(value: int, what: str) -> int:
    if value < 1 or value & (value - 1):
        raise ConfigError(f"design point: {what} = {value} must be a power of two")
    return value.bit_length() - 1


def to_config(point: Point, part: Part, clock_mhz: float, base: VTAConfig) -> VTAConfig:
    """The `VTAConfig` of `point` on `part` at `clock_mhz`, the rest (queues, timing model,
    micro-op buffer) as in `base`; a point the ISA cannot encode raises `ConfigError`."""
    log_batch, log_block = _log2(point.batch, "batch"), _log2(point.block, "block")
    log_out = _log2(point.block_out, "block_out")
    log_bus = _log2(point.bus, "bus")
    # bytes of one element: inputs batch x BLOCK_IN int8, weights BLOCK_OUT x BLOCK_IN int8,
    # accumulators batch x BLOCK_OUT int32
    inp = point.inp_depth + log_batch + log_block
    wgt = point.wgt_depth + log_block + log_out
    acc = point.acc_depth + log_batch + log_out + 2
    uop = point.uop_depth + 2  # a micro-op is 4 bytes
    return base.replace(
        name=point.label,
        description=f"co-design point {point.label} on {part.name}",
        log_batch=log_batch,
        log_block=log_block,
        log_block_out=log_out,
        log_inp_buff_size=inp,
        log_wgt_buff_size=wgt,
        log_acc_buff_size=acc,
        log_uop_buff_size=uop,
        log_bus_width=log_bus,
        alu_requant=point.requant,
        alu_mul=point.mul,
        clock_mhz=clock_mhz,
        fpga_part=part_name(part, base),
    )


def part_name(part: Part, base: VTAConfig) -> str:
    """The full part name (package, speed grade) for `part`: the base configuration's when it
    is that part, else the part's preset's."""
    if base.fpga_part.startswith(part.name):
        return base.fpga_part
    return VTAConfig.load(PRESET_OF_PART[part.name]).fpga_part


def point_of(cfg: VTAConfig) -> Point:
    """The design point of a configuration (a preset's, to compare against)."""
    return Point(
        cfg.batch,
        cfg.block_in,
        cfg.log_depth[MemType.INP],
        cfg.log_depth[MemType.WGT],
        cfg.log_depth[MemType.ACC],
        cfg.log_depth[MemType.UOP],
        cfg.bus_width,
        cfg.alu_requant,
        cfg.alu_mul,
        cfg.block_out,
    )


# The dimensions searched and the values each may take.
DIMENSIONS: dict[str, tuple] = {
    "batch": (1, 2),
    "block": (8, 16, 32),
    "block_out": (8, 16, 32),
    "inp_depth": (9, 10, 11, 12, 13),
    "wgt_depth": (8, 9, 10, 11, 12),
    "acc_depth": (9, 10, 11, 12, 13),
    "uop_depth": (11, 12, 13),
    "bus": (64, 128),
    "requant": (True, False),
    "mul": (False, True),
}
# A reduced space for the exhaustive grid (the benchmark's ground truth).
REDUCED: dict[str, tuple] = {
    "batch": (1,),
    "block": (8, 16, 32),
    "inp_depth": (9, 10, 11, 12),
    "wgt_depth": (7, 8, 9, 10),
    "acc_depth": (9, 10, 11, 12),
    "uop_depth": (13,),
    "bus": (64, 128),
    "requant": (True,),
    "mul": (False,),
}


class HardwareSpace:
    """The design points of `dimensions` legal for `part`: the bus no wider than the part's
    memory port, every field encodable (`to_config`), and (`model_batch`) a GEMM batch that
    divides the network's."""

    def __init__(
        self,
        part: str | Part = "xc7z020",
        dimensions: dict[str, tuple] | None = None,
        base: VTAConfig | None = None,
        model_batch: int | None = None,
    ):
        self.part = part if isinstance(part, Part) else part_for(part)
        self.dimensions = dict(DIMENSIONS if dimensions is None else dimensions)
        unknown = set(self.dimensions) - {f.name for f in dataclasses.fields(Point)}
        if unknown:
            raise ConfigError(f"unknown design-point dimension(s) {sorted(unknown)}")
        self.dimensions["bus"] = tuple(b for b in self.dimensions["bus"] if b <= self.part.bus_bits)
        if not self.dimensions["bus"]:
            raise ConfigError(f"no bus width fits {self.part.name}'s {self.part.bus_bits}-bit port")
        if model_batch is not None:
            self.dimensions["batch"] = tuple(
                b for b in self.dimensions["batch"] if model_batch % b == 0
            ) or (1,)
        self.base = base or VTAConfig.load(PRESET_OF_PART.get(self.part.name, "pynq"))

    def config(self, point: Point, clock_mhz: float | None = None) -> VTAConfig:
        """`point` as a configuration on this space's part (`to_config`)."""
        clock = self.base.clock_mhz if clock_mhz is None else clock_mhz
        return to_config(point, self.part, clock, self.base)

    def why_illegal(self, point: Point) -> str | None:
        """None for a legal point, else the reason."""
        if point.bus > self.part.bus_bits:
            port = self.part.bus_bits
            return f"a {point.bus}-bit bus is wider than {self.part.name}'s {port}-bit port"
        try:
            self.config(point)
        except ConfigError as err:
            return str(err)
        return None

    def legalize(self, point: Point) -> tuple[Point, list[str]]:
        """The legal point nearest `point` (the bus narrowed to the part's, then the deepest
        buffer made shallower, one step at a time) and the changes made; ConfigError when no
        depth is legal."""
        changes = []
        if point.bus > self.part.bus_bits:
            point = dataclasses.replace(point, bus=self.part.bus_bits)
            changes.append(f"bus {self.part.bus_bits}")
        while self.why_illegal(point) is not None:
            depths = {
                f: getattr(point, f) for f in ("inp_depth", "wgt_depth", "acc_depth", "uop_depth")
            }
            field = max(depths, key=lambda f: (depths[f], f))
            if depths[field] <= 1:
                raise ConfigError(f"no buffer depths make {point.label} legal")
            point = dataclasses.replace(point, **{field: depths[field] - 1})
            changes.append(f"{field} {depths[field] - 1}")
        return point, changes

    def grid(self) -> Iterator[Point]:
        """Every legal point, in a fixed order."""
        names = list(self.dimensions)
        for values in itertools.product(*(self.dimensions[n] for n in names)):
            point = Point(**dict(zip(names, values, strict=True)))
            if self.why_illegal(point) is None:
                yield point
