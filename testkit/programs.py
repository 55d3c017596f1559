"""A Program that exercises the RTL beyond `testkit.examples` (random ones come from
`testkit.program_fuzz`):
a conv-like kernel, for differential testing of `fsim`, `sim` and `rtl` and the RTL benchmark.
"""

from __future__ import annotations

import numpy as np

from testkit.examples import Example
from vta.builder import ProgramBuilder
from vta.config import VTAConfig
from vta.isa import AluOp, MemType, Module

LOAD, COMPUTE, STORE = Module.LOAD, Module.COMPUTE, Module.STORE


def _sync(b: ProgramBuilder, src: Module, dst: Module) -> None:
    b.dep_push(src, dst)
    b.dep_pop(src, dst)


def conv_like(cfg: VTAConfig, height: int = 6, width: int = 6, shift: int = 6, seed: int = 0):
    """3x3 'same' convolution of a height x width map of BATCH x BLOCK_IN tiles: a padded 2-D
    INP load, one GEMM whose micro-ops run over (tap, column) and loop over rows, then shift,
    clip and store. Returns an `Example` with the numpy result."""
    rng = np.random.default_rng(seed)
    shape = (height, width, cfg.batch, cfg.block_in)
    x = rng.integers(-128, 128, shape).astype(np.int8)
    w = rng.integers(-128, 128, (9, cfg.block_out, cfg.block_in)).astype(np.int8)
    xp = np.pad(x.astype(np.int64), ((1, 1), (1, 1), (0, 0), (0, 0)))
    acc = np.zeros((height, width, cfg.batch, cfg.block_out), dtype=np.int64)
    for ky in range(3):
        for kx in range(3):
            win = xp[ky : ky + height, kx : kx + width]
            acc += np.einsum("hwbi,oi->hwbo", win, w[ky * 3 + kx].astype(np.int64))
    acc = acc.astype(np.int32).astype(np.int64)  # int32 wrap-around
    out = np.clip(acc >> shift, -128, 127).astype(np.int8)
    rows, prow = height * width, width + 2

    b = ProgramBuilder(cfg)
    b.buffer("x", shape, "int8", "input", x)
    b.buffer("w", w.shape, "int8", "weight", w)
    b.buffer("y", (rows, cfg.batch, cfg.block_out), "int8", "output")
    b.load(MemType.INP, 0, "x", 0, height, width, width, pad=(1, 1, 1, 1))
    b.load(MemType.WGT, 0, "w", 0, 1, 9, 9)
    _sync(b, LOAD, COMPUTE)
    b.gemm([(0, 0, 0)], loops=[(rows, 1, 0, 0)], reset=True)
    uops = [
        (col, ky * prow + kx + col, ky * 3 + kx)
        for ky in range(3)
        for kx in range(3)
        for col in range(width)
    ]
    b.gemm(uops, loops=[(height, width, prow, 0)])
    for op, imm in ((AluOp.SHR, shift), (AluOp.MIN, 127), (AluOp.MAX, -128)):
        b.alu(op, [(0, 0)], loops=[(rows, 1, 1)], use_imm=True, imm=imm)
    _sync(b, COMPUTE, STORE)
    b.store(0, "y", 0, 1, rows, rows)
    b.finish()
    expected = out.reshape(rows, cfg.batch, cfg.block_out)
    return Example(f"conv3x3_{height}x{width}", b.build(), {"y": expected})
