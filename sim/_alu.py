"""Lane-wise ALU semantics shared by every functional model of the accelerator.

The ACC lanes are two's-complement `acc_width`-bit integers; operations are computed in int64
and wrapped back to the lane width, which is exactly the hardware's modular arithmetic.
"""

from __future__ import annotations

import numpy as np

from vta.isa import AluOp


def shift(x: np.ndarray, amount: np.ndarray | int, acc_width: int) -> np.ndarray:
    """SHR with a signed amount: >= 0 arithmetic right, < 0 left; |amount| saturates at width-1."""
    amount = np.asarray(amount, dtype=np.int64)
    magnitude = np.minimum(np.abs(amount), acc_width - 1)
    x = x.astype(np.int64)
    return np.where(amount >= 0, x >> magnitude, x << magnitude)


def alu_apply(op: AluOp, x: np.ndarray, y: np.ndarray | int, acc_width: int) -> np.ndarray:
    """`op(x, y)` on ACC lanes, wrapped to int32 (the only ACC width the configs allow)."""
    x64 = x.astype(np.int64)
    if op == AluOp.MIN:
        out = np.minimum(x64, y)
    elif op == AluOp.MAX:
        out = np.maximum(x64, y)
    elif op == AluOp.ADD:
        out = x64 + y
    elif op == AluOp.SHR:
        out = shift(x64, y, acc_width)
    elif op == AluOp.MUL:
        out = x64 * np.asarray(y, dtype=np.int64)
    else:  # pragma: no cover - AluOp is closed
        raise ValueError(f"unknown ALU op {op!r}")
    return out.astype(np.int32)
