"""`pynq-rtl`: the PYNQ driver of `vta.pynq_driver`, unchanged, on the verilated RTL.

`VerilatedBoard` is a `pynq.Device` that stands in for a board: register reads and writes
(pynq's REGISTER_RW capability, which `pynq.MMIO` uses) go to the RTL's AXI4-Lite slave at
`CONTROL_ADDRESS`; `allocate` returns `pynq.PynqBuffer`s with physical addresses whose device
memory the harness's AXI masters read and write; `flush` and `invalidate` copy between the
buffer the CPU sees and that device memory, as a cache without coherence would, so a driver
that forgot either would read stale data. The clock runs while the host waits: each register
read first advances the design by up to `cycles_per_poll` cycles (until DONE).

`pynq` comes from the driver module, whose ImportError says how to install it.
"""

from __future__ import annotations

import ctypes
import weakref

import numpy as np

from vta.config import VTAConfig
from vta.device import check_budget
from vta.errors import BudgetError, DeviceError
from vta.program import Program
from vta.pynq_driver import DEFAULT_TIMEOUT_S, PAGE_BYTES, REGISTER_SPAN, PynqDriverDevice, pynq
from vta.regmap import REG_BITS
from vta.stats import Stats

from .bitstream import BOARDS
from .device import DEFAULT_MAX_CYCLES, check_stall, model_states
from .harness import Harness

CONTROL_ADDRESS = BOARDS["pynq-z1"].control_address  # where the block design maps the registers
DRAM_BASE = 0x1000_0000  # the stand-in's physical memory window (inside a PYNQ-Z1's DDR)
DRAM_LIMIT = 0x3000_0000
CYCLES_PER_POLL = 4096
WORD_BYTES = REG_BITS // 8


class _Region:
    """A buffer's device memory: what the accelerator sees at `address`."""

    def __init__(self, address: int, size: int):
        self.address = address
        self.memory = np.zeros(size, dtype=np.uint8)

    def pointer(self, offset: int) -> int:
        return self.memory.ctypes.data + offset


class VerilatedBoard(pynq.Device):
    """A pynq.Device backed by one live verilated VTA (see the module docstring)."""

    def __init__(
        self,
        cfg: VTAConfig,
        stall: float = 0.0,
        seed: int = 0,
        max_cycles: int = DEFAULT_MAX_CYCLES,
        cycles_per_poll: int = CYCLES_PER_POLL,
    ):
        super().__init__("pynq-rtl")
        self.capabilities = {"REGISTER_RW": True}
        self.config = cfg
        self.harness = Harness(cfg, stall, seed)
        self.max_cycles = max_cycles
        self.cycles_per_poll = cycles_per_poll
        self._launched: int | None = None  # harness cycle of the last START
        self._next = DRAM_BASE
        self._live: dict[int, _Region] = {}

    # ------------------------------------------------------------------ registers
    def _offset(self, address: int, length: int) -> int:
        offset = address - CONTROL_ADDRESS
        if not 0 <= offset <= REGISTER_SPAN - length or offset % WORD_BYTES or length % WORD_BYTES:
            raise DeviceError(
                f"pynq-rtl: no register at 0x{address:x} (+{length} bytes); the block is "
                f"0x{CONTROL_ADDRESS:x}..0x{CONTROL_ADDRESS + REGISTER_SPAN - 1:x}, 32-bit words"
            )
        return offset

    def read_registers(self, address: int, length: int) -> bytes:
        offset = self._offset(address, length)
        if self._launched is not None and not self.harness.done:
            self.harness.run(self.cycles_per_poll)
            if not self.harness.done and self.harness.now - self._launched > self.max_cycles:
                raise BudgetError(
                    f"device 'pynq-rtl': cycle limit {self.max_cycles:,} exceeded without FINISH "
                    "(a deadlock, or raise max_cycles)"
                )
        words = [self.harness.read_reg(offset + i) for i in range(0, length, WORD_BYTES)]
        return np.asarray(words, dtype="<u4").tobytes()

    def write_registers(self, address: int, data: bytes) -> None:
        offset = self._offset(address, len(data))
        for i, word in enumerate(np.frombuffer(bytes(data), dtype="<u4").tolist()):
            self.harness.write_reg(offset + i * WORD_BYTES, word)
        if offset == 0 and data:  # CONTROL: a START launches a run
            self._launched = self.harness.now

    # ------------------------------------------------------------------ memory
    def allocate(self, shape, dtype, **kwargs) -> pynq.buffer.PynqBuffer:
        """A buffer with a page-aligned physical address in the stand-in's DRAM window."""
        if kwargs:
            raise DeviceError(f"pynq-rtl: allocate takes no options, got {sorted(kwargs)}")
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        size = max(PAGE_BYTES, -(-nbytes // PAGE_BYTES) * PAGE_BYTES)
        if not self._live:
            self._next = DRAM_BASE  # every buffer freed: start the window over
        if self._next + size > DRAM_LIMIT:
            raise DeviceError(f"pynq-rtl: out of DRAM allocating {nbytes:,} bytes")
        region = _Region(self._next, size)
        self._next += size
        self.harness.map(region.address, region.memory)
        self._live[region.address] = region
        host = np.zeros(size, dtype=np.uint8)  # what the CPU sees
        buffer = pynq.buffer.PynqBuffer(
            shape,
            dtype,
            buffer=host,
            device=self,
            device_address=region.address,
            bo=region,
            coherent=False,
        )
        weakref.finalize(host, self._free, region.address)
        return buffer

    def _free(self, address: int) -> None:
        if self._live.pop(address, None) is not None:
            self.harness.unmap(address)

    def flush(self, bo: _Region, offset: int, ptr: int, size: int) -> None:
        """The CPU's writes reach device memory."""
        ctypes.memmove(bo.pointer(offset), ptr, size)

    def invalidate(self, bo: _Region, offset: int, ptr: int, size: int) -> None:
        """The CPU sees what the accelerator wrote."""
        ctypes.memmove(ptr, bo.pointer(offset), size)


class PynqRTLDevice(PynqDriverDevice):
    """The `pynq-rtl` device: the PYNQ driver on a `VerilatedBoard` per config. Options:
    `timeout` (s), `max_cycles`, and the memory model's back-pressure `stall` and `seed`."""

    name = "pynq-rtl"

    def __init__(
        self,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_cycles: int = DEFAULT_MAX_CYCLES,
        stall: float = 0.0,
        seed: int = 0,
    ):
        super().__init__(timeout)
        check_stall(stall, seed, self.name)
        self.max_cycles = check_budget(max_cycles, "max_cycles", self.name)
        self.stall, self.seed = stall, seed
        self._boards: dict[VTAConfig, VerilatedBoard] = {}

    def execute(self, program: Program, dram: np.ndarray) -> tuple[np.ndarray, Stats]:
        try:
            return super().execute(program, dram)
        except BudgetError as err:
            raise BudgetError(f"{err}\n  {model_states(program, self.max_cycles)}") from None

    def connect(self, cfg: VTAConfig) -> tuple[pynq.Device, int]:
        if cfg not in self._boards:
            self._boards[cfg] = VerilatedBoard(cfg, self.stall, self.seed, self.max_cycles)
        return self._boards[cfg], CONTROL_ADDRESS
