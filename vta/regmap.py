"""The accelerator's host-visible AXI4-Lite register map, defined once.

32-bit registers at 4-byte spacing. Used by the RTL (through the generated `vta_config.vh`), the
Verilator harness and every driver. A run: write INSN_ADDR and INSN_COUNT, write CONTROL_START to
CONTROL, poll CONTROL until CONTROL_DONE (or STATUS != 0), read CYCLES_LO/HI.
"""

from __future__ import annotations

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
ADDR_BITS = 5  # AXI4-Lite address width covering every register
REG_BITS = 32  # every register (and the AXI4-Lite data bus) is 32 bits wide
CYCLES_BITS = 64  # the cycle counter, read as CYCLES_LO and CYCLES_HI

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


def describe_status(status: int) -> str:
    """Names of the error bits set in a STATUS value ('ok' when none)."""
    names = [name for name, bit in STATUS_BITS.items() if status & bit]
    return ", ".join(names) if names else "ok"
