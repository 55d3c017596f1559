"""ONNX node attributes normalized for the graph IR, one function per operator: defaults
that depend on shapes filled (kernel_shape, strides, dilations, pads, perm, axes), auto_pad
and output_shape resolved into explicit pads, inputs that must be constant turned into
attributes, and the attribute values the IR does not support reported (`Unsupported`).

Each function takes the importer (for input shapes and constants), the ONNX node and its
attributes (schema defaults filled; changed in place) and returns the node's IR inputs, or
None to keep the ONNX ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np

REDUCE_OPS = tuple(
    "ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceSumSquare "
    "ReduceLogSum ReduceLogSumExp".split()
)


class Unsupported(Exception):
    """One problem of one node (collected, then reported together)."""


def onnx_dtype(elem_type: int) -> str:
    """The numpy dtype name of an ONNX tensor element type."""
    from onnx import helper

    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name


def axis_of(axis: int, rank: int, what: str = "axis") -> int:
    """The axis in 0..rank-1 (ONNX counts negative axes from the end)."""
    if not -rank <= axis < rank:
        raise Unsupported(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


def _choice(attrs: dict, key: str, allowed: tuple) -> None:
    """An error unless the attribute (where the opset defines it) has an allowed value."""
    if key in attrs and attrs[key] not in allowed:
        raise Unsupported(f"attribute {key}={attrs.get(key)!r} is not supported "
                          f"(supported: {', '.join(map(str, allowed))})")  # fmt: skip


def _same_pads(size, k, s, d, upper: bool) -> tuple[int, int]:
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    small, big = total // 2, total - total // 2
    return (small, big) if upper else (big, small)


def _window(imp: Any, node, attrs: dict, kernel, dilations: bool = True) -> None:
    """Conv/pool attributes completed for a window of len(kernel) spatial axes: strides,
    dilations and explicit pads (begins, then ends)."""
    _choice(attrs, "auto_pad", ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"))
    n = len(kernel)
    if not 1 <= n <= 3:
        raise Unsupported(f"kernel_shape {list(kernel)}: 1-, 2- and 3-d windows are supported")
    attrs["kernel_shape"] = list(kernel)
    attrs["strides"] = attrs.get("strides") or [1] * n
    if dilations:
        attrs["dilations"] = attrs.get("dilations") or [1] * n
    attrs["pads"] = attrs.get("pads") or [0] * (2 * n)
    for key, low, count in (("kernel_shape", 1, n), ("strides", 1, n), ("dilations", 1, n),
                            ("pads", 0, 2 * n)):  # fmt: skip
        value = attrs.get(key)
        if value is not None and (len(value) != count or min(value) < low):
            raise Unsupported(f"attribute {key}={value}: {count} values >= {low} expected")
    mode = attrs["auto_pad"]
    if mode == "VALID":
        attrs["pads"] = [0] * (2 * n)
    elif mode != "NOTSET":
        size = imp.shape(node.input[0])[2:]
        d = attrs.get("dilations", [1] * n)
        begin, end = zip(*(
            _same_pads(size[i], kernel[i], attrs["strides"][i], d[i], mode == "SAME_UPPER")
            for i in range(n)
        ), strict=True)  # fmt: skip
        attrs["pads"] = [*begin, *end]
    attrs["auto_pad"] = "NOTSET"


def _conv(imp, node, attrs):
    _window(imp, node, attrs, attrs.get("kernel_shape") or list(imp.shape(node.input[1])[2:]))
    return None


def _conv_transpose(imp, node, attrs):
    """Windows of 2 or 3 spatial axes; output_shape (and SAME_*, against the input times the
    strides) resolved into pads, or into output_padding where it exceeds the full output
    (zeros at the end, as the onnx package's reference pads a negative total)."""
    kernel = attrs.get("kernel_shape") or list(imp.shape(node.input[1])[2:])
    n = len(kernel)
    auto = attrs.get("auto_pad", "NOTSET")
    attrs["auto_pad"] = "NOTSET"  # SAME_* is resolved below, against the output size
    _window(imp, node, attrs, kernel)
    attrs["output_padding"] = attrs.get("output_padding") or [0] * n
    if len(attrs["output_padding"]) != n or min(attrs["output_padding"]) < 0:
        raise Unsupported(f"attribute output_padding={attrs['output_padding']}: {n} values >= 0")
    shape = attrs.pop("output_shape", None)
    size = imp.shape(node.input[0])[2:]
    s, d, extra = attrs["strides"], attrs["dilations"], attrs["output_padding"]
    if auto in ("SAME_UPPER", "SAME_LOWER") and not shape:
        shape = [size[i] * s[i] for i in range(n)]
    if shape or auto == "VALID":
        target = shape[-n:] if shape else None
        pads = [0] * (2 * n)
        for i in range(n):
            full = s[i] * (size[i] - 1) + extra[i] + (kernel[i] - 1) * d[i] + 1
            total = full - target[i] if target else 0
            if total < 0:
                extra[i] -= total
                continue
            upper = auto == "SAME_UPPER"
            pads[i], pads[i + n] = (
                (total // 2, total - total // 2) if upper else (total - total // 2, total // 2)
            )
        attrs["pads"] = pads
    attrs["output_shape"] = []
    return None


def _pool(imp, node, attrs):
    _choice(attrs, "ceil_mode", (0, 1))
    if node.op_type == "MaxPool":
        _choice(attrs, "storage_order", (0, 1))  # the order of the Indices output
    if node.op_type == "LpPool" and int(attrs["p"]) < 1:
        raise Unsupported(f"p={attrs['p']}: the norm's order is at least 1")
    _window(imp, node, attrs, attrs["kernel_shape"], node.op_type != "AveragePool")
    return None


def _clip(imp, node, attrs):
    lo = imp.const(node, 1, "min")
    hi = imp.const(node, 2, "max")
    attrs["min"] = float(lo) if lo is not None else float(attrs.get("min", -np.inf))
    attrs["max"] = float(hi) if hi is not None else float(attrs.get("max", np.inf))
    return list(node.input[:1])


def _gemm(imp, node, attrs):
    attrs["transA"], attrs["transB"] = int(attrs["transA"]), int(attrs["transB"])
    return None


def _flatten(imp, node, attrs):
    rank = len(imp.shape(node.input[0]))
    if not -rank <= attrs["axis"] <= rank:
        raise Unsupported(f"axis {attrs['axis']} is out of range for rank {rank}")
    attrs["axis"] += rank if attrs["axis"] < 0 else 0
    return None


def _reshape(imp, node, attrs):
    target = [int(v) for v in imp.const(node, 1, "shape")]
    shape = imp.shape(node.input[0])
    out = [shape[i] if v == 0 and not attrs.get("allowzero", 0) else v
           for i, v in enumerate(target)]  # fmt: skip
    if out.count(-1) > 1:
        raise Unsupported(f"shape {target} has more than one -1")
    if -1 in out:
        known = int(np.prod([v for v in out if v != -1]))
        if known == 0 or int(np.prod(shape)) % known:
            raise Unsupported(f"shape {target} does not fit the input's {list(shape)}")
        out[out.index(-1)] = int(np.prod(shape)) // known
    if int(np.prod(out)) != int(np.prod(shape)):
        raise Unsupported(f"shape {target} does not fit the input's {list(shape)}")
    attrs["shape"] = out
    return list(node.input[:1])


def _transpose(imp, node, attrs):
    rank = len(imp.shape(node.input[0]))
    perm = attrs.get("perm") or list(range(rank))[::-1]
    if sorted(perm) != list(range(rank)):
        raise Unsupported(f"perm {perm} is not a permutation of {rank} axes")
    attrs["perm"] = perm
    return None


def _concat(imp, node, attrs):
    attrs["axis"] = axis_of(attrs["axis"], len(imp.shape(node.input[0])))
    return None


def _split(imp, node, attrs):
    shape = imp.shape(node.input[0])
    attrs["axis"] = ax = axis_of(attrs["axis"], len(shape))
    split = imp.const(node, 1, "split") if imp.opset >= 13 else attrs.get("split")
    n = len(node.output)
    if split is None or len(split) == 0:
        parts = attrs.pop("num_outputs", None) or n
        if parts < 1:
            raise Unsupported(f"num_outputs={parts} must be positive")
        size = -(-shape[ax] // parts)
        split = [size] * (shape[ax] // size) + ([shape[ax] % size] if shape[ax] % size else [])
    attrs.pop("num_outputs", None)
    attrs["split"] = [int(v) for v in split]
    if len(attrs["split"]) != n:
        raise Unsupported(f"split {attrs['split']} makes {len(split)} parts for {n} outputs")
    return list(node.input[:1])


def _slice(imp, node, attrs):
    starts = [int(v) for v in imp.const(node, 1, "starts")]
    ends = [int(v) for v in imp.const(node, 2, "ends")]
    shape = imp.shape(node.input[0])
    axes = imp.const(node, 3, "axes")
    axes = list(range(len(starts))) if axes is None else [axis_of(int(a), len(shape)) for a in axes]
    steps = imp.const(node, 4, "steps")
    steps = [1] * len(starts) if steps is None else [int(v) for v in steps]
    if 0 in steps:
        raise Unsupported("steps must not be 0")
    norm_s, norm_e = [], []
    for s, e, ax, st in zip(starts, ends, axes, steps, strict=True):
        dim = shape[ax]
        s, e = s + dim if s < 0 else s, e + dim if e < 0 else e
        lo, hi = (0, dim) if st > 0 else (-1, dim - 1)
        norm_s.append(min(max(s, lo), hi))
        norm_e.append(min(max(e, lo), hi))
    attrs.update(starts=norm_s, ends=norm_e, axes=axes, steps=steps)
    return list(node.input[:1])


def _squeeze(imp, node, attrs):
    shape = imp.shape(node.input[0])
    axes = imp.const(node, 1, "axes") if imp.opset >= 13 else attrs.get("axes")
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = sorted(axis_of(int(a), len(shape)) for a in axes)
    bad = [a for a in axes if shape[a] != 1]
    if bad:
        raise Unsupported(f"axes {bad} of shape {list(shape)} are not 1")
    attrs["axes"] = axes
    return list(node.input[:1])


def _unsqueeze(imp, node, attrs):
    axes = imp.const(node, 1, "axes") if imp.opset >= 13 else attrs.get("axes")
    if axes is None:
        raise Unsupported("axes are missing")
    rank = len(imp.shape(node.input[0])) + len(axes)
    attrs["axes"] = sorted(axis_of(int(a), rank) for a in axes)
    if len(set(attrs["axes"])) != len(attrs["axes"]):
        raise Unsupported(f"axes {list(axes)} repeat an axis")
    return list(node.input[:1])


def _pad(imp, node, attrs):
    _choice(attrs, "mode", ("constant", "reflect", "edge", "wrap"))
    pads = [int(v) for v in imp.const(node, 1, "pads")]
    value = imp.const(node, 2, "constant_value")
    axes = imp.const(node, 3, "axes")
    rank = len(imp.shape(node.input[0]))
    if axes is not None:
        axes = [axis_of(int(a), rank) for a in axes]
        full = [0] * (2 * rank)
        for k, a in enumerate(axes):
            full[a], full[a + rank] = pads[k], pads[k + len(axes)]
        pads = full
    if len(pads) != 2 * rank:
        raise Unsupported(f"pads {pads} do not have 2 x {rank} entries")
    if min(pads) < 0:
        raise Unsupported(f"negative pads {pads} are not supported")
    shape = imp.shape(node.input[0])
    for a, n in enumerate(shape):
        widest = max(pads[a], pads[a + rank])
        if attrs["mode"] == "reflect" and widest > n - 1:  # one reflection reaches n - 1 values
            raise Unsupported(f"mode reflect: pads {pads} reach past axis {a} of size {n}")
        if attrs["mode"] in ("edge", "wrap") and widest and not n:
            raise Unsupported(f"mode {attrs['mode']}: axis {a} is empty, it has nothing to repeat")
    attrs.update(pads=pads, value=float(value) if value is not None and value.size else 0.0)
    return list(node.input[:1])


def _softmax(imp, node, attrs):
    attrs["axis"] = axis_of(attrs["axis"], len(imp.shape(node.input[0])))
    return None


def _lrn(imp, node, attrs):
    if int(attrs["size"]) < 1:
        raise Unsupported(f"size={attrs['size']}: the window must hold at least one channel")
    if len(imp.shape(node.input[0])) < 3:
        raise Unsupported("the input must have a batch, a channel and a spatial axis")
    attrs["size"] = int(attrs["size"])
    return None


def _reduce(imp, node, attrs):
    as_input = node.op_type == "ReduceSum" and imp.opset >= 13 or imp.opset >= 18
    axes = imp.const(node, 1, "axes") if as_input else attrs.get("axes")
    rank = len(imp.shape(node.input[0]))
    if (axes is None or len(axes) == 0) and not attrs.get("noop_with_empty_axes", 0):
        axes = range(rank)  # else no axis: the reduction's maps applied to each element
    axes = [] if axes is None else axes
    attrs["axes"] = sorted({axis_of(int(a), rank) for a in axes})
    return list(node.input[:1])


def _cumsum(imp, node, attrs):
    axis = imp.const(node, 1, "axis")
    if axis.size != 1:
        raise Unsupported(f"axis {axis.tolist()} is not one value")
    attrs["axis"] = axis_of(int(axis.reshape(-1)[0]), len(imp.shape(node.input[0])))
    return list(node.input[:1])


def _expand(imp, node, attrs):
    shape = [int(v) for v in imp.const(node, 1, "shape")]
    try:
        attrs["shape"] = list(np.broadcast_shapes(imp.shape(node.input[0]), tuple(shape)))
    except ValueError:
        raise Unsupported(f"shape {shape} does not broadcast with the input's") from None
    return list(node.input[:1])


def _tile(imp, node, attrs):
    repeats = [int(v) for v in imp.const(node, 1, "repeats")]
    if len(repeats) != len(imp.shape(node.input[0])) or min(repeats, default=0) < 0:
        raise Unsupported(f"repeats {repeats}: one count >= 0 per input axis expected")
    attrs["repeats"] = repeats
    return list(node.input[:1])


def _range(imp, node, attrs):
    start, limit, delta = (imp.const(node, k, what).item()
                           for k, what in enumerate(("start", "limit", "delta")))  # fmt: skip
    if delta == 0:
        raise Unsupported("delta must not be 0")
    attrs["count"] = max(int(np.ceil((limit - start) / delta)), 0)
    return None


def _depth_to_space(imp, node, attrs):
    _choice(attrs, "mode", ("DCR", "CRD"))
    b, (_, c, h, w) = attrs["blocksize"], imp.shape(node.input[0])
    if b < 1:
        raise Unsupported(f"blocksize {b} must be positive")
    if node.op_type == "DepthToSpace" and c % (b * b):
        raise Unsupported(f"{c} channels do not divide into blocks of {b}x{b}")
    if node.op_type == "SpaceToDepth" and (h % b or w % b):
        raise Unsupported(f"the {h}x{w} image does not divide into blocks of {b}x{b}")
    return None


def _resize(imp, node, attrs):
    _choice(attrs, "mode", ("nearest", "linear", "cubic"))
    _choice(attrs, "coordinate_transformation_mode", (
        "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
        "half_pixel_symmetric", "tf_crop_and_resize"
    ))  # fmt: skip
    _choice(attrs, "nearest_mode", ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"))
    _choice(attrs, "antialias", (0, 1))
    if attrs.get("antialias") and (
        attrs["mode"] == "nearest"
        or attrs["coordinate_transformation_mode"] == "tf_crop_and_resize"
    ):
        raise Unsupported(f"antialias=1 with mode {attrs['mode']} and coordinate_transformation_"
                          f"mode {attrs['coordinate_transformation_mode']}")  # fmt: skip
    shape = imp.shape(node.input[0])
    scales = imp.const(node, 2, "scales")
    sizes = imp.const(node, 3, "sizes")
    axes = attrs.get("axes") or list(range(len(shape)))
    axes = [axis_of(int(a), len(shape)) for a in axes]
    if sizes is not None and sizes.size:
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        _choice(attrs, "keep_aspect_ratio_policy", ("stretch", "not_larger", "not_smaller"))
        full = list(shape)
        for a, v in zip(axes, sizes, strict=True):
            full[a] = int(v)
        attrs["scales"] = [o / i for o, i in zip(full, shape, strict=True)]
        if policy != "stretch":  # one scale for the axes, the sizes rounded half up
            pick = min if policy == "not_larger" else max
            scale = pick(attrs["scales"][a] for a in axes)
            attrs["scales"] = [scale if a in axes else 1.0 for a in range(len(shape))]
            full = [int(scale * n + 0.5) if a in axes else n for a, n in enumerate(shape)]
        attrs["sizes"] = full
    elif scales is not None and scales.size:
        full = [1.0] * len(shape)
        for a, v in zip(axes, scales, strict=True):
            full[a] = float(v)
        attrs["scales"] = full
        attrs["sizes"] = [int(np.floor(d * s)) for d, s in zip(shape, full, strict=True)]
    else:
        raise Unsupported("neither scales nor sizes is given")
    if min(attrs["sizes"]) < 1 or min(attrs["scales"]) <= 0:
        raise Unsupported(f"output sizes {attrs['sizes']} (scales {attrs['scales']}) not positive")
    attrs["axes"] = axes
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":  # the crop: per axis
        roi, r = imp.const(node, 1, "roi"), len(shape)
        if roi is None or roi.size != 2 * len(axes):
            listed = None if roi is None else roi.tolist()
            raise Unsupported(f"roi {listed}: a start and an end per axis of {axes} expected")
        attrs["roi"] = [0.0] * r + [1.0] * r
        for k, a in enumerate(axes):
            attrs["roi"][a], attrs["roi"][a + r] = float(roi[k]), float(roi[k + len(axes)])
    return list(node.input[:1])


def _gather(imp, node, attrs):
    shape = imp.shape(node.input[0])
    attrs["axis"] = axis_of(attrs["axis"], len(shape))
    if node.input[1] in imp.graph.constants:
        n, indices = shape[attrs["axis"]], imp.const(node, 1, "indices")
        if indices.size and (indices.min() < -n or indices.max() >= n):
            raise Unsupported(f"indices {indices.tolist()} are out of range for an axis of {n}")
    return None


def _top_k(imp, node, attrs):
    shape = imp.shape(node.input[0])
    attrs["axis"] = axis_of(attrs["axis"], len(shape))
    k = imp.const(node, 1, "K")
    if k.size != 1 or not 0 <= int(k.reshape(-1)[0]) <= shape[attrs["axis"]]:
        raise Unsupported(f"K {k.tolist()} is not one count of at most {shape[attrs['axis']]}")
    attrs["k"] = int(k.reshape(-1)[0])
    return node.input[:1]


def _gather_nd(imp, node, attrs):
    data, indices = imp.shape(node.input[0]), imp.shape(node.input[1])
    b, k = attrs["batch_dims"], indices[-1] if indices else 0
    if not 0 <= b < min(len(data), len(indices)) or data[:b] != indices[:b]:
        raise Unsupported(f"batch_dims={b}: data {list(data)} and indices {list(indices)}")
    if not 1 <= k <= len(data) - b:
        raise Unsupported(f"index tuples of {k} for data {list(data)} after {b} batch axes")
    return None


def _scatter(imp, node, attrs):
    attrs.setdefault("reduction", "none")  # defined from opset 16 (ScatterND) and 18
    _choice(attrs, "reduction", ("none", "add", "mul", "max", "min"))
    data, indices, updates = (imp.shape(t) for t in node.input[:3])
    if node.op_type == "ScatterElements":
        attrs["axis"] = axis_of(attrs["axis"], len(data))
        fits = len(indices) == len(data) and updates == indices and all(
            i <= d for k, (i, d) in enumerate(zip(indices, data, strict=True)) if k != attrs["axis"]
        )  # fmt: skip
    else:
        k = indices[-1] if indices else 0
        fits = 1 <= k <= len(data) and updates == indices[:-1] + data[k:]
    if not fits:
        raise Unsupported(f"data {list(data)}, indices {list(indices)} and updates "
                          f"{list(updates)} do not fit")  # fmt: skip
    return None


def _arg_reduce(imp, node, attrs):
    attrs["axis"] = axis_of(attrs["axis"], len(imp.shape(node.input[0])))
    return None


def _cast(imp, node, attrs):
    try:
        attrs["to"] = onnx_dtype(attrs["to"])
    except (KeyError, TypeError) as e:
        raise Unsupported(f"attribute to={attrs.get('to')!r} is not a tensor type") from e
    return None


def _one_hot(imp, node, attrs):
    depth = imp.const(node, 1, "depth")
    if depth.size != 1 or depth.reshape(-1)[0] < 1:
        raise Unsupported(f"depth {depth.tolist()} is not one positive value")
    attrs["depth"] = int(depth.reshape(-1)[0])  # a fraction truncates, as onnxruntime's
    attrs["axis"] = axis_of(attrs["axis"], len(imp.shape(node.input[0])) + 1)
    if imp.shape(node.input[2]) != (2,):
        raise Unsupported(f"values has the shape {list(imp.shape(node.input[2]))}; [2] expected")
    return [node.input[0], node.input[2]]


def _einsum(imp, node, attrs):
    """The equation with an explicit output and every ellipsis written as letters (the
    broadcast axes, right-aligned), each term as long as its operand's rank."""
    eq = attrs["equation"].replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    shapes = [imp.shape(t) for t in node.input]
    if len(terms) != len(shapes):
        raise Unsupported(f"equation {eq!r} has {len(terms)} terms for {len(shapes)} inputs")
    letters = [c for c in eq if c not in ",->."]
    if not all(c.isascii() and c.isalpha() for c in letters):
        raise Unsupported(f"equation {eq!r}: subscripts are letters")
    free = [c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in eq]
    widths = [len(shape) - len(t.replace("...", "")) for t, shape in zip(terms, shapes,
                                                                         strict=True)]  # fmt: skip
    ellipsis = "".join(free[: max([w for w, t in zip(widths, terms, strict=True) if "..." in t],
                                  default=0)])  # fmt: skip
    full = []
    for term, width, shape in zip(terms, widths, shapes, strict=True):
        term = term.replace("...", ellipsis[len(ellipsis) - width :] if width > 0 else "")
        if len(term) != len(shape) or term.count(".") or width < 0:
            raise Unsupported(f"term {term!r} does not fit an input of shape {list(shape)}")
        full.append(term)
    if arrow:
        out = rhs.replace("...", ellipsis)
    else:
        named = lhs.replace("...", "").replace(",", "")
        out = ellipsis + "".join(sorted(c for c in set(named) if named.count(c) == 1))
    if len(set(out)) != len(out) or not set(out) <= set("".join(full)):
        raise Unsupported(f"equation {eq!r}: the output's subscripts are not the inputs' once")
    extent: dict[str, int] = {}
    for term, shape in zip(full, shapes, strict=True):
        for c, n in zip(term, shape, strict=True):
            if extent.setdefault(c, n) != n and 1 not in (n, extent[c]):
                raise Unsupported(f"subscript {c!r} has extents {extent[c]} and {n}")
            extent[c] = max(extent[c], n)
    attrs["equation"] = ",".join(full) + "->" + out
    return None


def _gelu(imp, node, attrs):
    _choice(attrs, "approximate", ("none", "tanh"))
    return None


def _celu(imp, node, attrs):
    if attrs["alpha"] == 0:
        raise Unsupported("alpha=0: Celu divides by alpha")
    return None


def _prelu(imp, node, attrs):
    """Before opset 7 a slope of one value per channel applies along axis 1 (the version
    converter keeps its shape, which opset 7's broadcasting aligns with the last axis)."""
    x, slope = imp.shape(node.input[0]), imp.shape(node.input[1])
    if imp.source_opset >= 7 or len(x) < 3 or slope != (x[1],) or x[1] == 1:
        return None
    per_channel = [slope[0], *[1] * (len(x) - 2)]
    return [node.input[0], imp.reshaped(node.input[1], per_channel, node.name or node.output[0])]


RANKS = {  # the ranks each input of the image operators may have (1-d windows: `window_1d`)
    "Conv": {0: (4, 5), 1: (4, 5), 2: 1},
    "ConvTranspose": {0: (4, 5), 1: (4, 5), 2: 1},
    "MaxPool": {0: (4, 5)},
    "AveragePool": {0: (4, 5)},
    "LpPool": {0: (3, 4, 5)},
    "GlobalAveragePool": {0: 4},
    "GlobalMaxPool": {0: 4},
    "DepthToSpace": {0: 4},
    "SpaceToDepth": {0: 4},
}


def check_ranks(imp: Any, node) -> None:
    """An error naming the first input whose rank the operator does not take."""
    for k, want in RANKS.get(node.op_type, {}).items():
        want = want if isinstance(want, tuple) else (want,)
        if k < len(node.input) and node.input[k]:
            rank = len(imp.shape(node.input[k]))
            if rank not in want:
                ranks = " or ".join(map(str, want))
                raise Unsupported(f"input {k} ({node.input[k]}) has rank {rank}; {ranks} expected")


NORMALIZE = {
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "MaxPool": _pool,
    "AveragePool": _pool,
    "LpPool": _pool,
    "Clip": _clip,
    "Gemm": _gemm,
    "Flatten": _flatten,
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Concat": _concat,
    "Split": _split,
    "Slice": _slice,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Pad": _pad,
    "Softmax": _softmax,
    "LogSoftmax": _softmax,
    "LRN": _lrn,
    **dict.fromkeys(REDUCE_OPS, _reduce),
    "CumSum": _cumsum,
    "Expand": _expand,
    "Tile": _tile,
    "Range": _range,
    "DepthToSpace": _depth_to_space,
    "SpaceToDepth": _depth_to_space,
    "Resize": _resize,
    "Gather": _gather,
    "GatherElements": _gather,
    "ArgMax": _arg_reduce,
    "ArgMin": _arg_reduce,
    "Cast": _cast,
    "Gelu": _gelu,
    "OneHot": _one_hot,
    "GatherND": _gather_nd,
    "TopK": _top_k,
    "ScatterElements": _scatter,
    "ScatterND": _scatter,
    "Einsum": _einsum,
    "Celu": _celu,
    "PRelu": _prelu,
}


__all__ = ["NORMALIZE", "REDUCE_OPS", "Unsupported", "axis_of", "onnx_dtype"]
