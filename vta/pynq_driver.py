"""The PYNQ driver: runs Programs on a VTA reached through the `pynq` package.

`PynqDriverDevice.execute` is the one code path of every pynq-backed device: it allocates the
Program's DRAM (image, then the instruction stream at the next 4 KiB boundary) as one
physically contiguous `pynq.allocate` buffer, relocates the instructions' DRAM addresses to
that buffer's physical address, flushes the CPU cache, programs the registers of
`vta.regmap` through `pynq.MMIO` (INSN_ADDR, INSN_COUNT, CONTROL.START), polls CONTROL.DONE
and STATUS with a timeout, reads CYCLES and the per-module counters, invalidates the cache and
copies the image back. Subclasses only say which `pynq.Device` and register address to use:

- `pynq` (`PynqDevice`): a board, through `pynq.Overlay` of our bitstream and its .hwh (the
  accelerator's instance is `regmap.IP_NAME`);
- `pynq-rtl` (`hw.pynq_rtl`): the verilated RTL behind a `pynq.Device` subclass.

pynq 4 needs numpy < 2: the `pynq` extra pins it, and ./scripts/test runs these devices' tests
in a second environment, .venv-pynq (docs/pynq.md).
"""

from __future__ import annotations

import abc
import os
import time
import warnings
from pathlib import Path

import numpy as np

from . import regmap
from .config import VTAConfig
from .device import Device, until_finish
from .errors import DeviceError
from .isa import INSN_BYTES, Insn, MemInsn, encode_stream
from .program import Program
from .stats import Stats

try:
    import pynq
except ImportError as err:  # the optional dependency, not an import cycle
    raise ImportError(
        f"the pynq package is missing ({err}): pip install 'vta-codesign[pynq]' "
        "(pynq 4 needs numpy < 2; ./scripts/test sets up .venv-pynq with it)"
    ) from err

PAGE_BYTES = 4096  # the instruction stream starts on a page; bursts never cross one
ADDRESS_LIMIT = 1 << 32  # the accelerator's AXI masters address 4 GiB
DEFAULT_TIMEOUT_S = 60.0
REGISTER_SPAN = 1 << regmap.ADDR_BITS


def relocate(insns: list[Insn], base: int, cfg: VTAConfig) -> np.ndarray:
    """The encoded stream with every LOAD/STORE's DRAM address moved by `base` bytes (a Program
    addresses its DRAM image from 0; a board's buffer lives at a physical address)."""
    moved = []
    for insn in insns:
        if isinstance(insn, MemInsn) and not insn.is_nop:
            elem = cfg.elem_bytes[insn.memory_type]
            if base % elem:
                raise DeviceError(
                    f"buffer address 0x{base:x} is not a multiple of the {elem}-byte "
                    f"{insn.memory_type.name} element"
                )
            insn = insn.replace(dram_base=insn.dram_base + base // elem)
        moved.append(insn)
    return encode_stream(moved, cfg)


class PynqDriverDevice(Device):
    """A device driven through pynq: `connect` gives the pynq.Device and the physical address
    of the accelerator's registers; the run itself is the same for a board and its stand-in."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT_S):
        if not timeout > 0:
            raise DeviceError(f"device {self.name!r}: timeout = {timeout} s must be > 0")
        self.timeout = timeout

    @abc.abstractmethod
    def connect(self, cfg: VTAConfig) -> tuple[pynq.Device, int]:
        """(the pynq.Device, the physical address of the register block) for a config."""

    def execute(self, program: Program, dram: np.ndarray) -> tuple[np.ndarray, Stats]:
        cfg = program.config
        insns = until_finish(program)
        device, address = self.connect(cfg)
        mmio = pynq.MMIO(address, REGISTER_SPAN, device=device)
        hw_id = mmio.read(regmap.HW_ID)
        if hw_id != regmap.HW_ID_VALUE:
            raise DeviceError(
                f"device {self.name!r}: the register block at 0x{address:x} reads HW_ID "
                f"0x{hw_id:08x}, not this design's 0x{regmap.HW_ID_VALUE:08x}"
            )
        image = np.asarray(dram, dtype=np.uint8).reshape(-1)
        insn_offset = -(-image.size // PAGE_BYTES) * PAGE_BYTES
        size = insn_offset + len(insns) * INSN_BYTES
        buffer = pynq.allocate(shape=(size,), dtype=np.uint8, target=device)
        base = int(buffer.device_address)
        if base % PAGE_BYTES or base + size > ADDRESS_LIMIT:
            raise DeviceError(
                f"device {self.name!r}: pynq.allocate gave 0x{base:x} (+{size} bytes); the "
                f"accelerator needs a {PAGE_BYTES}-byte aligned buffer below 4 GiB"
            )
        buffer[: image.size] = image
        buffer[image.size : insn_offset] = 0
        buffer[insn_offset:] = relocate(insns, base, cfg)
        buffer.flush()
        mmio.write(regmap.INSN_ADDR, base + insn_offset)
        mmio.write(regmap.INSN_COUNT, len(insns))
        mmio.write(regmap.CONTROL, regmap.CONTROL_START)
        self._wait(mmio)
        stats = self.new_stats(cfg)
        stats.cycles = mmio.read(regmap.CYCLES_LO) | mmio.read(regmap.CYCLES_HI) << regmap.REG_BITS
        stats.count_stream(insns, cfg)
        regmap.read_counters(mmio.read, stats)
        buffer.invalidate()
        return np.array(buffer[: image.size]), stats

    def _wait(self, mmio: pynq.MMIO) -> None:
        """Poll until CONTROL.DONE; STATUS errors and the timeout raise DeviceError."""
        deadline = time.monotonic() + self.timeout
        while True:
            status = mmio.read(regmap.STATUS)
            if status:
                raise DeviceError(
                    f"device {self.name!r}: STATUS reports {regmap.describe_status(status)} "
                    f"(0x{status:x})"
                )
            if mmio.read(regmap.CONTROL) & regmap.CONTROL_DONE:
                return
            if time.monotonic() > deadline:
                raise DeviceError(
                    f"device {self.name!r}: no DONE within {self.timeout:g} s (a deadlock, or "
                    "raise the timeout option)"
                )


def bitstream_path(cfg: VTAConfig) -> Path:
    """The bitstream the `pynq` device loads for a config: $VTA_BITSTREAM, else
    ~/vta-bitstreams/<config>/vta.bit (where `vta deploy` puts it), its .hwh beside it."""
    given = os.environ.get("VTA_BITSTREAM")
    return Path(given) if given else Path.home() / "vta-bitstreams" / cfg.name / "vta.bit"


class PynqDevice(PynqDriverDevice):
    """The `pynq` device: a PYNQ board with our overlay. Options: `bitstream` (default:
    `bitstream_path`), `timeout` in seconds."""

    name = "pynq"

    def __init__(self, bitstream: str | Path | None = None, timeout: float = DEFAULT_TIMEOUT_S):
        super().__init__(timeout)
        with warnings.catch_warnings():  # pynq warns about XRT when it finds no device
            warnings.simplefilter("ignore", UserWarning)
            boards = pynq.Device.devices
        if not boards:
            raise DeviceError(
                "device 'pynq' needs a PYNQ board: the pynq package finds no device here "
                "(run it on the board, see docs/pynq.md; without one, use 'pynq-rtl')"
            )
        self.bitstream = bitstream
        self._overlay: pynq.Overlay | None = None

    def connect(self, cfg: VTAConfig) -> tuple[pynq.Device, int]:
        if self._overlay is None:
            path = Path(self.bitstream) if self.bitstream else bitstream_path(cfg)
            if not path.is_file() or not path.with_suffix(".hwh").is_file():
                raise DeviceError(
                    f"device 'pynq': no bitstream {path} with its .hwh (build one with "
                    "scripts/build_bitstream, copy it with vta deploy, or set VTA_BITSTREAM)"
                )
            self._overlay = pynq.Overlay(str(path))
        ips = self._overlay.ip_dict
        if regmap.IP_NAME not in ips:
            raise DeviceError(
                f"device 'pynq': the overlay has no IP named {regmap.IP_NAME!r} "
                f"(it has {', '.join(sorted(ips))})"
            )
        return self._overlay.device, int(ips[regmap.IP_NAME]["phys_addr"])
