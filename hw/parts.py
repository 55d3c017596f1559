"""The one table of the FPGA parts the toolkit targets: each part's resources, the yosys
`synth_xilinx -family` that maps to it, the width of the processing system's memory port
the accelerator's masters share, and the processing system's CPU as an LLVM target (what a
compiled model's CPU layers are compiled for when the model goes to the board).

`hw/synth.py` (the resource report), `hw/resources.py` (the resource model) and
`hw/bitstream.py` (the block design's memory port) read it; a `VTAConfig.fpga_part` such as
``xc7z020clg400-1`` names its part by prefix. The board runtime (`compiler.graph.runtime`)
reads each part's `CPU`, the throughput model of its processing system's CPU, to estimate a
compiled model's CPU layers on the board.
"""

from __future__ import annotations

import dataclasses

from vta.errors import ConfigError

# The fraction of `CPU`'s peaks a compiled CPU layer reaches on the board: an assumption, not a
# measurement (no board here); `scripts/bench_vta.py --board --efficiency E` takes another.
EFFICIENCY = 0.5


@dataclasses.dataclass(frozen=True)
class CPU:
    """A processing system's CPU as a throughput model: a compiled CPU layer takes the longer
    of its FLOPs on `threads` cores at `flops_per_cycle` each and its DRAM bytes at the
    board's bandwidth, both at a fraction `efficiency` of these peaks (`seconds`)."""

    name: str
    cores: int
    clock_mhz: float
    flops_per_cycle: float  # float32 per core, with the vector instructions our kernels use
    dram_gbps: float  # the boards' DRAM peak, GB/s

    def seconds(self, flops: float, nbytes: float, threads: int, efficiency: float) -> float:
        """A step's time: `flops` on min(`threads`, cores) cores, `nbytes` of DRAM traffic."""
        cores = max(1, min(threads, self.cores))
        compute = flops / (cores * self.clock_mhz * 1e6 * self.flops_per_cycle)
        return max(compute, nbytes / (self.dram_gbps * 1e9)) / efficiency

    def describe(self) -> str:
        """E.g. '2x Cortex-A9 at 650 MHz, 2 FLOP/cycle/core, DRAM 2.1 GB/s'."""
        return (
            f"{self.cores}x {self.name} at {self.clock_mhz:g} MHz, "
            f"{self.flops_per_cycle:g} FLOP/cycle/core, DRAM {self.dram_gbps:g} GB/s"
        )


# Sources of the CPU figures:
# - Cortex-A9 (Zynq-7020 on PYNQ-Z1/Z2): two cores at 650 MHz (Digilent PYNQ-Z1 reference
#   manual; TUL PYNQ-Z2 user manual); DDR3 on a 16-bit bus at 1050 MT/s, 2.1 GB/s (same
#   manuals). NEON issues a 4-lane VMUL.F32 or VADD.F32 on Q registers in 2 cycles and a
#   VMLA.F32 in 2 (ARM Cortex-A9 NEON Media Processing Engine TRM, instruction timing; Xilinx
#   XAPP1206, table 3): 4 FLOP/cycle with VMLA, 2 with the separate VMUL and VADD LLVM emits
#   for our kernels (the ResNet-18 stem conv's library for the Cortex-A9: 104 vmul.f32 and
#   112 vadd.f32 on Q registers, 16 vmla.f32), so 2.
# - Cortex-A53 (ZU3EG on Ultra96): four cores; 1.2 GHz is the APU's maximum at the -1 speed
#   grade of Ultra96's xczu3eg-sbva484-1-e (Xilinx DS925; the -3 grade's is 1.5 GHz); one
#   4-lane FMLA per cycle (ncnn's A53 dual-issue notes: a 128-bit FMLA issues every cycle), 8
#   FLOP/cycle, and LLVM emits FMLA for our kernels (the same conv for the Cortex-A53: 168
#   fmla.4s, 28 fadd.4s); LPDDR4 on a 32-bit bus at 2133 MT/s, 8.5 GB/s (Avnet Ultra96-V2
#   hardware user guide; Xilinx DS925's -1 LPDDR4 rate).
CORTEX_A9 = CPU("Cortex-A9", 2, 650, 2, 2.1)
CORTEX_A53 = CPU("Cortex-A53", 4, 1200, 8, 8.5)


@dataclasses.dataclass(frozen=True)
class Part:
    """An FPGA part: capacity (LUT, FF, BRAM36 block RAMs, DSP slices) and memory port."""

    name: str  # the prefix of a full part name (package and speed grade follow it)
    family: str  # yosys synth_xilinx -family
    lut: int
    ff: int
    bram36: int
    dsp: int
    bus_bits: int  # the PS memory port's widest data bus (ACP/HP/HPC)
    cpu_target: str  # the PS's CPU as an LLVM target ("llvm -mtriple=... -mcpu=... -mattr=...")
    cpu: CPU  # the PS's CPU as a throughput model

    @property
    def capacity(self) -> dict[str, int]:
        """Resource -> amount, keyed as the synthesis report's totals."""
        return {"LUT": self.lut, "FF": self.ff, "BRAM36": self.bram36, "DSP": self.dsp}


PARTS = {
    # Zynq-7020 (PYNQ-Z1, PYNQ-Z2): the ACP and HP ports are 64 bits wide; two Cortex-A9
    # cores (ARMv7-A, NEON, hard-float Linux).
    "xc7z020": Part(
        "xc7z020",
        "xc7",
        53_200,
        106_400,
        140,
        220,
        64,
        "llvm -mtriple=armv7a-linux-gnueabihf -mcpu=cortex-a9 -mattr=+neon,+vfp3",
        CORTEX_A9,
    ),
    # Zynq UltraScale+ ZU3EG (Ultra96): the HP/HPC ports are up to 128 bits wide; four
    # Cortex-A53 cores (AArch64).
    "xczu3eg": Part(
        "xczu3eg",
        "xcup",
        70_560,
        141_120,
        216,
        360,
        128,
        "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a53 -mattr=+neon",
        CORTEX_A53,
    ),
}


def part_for(fpga_part: str) -> Part:
    """The table's part whose name starts `fpga_part`; ConfigError naming the known ones."""
    for name, part in PARTS.items():
        if isinstance(fpga_part, str) and fpga_part.startswith(name):
            return part
    raise ConfigError(f"no capacity table for part {fpga_part!r} (known: {', '.join(PARTS)})")
