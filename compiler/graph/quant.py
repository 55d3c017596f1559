"""Quantization for the accelerator: int8 weights and activations with power-of-two scales (value =
q * 2^e), int32 accumulation and biases, requantization by an arithmetic shift with the rounding
folded into the bias.

A tensor's exponent comes from its calibrated magnitude: the largest |x| ("minmax") or a high
percentile of |x| ("percentile", clipping rare outliers) or, of the minmax exponent and the two
finer ones, the one with the least mean-square quantization error ("mse"). A tensor that is never
negative (a ReLU's output) can be stored with zero point -128 (value = (q + 128) * 2^e): its
256 levels all hold values, one bit finer than symmetric int8; the convolutions that produce and
read it fold the zero point into their int32 bias (exact where the reader does not pad its input
with zeros). A convolution with
input exponent e_x, weight exponent e_w and output exponent e_y accumulates at e_x + e_w and
shifts right by e_y - e_x - e_w. A residual added inside the kernel enters through an int8
identity weight 2^k (k = e_r - e_x - e_w); where k > 6 the products are first shifted right by
k - 6 (one ALU op per output row; the bias is then quantized at the shifted exponent), keeping the
weights' precision. A shortcut convolution accumulating into the same rows keeps its weights'
exponent too: where its products are coarser than the main conv's they are shifted left into the
main conv's accumulator exponent (one ALU op per row); where finer, its weights are quantized at
the main conv's product exponent. An attention product's weight is an int8 activation known only
at run time (`product_attrs`, `run_product`): its bias, the shift's rounding less what the input's
zero point adds, is computed from it per run.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..errors import LoweringError
from ..topi.testing import conv2d_nchw_python

QMAX = 127
CALIBRATIONS = ("minmax", "percentile", "mse")
PERCENTILE = 99.99
MAX_RESIDUAL_SHIFT = 6


def pow2_exponent(absmax: float, qmax: int = QMAX) -> int:
    """The smallest e with absmax <= qmax * 2^e (a zero tensor gets e = 0)."""
    if not math.isfinite(absmax) or absmax < 0:
        raise LoweringError(f"quantization: magnitude {absmax} is not a finite non-negative number")
    if absmax == 0:
        return 0
    return math.ceil(math.log2(absmax / qmax))


def exponent(x: np.ndarray, method: str = "minmax", zero: int = 0) -> int:
    """The calibrated exponent of a tensor stored with zero point `zero` (0, or -128 for a
    tensor that is never negative: then 255 levels above zero)."""
    qmax = QMAX - zero
    if method == "mse":
        top = pow2_exponent(float(np.abs(x).max(initial=0.0)), qmax)
        errs = [(float(np.square(dequantize(quantize(x, e, zero), e, zero) - x).mean()), -e)
                for e in (top, top - 1, top - 2)]  # fmt: skip
        return -min(errs)[1]
    return pow2_exponent(magnitude(x, method), qmax)


def magnitude(x: np.ndarray, method: str = "minmax") -> float:
    """The calibrated magnitude of a tensor's values ("mse": of the exponents minmax gives and
    the next two finer ones, the one whose quantization error has the least mean square)."""
    if method == "minmax":
        return float(np.abs(x).max(initial=0.0))
    if method == "mse":
        return QMAX * 2.0 ** exponent(x, "mse")
    if method == "percentile":
        return float(np.percentile(np.abs(x), PERCENTILE))
    raise LoweringError(f"calibration {method!r} is unknown (valid: {', '.join(CALIBRATIONS)})")


def quantize(x: np.ndarray, e: int, zero: int = 0) -> np.ndarray:
    """int8 q = clip(round(x / 2^e) + zero)."""
    q = np.rint(np.asarray(x, np.float64) * 2.0**-e) + zero
    return np.clip(q, -128, QMAX).astype(np.int8)


def dequantize(q: np.ndarray, e: int, zero: int = 0) -> np.ndarray:
    return (q.astype(np.float32) - np.float32(zero)) * np.float32(2.0**e)


@dataclasses.dataclass(frozen=True)
class QConv:
    """A quantized convolution (or dense, as a 1x1 conv) with its fused epilogue: int8 weights
    (O, I, KH, KW), int32 bias (rounding included), right shift, ReLU, and an optional residual
    (added as residual << residual_shift after the products are shifted right by pre_shift) or
    shortcut conv (weights sc_weight, stride sc_stride); `depthwise`: weights (C, 1, KH, KW),
    each channel convolved with its own input channel."""

    weight: np.ndarray
    bias: np.ndarray
    shift: int
    relu: bool
    stride: int
    pad: int
    e_in: int
    e_out: int
    residual_shift: int | None = None
    sc_weight: np.ndarray | None = None
    sc_stride: int = 1
    pre_shift: int = 0
    sc_shift: int = 0
    depthwise: bool = False


def qconv_attrs(q: QConv) -> dict:
    """A QConv's scalars as graph-node attributes (its arrays are the node's constant inputs);
    `residual_shift` -1: no residual; `depthwise` 1 only where set."""
    return {
        "stride": q.stride, "pad": q.pad, "shift": int(q.shift), "relu": int(q.relu),
        "e_in": q.e_in, "e_out": q.e_out,
        "residual_shift": -1 if q.residual_shift is None else q.residual_shift,
        "sc_stride": q.sc_stride, "pre_shift": q.pre_shift, "sc_shift": q.sc_shift,
        **({"depthwise": 1} if q.depthwise else {}),
    }  # fmt: skip


def qconv_of(a: dict, w: np.ndarray, b: np.ndarray, sc_w: np.ndarray | None = None) -> QConv:
    """The QConv of a graph node's attributes `a` and constant inputs (`qconv_attrs`)."""
    res = a["residual_shift"]
    return QConv(w, b, a["shift"], bool(a["relu"]), a["stride"], a["pad"], a["e_in"],
                 a["e_out"], None if res < 0 else res, sc_w, a["sc_stride"], a["pre_shift"],
                 a["sc_shift"], bool(a.get("depthwise", 0)))  # fmt: skip


def quantize_conv(
    weight: np.ndarray,
    bias: np.ndarray,
    e_in: int,
    e_out: int,
    relu: bool,
    stride: int = 1,
    pad: int = 0,
    e_residual: int | None = None,
    shortcut: tuple[np.ndarray, np.ndarray, int, int] | None = None,
    pre_shift: bool = True,
    zeros: tuple[int, int, int, int] = (0, 0, 0, 0),
    depthwise: bool = False,
) -> QConv:
    """Quantize a float conv (+ bias) whose input has exponent e_in and output e_out; with
    `e_residual`, a residual at that exponent is added before the shift; `shortcut` =
    (weight, bias, input exponent, stride) of a conv accumulated into the same rows;
    `pre_shift` False: a residual more than 2^6 coarser than the products gets weights that
    much coarser instead;
    `zeros`: the zero points of (input, residual, shortcut input, output), folded into the bias
    (an output zero point -128 takes the ReLU's place: the int8 clip cuts at value 0);
    `depthwise`: weights (C, 1, KH, KW), one input channel each."""
    z_in, z_res, z_sc, z_out = zeros
    if z_in and pad:
        raise LoweringError("quantization: an input with a zero point must not be zero-padded")
    if z_out and not relu:
        raise LoweringError("quantization: only a ReLU's output takes a zero point")
    relu = relu and not z_out
    e_acc = e_in + pow2_exponent(float(np.abs(weight).max(initial=0.0)))
    sc_bias, sc_shift = np.zeros_like(bias), 0
    if shortcut is not None:
        sc_w, sc_bias, sc_e_in, _ = shortcut
        e_sc = sc_e_in + pow2_exponent(float(np.abs(sc_w).max(initial=0.0)))
        sc_shift = max(0, e_sc - e_acc)  # a coarser shortcut's products are shifted left
        e_acc = max(e_acc, e_sc - sc_shift)
    e_w = e_acc - e_in
    k, pre = None, 0
    if e_residual is not None:
        k = e_residual - e_acc
        if k < 0:
            raise LoweringError(
                f"quantization: the residual (exponent {e_residual}) is finer than the "
                f"accumulator (exponent {e_acc}); it cannot enter through an integer weight"
            )
        pre = max(0, k - MAX_RESIDUAL_SHIFT)
        k -= pre
        if not pre_shift:  # coarser weights instead of an ALU op per output row
            e_w, e_acc, pre = e_w + pre, e_acc + pre, 0
    e_prod = e_acc  # the products' exponent (weights and shortcut are quantized for it)
    e_acc += pre
    e_out = max(e_out, e_acc)  # the shift is a right shift
    shift = e_out - e_acc
    if shift > 31:
        raise LoweringError(f"quantization: requantizing shift {shift} exceeds 31")
    w_q = quantize(weight, e_w)
    sc_q, sc_stride = None, 1
    if shortcut is not None:
        e_sc_w = e_prod + sc_shift - shortcut[2]
        sc_q, sc_stride = quantize(shortcut[0], e_sc_w), shortcut[3]
    if pre and (z_in or z_sc):
        raise LoweringError("quantization: a pre-shifted conv's inputs take no zero point")
    b = np.asarray(bias, np.float64) + np.asarray(sc_bias, np.float64)
    b_q = np.rint(b * 2.0**-e_acc) + (1 << shift >> 1)  # round to nearest on the shift
    b_q += (z_out << shift) - z_in * _sums(w_q) - (z_res << (k or 0))
    if sc_q is not None:
        b_q -= z_sc * _sums(sc_q) * 2**sc_shift
    b_q = np.clip(b_q, -(2**31), 2**31 - 1).astype(np.int32)
    return QConv(w_q, b_q, shift, relu, stride, pad, e_in, e_out, k, sc_q, sc_stride, pre,
                 sc_shift, depthwise)  # fmt: skip


def _sums(w: np.ndarray) -> np.ndarray:
    """Each output channel's weight sum (what an input zero point adds to its products)."""
    return w.reshape(w.shape[0], -1).astype(np.float64).sum(axis=1)


def requantize(acc: np.ndarray, q: QConv) -> np.ndarray:
    """int8 clip(acc >> shift) of an int64 NCHW accumulator."""
    return np.clip(acc >> q.shift, 0 if q.relu else -128, QMAX).astype(np.int8)


def conv_int(x: np.ndarray, w: np.ndarray, stride: int, pad: int, groups: int = 1) -> np.ndarray:
    """int64 NCHW convolution (the quantized reference's, independent of any packing). The
    products are summed in float64 (BLAS) where every partial sum is an integer below 2^53,
    so exactly; numpy has no fast integer matrix product (ResNet-18's calibration spent 23 s
    in int64 einsum)."""
    o, c, kh, kw = w.shape
    bound = int(np.abs(x).max(initial=0)) * int(np.abs(w).max(initial=0)) * c * kh * kw
    dt = np.float64 if bound < 2**53 else np.int64
    return conv2d_nchw_python(x.astype(dt), w.astype(dt), stride, pad, groups=groups).astype(
        np.int64
    )


def accumulate(
    q: QConv,
    x: np.ndarray,
    residual: np.ndarray | None = None,
    sc_in: np.ndarray | None = None,
) -> np.ndarray:
    """The int64 NCHW accumulator of a quantized conv before its shift."""
    acc = conv_int(x, q.weight, q.stride, q.pad, q.weight.shape[0] if q.depthwise else 1)
    if q.sc_weight is not None:
        acc += conv_int(sc_in, q.sc_weight, q.sc_stride, 0) << q.sc_shift
    acc = (acc >> q.pre_shift) + q.bias.astype(np.int64)[None, :, None, None]
    if q.residual_shift is not None:
        acc += residual.astype(np.int64) << q.residual_shift
    return acc


def run_qconv(
    q: QConv, x: np.ndarray, residual: np.ndarray | None = None, sc_in: np.ndarray | None = None
) -> np.ndarray:
    """The bit-exact numpy reference of a quantized conv (NCHW int8 in and out)."""
    return requantize(accumulate(q, x, residual, sc_in), q)


def product_attrs(heads: int, e_in: int, e_w: int, e_out: int, zero_in: int) -> dict:
    """A product's attributes (a `VTAMatMul` node's): input exponent `e_in` with zero point
    `zero_in`, run-time weight exponent `e_w`, output exponent `e_out` (made no finer than
    the products': the shift is a right shift), one group of channels per head."""
    e_out = max(e_out, e_in + e_w)
    shift = e_out - e_in - e_w
    if shift > 31:
        raise LoweringError(f"quantization: requantizing shift {shift} exceeds 31")
    return {"heads": heads, "shift": shift, "e_in": e_in, "e_w": e_w, "e_out": e_out,
            "zero_in": zero_in}  # fmt: skip


def product_qconv(a: dict, w: np.ndarray) -> QConv:
    """One head of a product (`product_attrs` `a`) as the QConv of its run-time int8 weight
    `w` (N, K, 1, 1): its bias the shift's rounding less the input zero point times each
    output's weight sum."""
    bias = (1 << a["shift"] >> 1) - a["zero_in"] * _sums(w)
    return QConv(w, bias.astype(np.int32), a["shift"], False, 1, 0, a["e_in"], a["e_out"])


def run_product(a: dict, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The bit-exact numpy reference of a product: NCHW int8 x (N, H*K, ...) by int8 weight w
    (H*M, K, 1, 1), head h's input channels by its M weights (`product_qconv`), int8 out."""
    heads = a["heads"]
    k, m = x.shape[1] // heads, w.shape[0] // heads
    outs = [run_qconv(product_qconv(a, w[h * m : (h + 1) * m]), x[:, h * k : (h + 1) * k])
            for h in range(heads)]  # fmt: skip
    return np.concatenate(outs, axis=1)
