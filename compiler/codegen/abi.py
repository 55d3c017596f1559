"""What generated code and the code calling it agree on, importable without LLVM (the board
runtime, `compiler.graph.runtime`, reads it): the name of a kernel's out-of-range record, the
architecture family of a triple or machine, the thread count of the pool, and the addresses and
alignment of the arrays kernels get."""

from __future__ import annotations

import ctypes
import os

import numpy as np

OOB_PREFIX = "__vta_oob_"  # + function name: i64[2] = (checked buffer number + 1, index)


def arch_family(name: str) -> str:
    """The architecture family of a triple ("armv7a-linux-gnueabihf") or of a machine name
    (`platform.machine()`: "armv7l", "aarch64", "x86_64"): "arm", "aarch64", "x86_64" or
    the name's first word."""
    arch = name.split("-")[0].lower()
    if arch.startswith(("arm64", "aarch64")):
        return "aarch64"
    if arch.startswith(("arm", "thumb")):
        return "arm"
    return "x86_64" if arch in ("amd64", "x86_64") else arch


def default_threads() -> int:
    """OMP_NUM_THREADS (or VTA_NUM_THREADS) if set, else the cores this process may use."""
    for name in ("VTA_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").split(",")[0].strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def address(a: np.ndarray) -> int:
    """The address of a C-contiguous array's data: through the buffer protocol where the
    array is writable and not empty, in a fifth of the time of `a.ctypes.data` (which builds
    an object per call: a few microseconds per argument on every call of a kernel)."""
    if a.flags.writeable and a.nbytes:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    return a.ctypes.data


def aligned(a: np.ndarray, align: int = 64) -> np.ndarray:
    """A C-contiguous copy of `a` starting on an `align`-byte boundary: numpy promises 16
    bytes, and a block read in 64-byte vectors from an unaligned start splits every load across
    two cache lines (5-8% slower convolutions; timings of AVX2 code swung up to 3x)."""
    a = np.asarray(a)
    raw = np.empty(a.nbytes + align, np.uint8)
    start = (-raw.ctypes.data) % align
    out = raw[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out
