"""ptxas, NVIDIA's PTX assembler (from the nvidia-cuda-nvcc-cu12 wheel): assembles PTX for an
architecture and reports, per kernel, what `ptxas -v` says: registers, shared memory, stack,
spill stores and loads. A kernel that spills or exceeds the architecture's limits for its
launch shape is flagged; the tuner rejects such configurations before measuring them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from ..errors import CodegenError
from .nvptx import nvcc_dir
from .nvptx_arch import GPUArch

TIMEOUT_S = 120.0


@dataclass(frozen=True)
class KernelStats:
    """ptxas's resource report of one kernel."""

    name: str
    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_stores: int
    spill_loads: int
    barriers: int

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads

    def problems(self, arch: GPUArch, threads: int) -> list[str]:
        """Why this kernel should not run with `threads` per block (empty: it may)."""
        out = []
        if self.spills:
            out.append(
                f"kernel '{self.name}' spills registers ({self.spill_stores} B stored, "
                f"{self.spill_loads} B loaded)"
            )
        if self.registers * threads > arch.registers_per_block:
            out.append(
                f"kernel '{self.name}' needs {self.registers} registers x {threads} threads; "
                f"{arch.name} has {arch.registers_per_block} per block"
            )
        if self.shared_bytes > arch.max_shared_per_block:
            out.append(
                f"kernel '{self.name}' uses {self.shared_bytes} B of shared memory; "
                f"{arch.name} allows {arch.max_shared_per_block} per block"
            )
        return out


def find_ptxas() -> str:
    """The ptxas executable: the nvidia-cuda-nvcc wheel's, else one on PATH."""
    base = nvcc_dir()
    if base and os.access(os.path.join(base, "bin", "ptxas"), os.X_OK):
        return os.path.join(base, "bin", "ptxas")
    found = shutil.which("ptxas")
    if found:
        return found
    raise CodegenError(
        "ptxas not found: install the gpu extra (pip install 'vta-codesign[gpu]', which brings "
        "nvidia-cuda-nvcc-cu12) or put ptxas on PATH"
    )


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_report(text: str) -> dict[str, KernelStats]:
    """KernelStats per entry function from ptxas -v output."""
    out: dict[str, KernelStats] = {}
    name, frame = None, (0, 0, 0)
    for line in text.splitlines():
        if m := _ENTRY.search(line):
            name, frame = m.group(1), (0, 0, 0)
        elif (m := _FRAME.search(line)) and name:
            frame = tuple(int(g) for g in m.groups())
        elif (m := _USED.search(line)) and name:
            bars, smem = (
                int(r.group(1)) if (r := p.search(line)) else 0 for p in (_BARRIERS, _SMEM)
            )
            out[name] = KernelStats(name, int(m.group(1)), smem, *frame, bars)
            name = None
    return out


def assemble(ptx: str, arch: GPUArch) -> tuple[bytes, dict[str, KernelStats]]:
    """(cubin, per-kernel stats) of PTX assembled for `arch`; CodegenError with ptxas's
    message when it rejects the PTX."""
    exe = find_ptxas()
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "kernel.ptx"), os.path.join(tmp, "kernel.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        try:
            r = subprocess.run(
                [exe, f"-arch={arch.name}", "-O3", "-v", src, "-o", out],
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            raise CodegenError(f"ptxas took over {TIMEOUT_S:.0f} s for {arch.name}") from None
        if r.returncode:
            msg = (r.stderr or r.stdout).strip().splitlines()
            raise CodegenError(f"ptxas rejected the PTX for {arch.name}: {' | '.join(msg[:5])}")
        with open(out, "rb") as f:
            cubin = f.read()
    return cubin, parse_report(r.stderr + r.stdout)
