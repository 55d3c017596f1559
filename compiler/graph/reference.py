"""A numpy executor of the graph IR (fp32): the oracle the compiled graph is checked against,
and the kernels constant folding evaluates. Nodes carry normalized attributes (as
`onnx_import` writes them: defaults filled, constant inputs turned into attributes, pads
explicit), so each kernel reads its attributes without defaults of its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import OperatorError
from ..topi import testing
from . import quant as Q
from .ir import Graph, Node

Kernel = Callable[[list[Any], dict[str, Any]], list[np.ndarray]]


def _one(fn: Callable[..., np.ndarray]) -> Kernel:
    return lambda ins, a: [fn(*ins, **a)]


def _windows(x: np.ndarray, kernel, strides, dilations) -> np.ndarray:
    """[N, C, *out, *kernel] views of x's windows over its spatial axes (x padded already)."""
    spans = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True))
    win = np.lib.stride_tricks.sliding_window_view(x, spans, axis=tuple(range(2, x.ndim)))
    steps = (*(slice(None, None, s) for s in strides), *(slice(None, None, d) for d in dilations))
    return win[(slice(None), slice(None), *steps)]


def conv(x, w, b=None, *, pads, strides, dilations, group, **_) -> np.ndarray:
    """ONNX Conv, 2-d (`testing.conv2d_nchw_python`) or of any other number of spatial axes
    (one product over the windows per group)."""
    n = x.ndim - 2
    if n == 2:
        top, left, bottom, right = pads[0], pads[1], pads[2], pads[3]
        out = testing.conv2d_nchw_python(x, w, tuple(strides), (top, left, bottom, right),
                                         tuple(dilations), group)  # fmt: skip
    else:
        xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + n]) for i in range(n)])
        win = _windows(xp, w.shape[2:], strides, dilations)
        size = win.shape[2 : 2 + n]
        win = win.reshape(x.shape[0], group, x.shape[1] // group, *size, -1)
        wg = w.reshape(group, w.shape[0] // group, w.shape[1], -1)
        out = np.einsum("ngc...k,gmck->ngm...", win, wg).reshape(x.shape[0], w.shape[0], *size)
        out = out.astype(np.result_type(x, w))
    return out + b.reshape(1, -1, *[1] * n) if b is not None else out


def conv_transpose(
    x, w, b=None, *, pads, strides, dilations, group, output_padding, **_
) -> np.ndarray:
    """ONNX ConvTranspose of any number of spatial axes: each kernel tap's product scattered
    with the strides, then the pads cut off."""
    (n, c, *size), (_, ocg, *kernel), r = x.shape, w.shape, x.ndim - 2
    full = [(i - 1) * s + (k - 1) * d + 1 + p
            for i, s, k, d, p in zip(size, strides, kernel, dilations, output_padding,
                                     strict=True)]  # fmt: skip
    out = np.zeros((n, group, ocg, *full), np.result_type(x, w))
    xg = x.reshape(n, group, c // group, *size)
    wg = w.reshape(group, c // group, ocg, *kernel)
    for tap in np.ndindex(*kernel):
        part = np.einsum("ngc...,gco->ngo...", xg, wg[(..., *tap)], optimize=True)
        at = tuple(slice(t * d, t * d + (i - 1) * s + 1, s)
                   for t, d, i, s in zip(tap, dilations, size, strides, strict=True))  # fmt: skip
        out[(..., *at)] += part
    out = out.reshape(n, group * ocg, *full)
    out = out[(..., *(slice(pads[i], full[i] - pads[i + r]) for i in range(r)))]
    return out + b.reshape(1, -1, *[1] * r) if b is not None else out


def pool_out_size(size: int, k: int, s: int, d: int, lo: int, hi: int, ceil: int) -> int:
    """ONNX pooling's output length; with ceil_mode a window starting in the end padding is
    dropped."""
    span = (k - 1) * d + 1
    if not ceil:
        return (size + lo + hi - span) // s + 1
    out = -(-(size + lo + hi - span) // s) + 1
    return out - 1 if (out - 1) * s >= size + lo else out


def _pool_pad(x, attrs, value) -> tuple[np.ndarray, np.ndarray]:
    """x padded (the pads, then the end rows a ceil_mode window reaches) and a mask of the
    input's and its explicit pads' positions."""
    pads, k, s = attrs["pads"], attrs["kernel_shape"], attrs["strides"]
    n = len(k)
    d = attrs.get("dilations") or [1] * n
    extra, reach = [], []
    for ax in range(n):
        size = x.shape[2 + ax]
        out = pool_out_size(size, k[ax], s[ax], d[ax], pads[ax], pads[ax + n], attrs["ceil_mode"])
        reach.append((out - 1) * s[ax] + (k[ax] - 1) * d[ax] + 1)  # the last window's end
        extra.append(max(reach[-1] - (size + pads[ax] + pads[ax + n]), 0))
    widths = [(0, 0), (0, 0)] + [(pads[a], pads[a + n] + extra[a]) for a in range(n)]
    size = tuple(x.shape[2 + a] + pads[a] + pads[a + n] for a in range(n))
    counted = np.pad(np.ones(size, x.dtype), [(0, e) for e in extra])
    padded = np.pad(x, widths, constant_values=value)  # ceil_mode's dropped window cut off:
    cut = tuple(slice(0, r) for r in reach)
    return padded[(..., *cut)], counted[cut]


def _spatial(x: np.ndarray) -> tuple[int, ...]:
    """The window axes of `_windows`' views of x (the last ones, as many as x's spatial)."""
    return tuple(range(-(x.ndim - 2), 0))


def max_pool(x, **a) -> np.ndarray:
    xp, _ = _pool_pad(x, a, -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min)
    dil = a.get("dilations") or [1] * (x.ndim - 2)
    return _windows(xp, a["kernel_shape"], a["strides"], dil).max(axis=_spatial(x))


def max_pool_indices(x, **a) -> np.ndarray:
    """MaxPool's Indices: the flat index (into the whole input; each image's spatial axes
    column-major with storage_order 1) of each window's first largest value in scan order."""
    (n, c, *size), r = x.shape, x.ndim - 2
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    keys = np.broadcast_to(np.arange(math.prod(size)).reshape(size), x.shape)
    dil = a.get("dilations") or [1] * r
    win = [_windows(_pool_pad(t, a, fill)[0], a["kernel_shape"], a["strides"], dil)
           for t, fill in ((x, low), (keys, -1))]  # fmt: skip
    flat = [w.reshape(*w.shape[: 2 + r], -1) for w in win]
    first = np.argmax(flat[0], axis=-1)[..., None]
    key = np.take_along_axis(flat[1], first, axis=-1)[..., 0].astype(np.int64)
    if a.get("storage_order"):
        at = np.unravel_index(key, size)
        key = sum(at[i] * math.prod(size[:i]) for i in range(r))
    base = np.arange(n * c, dtype=np.int64).reshape(n, c, *[1] * r) * math.prod(size)
    return base + key


def average_pool(x, **a) -> np.ndarray:
    n = x.ndim - 2
    dil = a.get("dilations") or [1] * n
    xp, counted = _pool_pad(x, a, 0.0)
    total = _windows(xp, a["kernel_shape"], a["strides"], dil).sum(axis=_spatial(x))
    if not a["count_include_pad"]:  # only the input's positions count
        p = a["pads"]
        ends = [max(xp.shape[2 + k] - x.shape[2 + k] - p[k], 0) for k in range(n)]
        counted = np.pad(np.ones(x.shape[2:], x.dtype), [(p[k], ends[k]) for k in range(n)])
        counted = counted[tuple(slice(0, xp.shape[2 + k]) for k in range(n))]
    count = _windows(counted[None, None], a["kernel_shape"], a["strides"], dil)
    return (total / count.sum(axis=_spatial(x))[0, 0]).astype(x.dtype)


def lp_pool(x, **a) -> np.ndarray:
    """ONNX LpPool: the p-norm of each window, padding counting as zeros."""
    xp, _ = _pool_pad(x, a, 0.0)
    dil = a.get("dilations") or [1] * (x.ndim - 2)
    win = np.abs(_windows(xp, a["kernel_shape"], a["strides"], dil)).astype(np.float64)
    return (win ** a["p"]).sum(axis=_spatial(x)) ** (1.0 / a["p"])


def gemm(a, b, c=None, *, alpha, beta, transA, transB) -> np.ndarray:
    out = alpha * ((a.T if transA else a) @ (b.T if transB else b))
    return out + beta * c if c is not None else out


def batch_norm(x, scale, bias, mean, var, *, epsilon, **_) -> np.ndarray:
    shape = (1, -1) + (1,) * (x.ndim - 2)
    inv = (scale / np.sqrt(var + epsilon)).reshape(shape)
    return (x - mean.reshape(shape)) * inv + bias.reshape(shape)


def div(a, b) -> np.ndarray:
    """ONNX Div: integer division truncates toward zero; x / 0 is 0 (as the CPU's kernel
    defines it: ONNX leaves it undefined)."""
    if a.dtype.kind not in "iu":
        return a / b
    safe = np.where(b == 0, 1, b).astype(b.dtype)
    with np.errstate(over="ignore"):
        q = np.floor_divide(a, safe)
        q = q + ((q * safe != a) & ((a < 0) != (safe < 0))).astype(q.dtype)  # toward zero
    return np.where(b == 0, 0, q).astype(a.dtype)


def softmax(x, *, axis) -> np.ndarray:
    return testing.softmax_python(x, axis)


def attention(q, k, v, mask=None, *, scale) -> np.ndarray:
    """softmax(q k * scale + mask) v over the keys."""
    return testing.attention_python(q, k, v, mask, scale)


def log_softmax(x, *, axis) -> np.ndarray:
    y = x - x.max(axis=axis, keepdims=True)
    return y - np.log(np.exp(y).sum(axis=axis, keepdims=True))


def lrn(x, *, size, alpha, beta, bias) -> np.ndarray:
    """Each value over (bias + alpha / size x the sum of squares of the channels from
    (size - 1) // 2 before it to size // 2 after it) ** beta."""
    c = x.shape[1]
    before, after = min((size - 1) // 2, c - 1), min(size // 2, c - 1)
    sq = np.pad(np.square(x, dtype=np.float64), [(0, 0), (before, after)] + [(0, 0)] * (x.ndim - 2))
    window = sum(sq[:, k : k + c] for k in range(before + after + 1))
    return (x / (bias + alpha / size * window) ** beta).astype(x.dtype)


def hard_sigmoid(x, *, alpha, beta) -> np.ndarray:
    return np.clip(alpha * x + beta, 0, 1).astype(x.dtype)


def _typed(fn: Callable[..., np.ndarray]) -> Kernel:
    """A one-input elementwise kernel whose output keeps the input's dtype."""
    return lambda ins, a: [np.asarray(fn(ins[0], **a)).astype(ins[0].dtype)]


def elu(x, *, alpha) -> np.ndarray:
    return np.where(x > 0, x, alpha * np.expm1(x))


def celu(x, *, alpha) -> np.ndarray:
    return np.maximum(x, 0) + np.minimum(0, alpha * np.expm1(x / alpha))


def softplus(x) -> np.ndarray:
    return np.logaddexp(x, 0)


def erf(x) -> np.ndarray:
    """The error function (math.erf in float64 per element: numpy has none)."""
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def gelu(x, *, approximate) -> np.ndarray:
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


def prelu(x, slope) -> np.ndarray:
    return np.where(x < 0, x * slope, x).astype(x.dtype)


def _in_range(op: str, indices: np.ndarray, n: int, axis: int) -> np.ndarray:
    """The indices (negative ones counting from the end); one out of range is an
    OperatorError naming `op`."""
    bad = (indices < -n) | (indices >= n)
    if bad.any():
        raise OperatorError(
            f"{op}: index {int(indices[bad].reshape(-1)[0])} is out of range for axis {axis} "
            f"of size {n}"
        )
    return np.where(indices < 0, indices + n, indices)


def gather(data, indices, *, axis) -> np.ndarray:
    """ONNX Gather (negative indices count from the end); an index out of range is an
    OperatorError."""
    return np.take(data, _in_range("Gather", indices, data.shape[axis], axis), axis=axis)


def gather_elements(data, indices, *, axis) -> np.ndarray:
    """ONNX GatherElements: numpy's take_along_axis, indices as in `gather`."""
    n = data.shape[axis]
    return np.take_along_axis(data, _in_range("GatherElements", indices, n, axis), axis=axis)


def gather_nd(data, indices, *, batch_dims) -> np.ndarray:
    """ONNX GatherND: the data's slice at each index tuple after `batch_dims` shared axes."""
    b, k = batch_dims, indices.shape[-1]
    batch = int(np.prod(indices.shape[:b]))
    d = data.reshape(batch, *data.shape[b:])
    i = indices.reshape(batch, -1, k)
    for j in range(k):
        i[..., j] = _in_range("GatherND", i[..., j], d.shape[1 + j], b + j)
    out = np.stack([d[n][tuple(i[n].T)] for n in range(batch)])
    return out.reshape(*indices.shape[:-1], *data.shape[b + k :])


_SCATTER = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def scatter_nd(data, indices, updates, *, reduction) -> np.ndarray:
    """ONNX ScatterND: each index tuple's slice replaced by (none; the last one wins) or
    combined with its update, in order."""
    k, out = indices.shape[-1], data.copy()
    idx = indices.reshape(-1, k).copy()
    for j in range(k):
        idx[:, j] = _in_range("ScatterND", idx[:, j], data.shape[j], j)
    ups = updates.reshape(len(idx), *data.shape[k:])
    for t, u in zip(map(tuple, idx), ups, strict=True):
        out[t] = u if reduction == "none" else _SCATTER[reduction](out[t], u)
    return out


def scatter_elements(data, indices, updates, *, axis, reduction) -> np.ndarray:
    """ONNX ScatterElements: as ScatterND with each index naming the element of its own
    position along `axis`."""
    n = data.shape[axis]
    where = np.indices(indices.shape)
    where[axis] = _in_range("ScatterElements", indices, n, axis)
    tuples = np.moveaxis(where, 0, -1)
    return scatter_nd(data, tuples, updates, reduction=reduction)


def top_k_indices(x, *, axis, k, largest) -> np.ndarray:
    """The indices of the k largest (or smallest) values along `axis`, in order, a tie to the
    lower index first."""
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    return np.take(order, np.arange(k), axis=axis).astype(np.int64)


def one_hot(indices, values, *, axis, depth) -> np.ndarray:
    """ONNX OneHot: `values[1]` where the index (negative ones counting from the end, fractions
    truncated) equals the position along `axis`, else `values[0]`; an index outside
    [-depth, depth) makes its row all `values[0]`."""
    i = np.trunc(indices).astype(np.int64)
    i = np.where(i < 0, i + depth, i)
    shape = [1] * (indices.ndim + 1)
    shape[axis] = depth
    hot = np.expand_dims(i, axis) == np.arange(depth).reshape(shape)
    return np.where(hot, values[1], values[0])


def arg_reduce(fn, x, *, axis, keepdims, select_last_index) -> np.ndarray:
    """ArgMax/ArgMin (`fn`: np.argmax or np.argmin): the first (or last) extreme's index."""
    if select_last_index:
        index = x.shape[axis] - 1 - fn(np.flip(x, axis), axis=axis)
    else:
        index = fn(x, axis=axis)
    return (np.expand_dims(index, axis) if keepdims else index).astype(np.int64)


def is_inf(x, *, detect_positive, detect_negative) -> np.ndarray:
    return (np.isposinf(x) & bool(detect_positive)) | (np.isneginf(x) & bool(detect_negative))


def slice_(x, *, starts, ends, axes, steps) -> np.ndarray:
    index = [slice(None)] * x.ndim
    for s, e, ax, st in zip(starts, ends, axes, steps, strict=True):
        index[ax] = slice(s, e if e >= 0 else None, st)
    return x[tuple(index)]


def pad(x, *, pads, mode, value) -> np.ndarray:
    r = x.ndim
    widths = [(pads[i], pads[i + r]) for i in range(r)]
    if mode == "constant":
        return np.pad(x, widths, constant_values=value)
    return np.pad(x, widths, mode=mode)  # reflect, edge, wrap


def _source(out: int, size: int, scale: float, mode: str, roi=(0.0, 1.0)) -> np.ndarray:
    """Resize: the input coordinate of every output index along one axis (the output's
    length in the formulas is size x scale, a fraction where the scale does not divide;
    tf_crop_and_resize spans the crop `roi`, start and end as fractions of size - 1)."""
    x = np.arange(out, dtype=np.float64)
    width = size * scale
    if mode == "tf_crop_and_resize":
        span = (roi[1] - roi[0]) * (size - 1)
        at = x * span / (width - 1) if width != 1 else np.full(out, span / 2)
        return at + roi[0] * (size - 1)
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":  # the input's centre on the output's
        return size / 2 * (1 - out / width) + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out > 1 else np.zeros(out)
    if mode == "align_corners":
        return x * (size - 1) / (width - 1) if width != 1 else np.zeros(out)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    raise OperatorError(f"Resize: coordinate_transformation_mode {mode!r} is not supported")


def _nearest(x: np.ndarray, mode: str) -> np.ndarray:
    if mode == "floor":
        return np.floor(x)
    if mode == "ceil":
        return np.ceil(x)
    half = np.floor(x) + 0.5
    if mode == "round_prefer_floor":
        return np.where(x == half, np.floor(x), np.round(x))
    return np.where(x == half, np.ceil(x), np.round(x))  # round_prefer_ceil


def cubic_weights(t, a: float):
    """The cubic convolution's weights of the taps at floor(x) - 1 ... floor(x) + 2, t = x -
    floor(x) (works on numpy arrays and on tensor expressions)."""
    u = 1 - t
    return [((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
            ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * u - (a + 3)) * u * u + 1,
            ((a * (u + 1) - 5 * a) * (u + 1) + 8 * a) * (u + 1) - 4 * a]  # fmt: skip


def resize_matrix(size: int, out: int, scale: float, a: dict) -> np.ndarray:
    """Resize with antialias along one axis as an [out, size] matrix: each output position's
    taps and weights (linear or cubic, their footprint widened by 1 / scale when it shrinks,
    the weights normalized; edge values past the ends, or with exclude_outside none)."""
    src = _source(out, size, scale, a["coordinate_transformation_mode"])
    floor = np.floor(src)
    ratio = np.where(src == floor, 1.0, src - floor)  # at an integer the tap left of it
    s = min(scale, 1.0)
    reach = 1 if a["mode"] == "linear" else 2  # the filter's half-width at scale 1
    first = int(np.floor(-reach / s) + 1)
    taps = np.arange(first, 2 - first)  # the kernel's offsets from floor(src)
    t = np.abs((taps[None, :] - ratio[:, None]) * s)
    if a["mode"] == "linear":
        w = np.clip(1 - t, 0, 1)
    else:
        c = a["cubic_coeff_a"]
        near = ((c + 2) * t - (c + 3)) * t * t + 1
        far = ((c * t - 5 * c) * t + 8 * c) * t - 4 * c
        w = np.where(t <= 1, near, np.where(t < 2, far, 0.0))
    w = w / w.sum(axis=1, keepdims=True)
    n = len(taps)  # the taps nearest src, a tie to the lower index (the onnx reference's)
    pad = -(-n // 2)
    p = np.floor(src + pad)
    frac = src + pad - p
    if n % 2 == 0:
        offset = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        offset = np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    at = (p + offset - pad).astype(np.int64)[:, None] + np.arange(n)
    if a["exclude_outside"]:
        w = np.where((at >= 0) & (at < size), w, 0)
        w = w / np.where(w.sum(axis=1, keepdims=True) == 0, 1, w.sum(axis=1, keepdims=True))
    m = np.zeros((out, size))
    np.add.at(m, (np.arange(out)[:, None], np.clip(at, 0, size - 1)), w)
    return m


def resize(x, *, sizes, scales, mode, coordinate_transformation_mode, nearest_mode, **a):
    out, roi, r = x, a.get("roi"), x.ndim
    for ax in range(x.ndim):
        n, size = sizes[ax], x.shape[ax]
        crop = (roi[ax], roi[ax + r]) if roi else (0.0, 1.0)
        if n == size and scales[ax] == 1.0 and crop == (0.0, 1.0):
            continue
        src = _source(n, size, scales[ax], coordinate_transformation_mode, crop)
        outside = ((src < 0) | (src > size - 1)).reshape([-1 if k == ax else 1 for k in range(r)])
        if mode == "cubic":  # 4 taps, edge values past the ends (or, exclude_outside, none)
            floor = np.floor(src)
            taps = floor[:, None] + np.arange(-1, 3)
            w = np.stack(cubic_weights(src - floor, a["cubic_coeff_a"]), axis=1)
            if a["exclude_outside"]:
                w = np.where((taps >= 0) & (taps < size), w, 0)
                w = w / w.sum(axis=1, keepdims=True)
            values = np.take(out, np.clip(taps, 0, size - 1).astype(np.int64), axis=ax)
            shape = [1] * values.ndim
            shape[ax], shape[ax + 1] = n, 4
            out = (values * w.reshape(shape)).sum(axis=ax + 1)
        elif mode == "nearest":
            idx = np.clip(_nearest(src, nearest_mode).astype(np.int64), 0, size - 1)
            out = np.take(out, idx, axis=ax)
        else:
            src = np.clip(src, 0, size - 1)
            lo = np.floor(src).astype(np.int64)
            hi = np.minimum(lo + 1, size - 1)
            frac = (src - lo).reshape([-1 if k == ax else 1 for k in range(x.ndim)])
            out = np.take(out, lo, axis=ax) * (1 - frac) + np.take(out, hi, axis=ax) * frac
        if roi:  # tf_crop_and_resize: a position outside the input is the extrapolation value
            out = np.where(outside, a["extrapolation_value"], out)
    return out.astype(x.dtype)


def _reduce(fn, before=None, after=None) -> Kernel:
    """ONNX Reduce*: `after` of the reduction `fn` of `before` of the input (keeping its
    dtype)."""

    def kernel(ins, a):
        x = ins[0] if before is None else before(ins[0])
        extra = {}
        if x.size == 0 and fn in (np.max, np.min):  # of no elements: the identity
            extra["initial"] = _extreme(x.dtype, fn is np.min)
        out = fn(x, axis=tuple(a["axes"]), keepdims=bool(a["keepdims"]), **extra)
        return [np.asarray(out if after is None else after(out)).astype(ins[0].dtype)]

    return kernel


def _extreme(dtype: np.dtype, high: bool):
    """The largest (`high`) or smallest value of the dtype: infinities for floats."""
    if dtype.kind == "f":
        return np.inf if high else -np.inf
    if dtype.kind == "b":
        return high
    info = np.iinfo(dtype)
    return info.max if high else info.min


def log_sum_exp(x, *, axes, keepdims, **_) -> np.ndarray:
    if x.size == 0:  # the log of an empty sum
        out = np.full([1 if k in axes else n for k, n in enumerate(x.shape)], -np.inf, x.dtype)
        return out if keepdims else np.squeeze(out, axis=tuple(axes))
    top = x.max(axis=tuple(axes), keepdims=True)
    out = np.log(np.exp(x - top).sum(axis=tuple(axes), keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=tuple(axes))


def normalize(x, *, axes, epsilon) -> np.ndarray:
    """(x - mean) / sqrt(variance + epsilon), the statistics over `axes`."""
    mean = x.mean(axis=tuple(axes), keepdims=True)
    var = np.square(x - mean).mean(axis=tuple(axes), keepdims=True)
    return ((x - mean) / np.sqrt(var + epsilon)).astype(x.dtype)


def cumsum(x, *, axis, exclusive, reverse) -> np.ndarray:
    y = np.flip(x, axis) if reverse else x
    out = np.cumsum(y, axis=axis, dtype=x.dtype)
    if exclusive:  # each sum without its own element
        out = out - y
    return np.flip(out, axis) if reverse else out


def depth_to_space(x, *, blocksize, mode) -> np.ndarray:
    n, c, h, w = x.shape
    b = blocksize
    if mode == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (b * b), h * b, w * b)


def space_to_depth(x, *, blocksize, mode="DCR") -> np.ndarray:
    n, c, h, w = x.shape
    b = blocksize
    y = x.reshape(n, c, h // b, b, w // b, b)
    y = y.transpose(0, 3, 5, 1, 2, 4) if mode == "DCR" else y.transpose(0, 1, 3, 5, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


def pack_nchwc(x, *, block) -> np.ndarray:
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2))


def vta_conv(x, w, b, residual=None, sc_x=None, sc_w=None, **a) -> np.ndarray:
    """An accelerator group of the quantized graph (int8 in and out), bit-exact: what every
    device's Program computes, with the Clip bound the CPU applies after it."""
    out = Q.run_qconv(Q.qconv_of(a, w, b, sc_w), x, residual, sc_x)
    return np.minimum(out, np.int8(a["clip_hi"]))


def vta_matmul(x, w, **a) -> np.ndarray:
    """An attention product of the quantized graph (int8 in, int8 run-time weight, int8 out),
    bit-exact: what every device's Programs compute, a head at a time."""
    return Q.run_product(a, x, w)


def unpack_nchwc(x) -> np.ndarray:
    n, cb, h, w, b = x.shape
    return np.ascontiguousarray(x.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w))


KERNELS: dict[str, Kernel] = {
    "Conv": _one(conv),
    "ConvTranspose": _one(conv_transpose),
    "MaxPool": lambda ins, a: [max_pool(ins[0], **a)],
    "MaxPoolIndices": _one(max_pool_indices),
    "AveragePool": lambda ins, a: [average_pool(ins[0], **a)],
    "LpPool": _typed(lp_pool),
    "GlobalAveragePool": lambda ins, a: [ins[0].mean(axis=(2, 3), keepdims=True)],
    "GlobalMaxPool": lambda ins, a: [ins[0].max(axis=(2, 3), keepdims=True)],
    "BatchNormalization": _one(batch_norm),
    "Gemm": _one(gemm),
    "MatMul": lambda ins, a: [np.matmul(ins[0], ins[1])],
    "Relu": lambda ins, a: [np.maximum(ins[0], 0).astype(ins[0].dtype)],
    "LeakyRelu": lambda ins, a: [np.where(ins[0] >= 0, ins[0], a["alpha"] * ins[0])],
    "Clip": lambda ins, a: [np.clip(ins[0], a["min"], a["max"]).astype(ins[0].dtype)],
    "Sigmoid": lambda ins, a: [1 / (1 + np.exp(-ins[0]))],
    "Tanh": lambda ins, a: [np.tanh(ins[0])],
    "HardSigmoid": _one(hard_sigmoid),
    "LRN": _one(lrn),
    "HardSwish": lambda ins, a: [ins[0] * hard_sigmoid(ins[0], alpha=1 / 6, beta=0.5)],
    "Abs": _typed(np.abs),
    "Neg": _typed(np.negative),
    "Exp": _typed(np.exp),
    "Log": _typed(np.log),
    "Sqrt": _typed(np.sqrt),
    "Reciprocal": _typed(np.reciprocal),
    "Erf": _typed(erf),
    "Sin": _typed(np.sin),
    "Cos": _typed(np.cos),
    "Tan": _typed(np.tan),
    "Asin": _typed(np.arcsin),
    "Acos": _typed(np.arccos),
    "Atan": _typed(np.arctan),
    "Sinh": _typed(np.sinh),
    "Cosh": _typed(np.cosh),
    "Asinh": _typed(np.arcsinh),
    "Acosh": _typed(np.arccosh),
    "Atanh": _typed(np.arctanh),
    "Floor": _typed(np.floor),
    "Ceil": _typed(np.ceil),
    "Round": _typed(np.round),  # halves to even
    "Sign": _typed(np.sign),
    "Elu": _typed(elu),
    "Selu": _typed(lambda x, alpha, gamma: gamma * elu(x, alpha=alpha)),
    "Celu": _typed(celu),
    "ThresholdedRelu": _typed(lambda x, alpha: np.where(x > alpha, x, 0)),
    "Softplus": _typed(softplus),
    "Softsign": _typed(lambda x: x / (1 + np.abs(x))),
    "Mish": _typed(lambda x: x * np.tanh(softplus(x))),
    "Gelu": _typed(gelu),
    "PRelu": _one(prelu),
    "Add": lambda ins, a: [ins[0] + ins[1]],
    "Sub": lambda ins, a: [ins[0] - ins[1]],
    "Mul": lambda ins, a: [ins[0] * ins[1]],
    "Div": lambda ins, a: [div(*ins)],
    "Pow": lambda ins, a: [np.power(ins[0], ins[1]).astype(ins[0].dtype)],
    "Max": lambda ins, a: [np.maximum(ins[0], ins[1])],
    "Min": lambda ins, a: [np.minimum(ins[0], ins[1])],
    "Softmax": _one(softmax),
    "LogSoftmax": _one(log_softmax),
    "Flatten": lambda ins, a: [ins[0].reshape(int(np.prod(ins[0].shape[: a["axis"]])), -1)],
    "Reshape": lambda ins, a: [ins[0].reshape(a["shape"])],
    "Transpose": lambda ins, a: [np.transpose(ins[0], a["perm"])],
    "Concat": lambda ins, a: [np.concatenate(ins, axis=a["axis"])],
    "Split": lambda ins, a: np.split(ins[0], np.cumsum(a["split"])[:-1], axis=a["axis"]),
    "Slice": _one(slice_),
    "Squeeze": lambda ins, a: [np.squeeze(ins[0], axis=tuple(a["axes"]))],
    "Unsqueeze": lambda ins, a: [np.expand_dims(ins[0], axis=tuple(a["axes"]))],
    "Pad": _one(pad),
    "ReduceMean": _reduce(np.mean),
    "ReduceSum": _reduce(np.sum),
    "ReduceMax": _reduce(np.max),
    "ReduceMin": _reduce(np.min),
    "ReduceProd": _reduce(np.prod),
    "ReduceL1": _reduce(np.sum, np.abs),
    "ReduceL2": _reduce(np.sum, np.square, np.sqrt),
    "ReduceSumSquare": _reduce(np.sum, np.square),
    "ReduceLogSum": _reduce(np.sum, None, np.log),
    "ReduceLogSumExp": _typed(log_sum_exp),
    "Normalize": _one(normalize),
    "Attention": lambda ins, a: [attention(*ins, **a)],
    "CumSum": _one(cumsum),
    "Expand": lambda ins, a: [np.broadcast_to(ins[0], a["shape"]).copy()],
    "Tile": lambda ins, a: [np.tile(ins[0], a["repeats"])],
    "Range": lambda ins, a: [np.arange(*ins).astype(ins[0].dtype)],
    "DepthToSpace": _one(depth_to_space),
    "SpaceToDepth": _one(space_to_depth),
    "Resize": _one(resize),
    "Identity": lambda ins, a: [ins[0]],
    "Dropout": lambda ins, a: [ins[0]],
    "Gather": _one(gather),
    "GatherElements": _one(gather_elements),
    "OneHot": _one(one_hot),
    "GatherND": _one(gather_nd),
    "TopKIndices": _one(top_k_indices),
    "ScatterElements": _one(scatter_elements),
    "ScatterND": _one(scatter_nd),
    "Einsum": lambda ins, a: [np.einsum(a["equation"], *ins)],
    "ArgMax": lambda ins, a: [arg_reduce(np.argmax, ins[0], **a)],
    "ArgMin": lambda ins, a: [arg_reduce(np.argmin, ins[0], **a)],
    "Equal": lambda ins, a: [np.equal(*ins)],
    "Less": lambda ins, a: [np.less(*ins)],
    "Greater": lambda ins, a: [np.greater(*ins)],
    "LessOrEqual": lambda ins, a: [np.less_equal(*ins)],
    "GreaterOrEqual": lambda ins, a: [np.greater_equal(*ins)],
    "And": lambda ins, a: [np.logical_and(*ins)],
    "Or": lambda ins, a: [np.logical_or(*ins)],
    "Xor": lambda ins, a: [np.logical_xor(*ins)],
    "Not": lambda ins, a: [np.logical_not(ins[0])],
    "IsNaN": lambda ins, a: [np.isnan(ins[0])],
    "IsInf": _one(is_inf),
    "Where": lambda ins, a: [np.where(*ins)],
    "Cast": lambda ins, a: [ins[0].astype(a["to"])],
    "PackNCHWc": _one(pack_nchwc),
    "Quantize": lambda ins, a: [Q.quantize(ins[0], a["exponent"], a["zero"])],
    "Dequantize": lambda ins, a: [Q.dequantize(ins[0], a["exponent"], a["zero"])],
    "VTAConv": _one(vta_conv),
    "VTAMatMul": _one(vta_matmul),
    "UnpackNCHWc": _one(unpack_nchwc),
}


def run_node(node: Node, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    """The node's outputs on `inputs` (None for an omitted optional input)."""
    if node.op not in KERNELS:
        raise OperatorError(f"node {node.label}: no reference kernel for {node.op}")
    while inputs and inputs[-1] is None:
        inputs = inputs[:-1]
    return [np.asarray(o) for o in KERNELS[node.op](list(inputs), dict(node.attrs))]


def run(
    graph: Graph,
    feeds: dict[str, np.ndarray],
    observe: Callable[[str, np.ndarray], None] | None = None,
) -> dict[str, np.ndarray]:
    """The graph's outputs by name for the inputs `feeds` (by name, cast to their dtype);
    `observe(name, value)` sees every input and computed value (calibration's observers)."""
    missing = [t for t in graph.inputs if t not in feeds]
    if missing:
        raise OperatorError(f"reference run: missing input(s) {', '.join(missing)}")
    env: dict[str, np.ndarray] = dict(graph.constants)
    for t in graph.inputs:
        v = graph.value(t)
        env[t] = np.asarray(feeds[t], dtype=v.dtype or np.float32)
        if v.shape is not None and env[t].shape != v.shape:
            raise OperatorError(f"reference run: input {t} has shape {env[t].shape}, not {v.shape}")
        if observe:
            observe(t, env[t])
    last_use = {t: k for k, n in enumerate(graph.nodes) for t in n.inputs}
    keep = set(graph.outputs) | set(graph.constants)
    for k, node in enumerate(graph.nodes):
        outs = run_node(node, [env[t] if t else None for t in node.inputs])
        for name, value in zip(node.outputs, outs, strict=False):
            if name:
                dtype = graph.value(name).dtype
                env[name] = value.astype(dtype) if dtype and value.dtype != dtype else value
                if observe:
                    observe(name, env[name])
        for t in node.inputs:  # free what no later node reads
            if t and last_use[t] == k and t not in keep:
                env.pop(t, None)
    return {t: env[t] for t in graph.outputs}


__all__ = ["KERNELS", "run", "run_node"]
