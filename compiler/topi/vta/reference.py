"""int8 numpy references of the accelerator operators, on packed layouts (for tests/benches)."""

from __future__ import annotations

import numpy as np


def _epilogue(acc: np.ndarray, shift: int, clip, relu: bool) -> np.ndarray:
    acc = acc >> shift
    if relu:
        acc = np.maximum(acc, 0)
    if clip is not None:
        acc = np.clip(acc, *clip)
    return acc.astype(np.int8)


def conv2d_packed_acc(
    data: np.ndarray, kernel: np.ndarray, stride: int = 1, padding: int = 0
) -> np.ndarray:
    """The int64 accumulator of conv2d_packed: (N/b, C/c, H, W, b, c) x (O/c, C/c, KH, KW, c, c)."""
    x = np.pad(
        data.astype(np.int64), ((0, 0), (0, 0), (padding,) * 2, (padding,) * 2, (0, 0), (0, 0))
    )
    k = kernel.astype(np.int64)
    kh, kw = k.shape[2:4]
    oh = (x.shape[2] - kh) // stride + 1
    ow = (x.shape[3] - kw) // stride + 1
    acc = np.zeros((x.shape[0], k.shape[0], oh, ow, x.shape[4], k.shape[4]), np.int64)
    for di in range(kh):
        for dj in range(kw):
            patch = x[:, :, di : di + stride * oh : stride, dj : dj + stride * ow : stride]
            acc += np.einsum("nchwbk,ocjk->nohwbj", patch, k[:, :, di, dj], optimize=True)
    return acc


def conv2d_packed_ref(
    data: np.ndarray,
    kernel: np.ndarray,
    stride: int = 1,
    padding: int = 0,
    bias: np.ndarray | None = None,
    shift: int = 0,
    clip: tuple[int, int] | None = None,
    relu: bool = False,
) -> np.ndarray:
    """conv2d_packed in int64 numpy: (N/b, C/c, H, W, b, c) x (O/c, C/c, KH, KW, c, c)."""
    acc = conv2d_packed_acc(data, kernel, stride, padding)
    if bias is not None:
        acc += bias.astype(np.int64)[None, :, :, :, :, :]
    return _epilogue(acc, shift, clip, relu)


def dense_packed_ref(
    data: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None = None,
    shift: int = 0,
    clip: tuple[int, int] | None = None,
    relu: bool = False,
) -> np.ndarray:
    """dense_packed in int64 numpy: (N/b, C/c, b, c) x (O/c, C/c, c, c)."""
    acc = np.einsum("nkbi,okji->nobj", data.astype(np.int64), weight.astype(np.int64))
    if bias is not None:
        acc += bias.astype(np.int64)[None]
    return _epilogue(acc, shift, clip, relu)
