"""ALU micro-op semantics: lane-wise ops and in-order application of a micro-op batch.

ACC lanes are two's-complement int32; every op is computed in int64 and wrapped back, which is
exactly the hardware's modular arithmetic.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from vta.isa import AluOp, requant_bounds, requant_fields

# Ops whose repeated application to one row numpy can apply in order with `ufunc.at`.
_UFUNCS = {AluOp.MIN: np.minimum, AluOp.MAX: np.maximum, AluOp.ADD: np.add, AluOp.MUL: np.multiply}


def shift(x: np.ndarray, amount: np.ndarray | int, acc_width: int) -> np.ndarray:
    """SHR with a signed amount: >= 0 arithmetic right, < 0 left; |amount| saturates at width-1."""
    amount = np.asarray(amount, dtype=np.int64)
    magnitude = np.minimum(np.abs(amount), acc_width - 1)
    x = x.astype(np.int64)
    return np.where(amount >= 0, x >> magnitude, x << magnitude)


def requant(x: np.ndarray, y: np.ndarray | int, imm: int, out_width: int) -> np.ndarray:
    """REQ: (x + y) wrapped to int32, shifted right arithmetically by imm[4:0], clipped to the
    signed `out_width`-bit range ([0, max] when imm[5], relu, is set)."""
    amount, relu = requant_fields(imm)
    total = (x.astype(np.int64) + np.asarray(y, dtype=np.int64)).astype(np.int32)
    return np.clip(total.astype(np.int64) >> amount, *requant_bounds(out_width, relu))


def alu_apply(
    op: AluOp, x: np.ndarray, y: np.ndarray | int, acc_width: int, out_width: int, imm: int = 0
) -> np.ndarray:
    """`op(x, y)` on ACC lanes, wrapped to int32 (the only ACC width the configs allow); REQ
    takes its shift and relu from `imm`."""
    if op == AluOp.SHR:
        out = shift(x, y, acc_width)
    elif op == AluOp.REQ:
        out = requant(x, y, imm, out_width)
    else:
        out = _UFUNCS[op](x.astype(np.int64), np.asarray(y, dtype=np.int64))
    return out.astype(np.int32)


def alu_update(
    acc: np.ndarray,
    op: AluOp,
    dst: np.ndarray,
    src: np.ndarray | None,
    imm: int,
    acc_width: int,
    out_width: int,
) -> None:
    """ACC[dst[n]] = op(ACC[dst[n]], imm if src is None else ACC[src[n]]), for n in order (REQ
    adds 0 instead of the immediate, which holds its shift and relu).

    Runs of micro-ops in which no source reads a row written earlier in the run are applied at
    once; a row written several times in a run is updated in order (`ufunc.at`, or rounds of
    its successive writes for SHR and REQ). Only true read-after-write chains split the batch.
    """
    apply = functools.partial(alu_apply, op, acc_width=acc_width, out_width=out_width, imm=imm)
    for start, stop in _independent_runs(dst, src):
        rows = dst[start:stop]
        if src is None:
            operand = 0 if op == AluOp.REQ else imm
        else:
            operand = acc[src[start:stop]].astype(np.int64)
        touched, slot = np.unique(rows, return_inverse=True)
        if touched.size == rows.size:
            acc[rows] = apply(acc[rows], operand)
        elif op in _UFUNCS:
            work = acc[touched].astype(np.int64)
            lanes = work.shape[1]
            flat = (slot[:, None] * lanes + np.arange(lanes)).reshape(-1)
            values = np.broadcast_to(operand, (rows.size, lanes)).reshape(-1)
            _UFUNCS[op].at(work.reshape(-1), flat, values)
            acc[touched] = work.astype(np.int32)
        else:
            for picks in _write_rounds(slot):
                y = operand if src is None else operand[picks]
                acc[rows[picks]] = apply(acc[rows[picks]], y)


def _independent_runs(dst: np.ndarray, src: np.ndarray | None) -> list[tuple[int, int]]:
    """Split [0, n) where micro-op k reads (src) a row written by an earlier one in its run."""
    n = dst.size
    if src is None:
        return [(0, n)]
    # writes sorted by (row, position); for each read, the latest earlier write to its row.
    writes = np.sort(dst * n + np.arange(n))
    before = np.searchsorted(writes, src * n + np.arange(n)) - 1
    found = writes[np.maximum(before, 0)]
    writer = np.where((before >= 0) & (found // n == src), found % n, -1)
    bounds = [0]
    for k in np.flatnonzero(writer >= 0).tolist():  # only the read-after-write hazards
        if writer[k] >= bounds[-1]:
            bounds.append(k)
    bounds.append(n)
    return list(itertools.pairwise(bounds))


def _write_rounds(slot: np.ndarray) -> list[np.ndarray]:
    """Positions grouped by how many earlier writes hit the same row: round r = r-th writes."""
    order = np.argsort(slot, kind="stable")
    counts = np.bincount(slot)
    first = np.cumsum(counts) - counts
    rank = np.empty_like(slot)
    rank[order] = np.arange(slot.size) - first[slot[order]]
    by_round = np.argsort(rank, kind="stable")
    return np.split(by_round, np.cumsum(np.bincount(rank))[:-1])
