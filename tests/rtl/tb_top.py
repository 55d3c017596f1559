"""Top-level bench: drive the AXI4-Lite registers as the driver does, DRAM served by AxiMemory;
reference examples and random Programs must give the expected outputs and `sim`'s cycles."""

import os

import cocotb
import numpy as np
from axi_mem import AxiMemory
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from sim.cycle import schedule
from sim.functional import FunctionalSimulator
from testkit.examples import all_examples
from testkit.program_fuzz import random_program
from testkit.programs import conv_like
from vta import regmap
from vta.config import VTAConfig

PAGE = 4096


class LiteMaster:
    """AXI4-Lite master on the s_axi_control_* port."""

    def __init__(self, dut):
        self.dut = dut
        dut.s_axi_control_awvalid.value = 0
        dut.s_axi_control_wvalid.value = 0
        dut.s_axi_control_arvalid.value = 0
        dut.s_axi_control_bready.value = 1
        dut.s_axi_control_rready.value = 1
        dut.s_axi_control_wstrb.value = (1 << (regmap.REG_BITS // 8)) - 1
        dut.s_axi_control_awprot.value = dut.s_axi_control_arprot.value = 0

    async def write(self, addr: int, data: int):
        d = self.dut
        d.s_axi_control_awaddr.value, d.s_axi_control_wdata.value = addr, data
        d.s_axi_control_awvalid.value = d.s_axi_control_wvalid.value = 1
        while True:
            await ReadOnly()
            fired = d.s_axi_control_awready.value
            await RisingEdge(d.clk)
            if fired:
                break
        d.s_axi_control_awvalid.value = d.s_axi_control_wvalid.value = 0

    async def read(self, addr: int) -> int:
        d = self.dut
        d.s_axi_control_araddr.value = addr
        d.s_axi_control_arvalid.value = 1
        while True:
            await ReadOnly()
            fired = d.s_axi_control_arready.value
            await RisingEdge(d.clk)
            if fired:
                break
        d.s_axi_control_arvalid.value = 0
        while True:
            await ReadOnly()
            if d.s_axi_control_rvalid.value:
                value = int(d.s_axi_control_rdata.value)
                await RisingEdge(d.clk)
                return value
            await RisingEdge(d.clk)


async def run_program(dut, program, max_cycles=200_000):
    """Load DRAM, launch through the registers, poll DONE; return (final DRAM, CYCLES)."""
    cfg = program.config
    n = next(i for i, insn in enumerate(program.instructions) if insn.opcode.name == "FINISH") + 1
    insn_addr = -(-program.dram.size // PAGE) * PAGE
    mem = bytearray(insn_addr + n * 16)
    mem[: program.dram.size] = program.dram.tobytes()
    mem[insn_addr:] = program.insns[: n * 16].tobytes()
    axi = AxiMemory(dut, mem, cfg.bus_bytes, cfg.dram_latency)
    readers = ("m_axi_fetch", "m_axi_load", "m_axi_compute")
    tasks = [cocotb.start_soon(axi.serve_read(p)) for p in readers]
    tasks.append(cocotb.start_soon(axi.serve_write("m_axi_store")))
    lite = LiteMaster(dut)
    assert await lite.read(regmap.HW_ID) == regmap.HW_ID_VALUE
    await lite.write(regmap.INSN_ADDR, insn_addr)
    await lite.write(regmap.INSN_COUNT, n)
    await lite.write(regmap.CONTROL, regmap.CONTROL_START)
    for _ in range(max_cycles // 32):
        await ClockCycles(dut.clk, 32)
        status = await lite.read(regmap.STATUS)
        assert status == 0, f"STATUS {regmap.describe_status(status)}"
        if await lite.read(regmap.CONTROL) & regmap.CONTROL_DONE:
            break
    else:
        raise AssertionError(f"no DONE within {max_cycles} cycles")
    cycles = await lite.read(regmap.CYCLES_LO) | await lite.read(regmap.CYCLES_HI) << 32
    for task in tasks:
        task.cancel()
    return np.frombuffer(bytes(mem[: program.dram.size]), dtype=np.uint8), cycles


async def reset(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0


def programs():
    cfg = VTAConfig.load(os.environ.get("VTA_CONFIG", "tiny"))
    exs = all_examples(cfg)
    picked = [exs[0], exs[5], exs[7], exs[-1], conv_like(cfg, 4, 4)]
    named = [(ex.name, ex.program, ex.expected) for ex in picked]
    named += [(f"random{s}", random_program(s, cfg), None) for s in range(5)]
    return named


@cocotb.test()
async def programs_match_expected_fsim_and_sim_cycles(dut):
    await reset(dut)
    for name, program, expected in programs():
        final, cycles = await run_program(dut, program)
        reference, _ = FunctionalSimulator().execute(program, program.dram)
        assert np.array_equal(final, reference), f"{name}: DRAM differs from fsim"
        for key, want in (expected or {}).items():
            assert np.array_equal(program.outputs(final)[key], want), f"{name}: {key}"
        want = schedule(program).cycles
        assert cycles == want, f"{name}: {cycles} cycles, sim says {want}"
        dut._log.info(f"{name}: {cycles} cycles (sim {want})")
