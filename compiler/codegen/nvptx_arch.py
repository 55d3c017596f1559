"""GPU architectures the NVPTX backend targets, with the limits kernels are checked against,
and the `cuda [-arch=sm_XX]` target string.

Figures are the CUDA programming guide's per compute capability (8.0: A100, 9.0: H100). Kernels
use static shared memory only, whose limit per block is 48 KiB on every architecture (more needs
dynamic shared memory and an opt-in at launch).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CodegenError

TRIPLE = "nvptx64-nvidia-cuda"


@dataclass(frozen=True)
class GPUArch:
    """Limits and resources of one compute capability."""

    name: str
    sm_count: int  # of the reference part (A100 SXM, H100 SXM)
    max_threads_per_block: int = 1024
    max_block_dim: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dim: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    max_shared_per_block: int = 48 * 1024  # static __shared__
    shared_per_sm: int = 164 * 1024
    registers_per_sm: int = 65536
    registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    warp_size: int = 32
    peak_fp32_tflops: float = 19.5

    def occupancy(self, threads: int, registers: int, shared: int) -> float:
        """Resident warps per SM over the maximum (the CUDA occupancy calculator's figure,
        with registers allocated per warp in units of 256)."""
        warps = -(-threads // self.warp_size)
        by_threads = self.max_threads_per_sm // max(warps * self.warp_size, 1)
        regs_per_warp = -(-max(registers, 1) * self.warp_size // 256) * 256
        by_regs = self.registers_per_sm // (regs_per_warp * warps) if registers else 10**9
        by_shared = self.shared_per_sm // shared if shared else 10**9
        blocks = min(by_threads, by_regs, by_shared, self.max_blocks_per_sm)
        return min(blocks * warps * self.warp_size / self.max_threads_per_sm, 1.0)


ARCHS = {
    "sm_80": GPUArch("sm_80", sm_count=108),
    "sm_90": GPUArch(
        "sm_90", sm_count=132, shared_per_sm=228 * 1024, max_blocks_per_sm=32, peak_fp32_tflops=67
    ),
}
DEFAULT_ARCH = "sm_80"


def get_arch(name: str) -> GPUArch:
    if name not in ARCHS:
        raise CodegenError(f"unknown GPU architecture {name!r}; valid: {', '.join(ARCHS)}")
    return ARCHS[name]


def parse_cuda_target(spec: str) -> GPUArch:
    """'cuda' or 'cuda -arch=sm_90' -> the architecture."""
    words = spec.split()
    if not words or words[0] != "cuda":
        raise CodegenError(f"not a CUDA target: {spec!r}; expected 'cuda [-arch=sm_80|sm_90]'")
    arch = DEFAULT_ARCH
    for w in words[1:]:
        key, _, value = w.partition("=")
        if key != "-arch":
            raise CodegenError(f"target {spec!r}: unknown option {key!r}; valid: -arch")
        arch = value
    return get_arch(arch)


def is_cuda_target(spec: str) -> bool:
    return spec.split()[:1] == ["cuda"]
