"""Graph operators as topi computes on the CPU: each entry takes the node's input tensors (te
placeholders or the outputs of earlier nodes of the same fused group), its attributes and its
constant inputs, and returns the output tensor. Names follow ONNX; packed-layout operators
carry the channel block in their tensors' last axis.

A fused group (`Group`: `Node`s in order) is one kernel: `group_tensors` is its compute
definition from these operators, `schedule_group` the default x86 schedule of its anchor
(the build, task extraction and the auto-scheduler's `graph_group` workload share them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import te, topi
from ..errors import OperatorError
from ..schedule.schedule import Schedule
from ..te.tensor import Tensor
from ..tir import expr as E
from ..topi import nn, tag, x86
from .build_elementwise import (
    UNARY,
    cast,
    elementwise,
    gather,
    gather_elements,
    hard_sigmoid,
    is_inf,
    one_hot,
    power,
)
from .build_scatter import gather_nd, scatter_elements, scatter_nd, top_k_indices
from .build_windows import conv_generic, plus_channel_bias, pool_indices
from .build_windows import pool as window_pool
from .reference import cubic_weights

Compute = Callable[[list[Tensor], dict[str, Any]], Tensor]


def _pads(attrs: dict, kernel: tuple[int, int]) -> tuple[int, int, int, int]:
    """ONNX pads [top, left, bottom, right] (begins then ends) as (top, left, bottom, right)."""
    pads = attrs.get("pads") or [0, 0, 0, 0]
    return int(pads[0]), int(pads[1]), int(pads[2]), int(pads[3])


def _window(attrs: dict) -> dict:
    kernel = tuple(attrs["kernel_shape"])
    return {
        "kernel": kernel,
        "stride": tuple(attrs.get("strides") or (1, 1)),
        "dilation": tuple(attrs.get("dilations") or (1, 1)),
        "padding": _pads(attrs, kernel),
    }


def conv2d_nchwc(ins: list[Tensor], attrs: dict) -> Tensor:
    """Packed conv: data [N, C/ib, H, W, ib], weight [OC/ob, C/ib, KH, KW, ib, ob] (+ bias
    [OC/ob, 1, 1, ob]); depthwise when `group` equals the channels (weight [C/b, 1, KH, KW, 1,
    b]); by Winograd's F(m x m, 3 x 3) when the node says `winograd` = m (weight [a, a, OC/ob,
    C, ob]); a 1x1 conv in partial sums over chunks of input-channel blocks when it says
    `pointwise` = the chunk."""
    data, weight, *rest = ins
    w = _window(attrs)
    channels = data.shape[1] * data.shape[4]
    if attrs.get("winograd"):  # weight transformed by nn.winograd_weight (passes.cpu_layout)
        out = nn.conv2d_winograd_NCHWc(data, weight, attrs["pads"][0], attrs["winograd"])
    elif attrs.get("pointwise"):  # 1x1 by input-channel chunks (passes.cpu_layout)
        out = nn.conv2d_1x1_NCHWc(data, weight, attrs["pointwise"])
    elif attrs.get("group", 1) == channels and channels > 1:
        out = nn.depthwise_conv2d_NCHWc(data, weight, w["stride"], w["padding"], w["dilation"])
    elif attrs.get("group", 1) == 1:
        out = nn.conv2d_NCHWc(data, weight, w["stride"], w["padding"], w["dilation"])
    else:
        raise OperatorError(f"conv: group {attrs['group']} (neither 1 nor depthwise) on the CPU")
    return topi.add(out, rest[0]) if rest else out


def pool(kind: str, ins: list[Tensor], attrs: dict) -> Tensor:
    w = _window(attrs)
    layout = "NCHWc" if ins[0].ndim == 5 else "NCHW"
    return nn.pool2d(
        ins[0],
        w["kernel"],
        w["stride"],
        w["dilation"],
        w["padding"],
        kind,
        ceil_mode=bool(attrs.get("ceil_mode", 0)),
        layout=layout,
        count_include_pad=bool(attrs.get("count_include_pad", 0)),
    )


def global_pool(kind: str, ins: list[Tensor], attrs: dict) -> Tensor:
    return nn.global_pool(ins[0], kind, layout="NCHWc" if ins[0].ndim == 5 else "NCHW")


def dense(ins: list[Tensor], attrs: dict) -> Tensor:
    """data [M, K] times a weight packed by `x86.pack_weight` (+ bias [N]); `units` = N."""
    data, packed, *rest = ins
    return x86.matmul_packed(data, packed, int(attrs["units"]), bias=rest[0] if rest else None)


def clip(ins: list[Tensor], attrs: dict) -> Tensor:
    lo, hi = attrs.get("min"), attrs.get("max")
    return nn.clip(ins[0], None if lo is None else float(lo), None if hi is None else float(hi))


def lrn(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX LRN: each value over (bias + alpha / size x the sum of squares over the channels
    from (size - 1) // 2 before it to size // 2 after it) ** beta; the window's channels
    outside the tensor count zero (their loads clamped to the edge, then not selected), so a
    window reaches at most channels - 1 either side."""
    x = ins[0]
    size, channels = attrs["size"], int(x.shape[1])
    before, after = min((size - 1) // 2, channels - 1), min(size // 2, channels - 1)

    def f(*i):
        n, c, rest = i[0], i[1], i[2:]
        total = te.const(0.0, x.dtype)
        for k in range(-before, after + 1):
            v = x(n, E.Min(E.Max(c + k, E.const(0)), E.const(channels - 1)), *rest)
            total = total + te.select(te.all(c + k >= 0, c + k < channels), v * v, 0.0)
        scale = te.const(float(attrs["bias"]), x.dtype) + float(attrs["alpha"]) / size * total
        return x(n, c, *rest) / te.power(scale, float(attrs["beta"]))

    return te.compute(x.shape, f, name="lrn")


def slice_(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX Slice with normalized (clamped, non-negative axes) starts/ends/steps."""
    x = ins[0]
    shape, start, step = list(x.shape), [0] * x.ndim, [1] * x.ndim
    for s, e, ax, st in zip(attrs["starts"], attrs["ends"], attrs["axes"], attrs["steps"],
                            strict=True):  # fmt: skip
        shape[ax], start[ax], step[ax] = len(range(s, e, st)), s, st
    return te.compute(
        tuple(shape),
        lambda *i: x(*(start[k] + i[k] * step[k] for k in range(x.ndim))),
        name="slice",
        tag=tag.INJECTIVE,
    )


def pad(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX Pad: constant, reflect, edge or wrap, pads [begins..., ends...]."""
    x, pads = ins[0], attrs["pads"]
    before, after = pads[: x.ndim], pads[x.ndim :]
    if attrs["mode"] == "constant":
        return nn.pad(x, before, after, float(attrs["value"]), name="pad")
    shape = tuple(n + b + a for n, b, a in zip(x.shape, before, after, strict=True))

    def src(i, n: int, b: int):
        j = i - b
        if attrs["mode"] == "edge":
            return E.Min(E.Max(j, E.const(0)), E.const(n - 1))
        if attrs["mode"] == "wrap":
            return E.FloorMod(j, n)
        j = te.if_then_else(j < 0, -j, j)  # reflect about the first and the last element
        return te.if_then_else(j > n - 1, 2 * (n - 1) - j, j)

    return te.compute(
        shape,
        lambda *i: x(*(src(i[k], x.shape[k], before[k]) for k in range(x.ndim))),
        name="pad",
        tag=tag.INJECTIVE,
    )


_prod = te.comm_reducer(lambda a, b: a * b, lambda t: 1, "prod")
# ONNX Reduce*: (reducer, the value reduced from the input's, the output from the reduction's)
REDUCERS: dict[str, tuple[Any, Callable[[E.Expr], E.Expr], Callable[[E.Expr], E.Expr]]] = {
    "ReduceSum": (te.sum, lambda v: v, lambda r: r),
    "ReduceMean": (te.sum, lambda v: v, lambda r: r),  # scaled by 1 / count in `reduce`
    "ReduceMax": (te.max, lambda v: v, lambda r: r),
    "ReduceMin": (te.min, lambda v: v, lambda r: r),
    "ReduceProd": (_prod, lambda v: v, lambda r: r),
    "ReduceL1": (te.sum, te.abs, lambda r: r),
    "ReduceL2": (te.sum, lambda v: v * v, te.sqrt),
    "ReduceSumSquare": (te.sum, lambda v: v * v, lambda r: r),
    "ReduceLogSum": (te.sum, lambda v: v, te.log),
}


def _reduction(x: Tensor, axes: list[int], keep: bool, name: str, body) -> Tensor:
    """A stage of x's shape reduced over `axes` (kept as extent 1, or dropped): each element
    is `body(input index, output index, reduce axes)`, a te reduction."""
    rv = {ax: te.reduce_axis(x.shape[ax], f"r{ax}") for ax in axes}
    kept = [ax for ax in range(x.ndim) if ax not in rv]
    shape = tuple(1 if ax in rv else x.shape[ax] for ax in range(x.ndim) if keep or ax not in rv)

    def f(*i):
        out = dict(zip(range(x.ndim) if keep else kept, i, strict=True))
        index = [rv[ax] if ax in rv else out[ax] for ax in range(x.ndim)]
        return body(index, i, list(rv.values()))

    return te.compute(shape, f, name=name)


def reduce(op: str, ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX Reduce* over `axes` (keepdims or not): a reduction stage (ReduceLogSumExp: the
    maximum, then the sum of exp(x - max)), then an elementwise stage that the injective
    schedule vectorizes; over no axes (noop_with_empty_axes) one elementwise stage."""
    x, axes, keep = ins[0], list(attrs["axes"]), bool(attrs["keepdims"])
    if x.dtype == "bool":  # bools (ReduceMax, ReduceMin) reduced as int8, then compared to 0
        wide = te.compute(x.shape, lambda *i: te.cast(x(*i), "int8"), "to_int8", tag.ELEMWISE)
        out = reduce(op, [wide], attrs)
        zero = te.const(0, "int8")
        return te.compute(out.shape, lambda *i: out(*i) != zero, "to_bool", tag.ELEMWISE)
    if not axes:  # noop_with_empty_axes: the maps before and after, element by element
        _, before, after = REDUCERS.get(op, REDUCERS["ReduceSum"])  # LogSumExp of one: itself
        return te.compute(x.shape, lambda *i: after(before(x(*i))), op.lower(), tag.ELEMWISE)
    if op == "ReduceLogSumExp":
        top = _reduction(x, axes, keep, "reduce_max", lambda v, o, r: te.max(x(*v), axis=r))
        red = _reduction(
            x, axes, keep, "reduce_sumexp", lambda v, o, r: te.sum(te.exp(x(*v) - top(*o)), axis=r)
        )
        return te.compute(
            red.shape, lambda *i: te.log(red(*i)) + top(*i), name="reduce_out", tag=tag.INJECTIVE
        )
    reducer, before, after = REDUCERS[op]
    red = _reduction(x, axes, keep, op.lower(), lambda v, o, r: reducer(before(x(*v)), axis=r))
    count = int(np.prod([x.shape[ax] for ax in axes]))

    def out(*i):
        if op != "ReduceMean" or count == 1:
            return after(red(*i))
        if x.dtype.startswith("float"):
            return after(red(*i) * (1.0 / count))
        return red(*i) / te.const(count, x.dtype)  # integers: truncated, as numpy's cast

    return te.compute(red.shape, out, name="reduce_out", tag=tag.INJECTIVE)


def normalize(ins: list[Tensor], attrs: dict) -> Tensor:
    """(x - mean) / sqrt(variance + epsilon), the statistics over `axes` (the graph's
    Normalize: Layer, Instance and Group normalization without their scale and bias)."""
    x, axes = ins[0], list(attrs["axes"])
    if axes == [x.ndim - 1] and x.dtype.startswith("float"):
        return nn.layer_norm(x, float(attrs["epsilon"]))  # rows, vectorized along each
    scale = 1.0 / float(np.prod([x.shape[ax] for ax in axes]))
    total = _reduction(x, axes, True, "norm_sum", lambda v, o, r: te.sum(x(*v), axis=r))

    def stat(i):  # the statistics' index of input index i
        return [E.const(0) if ax in axes else i[ax] for ax in range(x.ndim)]

    squares = _reduction(
        x,
        axes,
        True,
        "norm_squares",
        lambda v, o, r: te.sum(te.power(x(*v) - total(*o) * scale, 2.0), axis=r),
    )
    eps = float(attrs["epsilon"])
    return te.compute(
        x.shape,
        lambda *i: (x(*i) - total(*stat(i)) * scale) / te.sqrt(squares(*stat(i)) * scale + eps),
        name="normalize",
        tag=tag.INJECTIVE,
    )


def cumsum(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX CumSum along `axis` (exclusive, reverse): each output sums the input's elements
    before (or after) it, a reduction over the axis with a condition; then a copy."""
    x, ax = ins[0], int(attrs["axis"])
    k = te.reduce_axis(x.shape[ax], "k")
    exclusive, reverse = bool(attrs["exclusive"]), bool(attrs["reverse"])

    def taken(i, j):
        if reverse:
            return j > i if exclusive else j >= i
        return j < i if exclusive else j <= i

    red = te.compute(
        x.shape,
        lambda *i: te.sum(x(*i[:ax], k, *i[ax + 1 :]), axis=k, where=taken(i[ax], k)),
        name="cumsum",
    )
    return te.compute(x.shape, lambda *i: red(*i), name="cumsum_out", tag=tag.INJECTIVE)


def tile(ins: list[Tensor], attrs: dict) -> Tensor:
    x = ins[0]
    shape = tuple(n * r for n, r in zip(x.shape, attrs["repeats"], strict=True))
    return te.compute(
        shape,
        lambda *i: x(
            *(E.FloorMod(i[k], x.shape[k]) if x.shape[k] > 1 else 0 for k in range(x.ndim))
        ),
        name="tile",
        tag=tag.INJECTIVE,
    )


def depth_to_space(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX DepthToSpace, modes DCR (depth, column, row) and CRD."""
    x, bs = ins[0], int(attrs["blocksize"])
    n, c, h, w = x.shape
    oc = c // (bs * bs)

    def f(b, o, y, xx):
        offset = E.FloorMod(y, bs) * bs + E.FloorMod(xx, bs)
        ch = offset * oc + o if attrs["mode"] == "DCR" else o * bs * bs + offset
        return x(b, ch, E.FloorDiv(y, bs), E.FloorDiv(xx, bs))

    return te.compute((n, oc, h * bs, w * bs), f, name="depth_to_space", tag=tag.INJECTIVE)


def space_to_depth(ins: list[Tensor], attrs: dict) -> Tensor:
    x, bs = ins[0], int(attrs["blocksize"])
    n, c, h, w = x.shape

    def f(b, o, y, xx):  # DCR: o = offset * c + channel; CRD: o = channel * bs * bs + offset
        dcr = attrs.get("mode", "DCR") == "DCR"
        offset = E.FloorDiv(o, c) if dcr else E.FloorMod(o, bs * bs)
        ch = E.FloorMod(o, c) if dcr else E.FloorDiv(o, bs * bs)
        return x(b, ch, y * bs + E.FloorDiv(offset, bs), xx * bs + E.FloorMod(offset, bs))

    return te.compute(
        (n, c * bs * bs, h // bs, w // bs), f, name="space_to_depth", tag=tag.INJECTIVE
    )


def matmul(ins: list[Tensor], attrs: dict) -> Tensor:
    """numpy.matmul (batched, broadcast, 1-d operands), or ONNX Gemm with `transA`/`transB`,
    `alpha`, `beta` and C: a reduction stage (register-tiled by `x86.schedule_dense`), then
    an elementwise stage."""
    a, b, *rest = ins
    gemm = "transA" in attrs
    if gemm and attrs["transA"]:
        a = nn.transpose(a, (1, 0))
    if gemm and attrs["transB"]:
        b = nn.transpose(b, (1, 0))
    a2 = nn.reshape(a, (1, *a.shape)) if a.ndim == 1 else a
    b2 = nn.reshape(b, (*b.shape, 1)) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise OperatorError(f"matmul: {a.shape} x {b.shape}: inner extents differ")
    batch = topi.broadcast.broadcast_shape(a2.shape[:-2], b2.shape[:-2])
    k = te.reduce_axis(a2.shape[-1], "k")
    shape = (*batch, a2.shape[-2], b2.shape[-1])

    def at(t: Tensor, index, tail):
        lead = index[len(index) - (t.ndim - 2) :] if t.ndim > 2 else ()
        lead = [i if n > 1 else 0 for i, n in zip(lead, t.shape[:-2], strict=True)]
        return t(*lead, *tail)

    prod = te.compute(
        shape,
        lambda *i: te.sum(at(a2, i[:-2], (i[-2], k)) * at(b2, i[:-2], (k, i[-1])), axis=k),
        name="matmul",
        tag=tag.MATMUL,
    )
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    out = te.compute(shape, lambda *i: prod(*i) * alpha, name="matmul_out", tag=tag.INJECTIVE)
    if rest:
        out = topi.add(out, topi.multiply(rest[0], beta) if beta != 1.0 else rest[0])
    final = shape[:-2] + (() if a.ndim == 1 else shape[-2:-1]) + (() if b.ndim == 1 else shape[-1:])
    return nn.reshape(out, final) if final != shape else out


def _resize_source(i, size: int, out: int, scale: float, mode: str, roi=(0.0, 1.0)):
    """Resize: the input coordinate (float32) of output index i along one axis (the output's
    length in the formulas is size x scale, a fraction where the scale does not divide;
    tf_crop_and_resize spans the crop `roi`, start and end as fractions of size - 1)."""
    f = te.cast(i, "float32")
    width = size * scale
    if mode == "tf_crop_and_resize":
        span, start = (roi[1] - roi[0]) * (size - 1), roi[0] * (size - 1)
        if width == 1:
            return te.const(float(span / 2 + start), "float32")
        return f * float(span / (width - 1)) + float(start)
    if (mode == "pytorch_half_pixel" and out == 1) or (mode == "align_corners" and width == 1):
        return te.const(0.0, "float32")
    if mode in ("half_pixel", "pytorch_half_pixel"):
        return (f + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":  # the input's centre on the output's
        return float(size / 2 * (1 - out / width)) + (f + 0.5) / scale - 0.5
    if mode == "align_corners":
        return f * float(size - 1) / float(width - 1)
    if mode == "asymmetric":
        return f / scale
    return (f + 0.5) / scale  # tf_half_pixel_for_nn


def _round(c, mode: str):
    """Resize's nearest_mode: x.5 rounds down (round_prefer_floor) or up (round_prefer_ceil)."""
    if mode == "round_prefer_floor":
        return te.ceil(c - 0.5)
    if mode == "round_prefer_ceil":
        return te.floor(c + 0.5)
    return te.floor(c) if mode == "floor" else te.ceil(c)


def _clamp(i, size: int):
    return E.Min(E.Max(i, E.const(0)), E.const(size - 1))


def resize(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX Resize, nearest (all four rounding modes), (multi)linear or cubic (edge values past
    the ends, or with exclude_outside none), with the coordinate modes the importer accepts;
    `sizes` and `scales` are resolved per axis."""
    x, sizes, scales = ins[0], attrs["sizes"], attrs["scales"]
    mode, coords, r = attrs["mode"], attrs["coordinate_transformation_mode"], x.ndim
    roi = attrs.get("roi") or [0.0] * r + [1.0] * r  # tf_crop_and_resize's crop
    crops = [(roi[ax], roi[ax + r]) for ax in range(r)]
    kept = [(x.shape[ax], 1.0, (0.0, 1.0)) for ax in range(r)]  # an axis left as it is
    axes = [ax for ax in range(r) if (sizes[ax], scales[ax], crops[ax]) != kept[ax]]

    def source(i, ax):
        return _resize_source(i, x.shape[ax], sizes[ax], scales[ax], coords, crops[ax])

    def nearest(*i):
        index = list(i)
        for ax in axes:
            r = _round(source(i[ax], ax), attrs["nearest_mode"])
            index[ax] = _clamp(te.cast(r, "int32"), x.shape[ax])
        return x(*index)

    def linear(*i):
        taps = [(list(i), te.const(1.0, "float32"))]  # (index, weight) per corner
        for ax in axes:
            n = x.shape[ax]
            c = E.Min(E.Max(source(i[ax], ax), te.const(0.0, "float32")),
                      te.const(float(n - 1), "float32"))  # fmt: skip
            lo = te.cast(te.floor(c), "int32")
            frac = c - te.floor(c)
            hi = E.Min(lo + 1, E.const(n - 1))
            taps = [
                (index[:ax] + [k] + index[ax + 1 :], w * wk)
                for index, w in taps
                for k, wk in ((lo, 1.0 - frac), (hi, frac))
            ]
        total = None
        for index, w in taps:
            term = x(*index) * w
            total = term if total is None else total + term
        return total

    def cubic(*i):
        taps = [(list(i), te.const(1.0, "float32"))]  # (index, weight) per tap
        for ax in axes:
            n, c = x.shape[ax], source(i[ax], ax)
            floor = te.floor(c)
            w = cubic_weights(c - floor, float(attrs["cubic_coeff_a"]))
            at = [te.cast(floor, "int32") + k for k in (-1, 0, 1, 2)]
            if attrs["exclude_outside"]:  # taps outside the input weigh nothing
                w = [te.select(te.all(p >= 0, p < n), wk, te.const(0.0, "float32"))
                     for p, wk in zip(at, w, strict=True)]  # fmt: skip
                total = w[0] + w[1] + w[2] + w[3]
                w = [wk / total for wk in w]
            taps = [
                (index[:ax] + [_clamp(p, n)] + index[ax + 1 :], weight * wk)
                for index, weight in taps
                for p, wk in zip(at, w, strict=True)
            ]
        total = None
        for index, weight in taps:
            term = x(*index) * weight
            total = term if total is None else total + term
        return total

    kernel = {"nearest": nearest, "linear": linear, "cubic": cubic}[mode]
    if attrs.get("roi"):  # a position outside the input is the extrapolation value

        def cropped(*i):
            outside = [te.any(c < 0.0, c > float(x.shape[ax] - 1))
                       for ax in axes for c in [source(i[ax], ax)]]  # fmt: skip
            fill = te.const(float(attrs["extrapolation_value"]), x.dtype)
            return te.select(te.any(*outside), fill, kernel(*i)) if outside else kernel(*i)

        return te.compute(tuple(sizes), cropped, name="resize", tag=tag.INJECTIVE)
    return te.compute(tuple(sizes), kernel, name="resize", tag=tag.INJECTIVE)


def conv_transpose(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX ConvTranspose on [N, C, *spatial] (groups, strides, dilations, explicit pads,
    output_padding) as a gather: out[n, o, *y] sums the taps whose input position y + pad -
    k * dilation along each axis is a multiple of the stride inside the input; then the bias."""
    x, w, *rest = ins
    (n, c, *size), (_, ocg, *kernel) = x.shape, w.shape
    r, g, s, d = len(size), attrs["group"], attrs["strides"], attrs["dilations"]
    pads, extra = attrs["pads"], attrs["output_padding"]
    out = [(size[i] - 1) * s[i] + (kernel[i] - 1) * d[i] + 1 + extra[i] - pads[i] - pads[i + r]
           for i in range(r)]  # fmt: skip
    cg = c // g
    rc, rk = te.reduce_axis(cg, "rc"), [te.reduce_axis(k, f"rk{i}") for i, k in enumerate(kernel)]

    def f(*i):
        b, o, y = i[0], i[1], i[2:]
        ch = E.FloorDiv(o, ocg) * cg + rc
        t = [y[i] + pads[i] - rk[i] * d[i] for i in range(r)]
        at = [E.FloorDiv(t[i], s[i]) for i in range(r)]
        ok = te.all(*(t[i] >= 0 for i in range(r)), *(E.FloorMod(t[i], s[i]) == 0
                    for i in range(r)), *(at[i] < size[i] for i in range(r)))  # fmt: skip
        tap = x(b, ch, *at) * w(ch, E.FloorMod(o, ocg), *rk)
        return te.sum(te.if_then_else(ok, tap, te.const(0.0, x.dtype)), axis=[rc, *rk])

    red = te.compute((n, ocg * g, *out), f, name="conv_transpose")
    return plus_channel_bias(red, rest[0] if rest else None, "conv_transpose_out")


def einsum(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX Einsum on the importer's equation (explicit output, ellipses as letters): the
    product of the inputs at each output index summed over the other subscripts (an input
    axis of extent 1 broadcasts), a reduction stage, then an elementwise one."""
    terms, out = attrs["equation"].split("->")
    terms = terms.split(",")
    extent: dict[str, int] = {}
    for term, t in zip(terms, ins, strict=True):
        for c, n in zip(term, t.shape, strict=True):
            extent[c] = max(extent.get(c, 1), n)
    summed = {c: te.reduce_axis(extent[c], f"r_{c}") for c in extent if c not in out}

    def f(*o):
        at = {**dict(zip(out, o, strict=True)), **summed}
        product = None
        for term, t in zip(terms, ins, strict=True):
            v = t(*(at[c] if n > 1 else 0 for c, n in zip(term, t.shape, strict=True)))
            product = v if product is None else product * v
        return te.sum(product, axis=list(summed.values())) if summed else product

    shape = tuple(extent[c] for c in out)
    red = te.compute(shape, f, name="einsum")
    return te.compute(shape, lambda *i: red(*i), name="einsum_out", tag=tag.INJECTIVE)


def _unary(fn: Callable[[Tensor], Tensor]) -> Compute:
    return lambda ins, attrs: fn(ins[0])


def _binary(fn: Callable[[Any, Any], Tensor]) -> Compute:
    return lambda ins, attrs: fn(ins[0], ins[1])


def arg_reduce(op: str, ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX ArgMax/ArgMin along `axis` (int64): the extreme value, then the first (or with
    `select_last_index` the last) index holding it."""
    x, ax = ins[0], int(attrs["axis"])
    keep, last = bool(attrs["keepdims"]), bool(attrs["select_last_index"])
    reducer = te.max if op == "ArgMax" else te.min
    top = _reduction(x, [ax], True, "arg_value", lambda v, o, r: reducer(x(*v), axis=r))
    n = x.shape[ax]

    def pick(v, o, r):
        k = te.cast(v[ax], "int64")
        hit = x(*v) == top(*v[:ax], 0, *v[ax + 1 :])
        if last:
            return te.max(te.select(hit, k, te.const(-1, "int64")), axis=r)
        return te.min(te.select(hit, k, te.const(n, "int64")), axis=r)

    index = _reduction(x, [ax], keep, "arg_index", pick)
    return te.compute(index.shape, lambda *i: index(*i), name="arg_out", tag=tag.INJECTIVE)


OPS: dict[str, Compute] = {
    "Conv": conv2d_nchwc,
    "ConvGeneric": conv_generic,
    "MaxPoolND": lambda ins, a: window_pool("max", ins, a),
    "MaxPoolIndices": pool_indices,
    "AveragePoolND": lambda ins, a: window_pool("avg", ins, a),
    "LpPool": lambda ins, a: window_pool("lp", ins, a),
    "BatchNormalization": lambda ins, a: nn.batch_norm(*ins, epsilon=float(a["epsilon"])),
    "MaxPool": lambda ins, a: pool("max", ins, a),
    "AveragePool": lambda ins, a: pool("avg", ins, a),
    "GlobalAveragePool": lambda ins, a: global_pool("avg", ins, a),
    "GlobalMaxPool": lambda ins, a: global_pool("max", ins, a),
    "Dense": dense,
    "Relu": _unary(nn.relu),
    "LeakyRelu": lambda ins, a: nn.leaky_relu(ins[0], float(a.get("alpha", 0.01))),
    "Clip": clip,
    "Sigmoid": _unary(topi.sigmoid),
    "Tanh": _unary(topi.tanh),
    **{op: elementwise(op) for op in UNARY},
    "PRelu": _binary(topi.prelu),
    "Cast": cast,
    "Gather": gather,
    "GatherElements": gather_elements,
    "OneHot": one_hot,
    "GatherND": gather_nd,
    "TopKIndices": top_k_indices,
    "ScatterElements": scatter_elements,
    "ScatterND": scatter_nd,
    "Einsum": einsum,
    "ArgMax": lambda ins, a: arg_reduce("ArgMax", ins, a),
    "ArgMin": lambda ins, a: arg_reduce("ArgMin", ins, a),
    "Equal": _binary(topi.equal),
    "Less": _binary(topi.less),
    "Greater": _binary(topi.greater),
    "LessOrEqual": _binary(topi.less_equal),
    "GreaterOrEqual": _binary(topi.greater_equal),
    "And": _binary(topi.logical_and),
    "Or": _binary(topi.logical_or),
    "Xor": _binary(topi.logical_xor),
    "Not": lambda ins, a: te.compute(
        ins[0].shape, lambda *i: E.Not(ins[0](*i)), name="not", tag=tag.ELEMWISE
    ),
    "IsNaN": lambda ins, a: te.compute(
        ins[0].shape, lambda *i: ins[0](*i) != ins[0](*i), name="isnan", tag=tag.ELEMWISE
    ),
    "IsInf": is_inf,
    "Where": lambda ins, a: topi.where(*ins),
    "HardSigmoid": lambda ins, a: hard_sigmoid(
        ins[0], float(a.get("alpha", 0.2)), float(a.get("beta", 0.5))
    ),
    "HardSwish": lambda ins, a: topi.multiply(ins[0], hard_sigmoid(ins[0], 1 / 6, 0.5)),
    "Add": _binary(topi.add),
    "Sub": _binary(topi.subtract),
    "Mul": _binary(topi.multiply),
    "Div": _binary(topi.divide),
    "Pow": power,
    "Max": _binary(topi.maximum),
    "Min": _binary(topi.minimum),
    "Reshape": lambda ins, a: nn.reshape(ins[0], a["shape"]),
    "Copy": lambda ins, a: te.compute(
        ins[0].shape, lambda *i: ins[0](*i), name="copy", tag=tag.INJECTIVE
    ),
    "Flatten": lambda ins, a: nn.reshape(
        ins[0],
        (
            int(np.prod(ins[0].shape[: a.get("axis", 1)])),
            int(np.prod(ins[0].shape[a.get("axis", 1) :])),
        ),
    ),
    "Transpose": lambda ins, a: nn.transpose(ins[0], a.get("perm")),
    "Concat": lambda ins, a: nn.concatenate(ins, int(a["axis"])),
    "Softmax": lambda ins, a: nn.softmax(ins[0], int(a.get("axis", -1))),
    "Attention": lambda ins, a: nn.attention(
        *ins[:3], ins[3] if len(ins) > 3 else None, a["scale"]
    ),
    "LogSoftmax": lambda ins, a: nn.log_softmax(ins[0], int(a.get("axis", -1))),
    "MatMul": matmul,
    "Gemm": matmul,
    "ConvTranspose": conv_transpose,
    "Resize": resize,
    "Slice": slice_,
    "LRN": lrn,
    "Pad": pad,
    **{op: lambda ins, a, op=op: reduce(op, ins, a) for op in (*REDUCERS, "ReduceLogSumExp")},
    "Normalize": normalize,
    "CumSum": cumsum,
    "Expand": lambda ins, a: topi.broadcast_to(ins[0], a["shape"]),
    "Tile": tile,
    "DepthToSpace": depth_to_space,
    "SpaceToDepth": space_to_depth,
    "PackNCHWc": lambda ins, a: nn.pack_nchwc(ins[0], int(a["block"])),
    "UnpackNCHWc": _unary(nn.unpack_nchwc),
    "RepackNCHWc": lambda ins, a: nn.repack_nchwc(ins[0], int(a["block"])),
}


def placeholder(name: str, shape: tuple[int, ...], dtype: str = "float32") -> Tensor:
    return te.placeholder(tuple(int(s) for s in shape), dtype, name)


@dataclass
class Node:
    """One operator: ONNX op type, input and output tensor names, attributes."""

    op: str
    inputs: list[str]
    output: str
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Group:
    """A fused group: its nodes in order; the kernel writes the last node's output.
    `dtypes` names the dtype of each of its tensors that is not float32."""

    name: str
    nodes: list[Node]
    dtypes: dict[str, str] = field(default_factory=dict)

    @property
    def output(self) -> str:
        return self.nodes[-1].output

    def dtype_of(self, t: str) -> str:
        """The dtype of tensor t (float32 unless `dtypes` says otherwise)."""
        return self.dtypes.get(t, "float32")

    @property
    def inputs(self) -> list[str]:
        """Tensors read from outside the group, in first-use order."""
        made = {n.output for n in self.nodes}
        seen: dict[str, None] = {}
        for n in self.nodes:
            for t in n.inputs:
                if t not in made:
                    seen.setdefault(t)
        return list(seen)


def schedule_group(outs: Tensor, knobs: dict | None = None) -> Schedule:
    """The group's anchor's schedule: tuned `knobs` for a conv2d_NCHWc, conv2d_1x1_NCHWc,
    packed dense layer or attention, else the default."""
    found: dict[int, Any] = {}
    stack = [outs]  # iterative: a group's tensors may chain deeper than Python recurses
    while stack:
        op = stack.pop().op
        if getattr(op, "tag", None) is None or id(op) in found:
            continue
        found[id(op)] = op.tag
        stack.extend(op.input_tensors)
    tags = set(found.values())
    if tag.CONV2D_WINOGRAD in tags:
        return x86.schedule_conv2d_winograd_NCHWc(outs)
    if tag.CONV2D_1X1 in tags:
        return x86.schedule_conv2d_1x1_NCHWc(outs, **(knobs or {}))
    if tag.CONV2D_NCHWC in tags:
        if knobs:
            return x86.schedule_conv2d_NCHWc_knobs(outs, **knobs)
        return x86.schedule_conv2d_NCHWc(outs)
    if tag.DEPTHWISE_CONV2D_NCHWC in tags:
        return x86.schedule_depthwise_conv2d_NCHWc(outs)
    if tag.DENSE_PACK in tags:
        if knobs:
            return x86.schedule_dense_pack_knobs(outs, **knobs)
        return x86.schedule_dense_pack(outs)
    if tag.POOL in tags:
        return x86.schedule_pool(outs)
    if tag.SOFTMAX in tags:
        return x86.schedule_softmax(outs)
    if tag.ATTENTION in tags:
        if knobs:
            return x86.schedule_attention_knobs(outs, **knobs)
        return x86.schedule_attention(outs)
    if tag.NORMALIZE in tags:
        return x86.schedule_normalize(outs)
    if tag.MATMUL in tags:
        return x86.schedule_dense(outs)
    return x86.schedule_injective(outs)


def group_tensors(group: Group, shapes: dict[str, tuple[int, ...]]) -> list[Tensor]:
    """The group's compute definition: a placeholder per input (in `group.inputs` order),
    then the output tensor."""
    tensors = {t: placeholder(t, shapes[t], group.dtype_of(t)) for t in group.inputs}
    args = list(tensors.values())
    for node in group.nodes:
        if node.op not in OPS:
            raise OperatorError(f"node '{node.output}': op {node.op} has no CPU kernel")
        tensors[node.output] = OPS[node.op]([tensors[t] for t in node.inputs], node.attrs)
    out = tensors[group.output]
    if out.dtype != group.dtype_of(group.output):
        raise OperatorError(
            f"group {group.name}: computes {out.dtype} for '{group.output}', the graph says "
            f"{group.dtype_of(group.output)}"
        )
    if out.shape != tuple(shapes[group.output]):
        raise OperatorError(
            f"group {group.name}: computes {out.shape} for '{group.output}', "
            f"the graph says {tuple(shapes[group.output])}"
        )
    return [*args, out]
