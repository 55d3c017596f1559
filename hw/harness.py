"""The verilated VTA, driven interactively through the harness's shared library (ctypes).

Where the `rtl` device runs a whole Program in one batch process, a `Harness` keeps the model
alive: the host maps its own buffers at physical addresses (the AXI masters read and write
them in place), reads and writes registers through the AXI4-Lite slave, and runs the clock
(the `pynq-rtl` device's stand-in board is built on it):

    h = Harness(VTAConfig.load("tiny"))
    h.map(0x1000_0000, dram)              # a uint8 array the accelerator sees at that address
    h.write_reg(regmap.INSN_ADDR, ...)    # ... INSN_COUNT, then CONTROL_START to CONTROL
    h.run(100_000)                        # until CONTROL.DONE, at most that many cycles
    h.read_reg(regmap.CYCLES_LO)
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from vta.config import VTAConfig
from vta.errors import DeviceError

from .build import model_library

_U64, _PTR = ctypes.c_uint64, ctypes.c_void_p
_SIGNATURES = {
    "vta_open": (_PTR, [_U64, _U64, ctypes.c_double, _U64]),
    "vta_close": (None, [_PTR]),
    "vta_map": (ctypes.c_int, [_PTR, _U64, _PTR, _U64]),
    "vta_unmap": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint64]),
    "vta_write_reg": (None, [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32]),
    "vta_read_reg": (ctypes.c_uint32, [ctypes.c_void_p, ctypes.c_uint32]),
    "vta_run": (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_uint64]),
    "vta_now": (ctypes.c_uint64, [ctypes.c_void_p]),
    "vta_irq": (ctypes.c_int, [ctypes.c_void_p]),
    "vta_error": (ctypes.c_char_p, [ctypes.c_void_p]),
}


def _load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


class Harness:
    """One live verilated VTA (reset on creation) with the harness's memory model: the config's
    `dram_latency` and `dram_beat_interval`, and random back-pressure with probability `stall`
    (seeded). A protocol or register-access failure raises `DeviceError`."""

    def __init__(self, cfg: VTAConfig, stall: float = 0.0, seed: int = 0):
        self.config = cfg
        self._lib = _load(model_library(cfg))
        self._handle = self._lib.vta_open(cfg.dram_latency, cfg.dram_beat_interval, stall, seed)
        self._mapped: dict[int, np.ndarray] = {}  # keeps mapped buffers alive

    def close(self) -> None:
        if self._handle:
            self._lib.vta_close(self._handle)
            self._handle = None
            self._mapped.clear()

    def __del__(self) -> None:
        self.close()

    def _checked(self, value):
        error = self._lib.vta_error(self._handle)
        if error:
            raise DeviceError(f"verilated VTA ({self.config.name}): {error.decode()}")
        return value

    def map(self, address: int, memory: np.ndarray) -> None:
        """Serve a C-contiguous uint8 array as physical memory [address, address + size)."""
        if memory.dtype != np.uint8 or not memory.flags.c_contiguous:
            raise DeviceError("mapped memory must be a C-contiguous uint8 array")
        if not self._lib.vta_map(self._handle, address, memory.ctypes.data, memory.size):
            raise DeviceError(
                f"cannot map {memory.size} bytes at 0x{address:x}: overlaps a mapped buffer"
            )
        self._mapped[address] = memory

    def unmap(self, address: int) -> None:
        if not self._lib.vta_unmap(self._handle, address):
            raise DeviceError(f"nothing is mapped at 0x{address:x}")
        del self._mapped[address]

    def write_reg(self, offset: int, value: int) -> None:
        """An AXI4-Lite write of a 32-bit register (a few clock cycles)."""
        self._lib.vta_write_reg(self._handle, offset, value)
        self._checked(None)

    def read_reg(self, offset: int) -> int:
        """An AXI4-Lite read of a 32-bit register (a few clock cycles)."""
        return self._checked(self._lib.vta_read_reg(self._handle, offset))

    def run(self, cycles: int) -> int:
        """Run the clock for up to `cycles` cycles, stopping once CONTROL.DONE is set; return
        the cycles run."""
        return self._checked(self._lib.vta_run(self._handle, cycles))

    @property
    def now(self) -> int:
        """Clock cycles since the model was created."""
        return self._lib.vta_now(self._handle)

    @property
    def done(self) -> bool:
        """CONTROL.DONE (the interrupt line)."""
        return bool(self._lib.vta_irq(self._handle))
