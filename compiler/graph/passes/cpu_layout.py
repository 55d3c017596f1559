"""Passes over the CPU's lowered groups (`build_onnx.lower_groups`: NCHW[x]c groups of
`build_ops.Node`s) that choose how each dense layer and convolution is computed, run once
before the build (`run_cpu_passes`, in this order); the build, the template tasks and the
auto-scheduler's group workloads (`graph.tasks`) read their marks instead of deciding again:

- `pack_dense_weights`: a Dense node's [N, K] constant weight packed in panels as wide as
  `x86.panel_width` chooses for the layer's rows; the node told its N (`units`).
- `winograd_convs`: 3x3 stride-1 convolutions with outputs of at least
  `winograd_min_output()` run by Winograd's F(2x2, 3x3): the node marked `winograd`, its
  weight transformed.
- `pointwise_convs`: 1x1 stride-1 unpadded convolutions whose input-channel chunks pay
  (`x86.pointwise_pays`) marked `pointwise` = the chunk (computed by `conv2d_1x1_NCHWc`),
  unless the records (a dispatch context) keep them direct (`tasks.records_keep_direct`).

Each pass changes the groups' nodes in place and returns a new constants dict;
`run_cpu_passes(print_passes=True)` prints what each one chose (`vta compile
--print-passes`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...codegen import parallel
from ...codegen.target import cpu_facts
from ...topi import nn, x86
from ...tune.dispatch import ApplyHistoryBest
from ..build_ops import Group
from ..tasks import conv_task, records_keep_direct

WINOGRAD_TILE = 2  # F(2x2, 3x3): 2.25x fewer multiplications; F(4x4) was slower here


def _shape(shape: tuple) -> str:
    return f"[{','.join(map(str, shape))}]"


def pack_dense_weights(
    groups: list[Group], shapes: dict, constants: dict[str, np.ndarray]
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Dense nodes' [N, K] constant weights replaced by their packed form (panels as wide as
    `x86.panel_width` chooses for the layer's rows), the node told its N (`units`): (the new
    constants, a line per packed layer)."""
    constants = dict(constants)
    threads = parallel.get_num_threads()
    lines = []
    for g in groups:
        for n in g.nodes:
            if n.op == "Dense" and "units" not in n.attrs:
                w = constants[n.inputs[1]]
                n.attrs["units"] = w.shape[0]
                bn = x86.panel_width(shapes[n.inputs[0]][0], *w.shape, threads)
                constants[n.inputs[1]] = x86.pack_weight(w, bn)
                packed = constants[n.inputs[1]].shape
                lines.append(f"  %{n.output}: %{n.inputs[1]}{_shape(w.shape)} -> {_shape(packed)}")
    return constants, lines


def winograd_min_output() -> int:
    """The smallest output (height and width) a conv runs by Winograd on the current target:
    7 with 16 vector registers (AVX2: the direct 7x7 conv's register tiles are small; ResNet-18
    ~6% faster with its stage-4 convs by Winograd, 1 and 2 threads), else 14 (AVX-512: 7x7
    outputs gained nothing; their 16 tiles cover 8x8 outputs)."""
    return 7 if cpu_facts().vector_registers <= 16 else 14


def winograd_convs(
    groups: list[Group], shapes: dict, constants: dict[str, np.ndarray]
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Convolutions computed by Winograd's F(2x2, 3x3) (3x3, stride 1, undilated, ungrouped,
    equal padding, outputs at least `winograd_min_output()` wide and high on the current
    target): the node marked, its packed weight replaced by the transformed one: (the new
    constants, a line per convolution)."""
    constants = dict(constants)
    min_output = winograd_min_output()
    lines = []
    for g in groups:
        for n in g.nodes:
            a = n.attrs
            if n.op != "Conv" or a.get("winograd") or n.inputs[1] not in constants:
                continue
            out = shapes[n.output]
            if (
                tuple(a.get("kernel_shape", ())) != (3, 3)
                or any(v != 1 for v in (a.get("strides") or [1, 1]))
                or any(v != 1 for v in (a.get("dilations") or [1, 1]))
                or a.get("group", 1) != 1
                or len(set(a.get("pads") or [0])) != 1
                or out[0] != 1
                or min(out[2], out[3]) < min_output
            ):
                continue
            packed = constants[n.inputs[1]]  # [OC/ob, C/ib, 3, 3, ib, ob]
            k, c = packed.shape[0] * packed.shape[5], packed.shape[1] * packed.shape[4]
            weight = packed.transpose(0, 5, 1, 4, 2, 3).reshape(k, c, 3, 3)
            constants[n.inputs[1]] = nn.winograd_weight(weight, WINOGRAD_TILE, packed.shape[5])
            a["winograd"] = WINOGRAD_TILE
            transformed = _shape(constants[n.inputs[1]].shape)
            lines.append(f"  %{n.output}{_shape(out)}: %{n.inputs[1]} -> {transformed}")
    return constants, lines


def pointwise_convs(
    groups: list[Group], shapes: dict, records: ApplyHistoryBest | None = None
) -> list[str]:
    """Convolutions computed by conv2d_1x1_NCHWc (1x1, stride 1, unpadded, ungrouped, batch
    1, where `x86.pointwise_pays` with the chunk of `x86.pointwise_chunk`), the node marked
    with that chunk, unless `tasks.records_keep_direct` in the dispatch context `records`
    (`shapes` with the constants' shapes). Returns a line per convolution."""
    lines = []
    for g in groups:
        for n in g.nodes:
            a = n.attrs
            if n.op != "Conv" or a.get("winograd") or a.get("pointwise"):
                continue
            data, w = shapes[n.inputs[0]], shapes[n.inputs[1]]
            chunk = x86.pointwise_chunk(data[1], data[4], w[5])
            if (
                tuple(a.get("kernel_shape", ())) != (1, 1)
                or any(v != 1 for v in (a.get("strides") or [1, 1]))
                or any(a.get("pads") or [0])
                or a.get("group", 1) != 1
                or data[0] != 1
                or not x86.pointwise_pays(data[1], chunk, data[2] * data[3], w[5])
                or records_keep_direct(records, conv_task(g, shapes))
            ):
                continue
            a["pointwise"] = chunk
            lines.append(f"  %{n.output}{_shape(shapes[n.output])}: chunks of {chunk} blocks")
    return lines


@dataclass
class CPULayout:
    """The CPU-layout passes' result: the constants and tensor shapes after them, and how many
    dense layers, Winograd and pointwise convolutions they chose."""

    constants: dict[str, np.ndarray]
    shapes: dict[str, tuple[int, ...]]
    dense: int
    winograd: int
    pointwise: int


def run_cpu_passes(
    groups: list[Group],
    shapes: dict,
    constants: dict[str, np.ndarray],
    records: ApplyHistoryBest | None = None,
    print_passes: bool = False,
    out: Callable[[str], None] = print,
) -> CPULayout:
    """Dense packing, Winograd, then pointwise (whose records, the dispatch context, may keep
    a 1x1 conv direct) over the lowered groups, in the current target's scope; the groups'
    nodes change in place. With `print_passes`, `out` gets each pass's choices."""
    constants, dense = pack_dense_weights(groups, shapes, constants)
    constants, winograd = winograd_convs(groups, shapes, constants)
    shapes = {**shapes, **{k: v.shape for k, v in constants.items()}}
    pointwise = pointwise_convs(groups, shapes, records)
    if print_passes:
        for name, lines in (
            ("pack_dense_weights", dense),
            ("winograd_convs (F(2x2, 3x3))", winograd),
            ("pointwise_convs (1x1 by input-channel chunks)", pointwise),
        ):
            out("\n".join([f"== {name} ==", *lines]))
    return CPULayout(constants, shapes, len(dense), len(winograd), len(pointwise))


__all__ = [
    "CPULayout",
    "WINOGRAD_TILE",
    "pack_dense_weights",
    "pointwise_convs",
    "run_cpu_passes",
    "winograd_convs",
    "winograd_min_output",
]
