"""conv2d_packed: 2-D convolution on the accelerator in NCHW{n}n{c}c / OIHW{o}o{i}i layouts, with
bias, shift, clip and relu fused on the ALU, and its schedule template (knobs as in TopHub)."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

from ... import te
from ...errors import LoweringError
from ...schedule.schedule import Schedule
from ...vta.environment import Environment, get_env
from .common import epilogue, schedule_epilogue, schedule_gemm, vthread_split


@dataclass(frozen=True)
class Conv2DKnobs:
    """Tile sizes in blocks (b, ci, co) or output pixels (h, w) per tile and virtual threads."""

    tile_b: int = 1
    tile_h: int = 1
    tile_w: int = 1
    tile_ci: int = 1
    tile_co: int = 1
    oc_nthread: int = 1
    h_nthread: int = 1


@dataclass(frozen=True)
class Conv2DWorkload:
    """Packed shapes of a conv2d: batch/channel blocks, spatial sizes, kernel, stride, pad;
    `depthwise`: each output channel block reads only its own input block (ci == co), the
    weights (co, 1, kh, kw, o, i) one diagonal block per tap."""

    n: int
    ci: int
    h: int
    w: int
    co: int
    kh: int
    kw: int
    stride: int
    pad: int
    depthwise: bool = False

    @property
    def sizes(self) -> tuple[int, ...]:
        """The nine sizes (n ... pad) without the depthwise flag: a tuning task's arguments."""
        return dataclasses.astuple(self)[:9]

    @property
    def weight_ci(self) -> int:
        """Input-channel blocks of the weights (1 for a depthwise conv)."""
        return 1 if self.depthwise else self.ci

    @property
    def oh(self) -> int:
        return (self.h + 2 * self.pad - self.kh) // self.stride + 1

    @property
    def ow(self) -> int:
        return (self.w + 2 * self.pad - self.kw) // self.stride + 1

    def macs(self, env: Environment) -> int:
        """The GEMM core's MACs (a depthwise conv's off-diagonal zeros included)."""
        blocks = self.n * self.co * self.weight_ci * self.oh * self.ow * self.kh * self.kw
        return blocks * env.batch * env.block_in * env.block_out


def conv2d_packed(
    data: te.Tensor,
    kernel: te.Tensor,
    stride: int = 1,
    padding: int = 0,
    dilation: int = 1,
    bias: te.Tensor | None = None,
    shift: int = 0,
    clip: tuple[int, int] | None = None,
    relu: bool = False,
    env: Environment | None = None,
) -> te.Tensor:
    """int8 res[b, co, i, j, bi, ci] from data (N/b, C/c, H, W, b, c) and kernel
    (O/c, C/c, KH, KW, c, c); bias, if any, has shape (O/c, 1, 1, b, c) in int32."""
    env = env or get_env()
    if dilation != 1:
        raise LoweringError(
            f"conv2d_packed: dilation {dilation} is not supported by the accelerator (valid: 1)"
        )
    n, ci, h, w, bn, bc = data.shape
    co, ci2, kh, kw, bo, bi = kernel.shape
    if (bn, bc, bo, bi, ci2) != (env.batch, env.block_in, env.block_out, env.block_in, ci):
        raise LoweringError(
            f"conv2d_packed: data {data.shape} / kernel {kernel.shape} are not packed as "
            f"NCHW{env.batch}n{env.block_in}c / OIHW{env.block_out}o{env.block_in}i"
        )
    if padding:
        hp, wp = h + 2 * padding, w + 2 * padding

        def pad(b, c, y, x, i, j):
            inside = te.all(y >= padding, y < h + padding, x >= padding, x < w + padding)
            return te.if_then_else(inside, data[b, c, y - padding, x - padding, i, j], 0)

        data = te.compute((n, ci, hp, wp, bn, bc), pad, "data_pad", tag="pad")
    wl = Conv2DWorkload(n, ci, h, w, co, kh, kw, stride, padding)
    k_o, d_i = te.reduce_axis(ci, "k_o"), te.reduce_axis(kh, "d_i")
    d_j, k_i = te.reduce_axis(kw, "d_j"), te.reduce_axis(bc, "k_i")
    acc = te.compute(
        (n, co, wl.oh, wl.ow, bn, bo),
        lambda b, c, y, x, i, j: te.sum(
            data[b, k_o, y * stride + d_i, x * stride + d_j, i, k_i].astype(env.acc_dtype)
            * kernel[c, k_o, d_i, d_j, j, k_i].astype(env.acc_dtype),
            axis=[k_o, d_i, d_j, k_i],
        ),
        "conv",
        tag="conv2d_packed",
        attrs={"workload": wl},
    )
    return epilogue(
        acc, bias, lambda b, c, y, x, i, j: (c, 0, 0, i, j), shift, clip, relu, env.out_dtype
    )


def _layer(hw: int, ci: int, co: int, k: int, s: int) -> Conv2DWorkload:
    return Conv2DWorkload(1, ci // 16, hw, hw, co // 16, k, k, s, k // 2)


# ResNet-18's convolutions C2-C12 as VTA's evaluation names them (C1, with 3 input channels,
# stays on the CPU): (size, input channels, output channels, kernel, stride), padding k // 2
RESNET18 = {
    "C2": _layer(56, 64, 64, 3, 1),
    "C3": _layer(56, 64, 64, 1, 1),
    "C4": _layer(56, 64, 128, 3, 2),
    "C5": _layer(56, 64, 128, 1, 2),
    "C6": _layer(28, 128, 128, 3, 1),
    "C7": _layer(28, 128, 256, 3, 2),
    "C8": _layer(28, 128, 256, 1, 2),
    "C9": _layer(14, 256, 256, 3, 1),
    "C10": _layer(14, 256, 512, 3, 2),
    "C11": _layer(14, 256, 512, 1, 2),
    "C12": _layer(7, 512, 512, 3, 1),
}


def conv2d_from_workload(
    wl: Conv2DWorkload, env: Environment | None = None, **epilogue_args
) -> tuple[list[te.Tensor], te.Tensor]:
    """Placeholders (data, kernel[, bias]) and the packed conv2d output for a workload."""
    env = env or get_env()
    data = te.placeholder((wl.n, wl.ci, wl.h, wl.w, env.batch, env.block_in), "int8", "data")
    kernel = te.placeholder(
        (wl.co, wl.ci, wl.kh, wl.kw, env.block_out, env.block_in), "int8", "kernel"
    )
    args = [data, kernel]
    if epilogue_args.pop("bias", False):
        args.append(te.placeholder((wl.co, 1, 1, env.batch, env.block_out), "int32", "bias"))
    out = conv2d_packed(
        data,
        kernel,
        wl.stride,
        wl.pad,
        bias=args[2] if len(args) > 2 else None,
        env=env,
        **epilogue_args,
    )
    return args, out


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def buffer_fill(wl: Conv2DWorkload, k: Conv2DKnobs, env: Environment) -> dict[str, float]:
    """The share of the input, weight and accumulator buffers (by scope) that the tiles of
    every virtual thread take (a row of the accumulator's for the bias)."""
    threads = k.oc_nthread * k.h_nthread
    ih = (k.tile_h - 1) * wl.stride + wl.kh
    iw = (k.tile_w - 1) * wl.stride + wl.kw
    need = {
        env.inp_scope: k.tile_b * k.tile_ci * ih * iw,
        env.wgt_scope: k.tile_co * k.tile_ci * wl.kh * wl.kw,
        env.acc_scope: k.tile_b * k.tile_co * (k.tile_h * k.tile_w + 1),
    }
    return {
        scope: rows * threads * env.elem_bytes(scope) / env.capacity(scope)
        for scope, rows in need.items()
    }


def fits(wl: Conv2DWorkload, k: Conv2DKnobs, env: Environment) -> bool:
    """Do the tiles of every virtual thread fit the input, weight and accumulator buffers?"""
    return all(share <= 1 for share in buffer_fill(wl, k, env).values())


def knob_space(
    wl: Conv2DWorkload, env: Environment | None = None, nthreads: tuple[int, ...] = (1, 2)
) -> list[Conv2DKnobs]:
    """Every knob setting whose tiles divide the workload and fit the buffers, with `nthreads`
    virtual threads over output channels and over rows each."""
    env = env or get_env()
    out = []
    for tb, th, tw, tci, tco, oc_t, h_t in itertools.product(
        _divisors(wl.n),
        _divisors(wl.oh),
        _divisors(wl.ow),
        _divisors(wl.ci),
        _divisors(wl.co),
        nthreads,
        nthreads,
    ):
        k = Conv2DKnobs(tb, th, tw, tci, tco, oc_t, h_t)
        if (wl.co // tco) % oc_t or (wl.oh // th) % h_t or not fits(wl, k, env):
            continue
        out.append(k)
    return out


def traffic(wl: Conv2DWorkload, k: Conv2DKnobs) -> int:
    """Elements moved by DRAM loads under knobs `k`: inputs once per output-channel tile (with
    halo), weights once per spatial tile; the default picks the least."""
    tiles_co = wl.co // k.tile_co
    tiles_hw = (wl.oh // k.tile_h) * (wl.ow // k.tile_w) * (wl.n // k.tile_b)
    ih, iw = (k.tile_h - 1) * wl.stride + wl.kh, (k.tile_w - 1) * wl.stride + wl.kw
    inp = tiles_co * tiles_hw * k.tile_b * wl.ci * ih * iw
    wgt = tiles_hw * wl.co * wl.ci * wl.kh * wl.kw * 16
    return inp + wgt


def default_knobs(wl: Conv2DWorkload, env: Environment | None = None) -> Conv2DKnobs:
    """Two virtual threads over output channels and the least DRAM traffic that fits."""
    space = knob_space(wl, env)
    pool = [k for k in space if k.oc_nthread * k.h_nthread == 2] or space
    return min(pool, key=lambda k: (traffic(wl, k), -k.tile_ci))


def schedule_conv2d_packed(
    out: te.Tensor, knobs: Conv2DKnobs | None = None, env: Environment | None = None
) -> Schedule:
    """The accelerator schedule: output tiles (b, h, co, w) with DMA at the tile, conv reduced
    over tile_ci input blocks per load, GEMM tensorized, virtual threads outermost."""
    env = env or get_env()
    s = te.create_schedule(out.op)
    acc = next(t for t in _stages(out) if getattr(t.op, "tag", "") == "conv2d_packed")
    wl: Conv2DWorkload = acc.op.attrs["workload"]
    k = knobs or default_knobs(wl, env)
    b, co, h, w, bi, ci = s[out].op.axis
    b0, b1 = s[out].split(b, k.tile_b)
    co0, co1 = s[out].split(co, k.tile_co)
    h0, h1 = s[out].split(h, k.tile_h)
    w0, w1 = s[out].split(w, k.tile_w)
    v_oc, co0 = vthread_split(s, out, co0, k.oc_nthread)
    v_h, h0 = vthread_split(s, out, h0, k.h_nthread)
    s[out].reorder(*v_oc, *v_h, b0, h0, co0, w0, b1, co1, h1, w1, bi, ci)
    schedule_epilogue(s, out, acc, w0, co1, env)
    ab, aco, ai, aj, abi, aci = s[acc].op.axis
    k_o, d_i, d_j, k_i = s[acc].op.reduce_axis
    ko0, ko1 = s[acc].split(k_o, k.tile_ci)
    s[acc].reorder(ab, ko0, ko1, aj, d_j, d_i, aco, ai, abi, aci, k_i)
    schedule_gemm(s, acc, ko0, abi, env)
    return s


def _stages(out: te.Tensor) -> list[te.Tensor]:
    seen, stack = [], [out]
    while stack:
        t = stack.pop()
        seen.append(t)
        stack += t.op.input_tensors
    return seen
