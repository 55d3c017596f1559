"""GPU modules: a lowered function's kernels as PTX (checked by ptxas), the host side that
launches them in order with their grids, the emulator that runs them here, and the CUDA driver
that runs them where a GPU exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..codegen.nvptx import compile_ptx
from ..codegen.nvptx_arch import GPUArch
from ..codegen.ptxas import KernelStats, assemble
from ..driver_gpu import DeviceKernel, split_kernels
from ..errors import OperatorError
from ..tir import dtype as dt
from ..tir import stmt as S
from .cuda import run_module
from .emulator import EmulatedKernel, garbage, translate
from .module import _Callable, _signature


@dataclass(frozen=True)
class Launch:
    """One kernel launch of the host side: grid, block, and which buffers it takes (indices
    into the function's parameters followed by its device buffers)."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[int, ...]


class GPUModule(_Callable):
    """Kernels of one function for one GPU architecture.

    `emulate(*arrays)` runs them on the CPU emulator; calling the module runs them on a CUDA
    device (compiler.runtime.cuda). Arrays are the function's parameters, outputs included.
    """

    def __init__(self, func: S.PrimFunc, arch: GPUArch):
        self.name, self.func, self.arch = func.name, func, arch
        self.signature = _signature(func)
        self.device_buffers, self.kernels = split_kernels(func, arch)
        self.llvm_ir, self.ptx = compile_ptx(self.kernels, arch, func.name)
        self._emulated: dict[str, EmulatedKernel] = {}

    # ---- host side -----------------------------------------------------------------------
    @cached_property
    def launches(self) -> list[Launch]:
        order = [b.data for b in [*self.func.params, *self.device_buffers]]
        return [
            Launch(k.name, k.grid, k.block, tuple(order.index(p.data) for p in k.params))
            for k in self.kernels
        ]

    @property
    def kernel_names(self) -> list[str]:
        return [k.name for k in self.kernels]

    @property
    def device_buffer_bytes(self) -> list[int]:
        return [b.nbytes for b in self.device_buffers]

    # ---- ptxas ---------------------------------------------------------------------------
    @cached_property
    def _assembled(self) -> tuple[bytes, dict[str, KernelStats]]:
        return assemble(self.ptx, self.arch)

    @property
    def cubin(self) -> bytes:
        return self._assembled[0]

    @property
    def stats(self) -> dict[str, KernelStats]:
        """ptxas's report per kernel (registers, shared memory, spills)."""
        return self._assembled[1]

    def problems(self) -> list[str]:
        """Why the kernels should not run as built (spills, register or shared memory limits)."""
        return [p for k in self.kernels for p in self.stats[k.name].problems(self.arch, k.threads)]

    def get_source(self, fmt: str = "ptx") -> str:
        """PTX ("ptx"), optimized LLVM IR ("ll"), or the emulator's Python ("emulator")."""
        if fmt == "ptx":
            return self.ptx
        if fmt == "ll":
            return self.llvm_ir
        if fmt == "emulator":
            return "\n".join(self._emulator(k).source for k in self.kernels)
        raise OperatorError(f"unknown format {fmt!r}: ptx, ll or emulator")

    def save(self, path: str) -> None:
        with open(path, "w") as f:
            f.write(self.ptx)

    # ---- running ---------------------------------------------------------------------------
    def _emulator(self, k: DeviceKernel) -> EmulatedKernel:
        if k.name not in self._emulated:
            self._emulated[k.name] = translate(k)
        return self._emulated[k.name]

    def emulate(self, *arrays: np.ndarray, seed: int = 0) -> None:
        """Run the kernels on the emulator, writing outputs into `arrays` in place."""
        self._check(arrays)
        flat = [a.reshape(-1) for a in arrays]
        flat += [garbage(b.const_size(), dt.to_numpy(b.dtype)) for b in self.device_buffers]
        for k, launch in zip(self.kernels, self.launches, strict=True):
            self._emulator(k).run([flat[i] for i in launch.args], seed)

    def __call__(self, *arrays: np.ndarray) -> None:
        """Run on the CUDA device (raises DeviceError where there is none)."""
        self._check(arrays)
        run_module(self, list(arrays))
