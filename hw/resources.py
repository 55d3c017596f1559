"""The resource and clock model of a design point: what yosys `synth_xilinx` (hw/synth.py) would
report for a `VTAConfig` on a part, in milliseconds instead of minutes.

Counted, and exact against every run of the dataset (hw/data/synth_runs.json, tests/rtl):

- **BRAM36**: the memories the RTL instantiates (`memories`: each buffer's banks, width x
  depth from the generated header; the three command queues), each mapped as yosys's
  `memory_libmap` maps it: the cheapest of the block-RAM geometries (RAMB36 512x72 ... 32Kx1,
  RAMB18 512x36 ... 16Kx1, cascaded RAMB36 pairs), the family's LUT-RAM geometries and plain
  flip-flops, with the costs of yosys's library files (`brams_xc4v.txt`, `lutrams_*.txt`);
  a RAMB18 counts half a BRAM36.
- **DSP**: the GEMM core's multipliers (two int8 products per DSP48, vta_gemm_core.v:
  BATCH x BLOCK_OUT/2 x BLOCK_IN), one `y_size * x_size` multiplier per loader (vta_loader.v;
  two loaders of one module with equal address widths share it) and, with `alu_mul`, one
  32-bit multiplier per ALU lane (vta_alu.v), each split into DSP48 slices as yosys's `mul2dsp`
  splits it.

Fitted (linear least squares on features counted from the configuration; `hw/resource_fit.py`
refits them into hw/data/resource_model.json): LUT, FF and the estimated critical path.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

from vta.config import VTAConfig
from vta.errors import ConfigError
from vta.hwconfig import header_params
from vta.isa import MemType

from .parts import Part, part_for

MODEL = Path(__file__).resolve().parent / "data" / "resource_model.json"
LUT_LIMIT = 0.85  # a design point fits when it uses at most this share of the part's LUTs


@dataclasses.dataclass(frozen=True)
class Memory:
    """`count` identical memories of `width` bits x `depth` words (one write, one read port)."""

    name: str
    width: int
    depth: int
    count: int = 1


def memories(cfg: VTAConfig) -> list[Memory]:
    """Every memory of the RTL for `cfg`: the buffers' banks (vta_top.v, vta_compute.v) and the
    command queues (vta_fifo.v)."""
    h = header_params(cfg)
    out = [
        Memory("cmd_queue", h["INSN_BITS"], cfg.cmd_queue_depth, 3),
        Memory("wgt", h["WGT_ELEM_BITS"], cfg.depth[MemType.WGT]),
        Memory("acc", h["ACC_ELEM_BITS"], cfg.depth[MemType.ACC]),
    ]
    for name in ("INP", "OUT", "UOP"):
        width = h["UOP_BITS"] if name == "UOP" else h[f"{name}_ELEM_BITS"]
        out.append(Memory(name.lower(), width, 1 << h[f"{name}_BANK_AW"], h[f"{name}_BANKS"]))
    return out


# yosys's block RAMs (brams_xc4v.txt, which synth_xilinx reads for both families): (BRAM36 per
# unit, cost, address bits, data widths); a unit of data width index i holds 2**(bits - i)
# words. The true-dual-port modes hold no geometry the simple-dual-port ones lack, at no less.
_BLOCK = [
    (1.0, 257, 15, (1, 2, 4, 9, 18, 36, 72)),  # RAMB36, simple dual port
    (0.5, 129, 14, (1, 2, 4, 9, 18, 36)),  # RAMB18, simple dual port
    (2.0, 513, 16, (1, 2, 4, 9)),  # two cascaded RAMB36s (true dual port)
]
# LUT RAMs with a write port and a separate read port (lutrams_xc5v.txt, lutrams_xcu.txt):
# per family, (cost, width-scaled cost, {address bits: width}) of each kind.
_LUTRAM = {
    "xc7": [(8, 7, {5: 6, 6: 3}), (8, 8, {5: 4, 6: 2, 7: 1}), (7, 7, {5: 2, 6: 1})],
    "xcup": [
        (16, 16, {5: 14, 6: 7}),
        (16, 16, {5: 8, 6: 4, 7: 2, 8: 1}),
        (16, 16, {5: 4, 6: 2}),
        (16, 16, {5: 2, 6: 1}),
    ],
}
_MUX, _DEMUX = 0.5, 0.5  # memory_libmap's cost per bit of read mux and per write-enable demux


def _geometry_cost(mem: Memory, cost: float, scaled: float, abits: int, width: int) -> float:
    """memory_libmap's cost of `mem` in units of `width` bits x 2**abits words (yosys 0.23 does
    not pack the rows of units stacked in depth side by side: each stack has its own units)."""
    mult_a = -(-mem.depth // (1 << abits))
    repl = mult_a * -(-mem.width // width)
    total = (cost - scaled) * repl + scaled * mult_a * mem.width / width
    if mult_a > 1:
        total += _MUX * (mult_a - 1) * mem.width + _DEMUX * mult_a
    return total


def mapping(mem: Memory, family: str) -> tuple[str, float]:
    """How yosys maps one memory: ("block", its BRAM36), ("lutram", 0) or ("logic", 0), the
    kind memory_libmap finds cheapest (flip-flops cost one unit per bit)."""
    best, choice = mem.width * mem.depth * 1.0, ("logic", 0.0)
    for per_unit, cost, abits, widths in _BLOCK:
        for index, width in enumerate(widths):
            unit_abits = abits - index
            price = _geometry_cost(mem, cost, 0, unit_abits, width)
            if price < best:
                units = -(-mem.depth // (1 << unit_abits)) * -(-mem.width // width)
                best, choice = price, ("block", units * per_unit)
    for cost, scaled, geometries in _LUTRAM[family]:
        for abits, width in geometries.items():
            price = _geometry_cost(mem, cost, scaled, abits, width)
            if price < best:
                best, choice = price, ("lutram", 0.0)
    return choice


def bram36(cfg: VTAConfig, family: str) -> float:
    """BRAM36 (RAMB18s as halves) of the whole design."""
    return sum(m.count * mapping(m, family)[1] for m in memories(cfg))


# The buffers with a loader (vta_load.v: INP, WGT; vta_compute.v: UOP, ACC).
LOADED = (MemType.INP, MemType.WGT, MemType.UOP, MemType.ACC)
# mul2dsp's limits per family (synth_xilinx): A and B maximum widths, A's width in a partial
# product, and the minimum widths (a smaller multiplier stays in LUTs). DSP48s multiply signed
# numbers only: an unsigned operand gains a zero sign bit.
_DSP_LIMITS = {"xc7": (25, 18, 18, 2, 9), "xcup": (27, 18, 18, 2, 9)}


def multiplier_dsps(a: int, b: int, y: int, family: str, signed: bool = False) -> int:
    """DSP48 slices of an a x b -> y bit multiplier as yosys's mul2dsp splits it: operands wider
    than a slice become partial products (one slice each), and a partial product shifted to bit
    y or beyond is dropped with the bits it would add."""
    a_max, b_max, part, min_ab, min_y = _DSP_LIMITS[family]
    if min(a, b) < min_ab or y < min_y:
        return 0
    if not signed:
        a, b = a + 1, b + 1
    a, b = max(a, b), min(a, b)

    def split(a: int, b: int, y: int, shift: int) -> int:
        if shift >= y:
            return 0
        if a > a_max:
            n = (a - a_max + part - 2) // (part - 1)
            whole = sum(split(part, b, y, shift + i * (part - 1)) for i in range(n))
            return whole + split(a - n * (part - 1), b, y, shift + n * (part - 1))
        if b > b_max:
            n = (b - b_max + b_max - 2) // (b_max - 1)
            whole = sum(split(a, b_max, y, shift + i * (b_max - 1)) for i in range(n))
            return whole + split(a, b - n * (b_max - 1), y, shift + n * (b_max - 1))
        return 1

    return split(a, b, y, 0)


def dsps(cfg: VTAConfig, family: str) -> int:
    """DSP48 slices of the whole design."""
    # vta_gemm_core.v: an activation times a packed weight pair, w_hi above inp + wgt bits
    pair = cfg.wgt_width + cfg.inp_width + cfg.wgt_width + 1
    pairs = cfg.batch * (cfg.block_out // 2) * cfg.block_in
    gemm = pairs * multiplier_dsps(cfg.inp_width, pair, cfg.inp_width + pair, family, True)
    # The loaders of one module read the same instruction fields: two loaders of buffers with
    # the same address width compute the same product, and yosys merges them.
    widths = {(m in (MemType.INP, MemType.WGT), cfg.log_depth[m]) for m in LOADED}
    loaders = sum(multiplier_dsps(aw, aw, aw, family) for _, aw in widths)
    lanes = cfg.batch * cfg.block_out
    alu = lanes * multiplier_dsps(cfg.acc_width, cfg.acc_width, cfg.acc_width, family)
    return gemm + loaders + (alu if cfg.alu_mul else 0)


# The features each fitted quantity is a linear function of (`features` names them).
_SIZE = (
    "one",
    "macs",
    "lanes",
    "requant_lanes",
    "mul_lanes",
    "tap_bits",
    "bus_bits",
    "address_bits",
    "queue_bits",
)
TARGET_FEATURES = {
    "lut": (*_SIZE, "lutram_bits"),
    "ff": _SIZE,
    "delay_ns": ("one", "log_block", "log_batch", "mul", "log_bus"),
}


def features(cfg: VTAConfig, family: str) -> dict[str, float]:
    """Quantities counted from the configuration that LUT, FF and the critical path grow with:
    GEMM MACs, ALU lanes (with requantize, with the multiplier), the result taps' bits (the
    forwarding registers and comparators of vta_compute.v), the bus width, the buffers' address
    bits, the queues' counter bits (three command, four token queues), the bits of the memories
    mapped to LUT RAM (in 64-bit LUTs), and the shape's logarithms for the critical path
    (`log_block` is BLOCK_IN's: the depth of the GEMM's adder trees)."""
    h = header_params(cfg)
    lanes = cfg.batch * cfg.block_out
    lutram = [m for m in memories(cfg) if mapping(m, family)[0] == "lutram"]
    return {
        "one": 1.0,
        "macs": float(cfg.macs_per_cycle),
        "lanes": float(lanes),
        "requant_lanes": float(lanes * cfg.alu_requant),
        "mul_lanes": float(lanes * cfg.alu_mul),
        "tap_bits": float(h["WRITE_TAPS"] * (h["ACC_ELEM_BITS"] + h["LOG_ACC_DEPTH"])),
        "bus_bits": float(cfg.bus_width),
        "address_bits": float(sum(cfg.log_depth.values())),
        "queue_bits": float(3 * h["LOG_CMD_QUEUE_DEPTH"] + 4 * h["LOG_TOKEN_QUEUE_DEPTH"]),
        "lutram_bits": sum(m.count * m.width * m.depth for m in lutram) / 64,
        "log_block": float(cfg.log_block),
        "log_batch": float(cfg.log_batch),
        "mul": float(cfg.alu_mul),
        "log_bus": float(cfg.log_bus_width),
    }


@dataclasses.dataclass(frozen=True)
class Resources:
    """A design point's estimated resources on a part, its estimated Fmax, and whether it fits
    (`fits_part`: at most LUT_LIMIT of the LUTs, all the BRAM36, DSPs and the memory port's
    width, and an Fmax at least the configured clock)."""

    part: str
    lut: float
    ff: float
    bram36: float
    dsp: int
    fmax_mhz: float
    clock_mhz: float
    utilisation: dict[str, float]
    fits: bool


def load_model(path: Path = MODEL) -> dict:
    """The fitted coefficients (written by `python -m hw.resource_fit`)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ConfigError(
            f"no resource model at {path} ({err}): run python -m hw.resource_fit"
        ) from None


def predict(name: str, cfg: VTAConfig, family: str, model: dict) -> float:
    """A fitted quantity (`lut`, `ff`, `delay_ns`) of `cfg` on `family` from `model`."""
    target = model["targets"][name]
    if family not in target["coef"]:
        raise ConfigError(f"the resource model has no {name} fit for family {family!r}")
    values = features(cfg, family)
    pairs = zip(target["coef"][family], target["features"], strict=True)
    return sum(c * values[f] for c, f in pairs)


def estimate(
    cfg: VTAConfig, part: Part | str | None = None, model: dict | None = None
) -> Resources:
    """The resources, Fmax and fit of `cfg` on `part` (default: the configuration's own part),
    in about a millisecond: BRAM36 and DSP counted, LUT, FF and the critical path fitted."""
    if not isinstance(cfg, VTAConfig):
        raise ConfigError(f"estimate takes a VTAConfig, got {type(cfg).__name__}")
    part = part_for(cfg.fpga_part if part is None else part) if not isinstance(part, Part) else part
    model = load_model() if model is None else model
    family = part.family
    used = {
        "LUT": predict("lut", cfg, family, model),
        "FF": predict("ff", cfg, family, model),
        "BRAM36": bram36(cfg, family),
        "DSP": float(dsps(cfg, family)),
    }
    delay = predict("delay_ns", cfg, family, model)
    fmax = 1000.0 / delay if delay > 0 else math.inf
    utilisation = {k: v / part.capacity[k] for k, v in used.items()}
    fits = (
        utilisation["LUT"] <= LUT_LIMIT
        and utilisation["FF"] <= 1.0
        and utilisation["BRAM36"] <= 1.0
        and utilisation["DSP"] <= 1.0
        and cfg.bus_width <= part.bus_bits
        and fmax >= cfg.clock_mhz
    )
    return Resources(
        part.name,
        round(used["LUT"]),
        round(used["FF"]),
        used["BRAM36"],
        int(used["DSP"]),
        round(fmax, 1),
        cfg.clock_mhz,
        {k: round(v, 4) for k, v in utilisation.items()},
        fits,
    )


def fits(cfg: VTAConfig, part: Part | str | None = None) -> bool:
    """Whether `cfg` fits `part` (see `Resources`)."""
    return estimate(cfg, part).fits
