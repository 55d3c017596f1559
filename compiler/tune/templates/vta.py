"""Accelerator (target "vta") templates: the packed conv2d of compiler.topi.vta with its knobs
tile_b/h/w/ci/co, oc_nthread, h_nthread; builds are Programs measured in device cycles. The
task's target names the configuration (`compiler.vta.environment.vta_target`: ``vta`` for the
default preset, ``vta -config=...`` otherwise), so records of one accelerator never serve
another."""

from __future__ import annotations

from pathlib import Path

from vta.config import VTAConfig

from ...topi.vta.conv2d import (
    Conv2DKnobs,
    Conv2DWorkload,
    conv2d_from_workload,
    fits,
    schedule_conv2d_packed,
)
from ...topi.vta.fused import Epilogue, conv2d_fused, fused_reference, regions
from ...topi.vta.reference import conv2d_packed_ref
from ...vta.environment import get_env, target_config, vta_target
from ..dispatch import best_config
from ..space import ConfigSpace
from ..task import current_target, register_reference, register_template

SHIFT, CLIP = 8, (-128, 127)


def _env():
    """The environment of the configuration the running task's target names."""
    return get_env(target_config(current_target() or "vta"))


def _knobs(cfg) -> Conv2DKnobs:
    return Conv2DKnobs(
        *(cfg[f"tile_{a}"].size[1] for a in ("b", "h", "w", "ci", "co")),
        cfg["oc_nthread"].val,
        cfg["h_nthread"].val,
    )


def _define_knobs(cfg, wl: Conv2DWorkload, fit) -> None:
    """The tiling knobs of a packed conv2d; `fit(knobs)` says whether a setting fits."""
    for axis, extent in (("b", wl.n), ("h", wl.oh), ("w", wl.ow), ("ci", wl.ci), ("co", wl.co)):
        cfg.define_split(f"tile_{axis}", extent, num_outputs=2)
    cfg.define_knob("oc_nthread", [1, 2])
    cfg.define_knob("h_nthread", [1, 2])
    cfg.multi_filter(
        lambda e: (
            (wl.co // e["tile_co"].size[1]) % e["oc_nthread"].val == 0
            and (wl.oh // e["tile_h"].size[1]) % e["h_nthread"].val == 0
            and fit(_knobs(e))
        )
    )


@register_template(
    "conv2d_packed", "vta", extents=("n", "ci", "h", "w", "co", "kh", "kw", "stride")
)
def conv2d_packed(cfg, n, ci, h, w, co, kh, kw, stride, pad):
    """int8 conv2d in packed layouts (sizes in blocks, as Conv2DWorkload) with shift and clip."""
    wl = Conv2DWorkload(n, ci, h, w, co, kh, kw, stride, pad)
    env = _env()
    _define_knobs(cfg, wl, lambda k: fits(wl, k, env))
    cfg.add_flop(2 * wl.macs(env))
    args, out = conv2d_from_workload(wl, env, shift=SHIFT, clip=CLIP)
    return schedule_conv2d_packed(out, _knobs(cfg), env), [*args, out]


@register_reference("conv2d_packed")
def conv2d_packed_reference(inputs, n, ci, h, w, co, kh, kw, stride, pad):
    data, kernel = inputs
    return [conv2d_packed_ref(data, kernel, stride, pad, shift=SHIFT, clip=CLIP)]


def fused_args(wl: Conv2DWorkload, ep: Epilogue) -> tuple[int, ...]:
    """The task arguments of a conv2d_fused layer's structure: the workload's sizes, bias,
    shift, relu, residual shift (-1: none), the shortcut workload (nine zeros: none) and, if
    not 0, the pre-shift and the shortcut's shift (a depthwise conv: both, then 1). Immediates do
    not change a Program's cycles, so the shifts and relu are written in one canonical form
    (shift 0, relu, residual, pre-shift and shortcut shift 1 where present): layers of the
    same structure share their tuning records."""
    sc = ep.shortcut.sizes if ep.shortcut else (0,) * 9
    k = -1 if ep.residual_shift is None else 1
    tail = (int(ep.pre_shift > 0), 1) if ep.sc_shift else (1,) if ep.pre_shift else ()
    if wl.depthwise:
        tail = (*tail, 0, 0)[:2] + (1,)
    return (*wl.sizes, int(ep.bias), 0, 1, k, *sc, *tail)


def _fused(args: tuple[int, ...]) -> tuple[Conv2DWorkload, Epilogue]:
    depthwise = len(args) > 24 and bool(args[24])
    wl = Conv2DWorkload(*args[:9], depthwise)
    (bias, shift, relu, k), sc = args[9:13], args[13:22]
    shortcut = Conv2DWorkload(*sc) if any(sc) else None
    pre, sc_shift = (*args[22:24], 0, 0)[:2]
    return wl, Epilogue(bool(bias), shift, bool(relu), None if k < 0 else k, shortcut, pre,
                        sc_shift)  # fmt: skip


@register_template("conv2d_fused", "vta")
def conv2d_fused_template(cfg, *args):
    """conv2d with its fused epilogue (compiler.topi.vta.fused); builds are Programs."""
    wl, ep = _fused(args)
    env = _env()
    _define_knobs(cfg, wl, lambda k: regions(wl, k, ep, env.config) is not None)
    macs = wl.macs(env) + (ep.shortcut.macs(env) if ep.shortcut else 0)
    cfg.add_flop(2 * macs)
    if isinstance(cfg, ConfigSpace):  # defining the space: no Program to build
        return None
    return conv2d_fused(wl, ep, _knobs(cfg), env.config)


@register_reference("conv2d_fused")
def conv2d_fused_reference(inputs, *args):
    wl, ep = _fused(args)
    it = iter(inputs)  # in the Program's buffer order
    data, kernel = next(it), next(it)
    shortcut = (next(it), next(it)) if ep.shortcut else None
    bias = next(it) if ep.bias else None
    residual, identity = (next(it), next(it)) if ep.residual_shift is not None else (None, None)
    return [fused_reference(data, kernel, wl, ep, bias, residual, shortcut, identity)]


def tuned_fused_knobs(
    wl: Conv2DWorkload, ep: Epilogue, db_path: str | Path, config: VTAConfig | None = None
) -> Conv2DKnobs | None:
    """The best conv2d_fused knobs of a layer on `config` (default: the default preset)
    recorded in the records database, else None."""
    cfg = best_config(("conv2d_fused", fused_args(wl, ep)), vta_target(config), db_path)
    return None if cfg is None else _knobs(cfg)


def tuned_conv2d_knobs(
    wl: Conv2DWorkload, db_path: str | Path, config: VTAConfig | None = None
) -> Conv2DKnobs | None:
    """The best conv2d_packed knobs of `wl` on `config` in the records database, else None."""
    cfg = best_config(("conv2d_packed", wl.sizes), vta_target(config), db_path)
    return None if cfg is None else _knobs(cfg)
