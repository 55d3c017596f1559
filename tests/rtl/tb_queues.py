"""Command queue (vta_fifo) and dependence-token queue (vta_token_queue) benches."""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge


async def start(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.push.value = 0
    dut.pop.value = 0
    if hasattr(dut, "din"):
        dut.din.value = 0
    dut.rst.value = 1
    await ClockCycles(dut.clk, 2)
    dut.rst.value = 0
    await RisingEdge(dut.clk)


async def step(dut, push=0, pop=0, din=0):
    """One cycle with the given inputs; returns (full, empty, dout) seen in that cycle."""
    dut.push.value, dut.pop.value = push, pop
    if hasattr(dut, "din"):
        dut.din.value = din
    await ReadOnly()
    seen = (int(dut.full.value), int(dut.empty.value))
    if hasattr(dut, "dout"):
        seen += (int(dut.dout.value),)
    await RisingEdge(dut.clk)
    return seen


@cocotb.test()
async def queue_fills_drains_and_keeps_order(dut):
    await start(dut)
    depth = 1 << int(dut.LOG_DEPTH.value)
    has_data = hasattr(dut, "din")
    assert (await step(dut))[:2] == (0, 1)
    # a push in cycle c is visible (non-empty, at the head) in cycle c + 1
    await step(dut, push=1, din=0xA5)
    seen = await step(dut)
    assert seen[1] == 0 and (not has_data or seen[2] == 0xA5)
    await step(dut, pop=1)
    assert (await step(dut))[1] == 1
    for value in range(depth):
        await step(dut, push=1, din=value)
    seen = await step(dut, push=1, din=99)  # full: this push is dropped
    assert seen[0] == 1
    for value in range(depth):
        seen = await step(dut, pop=1)
        assert seen[1] == 0 and (not has_data or seen[2] == value)
    assert (await step(dut))[1] == 1
    # random traffic against a model
    model = []
    for _ in range(500):
        push, pop = random.random() < 0.5, random.random() < 0.5
        value = random.randrange(256)
        full, empty, *dout = await step(dut, push=int(push), pop=int(pop), din=value)
        assert full == (len(model) == depth) and empty == (not model)
        if pop and model:
            head = model.pop(0)
            assert not has_data or dout[0] == head
        if push and full == 0:
            model.append(value)
