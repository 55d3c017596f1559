"""Vectorized GEMM micro-op batches: int8 tile products accumulated into int32 ACC rows.

A batch of n micro-ops is computed with one stacked BLAS matmul. Micro-ops are grouped by weight
tile (a blocked GEMM reuses each weight tile across a loop), so each distinct weight tile is
converted once and multiplied by the stack of input tiles that use it.
"""

from __future__ import annotations

import numpy as np

# Group by weight tile only while padding the groups to equal size at most doubles the work.
MAX_GROUP_PADDING = 2


def tile_products(inp: np.ndarray, wgt: np.ndarray, src: np.ndarray, wgt_idx: np.ndarray):
    """Products INP[src[n]] @ WGT[wgt_idx[n]].T for every micro-op n, in some order.

    `inp` is (depth, batch, block_in) int8, `wgt` (depth, block_out, block_in) int8. Returns
    `(owner, prod)`: prod[m] (batch * block_out float32 lanes) belongs to micro-op owner[m];
    rows with owner -1 are padding and hold zeros.

    float32 is exact here: |int8 * int8| <= 2**14 and block_in <= 64 terms bound every partial
    sum of a dot product by 2**20 < 2**24, so the BLAS summation order cannot round.
    """
    n = src.size
    batch, block_in = inp.shape[1:]
    block_out = wgt.shape[1]
    inp_rows = inp.reshape(inp.shape[0], batch * block_in)
    counts = np.bincount(wgt_idx, minlength=wgt.shape[0])
    group_size = int(counts.max())
    used = np.flatnonzero(counts)
    if used.size * group_size > MAX_GROUP_PADDING * n:
        x = inp_rows.take(src, axis=0).astype(np.float32).reshape(n, batch, block_in)
        w = wgt.take(wgt_idx, axis=0).astype(np.float32)
        return np.arange(n), np.matmul(x, w.transpose(0, 2, 1)).reshape(n, batch * block_out)
    # Sort micro-ops by weight tile (radix sort: SRAM indices fit 16 bits), then give each a
    # (group, rank) slot in a (groups, group_size) grid; unused slots get zero inputs.
    order = np.argsort(wgt_idx.astype(np.uint16), kind="stable")
    group_of = np.zeros(wgt.shape[0], dtype=np.int64)
    group_of[used] = np.arange(used.size)
    first = np.zeros(wgt.shape[0], dtype=np.int64)
    first[used] = np.cumsum(counts[used]) - counts[used]
    sorted_wgt = wgt_idx.take(order)
    slot = group_of.take(sorted_wgt) * group_size + (np.arange(n) - first.take(sorted_wgt))
    owner = np.full(used.size * group_size, -1, dtype=np.int64)
    owner[slot] = order
    x = inp_rows.take(src.take(owner), axis=0).astype(np.float32)
    if slot.size < owner.size:
        x[owner < 0] = 0
    w = wgt.take(used, axis=0).astype(np.float32)
    prod = np.matmul(
        x.reshape(used.size, group_size * batch, block_in), w.transpose(0, 2, 1)
    ).reshape(owner.size, batch * block_out)
    return owner, prod


def accumulate(acc: np.ndarray, dst: np.ndarray, owner, prod: np.ndarray) -> np.ndarray:
    """ACC[dst[owner[m]]] += prod[m] (int32, wrapping); returns the distinct rows touched.

    Addition mod 2**32 is associative and commutative, so the order of the micro-ops does not
    change the final ACC rows. Padding rows (owner -1) hold zero products: adding them to
    dst[-1] changes nothing, which saves filtering them out.
    """
    lanes = acc.shape[1]
    rows = dst.take(owner)
    flat = (rows[:, None] * lanes + np.arange(lanes)).reshape(-1)
    np.add.at(acc.reshape(-1), flat, prod.astype(np.int32).reshape(-1))
    return np.flatnonzero(np.bincount(dst, minlength=acc.shape[0]))
