"""Padded 2-D load (vta_loader) and strided store (vta_storer) benches: buffer contents, DRAM
contents and cycle counts against numpy and the timing contract (sim.timing)."""

import cocotb
import numpy as np
from axi_mem import AxiMemory
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from sim.timing import pad_elements, transfer_cost
from vta.config import VTAConfig
from vta.isa import MemInsn

LATENCY = 5


def params(dut):
    log_eb, log_bb, aw = (int(getattr(dut, p).value) for p in ("LOG_EB", "LOG_BB", "AW"))
    cfg = VTAConfig.load("tiny").replace(
        log_bus_width=log_bb + 3,
        max_burst_beats=int(dut.MAX_BEATS.value),
        max_outstanding=int(dut.MAX_OUT.value),
        dram_latency=LATENCY,
    )
    return 1 << log_eb, 1 << log_bb, 1 << aw, cfg


async def start_clock(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.start.value = 0
    dut.rst.value = 1
    await ClockCycles(dut.clk, 2)
    dut.rst.value = 0
    await RisingEdge(dut.clk)


def cases(rng, depth):
    """(dram_elem, ys, xs, stride, pads) with the padded footprint inside the buffer."""
    out = []
    while len(out) < 25:
        ys, xs = int(rng.integers(1, 5)), int(rng.integers(1, 9))
        pads = tuple(int(p) for p in rng.integers(0, 3, 4))
        if len(out) % 5 == 0:
            pads = (0, 0, 0, 0)
        if (ys + pads[0] + pads[1]) * (xs + pads[2] + pads[3]) > depth // 2:
            continue
        out.append((int(rng.integers(0, 300)), ys, xs, xs + int(rng.integers(0, 4)), pads))
    return out


@cocotb.test()
async def padded_loads_fill_the_buffer_and_take_contract_cycles(dut):
    eb, bb, depth, cfg = params(dut)
    lanes = max(1, bb // eb)
    await start_clock(dut)
    rng = np.random.default_rng(3)
    mem = bytearray(rng.integers(0, 256, 8192, dtype=np.uint8).tobytes())
    elems = np.frombuffer(bytes(mem), dtype=np.uint8).reshape(-1, eb)
    cocotb.start_soon(AxiMemory(dut, mem, bb, LATENCY).serve_read(""))
    for dram, ys, xs, stride, pads in cases(rng, depth):
        base = int(rng.integers(0, depth // 2))
        sram = {}
        dut.sram_base.value, dut.dram_base.value = base, dram
        dut.y_size.value, dut.x_size.value, dut.x_stride.value = ys, xs, stride
        dut.y_pad_0.value, dut.y_pad_1.value, dut.x_pad_0.value, dut.x_pad_1.value = pads
        dut.start.value = 1
        cycles = 0
        while True:
            await ReadOnly()
            we, waddr, wdata = int(dut.we.value), int(dut.waddr.value), int(dut.wdata.value)
            done = int(dut.done.value)
            baw = len(dut.waddr) // lanes
            for bank in range(lanes):
                if we >> bank & 1:
                    index = ((waddr >> (bank * baw)) & ((1 << baw) - 1)) * lanes + bank
                    sram[index] = (wdata >> (bank * eb * 8)) & ((1 << (eb * 8)) - 1)
            await RisingEdge(dut.clk)
            dut.start.value = 0
            if done:
                break
            cycles += 1
        rows = np.stack([elems[dram + y * stride : dram + y * stride + xs] for y in range(ys)])
        padded = np.pad(rows, ((pads[0], pads[1]), (pads[2], pads[3]), (0, 0)))
        want = [int.from_bytes(e.tobytes(), "little") for e in padded.reshape(-1, eb)]
        got = [sram.get(base + i) for i in range(len(want))]
        assert got == want, f"load {dram, ys, xs, stride, pads}: buffer contents"
        assert len(sram) == len(want), "writes outside the padded footprint"
        insn = MemInsn(
            y_size=ys,
            x_size=xs,
            x_stride=stride,
            y_pad_0=pads[0],
            y_pad_1=pads[1],
            x_pad_0=pads[2],
            x_pad_1=pads[3],
        )
        stream = transfer_cost(dram * eb, xs * eb, stride * eb, ys, cfg).cycles
        assert cycles == pad_elements(insn) + stream, f"load {dram, ys, xs, stride, pads}: cycles"


@cocotb.test()
async def strided_stores_write_dram_and_take_contract_cycles(dut):
    eb, bb, depth, cfg = params(dut)
    lanes = max(1, bb // eb)
    await start_clock(dut)
    rng = np.random.default_rng(4)
    raw = rng.integers(0, 256, (depth, eb), dtype=np.uint8)
    buffer = [int.from_bytes(row.tobytes(), "little") for row in raw]
    mem = bytearray(8192)
    cocotb.start_soon(AxiMemory(dut, mem, bb, LATENCY).serve_write(""))
    baw = len(dut.raddr) // lanes
    for dram, ys, xs, stride, _ in cases(rng, depth):
        base = int(rng.integers(0, depth // 2))
        mem[:] = bytes(len(mem))
        dut.sram_base.value, dut.dram_base.value = base, dram
        dut.y_size.value, dut.x_size.value, dut.x_stride.value = ys, xs, stride
        dut.start.value = 1
        cycles = 0
        while True:
            await ReadOnly()
            re, raddr, done = int(dut.re.value), int(dut.raddr.value), int(dut.done.value)
            await RisingEdge(dut.clk)
            dut.start.value = 0
            word = int(dut.rdata.value)  # buffer banks: registered read
            for bank in range(lanes):
                if re >> bank & 1:
                    index = ((raddr >> (bank * baw)) & ((1 << baw) - 1)) * lanes + bank
                    word &= ~(((1 << (eb * 8)) - 1) << (bank * eb * 8))
                    word |= int(buffer[index]) << (bank * eb * 8)
            dut.rdata.value = word
            if done:
                break
            cycles += 1
        got = np.frombuffer(bytes(mem), dtype=np.uint8).reshape(-1, eb)
        for y in range(ys):
            for x in range(xs):
                want = int(buffer[base + y * xs + x])
                assert int.from_bytes(got[dram + y * stride + x].tobytes(), "little") == want
        written = np.count_nonzero(got.any(axis=1))
        assert written <= ys * xs, "bytes written outside the rows"
        stream = transfer_cost(dram * eb, xs * eb, stride * eb, ys, cfg, write=True).cycles
        assert cycles == stream, f"store {dram, ys, xs, stride}: cycles"
