"""A fused conv Program (`compiler.topi.vta.fused`) run on a device with seeded int8 inputs,
against its numpy reference: what the fused kernel's tests compare bit for bit."""

from __future__ import annotations

import numpy as np

from compiler.graph.runtime import identity_weight
from compiler.topi.vta.conv2d import Conv2DKnobs, Conv2DWorkload
from compiler.topi.vta.fused import Epilogue, conv2d_fused, fused_reference
from vta.config import VTAConfig
from vta.device import get_device
from vta.stats import Stats


def run_fused(
    wl: Conv2DWorkload,
    ep: Epilogue,
    knobs: Conv2DKnobs | None,
    config: str | VTAConfig,
    device: str,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, Stats]:
    """(the device's output, the reference's, the run's Stats) of `conv2d_fused` on seeded
    data, weights, bias, residual and shortcut inputs as the epilogue takes them."""
    cfg = VTAConfig.load(config)
    p = conv2d_fused(wl, ep, knobs, cfg)
    rng = np.random.default_rng(seed)
    spec = {b.name: b for b in p.buffers}
    feed = {n: rng.integers(-128, 128, spec[n].shape).astype(np.int8) for n in ("data", "kernel")}
    if ep.bias:
        feed["bias"] = rng.integers(-5000, 5000, spec["bias"].shape).astype(np.int32)
    if ep.residual_shift is not None:
        feed["residual"] = rng.integers(-128, 128, spec["residual"].shape).astype(np.int8)
        feed["eye"] = identity_weight(ep.residual_shift, cfg)
    shortcut = None
    if ep.shortcut is not None:
        for n in ("sc_data", "sc_kernel"):
            feed[n] = rng.integers(-128, 128, spec[n].shape).astype(np.int8)
        shortcut = (feed["sc_data"], feed["sc_kernel"])
    want = fused_reference(
        feed["data"], feed["kernel"], wl, ep, feed.get("bias"), feed.get("residual"), shortcut
    )
    outs, stats = get_device(device).run(p, feed)
    return outs["out"], want, stats
