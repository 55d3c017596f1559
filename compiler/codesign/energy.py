"""Energy of a run from counted events: MACs, reads and writes of each on-chip buffer, DRAM
bytes, each times a per-event energy.

The per-event energies are the 45 nm figures of M. Horowitz, "Computing's energy problem (and
what we can do about it)", ISSCC 2014 (docs/codesign.md): 8-bit multiply 0.2 pJ, 32-bit add
0.1 pJ (an int8 MAC into an int32 accumulator: 0.3 pJ); SRAM reads of 64 bits 10 pJ from 8 KB,
20 pJ from 32 KB, 100 pJ from 1 MB (per bit in between: interpolated in log2 of the size);
DRAM 1.3-2.6 nJ per 64 bits (the midpoint, 1.95 nJ). An FPGA spends more per event than an
ASIC of that node, but in much the same proportions, which is what comparing design points
needs; absolute joules are an estimate.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from vta.config import VTAConfig
from vta.isa import MemType
from vta.stats import Stats

MAC_PJ = 0.3
# (buffer bytes, pJ per bit read) from the 64-bit read energies above
SRAM_PJ_PER_BIT = ((8 << 10, 10 / 64), (32 << 10, 20 / 64), (1 << 20, 100 / 64))
DRAM_PJ_PER_BIT = 1950 / 64


def sram_pj_per_bit(nbytes: int) -> float:
    """Energy of reading or writing one bit of an SRAM of `nbytes` (log-linear in the size,
    held at the table's ends)."""
    sizes = np.log2([s for s, _ in SRAM_PJ_PER_BIT])
    return float(np.interp(np.log2(max(nbytes, 1)), sizes, [e for _, e in SRAM_PJ_PER_BIT]))


@dataclasses.dataclass(frozen=True)
class Energy:
    """Millijoules of a run by where they went."""

    mac: float
    sram: float
    dram: float

    @property
    def total(self) -> float:
        return self.mac + self.sram + self.dram

    def to_dict(self) -> dict:
        return {"mac": self.mac, "sram": self.sram, "dram": self.dram, "total": self.total}


def sram_bits(stats: Stats, cfg: VTAConfig) -> dict[MemType, int]:
    """Bits read and written per on-chip buffer: each GEMM micro-op reads an input, a weight
    and an accumulator element and writes an accumulator and an output element; each ALU
    micro-op reads two accumulator elements and writes one and an output; every micro-op is
    read from the micro-op buffer; loads write their buffer and stores read OUT."""
    bits = cfg.elem_bits
    gemm, alu = stats.gemm_uops, stats.alu_uops
    loaded = {MemType[k.upper()]: 8 * v for k, v in stats.bytes_loaded.items()}
    return {
        MemType.INP: gemm * bits[MemType.INP] + loaded.get(MemType.INP, 0),
        MemType.WGT: gemm * bits[MemType.WGT] + loaded.get(MemType.WGT, 0),
        MemType.ACC: (2 * gemm + 3 * alu) * bits[MemType.ACC] + loaded.get(MemType.ACC, 0),
        MemType.OUT: (gemm + alu) * bits[MemType.OUT] + 8 * stats.bytes_stored,
        MemType.UOP: (gemm + alu) * bits[MemType.UOP] + loaded.get(MemType.UOP, 0),
    }


def energy(stats: Stats, cfg: VTAConfig) -> Energy:
    """The energy of a run from its Stats' counters on configuration `cfg`, in millijoules."""
    sram = sum(n * sram_pj_per_bit(cfg.buff_bytes[mem]) for mem, n in sram_bits(stats, cfg).items())
    dram_bits = 8 * (sum(stats.bytes_loaded.values()) + stats.bytes_stored)
    return Energy(stats.macs * MAC_PJ * 1e-9, sram * 1e-9, dram_bits * DRAM_PJ_PER_BIT * 1e-9)
