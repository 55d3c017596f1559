"""numpy references of the operators and NCHW <-> NCHWc layout packing (as TVM's
topi.testing), for tests and benchmarks."""

from __future__ import annotations

from typing import Any

import numpy as np

from .window import get_pad_tuple, out_size, pair


def nchw_pack(data: np.ndarray, bn: int) -> np.ndarray:
    """[N, C, H, W] -> [N, C / bn, H, W, bn]."""
    n, c, h, w = data.shape
    return np.ascontiguousarray(data.reshape(n, c // bn, bn, h, w).transpose(0, 1, 3, 4, 2))


def nchwc_unpack(data: np.ndarray) -> np.ndarray:
    """[N, C / bn, H, W, bn] -> [N, C, H, W]."""
    n, cc, h, w, bn = data.shape
    return np.ascontiguousarray(data.transpose(0, 1, 4, 2, 3).reshape(n, cc * bn, h, w))


def oihw_pack(kernel: np.ndarray, ic_bn: int, oc_bn: int) -> np.ndarray:
    """[OC, IC, KH, KW] -> [OC / oc_bn, IC / ic_bn, KH, KW, ic_bn, oc_bn]."""
    oc, ic, kh, kw = kernel.shape
    k = kernel.reshape(oc // oc_bn, oc_bn, ic // ic_bn, ic_bn, kh, kw)
    return np.ascontiguousarray(k.transpose(0, 2, 4, 5, 3, 1))


def windows(data: np.ndarray, kernel, stride, dilation, padding, fill: float) -> np.ndarray:
    """[N, C, OH, OW, KH, KW] views of the padded input under each window."""
    (kh, kw), (sh, sw), (dh, dw) = pair(kernel), pair(stride), pair(dilation)
    top, left, bottom, right = padding
    x = np.pad(data, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    oh = out_size(data.shape[2], kh, sh, dh, top + bottom)
    ow = out_size(data.shape[3], kw, sw, dw, left + right)
    win = np.lib.stride_tricks.sliding_window_view(
        x, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3)
    )
    return win[:, :, : (oh - 1) * sh + 1 : sh, : (ow - 1) * sw + 1 : sw, ::dh, ::dw]


def conv2d_nchw_python(
    a: np.ndarray, w: np.ndarray, stride: Any, padding: Any, dilation: Any = 1, groups: int = 1
) -> np.ndarray:
    """The toolkit's one numpy convolution (references, the graph's reference executor, the
    quantized accelerator's oracle): a [N, C, H, W], w [OC, C / groups, KH, KW] -> [N, OC, OH,
    OW] in a's dtype (exact for integers). One matrix product per kernel offset (BLAS for
    floats; about twice as fast in float64 as one product over all windows; a scaling per
    channel for depthwise weights), or, for a few input channels (a network's first conv), one
    product over the unrolled windows."""
    top, left, bottom, right = get_pad_tuple(padding, w.shape[2:])
    (sh, sw), (dh, dw) = pair(stride), pair(dilation)
    n, c, h, wd = a.shape
    oc, cg, kh, kw = w.shape
    if groups == 1 and cg < 16:
        win = windows(a, (kh, kw), stride, dilation, (top, left, bottom, right), 0)
        oh, ow = win.shape[2:4]
        cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(n, oh * ow, cg * kh * kw)
        out = np.matmul(cols, w.reshape(oc, -1).T).transpose(0, 2, 1)
        return out.reshape(n, oc, oh, ow).astype(a.dtype)
    oh, ow = out_size(h, kh, sh, dh, top + bottom), out_size(wd, kw, sw, dw, left + right)
    x = np.pad(a, ((0, 0), (0, 0), (top, bottom), (left, right)))
    x = x.reshape(n, groups, cg, *x.shape[2:])
    wg = w.reshape(groups, oc // groups, cg, kh, kw)
    acc = np.zeros((n, groups, oc // groups, oh * ow), np.result_type(a, w))
    for i in range(kh):
        for j in range(kw):
            y, z = i * dh, j * dw
            patch = x[..., y : y + sh * (oh - 1) + 1 : sh, z : z + sw * (ow - 1) + 1 : sw]
            patch = patch.reshape(n, groups, cg, oh * ow)
            if cg == 1 and oc == groups:  # depthwise: one weight per channel
                acc += patch * wg[None, :, :, 0, i, j, None]
            else:
                acc += np.matmul(wg[..., i, j], patch)
    return acc.reshape(n, oc, oh, ow).astype(a.dtype)


def depthwise_conv2d_python_nchw(a: np.ndarray, w: np.ndarray, stride, padding, dilation=1):
    """Depthwise conv2d: a [N, C, H, W], w [C, M, KH, KW] -> [N, C * M, OH, OW]."""
    c, m, kh, kw = w.shape
    return conv2d_nchw_python(a, w.reshape(c * m, 1, kh, kw), stride, padding, dilation, c)


def pool2d_python(
    a: np.ndarray, kernel, stride, dilation, padding, pool_type: str, count_include_pad=True
):
    """Reference max / avg pooling of a [N, C, H, W] (no ceil mode)."""
    pads = get_pad_tuple(padding, pair(kernel))
    if pool_type == "max":
        return windows(a, kernel, stride, dilation, pads, -np.inf).max(axis=(4, 5))
    total = windows(a, kernel, stride, dilation, pads, 0.0).sum(axis=(4, 5))
    if count_include_pad:
        return (total / np.prod(pair(kernel))).astype(a.dtype)
    ones = np.ones((1, 1) + a.shape[2:], a.dtype)
    count = windows(ones, kernel, stride, dilation, pads, 0.0).sum(axis=(4, 5))
    return (total / count).astype(a.dtype)


def softmax_python(a: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention_python(q, k, v, mask, scale: float) -> np.ndarray:
    """softmax(q k * scale + mask) v over the keys (k transposed: [..., D, Tk]; mask None or
    broadcasting to the scores)."""
    scores = np.matmul(q, k) * np.float32(scale)
    return np.matmul(softmax_python(scores if mask is None else scores + mask, -1), v)


def batch_norm_python(x, gamma, beta, mean, var, axis=1, epsilon=1e-5) -> np.ndarray:
    shape = [1] * x.ndim
    shape[axis] = -1
    r = [t.reshape(shape) for t in (gamma, beta, mean, var)]
    return ((x - r[2]) / np.sqrt(r[3] + epsilon) * r[0] + r[1]).astype(x.dtype)
