"""The accelerator's host-visible AXI4-Lite register map, defined once.

32-bit registers at 4-byte spacing. Used by the RTL (through the generated `vta_config.vh`), the
Verilator harness and every driver. A run: write INSN_ADDR and INSN_COUNT, write CONTROL_START to
CONTROL, poll CONTROL until CONTROL_DONE (or STATUS != 0), read CYCLES_LO/HI and the counters.

From COUNTERS_BASE, one 64-bit counter (LO word, then HI word) per unit of `stats.MODULES`
(fetch, load, compute, store) and kind of cycle of `COUNTER_KINDS` (the `ModuleStats` fields:
busy, stall_token, stall_queue, stall_dram), unit-major. Like CYCLES they count from START and
stop at FINISH's end cycle, with the definitions of docs/timing.md, so a device reports the same
per-module Stats as the cycle simulator.
"""

from __future__ import annotations

from collections.abc import Callable

from .stats import MODULES, Stats

# Register byte offsets.
CONTROL = 0x00  # W: bit START launches a run. R: bit DONE (set at FINISH), bit BUSY.
STATUS = 0x04  # R: error bits below (sticky until the next START); 0 = no error.
INSN_COUNT = 0x08  # RW: number of 16-byte instructions to fetch.
INSN_ADDR = 0x0C  # RW: byte address of the instruction stream in DRAM.
CYCLES_LO = 0x10  # R: cycles since START (frozen at FINISH's end cycle), low word.
CYCLES_HI = 0x14  # R: high word.
HW_ID = 0x18  # R: HW_ID_VALUE, so a driver can check it talks to this design.

REGISTERS = {
    "CONTROL": CONTROL,
    "STATUS": STATUS,
    "INSN_COUNT": INSN_COUNT,
    "INSN_ADDR": INSN_ADDR,
    "CYCLES_LO": CYCLES_LO,
    "CYCLES_HI": CYCLES_HI,
    "HW_ID": HW_ID,
}
REG_BITS = 32  # every register (and the AXI4-Lite data bus) is 32 bits wide
CYCLES_BITS = 64  # the cycle counter, read as CYCLES_LO and CYCLES_HI

# Per-module cycle counters (64 bits each, like CYCLES).
COUNTERS_BASE = 0x40
COUNTER_UNITS = MODULES  # fetch, load, compute, store
COUNTER_KINDS = ("busy", "stall_token", "stall_queue", "stall_dram")  # ModuleStats fields
COUNTER_BYTES = CYCLES_BITS // 8
N_COUNTERS = len(COUNTER_UNITS) * len(COUNTER_KINDS)
ADDR_BITS = (COUNTERS_BASE + N_COUNTERS * COUNTER_BYTES - 1).bit_length()  # AXI4-Lite address


def counter_offset(unit: str, kind: str) -> int:
    """Byte offset of the LO word of a unit's counter of one kind of cycle (HI at + 4)."""
    index = COUNTER_UNITS.index(unit) * len(COUNTER_KINDS) + COUNTER_KINDS.index(kind)
    return COUNTERS_BASE + index * COUNTER_BYTES


def read_counters(read: Callable[[int], int], stats: Stats) -> None:
    """Fill `stats.modules` busy/stall cycles from the counters, reading each 32-bit register
    at a byte offset with `read` (a driver's MMIO read, or a harness's dump)."""
    for unit in COUNTER_UNITS:
        for kind in COUNTER_KINDS:
            offset = counter_offset(unit, kind)
            value = read(offset) | read(offset + REG_BITS // 8) << REG_BITS
            setattr(stats.modules[unit], kind, value)


# CONTROL bits.
CONTROL_START = 1 << 0
CONTROL_DONE = 1 << 1
CONTROL_BUSY = 1 << 2

# STATUS error bits.
STATUS_BAD_OPCODE = 1 << 0  # an instruction's opcode is not LOAD/STORE/GEMM/FINISH/ALU
STATUS_BAD_MEMTYPE = 1 << 1  # LOAD/STORE memory_type this design does not execute
STATUS_BAD_ALU_OP = 1 << 2  # ALU opcode unknown, or MUL/REQ where alu_mul/alu_requant is off
STATUS_AXI_ERROR = 1 << 3  # a DRAM read or write response was not OKAY

STATUS_BITS = {
    "BAD_OPCODE": STATUS_BAD_OPCODE,
    "BAD_MEMTYPE": STATUS_BAD_MEMTYPE,
    "BAD_ALU_OP": STATUS_BAD_ALU_OP,
    "AXI_ERROR": STATUS_AXI_ERROR,
}

HW_ID_VALUE = 0x5654_4102  # "VTA", ISA HW_VER 0.0.2
# The accelerator's instance name in a board's block design (hw/fpga/), by which a driver finds
# its register block in the overlay's description (.hwh).
IP_NAME = "vta"


def describe_status(status: int) -> str:
    """Names of the error bits set in a STATUS value ('ok' when none)."""
    names = [name for name, bit in STATUS_BITS.items() if status & bit]
    return ", ".join(names) if names else "ok"
