"""Host glue: packing tensors into the accelerator's blocked layouts and back (numpy)."""

from __future__ import annotations

import numpy as np

from ..errors import LoweringError


def _blocks(n: int, block: int, what: str) -> int:
    if n % block:
        raise LoweringError(f"{what} = {n} is not a multiple of the block size {block}")
    return n // block


def pack_nchw(x: np.ndarray, bn: int, bc: int) -> np.ndarray:
    """NCHW -> NCHW{bn}n{bc}c: (N/bn, C/bc, H, W, bn, bc)."""
    n, c, h, w = x.shape
    x = x.reshape(_blocks(n, bn, "N"), bn, _blocks(c, bc, "C"), bc, h, w)
    return np.ascontiguousarray(x.transpose(0, 2, 4, 5, 1, 3))


def unpack_nchw(x: np.ndarray) -> np.ndarray:
    """NCHW{bn}n{bc}c -> NCHW."""
    n, c, h, w, bn, bc = x.shape
    return np.ascontiguousarray(x.transpose(0, 4, 1, 5, 2, 3).reshape(n * bn, c * bc, h, w))


def pack_oihw(w: np.ndarray, bo: int, bi: int) -> np.ndarray:
    """OIHW -> OIHW{bo}o{bi}i: (O/bo, I/bi, KH, KW, bo, bi)."""
    o, i, kh, kw = w.shape
    w = w.reshape(_blocks(o, bo, "O"), bo, _blocks(i, bi, "I"), bi, kh, kw)
    return np.ascontiguousarray(w.transpose(0, 2, 4, 5, 1, 3))


def pack_nc(x: np.ndarray, bn: int, bc: int) -> np.ndarray:
    """(N, C) -> (N/bn, C/bc, bn, bc) for dense inputs and outputs."""
    n, c = x.shape
    x = x.reshape(_blocks(n, bn, "N"), bn, _blocks(c, bc, "C"), bc)
    return np.ascontiguousarray(x.transpose(0, 2, 1, 3))


def unpack_nc(x: np.ndarray) -> np.ndarray:
    n, c, bn, bc = x.shape
    return np.ascontiguousarray(x.transpose(0, 2, 1, 3).reshape(n * bn, c * bc))
