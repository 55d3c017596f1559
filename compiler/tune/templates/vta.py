"""Accelerator (target "vta") templates: the packed conv2d of compiler.topi.vta with its knobs
tile_b/h/w/ci/co, oc_nthread, h_nthread; builds are Programs measured in device cycles."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ...topi.vta.conv2d import (
    Conv2DKnobs,
    Conv2DWorkload,
    conv2d_from_workload,
    fits,
    schedule_conv2d_packed,
)
from ...topi.vta.reference import conv2d_packed_ref
from ...vta.environment import get_env
from ..dispatch import best_config
from ..task import register_reference, register_template

SHIFT, CLIP = 8, (-128, 127)


def _knobs(cfg) -> Conv2DKnobs:
    return Conv2DKnobs(
        *(cfg[f"tile_{a}"].size[1] for a in ("b", "h", "w", "ci", "co")),
        cfg["oc_nthread"].val,
        cfg["h_nthread"].val,
    )


@register_template("conv2d_packed", "vta")
def conv2d_packed(cfg, n, ci, h, w, co, kh, kw, stride, pad):
    """int8 conv2d in packed layouts (sizes in blocks, as Conv2DWorkload) with shift and clip."""
    wl = Conv2DWorkload(n, ci, h, w, co, kh, kw, stride, pad)
    env = get_env()
    for axis, extent in (("b", n), ("h", wl.oh), ("w", wl.ow), ("ci", ci), ("co", co)):
        cfg.define_split(f"tile_{axis}", extent, num_outputs=2)
    cfg.define_knob("oc_nthread", [1, 2])
    cfg.define_knob("h_nthread", [1, 2])
    cfg.multi_filter(
        lambda e: (
            (co // e["tile_co"].size[1]) % e["oc_nthread"].val == 0
            and (wl.oh // e["tile_h"].size[1]) % e["h_nthread"].val == 0
            and fits(wl, _knobs(e), env)
        )
    )
    cfg.add_flop(2 * wl.macs(env))
    args, out = conv2d_from_workload(wl, env, shift=SHIFT, clip=CLIP)
    return schedule_conv2d_packed(out, _knobs(cfg), env), [*args, out]


@register_reference("conv2d_packed")
def conv2d_packed_reference(inputs, n, ci, h, w, co, kh, kw, stride, pad):
    data, kernel = inputs
    return [conv2d_packed_ref(data, kernel, stride, pad, shift=SHIFT, clip=CLIP)]


def tuned_conv2d_knobs(wl: Conv2DWorkload, db_path: str | Path) -> Conv2DKnobs | None:
    """The best recorded conv2d_packed knobs of `wl` in the records database, else None."""
    cfg = best_config(("conv2d_packed", dataclasses.astuple(wl)), "vta", db_path)
    return None if cfg is None else _knobs(cfg)
