"""Window operators of any number of spatial axes in the plain layout, for `build_ops.OPS`: a
convolution with any groups (and a weight that may be computed), max, average and Lp pooling
(the packed NCHW[x]c kernels take 2-d convolutions and pools)."""

from __future__ import annotations

import math

from .. import te
from ..te.tensor import Tensor
from ..tir import expr as E
from ..topi import nn, tag
from .reference import pool_out_size


def plus_channel_bias(red: Tensor, bias: Tensor | None, name: str) -> Tensor:
    """An [N, C, ...] reduction's output with a per-channel bias added (a copy without one)."""
    return te.compute(
        red.shape,
        lambda *i: red(*i) + bias(i[1]) if bias is not None else red(*i),
        name=name,
        tag=tag.INJECTIVE,
    )


def conv_generic(ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX Conv on [N, C, *spatial] with any groups: a reduction stage over the padded input,
    then the bias in an elementwise stage."""
    x, w, *rest = ins
    r = x.ndim - 2
    g, s, d, pads = attrs["group"], attrs["strides"], attrs["dilations"], attrs["pads"]
    oc, cg, *kernel = w.shape
    xp = nn.pad(x, [0, 0, *pads[:r]], [0, 0, *pads[r:]], 0.0, name="conv_pad")
    out = [(xp.shape[2 + i] - (kernel[i] - 1) * d[i] - 1) // s[i] + 1 for i in range(r)]
    rc = te.reduce_axis(cg, "rc")
    rk = [te.reduce_axis(k, f"rk{i}") for i, k in enumerate(kernel)]
    ocg = oc // g
    red = te.compute(
        (x.shape[0], oc, *out),
        lambda *o: te.sum(
            xp(
                o[0],
                E.FloorDiv(o[1], ocg) * cg + rc,
                *(o[2 + i] * s[i] + rk[i] * d[i] for i in range(r)),
            )
            * w(o[1], rc, *rk),
            axis=[rc, *rk],
        ),  # fmt: skip
        name="conv_generic",
    )
    return plus_channel_bias(red, rest[0] if rest else None, "conv_generic_out")


def _taps(start: E.Expr, size: int, kernel: int, dil: int) -> E.Expr:
    """How many of the window taps start + k * dil (k < kernel) fall inside [0, size)."""
    first = te.max(E.FloorDiv(-start + dil - 1, dil), 0)
    last = te.min(E.FloorDiv(size - 1 - start, dil), kernel - 1)
    return te.max(last - first + 1, 0)


def pool(kind: str, ins: list[Tensor], attrs: dict) -> Tensor:
    """ONNX MaxPool, AveragePool (`kind` "max", "avg") and LpPool ("lp") on [N, C, *spatial]:
    pads, strides, dilations, ceil_mode (a window starting in the end padding is dropped),
    count_include_pad; padding is the lowest value for max, zero otherwise."""
    x = ins[0]
    r = x.ndim - 2
    k, s, pads = attrs["kernel_shape"], attrs["strides"], attrs["pads"]
    d = attrs.get("dilations") or [1] * r
    size = x.shape[2:]
    out = [pool_out_size(size[i], k[i], s[i], d[i], pads[i], pads[i + r], attrs["ceil_mode"])
           for i in range(r)]  # fmt: skip
    ends = [max((out[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - size[i] - pads[i], pads[i + r])
            for i in range(r)]  # fmt: skip
    fill = te.min_value(x.dtype) if kind == "max" else 0.0
    xp = nn.pad(x, [0, 0, *pads[:r]], [0, 0, *ends], fill, name="pool_pad")
    rk = [te.reduce_axis(n, f"rk{i}") for i, n in enumerate(k)]
    p = float(attrs.get("p", 2))

    def tap(b, c, y):
        v = xp(b, c, *(y[i] * s[i] + rk[i] * d[i] for i in range(r)))
        return te.power(te.abs(v), p) if kind == "lp" else v

    reducer = te.max if kind == "max" else te.sum
    red = te.compute(
        (*x.shape[:2], *out),
        lambda *o: reducer(tap(o[0], o[1], o[2:]), axis=rk),
        name=f"pool_{kind}",
    )

    def finish(*o):
        y = o[2:]
        if kind == "max":
            return red(*o)
        if kind == "lp":
            return te.power(red(*o), 1.0 / p)
        if attrs["count_include_pad"]:  # the explicit padding counts, a ceil overhang not
            counts = [_taps(y[i] * s[i], size[i] + pads[i] + pads[i + r], k[i], d[i])
                      for i in range(r)]  # fmt: skip
        else:
            counts = [_taps(y[i] * s[i] - pads[i], size[i], k[i], d[i]) for i in range(r)]
        count = counts[0]
        for more in counts[1:]:
            count = count * more
        return red(*o) / te.cast(count, x.dtype)

    return te.compute(red.shape, finish, name=f"pool_{kind}_out", tag=tag.INJECTIVE)


def pool_indices(ins: list[Tensor], attrs: dict) -> Tensor:
    """MaxPool's Indices output (int64): the flat index (into the whole input; each image's
    spatial axes column-major with storage_order 1) of each window's first largest value in
    scan order, the least row-major position inside the input holding the window's maximum."""
    x, top = ins[0], pool("max", ins, attrs)
    (_, c, *size), r = x.shape, x.ndim - 2
    k, s, pads = attrs["kernel_shape"], attrs["strides"], attrs["pads"]
    d = attrs.get("dilations") or [1] * r
    count = math.prod(size)
    rk = [te.reduce_axis(m, f"rk{i}") for i, m in enumerate(k)]

    def first(*o):
        at = [o[2 + i] * s[i] - pads[i] + rk[i] * d[i] for i in range(r)]
        inside = te.all(*(p >= 0 for p in at), *(p < size[i] for i, p in enumerate(at)))
        key = at[0]
        for i in range(1, r):
            key = key * size[i] + at[i]
        hit = te.select(x(o[0], o[1], *at) == top(*o), key, te.const(count, "int32"))
        return te.min(te.if_then_else(inside, hit, te.const(count, "int32")), axis=rk)

    key = te.compute(top.shape, first, name="pool_first")

    def index(*o):
        flat = te.cast(key(*o), "int64")
        if attrs.get("storage_order"):  # the row-major position's coordinates, column-major
            rest, flat = flat, te.const(0, "int64")
            for i in reversed(range(r)):
                inner = math.prod(size[:i])
                flat = flat + E.FloorMod(rest, size[i]) * inner
                rest = E.FloorDiv(rest, size[i])
        image = te.cast(o[0], "int64") * c + te.cast(o[1], "int64")
        return image * count + flat

    return te.compute(top.shape, index, name="pool_indices", tag=tag.INJECTIVE)
