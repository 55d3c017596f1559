"""The one table of the FPGA parts the toolkit targets: each part's resources, the yosys
`synth_xilinx -family` that maps to it, the width of the processing system's memory port
the accelerator's masters share, and the processing system's CPU as an LLVM target (what a
compiled model's CPU layers are compiled for when the model goes to the board).

`hw/synth.py` (the resource report), `hw/resources.py` (the resource model) and
`hw/bitstream.py` (the block design's memory port) read it; a `VTAConfig.fpga_part` such as
``xc7z020clg400-1`` names its part by prefix.
"""

from __future__ import annotations

import dataclasses

from vta.errors import ConfigError


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
    ),
}


def part_for(fpga_part: str) -> Part:
    """The table's part whose name starts `fpga_part`; ConfigError naming the known ones."""
    for name, part in PARTS.items():
        if isinstance(fpga_part, str) and fpga_part.startswith(name):
            return part
    raise ConfigError(f"no capacity table for part {fpga_part!r} (known: {', '.join(PARTS)})")
