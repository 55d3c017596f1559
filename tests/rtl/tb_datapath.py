"""GEMM core (three pipeline stages) and tensor ALU (combinational lanes) benches against numpy
references."""

import random

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, Timer

from testkit.examples import alu_reference
from vta.isa import AluOp

STAGES = 3  # the GEMM core's pipeline: (inp, wgt) in stage 1, (acc, reset) and out in stage 3


def pack(values, width: int) -> int:
    word = 0
    for i, v in enumerate(values):
        word |= (int(v) & ((1 << width) - 1)) << (i * width)
    return word


def unpack(word: int, n: int, width: int) -> np.ndarray:
    vals = [(word >> (i * width)) & ((1 << width) - 1) for i in range(n)]
    return np.array([v - (1 << width) if v >> (width - 1) else v for v in vals], dtype=np.int64)


@cocotb.test()
async def gemm_core_matches_numpy(dut):
    """A new (inp, wgt) every cycle; its (acc, reset) two cycles later give its result."""
    batch, bi, bo = (int(getattr(dut, p).value) for p in ("BATCH", "BLOCK_IN", "BLOCK_OUT"))
    rng = np.random.default_rng(1)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    trials = []
    for trial in range(200):
        inp = rng.integers(-128, 128, (batch, bi))
        wgt = rng.integers(-128, 128, (bo, bi))
        acc = rng.integers(-(2**31), 2**31, (batch, bo))
        if trial < 4:  # extremes: -128 * -128 sums and int32 wrap-around
            inp[:], wgt[:], acc[:] = -128, -128, 2**31 - 1
        trials.append((inp, wgt, acc, trial % 7 == 0))
    for cycle in range(len(trials) + STAGES - 1):
        await FallingEdge(dut.clk)
        if cycle < len(trials):
            inp, wgt, _, _ = trials[cycle]
            dut.inp.value = pack(inp.ravel(), 8)
            dut.wgt.value = pack(wgt.ravel(), 8)
        done = cycle - (STAGES - 1)
        if done >= 0:
            inp, wgt, acc, reset = trials[done]
            dut.acc.value = pack(acc.ravel(), 32)
            dut.reset.value = int(reset)
            await Timer(1, unit="ns")
            want = np.zeros_like(acc) if reset else (acc + inp @ wgt.T).astype(np.int32)
            got = unpack(int(dut.out.value), batch * bo, 32).reshape(batch, bo)
            assert np.array_equal(got, want), f"trial {done}"


@cocotb.test()
async def alu_lanes_match_reference(dut):
    """Every opcode in both operand modes, each result one clock edge after its operands; a
    disabled MUL/REQ passes x through unchanged."""
    lanes = int(dut.LANES.value)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    enabled = {AluOp.MUL: int(dut.MUL_ENABLED.value), AluOp.REQ: int(dut.REQ_ENABLED.value)}
    rng = np.random.default_rng(2)
    for trial in range(600):
        op = random.choice(list(AluOp))
        use_imm = trial % 2 == 0
        x = rng.integers(-(2**31), 2**31, lanes)
        if op == AluOp.SHR:  # amounts inside, at and beyond the width, both signs
            s = rng.integers(-40, 40, lanes)
            s[0] = -(2**31)
            imm = int(rng.integers(-40, 40))
        elif op == AluOp.REQ:  # shift and relu in imm[5:0]; small sums hit both clip sides
            s = rng.integers(-(2**31), 2**31, lanes)
            if trial % 3 == 0:
                x, s = rng.integers(-2000, 2000, lanes), rng.integers(-2000, 2000, lanes)
            imm = [0, 31, int(rng.integers(0, 32))][trial % 3] | (32 * (trial % 4 < 2))
        else:
            s = rng.integers(-(2**31), 2**31, lanes)
            imm = int(rng.integers(-(2**15), 2**15))
        dut.op.value = int(op)
        dut.use_imm.value = int(use_imm)
        dut.imm.value = imm & 0xFFFFFFFF
        dut.x.value = pack(x if use_imm else rng.integers(-(2**31), 2**31, lanes), 32)
        dut.t.value = pack(rng.integers(-(2**31), 2**31, lanes) if use_imm else x, 32)
        dut.s.value = pack(s, 32)
        await FallingEdge(dut.clk)
        y = (
            np.zeros_like(s)
            if op == AluOp.REQ and use_imm
            else np.full_like(s, imm)
            if use_imm
            else s
        )
        if not enabled.get(op, 1):
            want = x
        else:
            want = np.array(
                [alu_reference(op, x[i : i + 1], y[i : i + 1], imm=imm)[0] for i in range(lanes)]
            )
        got = unpack(int(dut.out.value), lanes, 32)
        assert np.array_equal(got, want.astype(np.int64)), f"trial {trial} {op.name} imm={imm}"
        await FallingEdge(dut.clk)
