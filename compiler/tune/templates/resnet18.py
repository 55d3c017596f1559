"""ResNet-18's convolution layers C1-C12 as tuning tasks, on the CPU and on the accelerator."""

from __future__ import annotations

import dataclasses

from ...errors import TuningError
from ...topi.vta.conv2d import RESNET18
from ...topi.vta.fused import RESNET18_NETWORK
from ...vta.environment import target_config
from ..task import target_kind
from .vta import fused_args

# ResNet-18's distinct convolutions (batch 1, 224x224 input) in network order:
# (input channels, input height = width, output channels, kernel height = width, stride)
LAYERS = {
    "C1": (3, 224, 64, 7, 2),
    "C2": (64, 56, 64, 3, 1),
    "C3": (64, 56, 64, 1, 1),
    "C4": (64, 56, 128, 3, 2),
    "C5": (64, 56, 128, 1, 2),
    "C6": (128, 28, 128, 3, 1),
    "C7": (128, 28, 256, 3, 2),
    "C8": (128, 28, 256, 1, 2),
    "C9": (256, 14, 256, 3, 1),
    "C10": (256, 14, 512, 3, 2),
    "C11": (256, 14, 512, 1, 2),
    "C12": (512, 7, 512, 3, 1),
}


def resnet18_task_args(layer: str, target: str) -> tuple[str, tuple]:
    """(op, args) of a layer: conv2d_NCHWc on llvm, conv2d_nchw on cuda, conv2d_packed
    (C2-C12) on vta."""
    fused = {name: (RESNET18[conv], ep) for name, conv, ep, _ in RESNET18_NETWORK}
    fused |= {  # residual layers whose products are shifted first (quantized networks need it)
        f"{name}+pre": (wl, dataclasses.replace(ep, pre_shift=1))
        for name, (wl, ep) in fused.items()
        if ep.residual_shift is not None
    }
    vta = target_kind(target) == "vta"
    if vta and target_config(target).block_in != 16:
        raise TuningError(
            f"layer {layer!r} is named in blocks of 16 channels; the configuration's block is "
            f"{target_config(target).block_in}: give OP:ARGS in its blocks"
        )
    if vta and layer in fused:
        return "conv2d_fused", fused_args(*fused[layer])
    if layer not in LAYERS:
        raise TuningError(
            f"unknown layer {layer!r}; valid: {', '.join(LAYERS)} (and on vta the fused "
            f"layers {', '.join(fused)})"
        )
    if vta:
        if layer not in RESNET18:
            raise TuningError(f"layer {layer} stays on the CPU; accelerator layers: C2-C12")
        return "conv2d_packed", RESNET18[layer].sizes
    c, size, f, k, stride = LAYERS[layer]
    if target.split()[0] == "cuda":
        return "conv2d_nchw", (c, size, size, f, k, k, stride, k // 2)
    return "conv2d_NCHWc", (c, size, size, f, k, k, stride)
