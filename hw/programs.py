"""Programs that exercise the RTL beyond `vta.examples`: a conv-like kernel and seeded random
Programs (padded loads, GEMM and ALU over random micro-op loops, dependence tokens) for
differential testing of `fsim`, `sim` and `rtl` and for the RTL benchmark.
"""

from __future__ import annotations

import numpy as np

from vta.builder import ProgramBuilder
from vta.config import VTAConfig
from vta.errors import ProgramError
from vta.examples import Example
from vta.isa import AluOp, MemType, Stage
from vta.program import Program

LOAD, COMPUTE, STORE = Stage.LOAD, Stage.COMPUTE, Stage.STORE


def _sync(b: ProgramBuilder, src: Stage, dst: Stage) -> None:
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


def random_program(cfg: VTAConfig, seed: int) -> Program:
    """A seeded random valid Program; retries the draw until the validator accepts it."""
    rng = np.random.default_rng(seed)
    for _ in range(100):
        try:
            return _draw(cfg, rng)
        except ProgramError:
            continue
    raise ProgramError(f"random_program: no valid Program drawn for seed {seed}")


def _padded_rows(rng: np.random.Generator, most: int, y_cap: int = 4, x_cap: int = 6):
    """A random 2-D padded load shape (ys, xs, pad) whose padded size fits `most` elements."""
    while True:
        ys, xs = int(rng.integers(1, y_cap + 1)), int(rng.integers(1, x_cap + 1))
        pad = tuple(int(p) for p in rng.integers(0, 3, 4)) if rng.random() < 0.6 else (0,) * 4
        total = (ys + pad[0] + pad[1]) * (xs + pad[2] + pad[3])
        if total <= most:
            return ys, xs, pad, total


def _draw(cfg: VTAConfig, rng: np.random.Generator) -> Program:
    lanes = (cfg.batch, cfg.block_out)
    cap = min(cfg.depth["acc"], cfg.depth["inp"], 64)
    b = ProgramBuilder(cfg)
    # ACC: a padded 2-D load of random int32 data (small values keep GEMM sums interesting).
    ays, axs, apad, acc_rows = _padded_rows(rng, cap)
    stride = axs + int(rng.integers(0, 3))
    a = rng.integers(-(2**20), 2**20, (ays, stride, *lanes)).astype(np.int32)
    b.buffer("a", a.shape, "int32", "input", a)
    b.load(MemType.ACC, 0, "a", 0, ays, axs, stride, pad=apad)
    # INP (padded) and WGT (plain) on the load module.
    iys, ixs, ipad, inp_rows = _padded_rows(rng, cap)
    x = rng.integers(-128, 128, (iys, ixs, cfg.batch, cfg.block_in)).astype(np.int8)
    b.buffer("x", x.shape, "int8", "input", x)
    wgt_rows = int(rng.integers(1, min(cfg.depth["wgt"], 8) + 1))
    w = rng.integers(-128, 128, (wgt_rows, cfg.block_out, cfg.block_in)).astype(np.int8)
    b.buffer("w", w.shape, "int8", "weight", w)
    b.load(MemType.INP, 0, "x", 0, iys, ixs, ixs, pad=ipad)
    b.load(MemType.WGT, 0, "w", 0, 1, wgt_rows, wgt_rows)
    _sync(b, LOAD, COMPUTE)
    for _ in range(int(rng.integers(1, 4))):
        if rng.random() < 0.5:
            _random_gemm(b, rng, acc_rows, inp_rows, wgt_rows)
        else:
            _random_alu(b, rng, acc_rows, cfg)
    # Copy every ACC row to OUT (SHR 0) and store with a random 2-D shape.
    b.alu(AluOp.SHR, [(0, 0)], loops=[(acc_rows, 1, 1)], use_imm=True, imm=0)
    _sync(b, COMPUTE, STORE)
    divisors = [d for d in range(1, acc_rows + 1) if acc_rows % d == 0]
    ys = int(rng.choice(divisors))
    xs = acc_rows // ys
    stride = xs + int(rng.integers(0, 3))
    b.buffer("out", (ys, stride, *lanes), "int8", "output")
    b.store(0, "out", 0, ys, xs, stride)
    b.finish()
    return b.build()


def _loops(rng: np.random.Generator, extents: tuple[int, ...], n_fields: int):
    """Up to two loops (extent, factors...) whose index reach stays inside `extents`."""
    loops = []
    for _ in range(int(rng.integers(0, 3))):
        extent = int(rng.integers(1, 4))
        factors = tuple(int(rng.integers(0, 3)) for _ in range(n_fields))
        loops.append((extent, *factors))
    reach = [sum((loop[0] - 1) * loop[1 + f] for loop in loops) for f in range(n_fields)]
    if any(r >= e for r, e in zip(reach, extents, strict=True)):
        raise ProgramError("loop reach exceeds the buffer")
    return loops, reach


def _random_gemm(b, rng, acc_rows: int, inp_rows: int, wgt_rows: int) -> None:
    loops, reach = _loops(rng, (acc_rows, inp_rows, wgt_rows), 3)
    n = int(rng.integers(1, 5))
    dst = rng.integers(0, acc_rows - reach[0], n)
    src = rng.integers(0, inp_rows - reach[1], n)
    wgt = rng.integers(0, wgt_rows - reach[2], n)
    b.gemm(np.stack([dst, src, wgt], 1), loops=loops, reset=bool(rng.random() < 0.15))


def _random_alu(b, rng, acc_rows: int, cfg: VTAConfig) -> None:
    ops = [AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR] + ([AluOp.MUL] if cfg.alu_mul else [])
    op = ops[int(rng.integers(len(ops)))]
    loops, reach = _loops(rng, (acc_rows, acc_rows), 2)
    n = int(rng.integers(1, 4))
    dst = rng.integers(0, acc_rows - reach[0], n)
    src = rng.integers(0, acc_rows - reach[1], n)
    use_imm = bool(rng.random() < 0.5)
    imm = int(rng.integers(-40, 40)) if op == AluOp.SHR else int(rng.integers(-(2**15), 2**15))
    b.alu(op, np.stack([dst, src], 1), loops=loops, use_imm=use_imm, imm=imm)
