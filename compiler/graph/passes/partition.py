"""Partitioning for the accelerator, in the manner of TVM's partitioning for external targets:
after fusion, every group the configuration can run is tagged `vta` (a convolution with its
bias, requantization, ReLU/Clip, residual add, and the 1x1 shortcut convolution accumulated into
it), every other group stays on the CPU; each group carries the reason for its place.

A group the accelerator takes is one `AccelPattern`: the main Conv, an optional residual Add of
another tensor (before the activation), an optional 1x1 shortcut Conv whose products accumulate
into the same outputs (ResNet's downsampling path, merged from its own group when the residual
is its output and nothing else reads it), and ReLU / Clip(min 0) activations; nodes after that
prefix are split off into a CPU group of their own. A dense layer of a block of rows or more
becomes such a conv, 1x1 over its rows (`dense_as_conv`), between two CPU layout groups; an
`Attention` node's two products become grouped convs of a run-time weight, a group per head
(`attention_products.py`), with its Softmax on the CPU between them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from vta.config import VTAConfig
from vta.errors import ConfigError

from ..ir import Graph, Group, Node, Pattern, Value, pattern_of

MIN_OFFLOAD_CHANNELS = 4  # fewer input channels: the block of 16 would be mostly padding
VTA, CPU = "vta", "cpu"
DENSE = "dense"  # the attribute that marks a Conv node made of a dense layer
# the attribute that marks a grouped Conv whose weight is a run-time activation, a group per head
# (an attention's products, `attention_products.py`): SCORES (QK^T) or CONTEXT (by V)
PRODUCT, SCORES, CONTEXT = "product", "scores", "context"
# A dense layer's T rows are a grid of T/w x w positions, w the largest divisor of T up to this:
# the conv's micro-op loops run over w (encoder4 on sim: 3.03 M cycles as T x 1, 1.97 M as 8 x 16)
ROW_WIDTH = 16

CPU_REASONS = {
    "Gemm": "dense: memory-bound on the accelerator (each weight is used once)",
    "MatMul": "matmul: memory-bound on the accelerator (each weight is used once)",
    "MaxPool": "max pool: the ALU's MAX takes accumulator operands",
    "AveragePool": "average pool",
    "GlobalAveragePool": "global average pool",
}


@dataclass
class AccelPattern:
    """The parts of an accelerator group: `conv` (its input is `conv.inputs[0]`), `shortcut`
    (a 1x1 conv accumulated into its outputs), `residual` (a tensor added before the
    activation), `relu`, `clip_max` (a Clip's upper bound after the ReLU), `preact` (the value
    before the activation) and `output`."""

    conv: Node
    shortcut: Node | None
    residual: str | None
    relu: bool
    clip_max: float | None
    preact: str
    output: str


def _same(values) -> bool:
    return len(set(values)) == 1


def is_product(node: Node) -> bool:
    """Whether a Conv node is an attention product (`PRODUCT`: its weight is an activation)."""
    return bool(node.attrs.get(PRODUCT))


def is_depthwise(node: Node) -> bool:
    """Whether a Conv node `conv_fits` takes is depthwise (one input and output channel per
    group)."""
    return node.attrs["group"] != 1 and not is_product(node)


def conv_fits(graph: Graph, node: Node, cfg: VTAConfig | None = None) -> str | None:
    """Why the accelerator (of configuration `cfg`, if given) cannot run this Conv (None: it
    can)."""
    a, consts = node.attrs, graph.constants
    shape = graph.value(node.inputs[0]).shape or ()
    w = consts.get(node.inputs[1])
    bias = node.inputs[2] if len(node.inputs) > 2 else ""
    if len(shape) != 4 or w is None or (bias and bias not in consts):
        return "conv: 2-d with constant weights and bias only"
    if a["group"] != 1 and not (a["group"] == w.shape[0] == shape[1] and w.shape[1] == 1):
        return "grouped conv (other than depthwise with one output per channel)"
    if a["group"] != 1 and cfg is not None and cfg.block_in != cfg.block_out:
        return "depthwise conv: its diagonal weight blocks need BLOCK_IN == BLOCK_OUT"
    if list(a["dilations"]) != [1, 1] or w.shape[2] != w.shape[3]:
        return "conv: dilated or non-square kernel"
    if not _same(a["strides"]) or not _same(a["pads"]):
        return "conv: unequal strides or pads"
    if a["group"] == 1 and w.shape[1] < MIN_OFFLOAD_CHANNELS:
        return f"conv with {w.shape[1]} input channels (block padding)"
    return None


def _activation(node: Node) -> tuple[bool, float | None] | None:
    """(relu, clip max) of an activation the epilogue runs, else None."""
    if node.op == "Relu":
        return True, None
    if node.op == "Clip" and node.attrs.get("min") == 0:
        hi = node.attrs.get("max")
        return True, (float(hi) if hi is not None and np.isfinite(hi) else None)
    return None


def match(
    graph: Graph, group: Group, cfg: VTAConfig | None = None
) -> tuple[AccelPattern, int] | None:
    """The accelerator pattern at the start of a Conv group, with how many of its nodes it
    covers (None: the group does not start with a Conv the accelerator runs); a depthwise
    conv takes no residual."""
    nodes = group.nodes
    if not nodes or nodes[0].op != "Conv" or conv_fits(graph, nodes[0], cfg) is not None:
        return None
    conv, k = nodes[0], 1
    out = conv.outputs[0]
    residual = None
    shape = graph.value(out).shape
    if k < len(nodes) and nodes[k].op == "Add" and not is_depthwise(conv):
        add = nodes[k]
        other = [t for t in add.inputs if t != out]
        if (
            len(add.inputs) == 2
            and len(other) == 1
            and other[0] not in graph.constants
            and graph.value(other[0]).shape == shape
            and graph.value(add.outputs[0]).shape == shape
        ):
            residual, out, k = other[0], add.outputs[0], k + 1
    preact, relu, clip_max = out, False, None
    while k < len(nodes) and (act := _activation(nodes[k])) is not None:
        relu = True
        if act[1] is not None:
            clip_max = act[1] if clip_max is None else min(clip_max, act[1])
        out, k = nodes[k].outputs[0], k + 1
    return AccelPattern(conv, None, residual, relu, clip_max, preact, out), k


def pattern_of_group(graph: Graph, group: Group) -> AccelPattern:
    """The AccelPattern of a partitioned `vta` group (its shortcut conv first, if merged)."""
    nodes = group.nodes
    shortcut = None
    if len(nodes) > 1 and nodes[0].op == "Conv" and nodes[1].op == "Conv":
        shortcut, nodes = nodes[0], nodes[1:]
    found = match(graph, Group(group.name, group.pattern, nodes))
    assert found is not None and found[1] == len(nodes), f"group {group.name} is no vta group"
    p = found[0]
    if shortcut is not None:  # its products replace the residual they were
        p.shortcut, p.residual = shortcut, None
    return p


def _is_shortcut(graph: Graph, node: Node, users: dict) -> bool:
    a, w = node.attrs, graph.constants[node.inputs[1]]
    return (
        w.shape[2] == 1
        and a["group"] == 1
        and not any(a["pads"])
        and len(users.get(node.outputs[0], [])) == 1
        and node.outputs[0] not in graph.outputs
    )


def _describe(p: AccelPattern) -> str:
    parts = ["conv: fused bias, requant"]
    if is_depthwise(p.conv):
        parts = ["depthwise conv as block-diagonal products: fused bias, requant"]
    parts += ["ReLU"] if p.relu else []
    parts += ["Clip max on the CPU"] if p.clip_max is not None else []
    parts += ["residual"] if p.residual else []
    parts += ["1x1 shortcut conv"] if p.shortcut else []
    return ", ".join(parts)


def _cpu_reason(graph: Graph, group: Group, cfg: VTAConfig) -> str:
    anchor = group.anchor
    if anchor.op == "Conv":
        return conv_fits(graph, anchor, cfg) or "conv after a node the accelerator runs"
    if anchor.op == "MatMul" and anchor is group.nodes[0]:
        return dense_fits(graph, anchor, cfg) or CPU_REASONS["MatMul"]
    if anchor.op == "Attention":
        from .attention_products import attention_fits

        return attention_fits(graph, anchor, cfg) or "attention: fused with other nodes"
    return CPU_REASONS.get(anchor.op, f"{anchor.op}: the accelerator runs convolutions only")


def _workload(graph: Graph, conv: Node, cfg: VTAConfig):
    """The packed workload of a Conv node as `accel.layer_structure` makes it (an attention
    product's heads as its batch)."""
    from ...topi.vta.conv2d import Conv2DWorkload

    n, c, h, w = graph.value(conv.inputs[0]).shape
    o, _, k, _ = graph.value(conv.inputs[1]).shape
    heads = conv.attrs["group"] if is_product(conv) else 1
    ci, co = -(-c // heads // cfg.block_in), -(-o // heads // cfg.block_out)
    s, pad = conv.attrs["strides"][0], conv.attrs["pads"][0]
    return Conv2DWorkload(n * heads // cfg.batch, ci, h, w, co, k, k, s, pad, is_depthwise(conv))


def board_times(
    graph: Graph, conv: Node, relu: bool, cfg: VTAConfig, boundary: int
) -> tuple[float, float, float] | None:
    """(accelerator, board CPU, boundary) milliseconds of a Conv node: its cycle estimate (the
    best knob setting's, infinite where none fits the buffers) at the configuration's clock;
    the board model's time for it in fp32 on the board's CPU (`hw.parts.CPU.seconds`, every
    core, at `EFFICIENCY`); `boundary` bytes of numpy work on one core (the Quantize,
    Dequantize or layout changes offloading adds or saves). None: the configuration has no
    board."""
    from hw.parts import EFFICIENCY, part_for

    from ...topi.vta.fused import Epilogue, estimate_space

    try:
        cpu = part_for(cfg.fpga_part).cpu
    except ConfigError:
        return None
    wl = _workload(graph, conv, cfg)
    cycles = estimate_space(wl, Epilogue(True, 0, relu, batch_weights=is_product(conv)), cfg)
    accel = float(cycles.min(initial=np.inf)) / cfg.clock_mhz * 1e-3
    x, y, w = (graph.value(t).shape for t in (conv.inputs[0], conv.outputs[0], conv.inputs[1]))
    ins, outs = int(np.prod(x)), int(np.prod(y))
    on_cpu = cpu.seconds(graph.flops(conv), 4 * (ins + outs + int(np.prod(w))), cpu.cores,
                         EFFICIENCY)  # fmt: skip
    return accel, on_cpu * 1e3, cpu.seconds(0, boundary, 1, EFFICIENCY) * 1e3


def compare(accel: float, what: str, on_cpu: float, cpu_what: str) -> tuple[bool, str]:
    """Whether `accel` ms (`what`'s) beats `on_cpu` ms (`cpu_what`'s), and why: the figures, or
    why not."""
    if accel == np.inf:
        return False, "no knob setting fits the configuration's buffers"
    figures = f"{what} {accel:.3f} ms against {cpu_what} {on_cpu:.3f} ms"
    if accel < on_cpu:
        return True, figures
    return False, f"on the board no faster on the accelerator ({figures})"


def depthwise_pays(
    graph: Graph, p: AccelPattern, cfg: VTAConfig, saves_boundaries: bool
) -> tuple[bool, str]:
    """Whether a depthwise conv runs faster on the accelerator than on the board's CPU, and
    why (`board_times`): where its input comes from the accelerator and its output goes back
    (`saves_boundaries`), the CPU's side adds the Dequantize and Quantize it would need there
    (int8 read and fp32 written, or the other way). A configuration of no board offloads it."""
    c = graph.value(p.conv.inputs[0]).shape
    o = graph.value(p.conv.outputs[0]).shape
    boundary = 5 * (int(np.prod(c)) + int(np.prod(o))) if saves_boundaries else 0
    times = board_times(graph, p.conv, p.relu, cfg, boundary)
    if times is None:
        return True, "no board CPU to compare"
    accel, on_cpu, extra = times
    on_cpu += extra
    what = "CPU conv" + (", Dequantize and Quantize" if saves_boundaries else "")
    return compare(accel, "accelerator", on_cpu, what)


def dense_fits(graph: Graph, node: Node, cfg: VTAConfig) -> str | None:
    """Why the accelerator cannot run this MatMul as a 1x1 conv over its rows (None: it can):
    2-d rows [T, K] by a constant weight [K, N], at least a block of rows (one row uses each
    weight once: memory-bound), batch 1."""
    x = graph.value(node.inputs[0]).shape or ()
    w = graph.constants.get(node.inputs[1])
    if w is None or w.ndim != 2 or len(x) != 2:
        return "matmul: a constant 2-d weight on 2-d rows only"
    if x[0] < cfg.block_in:
        return (f"dense on {x[0]} rows, fewer than a block of {cfg.block_in}: memory-bound on "
                f"the accelerator (each weight loaded for {x[0]} rows)")  # fmt: skip
    if cfg.batch != 1:
        return f"dense: rows run at batch 1, the configuration's batch is {cfg.batch}"
    if x[1] < MIN_OFFLOAD_CHANNELS:
        return f"dense with {x[1]} inputs per row (block padding)"
    return None


def _dense_bias(graph: Graph, group: Group) -> Node | None:
    """The bias Add of a constant vector right after the group's MatMul, if any."""
    mm, nodes = group.nodes[0], group.nodes
    if len(nodes) < 2 or nodes[1].op != "Add" or len(nodes[1].inputs) != 2:
        return None
    other = [t for t in nodes[1].inputs if t != mm.outputs[0]]
    b = graph.constants.get(other[0]) if len(other) == 1 else None
    n = graph.constants[mm.inputs[1]].shape[1]
    return nodes[1] if b is not None and b.size == n and b.shape[-1] == n else None


def _value(graph: Graph, base: str, shape: tuple[int, ...]) -> str:
    name = graph.fresh(base)
    graph.values[name] = Value(name, shape, "float32")
    return name


def dense_as_conv(graph: Graph, group: Group, cols: dict[str, str]) -> list[Group]:
    """A dense group (`dense_fits`) as three groups, adding their values and constants to
    `graph`: the CPU's rows [T, K] to NCHW (1, K, T/w, w) (`ROW_WIDTH`; one per input tensor,
    kept in `cols`),
    the accelerator's 1x1 conv with weight [N, K, 1, 1] and the bias Add's vector as its bias,
    the CPU's NCHW back to rows, then whatever followed the bias in the group."""
    mm = group.nodes[0]
    bias = _dense_bias(graph, group)
    x = mm.inputs[0]
    (t, k), weight = graph.value(x).shape, graph.constants[mm.inputs[1]]
    n, name = weight.shape[1], group.name
    w = max(d for d in range(1, min(t, ROW_WIDTH) + 1) if t % d == 0)
    h = t // w
    groups = []
    if x not in cols:
        xt = _value(graph, f"{x}_cols", (k, t))
        cols[x] = _value(graph, f"{x}_nchw", (1, k, h, w))
        nodes = [Node("Transpose", [x], [xt], {"perm": [1, 0]}, xt),
                 Node("Reshape", [xt], [cols[x]], {"allowzero": 0, "shape": [1, k, h, w]},
                      cols[x])]  # fmt: skip
        groups.append(Group(f"{name}_in", Pattern.INJECTIVE, nodes, CPU,
                            "dense rows to NCHW for the accelerator"))  # fmt: skip
    weight = weight.T[:, :, None, None].copy()
    inputs = [cols[x], graph.add_constant(graph.fresh(f"{name}_w"), weight)]
    if bias is not None:
        b = next(graph.constants[i] for i in bias.inputs if i in graph.constants)
        inputs.append(graph.add_constant(graph.fresh(f"{name}_b"), b.reshape(n).copy()))
    y = _value(graph, f"{name}_nchw", (1, n, h, w))
    attrs = {"group": 1, "auto_pad": "NOTSET", "kernel_shape": [1, 1], "strides": [1, 1],
             "dilations": [1, 1], "pads": [0, 0, 0, 0], DENSE: True}  # fmt: skip
    conv = Node("Conv", inputs, [y], attrs, name)
    what = "dense as a 1x1 conv over its rows: " + ("fused bias, " if bias else "") + "requant"
    groups.append(Group(name, Pattern.OUT_FUSABLE, [conv], VTA, what))
    rest = group.nodes[2 if bias else 1 :]
    out = (bias or mm).outputs[0]
    yt = _value(graph, f"{name}_rows_t", (n, t))
    back = [Node("Reshape", [y], [yt], {"allowzero": 0, "shape": [n, t]}, yt),
            Node("Transpose", [yt], [out], {"perm": [1, 0]}, f"{name}_rows"), *rest]  # fmt: skip
    kind = max(pattern_of(node.op) for node in back)
    why = "NCHW back to dense rows" + "".join(f", {node.op}" for node in rest)
    groups.append(Group(f"{name}_out", kind, back, CPU, why))
    return groups


def dense_pays(graph: Graph, groups: list[Group], cfg: VTAConfig) -> tuple[bool, str]:
    """Whether a dense layer rewritten by `dense_as_conv` (its `groups`) runs faster on the
    accelerator than on the board's CPU (`board_times`), its accelerator side adding the
    layout changes, Quantize and Dequantize (fp32 and int8 read and written: 13 bytes per
    element of its input and output). A configuration of no board offloads it."""
    conv = next(g.nodes[0] for g in groups if g.target == VTA)
    x, y = (graph.value(t).shape for t in (conv.inputs[0], conv.outputs[0]))
    times = board_times(graph, conv, False, cfg, 13 * (int(np.prod(x)) + int(np.prod(y))))
    if times is None:
        return True, "no board CPU to compare"
    accel, on_cpu, extra = times
    accel += extra
    what = "accelerator with layout changes, Quantize and Dequantize"
    return compare(accel, what, on_cpu, "CPU dense")


def _copy(graph: Graph) -> Graph:
    """A graph whose values and constants can be added to, leaving `graph`'s as they were."""
    return replace(graph, values=dict(graph.values), constants=dict(graph.constants))


def partition(graph: Graph, cfg: VTAConfig | None = None) -> Graph:
    """The graph with each fused group tagged `vta` or `cpu` with its reason (the given graph
    is left as it was: a co-design search partitions one graph for many configurations); a
    Conv group's nodes past its accelerator pattern become a CPU group; a 1x1 shortcut conv
    joins the group that adds its output."""
    cfg = cfg or VTAConfig.load("pynq")
    if graph.groups is None:
        raise ValueError("partition runs after fusion")
    graph = _copy(graph)  # dense layers add values and constants
    groups: list[Group] = []
    users = graph.consumers()
    where: dict[str, str] = {}  # each group's output: the target it was given
    cols: dict[str, str] = {}  # dense rows in NCHW for the accelerator, by rows tensor
    for g in map(replace, graph.groups):
        if len(g.nodes) == 1 and g.nodes[0].op == "Attention":
            from .attention_products import attention_as_convs, attention_fits, attention_pays

            why = attention_fits(graph, g.nodes[0], cfg)
            if why is None:
                trial = _copy(graph)
                parts = attention_as_convs(trial, g)
                pays, why = attention_pays(trial, parts, cfg)
                if pays:
                    graph = trial
                    for p in parts:
                        p.reason += f" ({why})" if p.target == VTA else ""
                    groups += parts
                    where.update((p.nodes[-1].outputs[0], p.target) for p in parts)
                    continue
                why = f"attention: {why}"
            g.target, g.reason = CPU, why
            groups.append(g)
            where[g.nodes[-1].outputs[0]] = CPU
            continue
        if g.nodes[0].op == "MatMul" and dense_fits(graph, g.nodes[0], cfg) is None:
            trial, trial_cols = _copy(graph), dict(cols)
            parts = dense_as_conv(trial, g, trial_cols)
            pays, why = dense_pays(trial, parts, cfg)
            if pays:
                graph, cols = trial, trial_cols
                parts[-2].reason += f" ({why})"
                groups += parts
                where.update((p.nodes[-1].outputs[0], p.target) for p in parts)
                continue
            g.target, g.reason = CPU, f"dense: {why}"
            groups.append(g)
            where[g.nodes[-1].outputs[0]] = CPU
            continue
        found = match(graph, g, cfg)
        batch = (graph.value(g.nodes[0].inputs[0]).shape or (0,))[0] if found else 0
        pays, why = True, ""
        if found and not batch % cfg.batch and is_depthwise(found[0].conv):
            p = found[0]
            readers = users.get(p.output, [])  # all accelerator convs: its output goes back
            back = all(n.op == "Conv" and conv_fits(graph, n, cfg) is None for n in readers)
            saves = where.get(p.conv.inputs[0]) == VTA and bool(readers) and back
            pays, why = depthwise_pays(graph, p, cfg, saves)
        if found is None or batch % cfg.batch or not pays:
            g.target = CPU
            g.reason = (f"batch {batch} is not a multiple of the configuration's {cfg.batch}"
                        if found and batch % cfg.batch
                        else f"depthwise conv: {why}"
                        if found else _cpu_reason(graph, g, cfg))  # fmt: skip
            groups.append(g)
            where[g.nodes[-1].outputs[0]] = CPU
            continue
        p, k = found
        reason = _describe(p) + (f" ({why})" if why else "")
        head = Group(g.name, g.pattern, g.nodes[:k], VTA, reason)
        where[head.nodes[-1].outputs[0]] = VTA
        groups.append(head)
        if k < len(g.nodes):
            rest = g.nodes[k:]
            kind = max(pattern_of(n.op) for n in rest)
            why = f"{rest[0].op} after an accelerator conv: not in its epilogue"
            groups.append(Group(rest[0].label, kind, rest, CPU, why))
            where[rest[-1].outputs[0]] = CPU
    by_output = {g.nodes[-1].outputs[0]: g for g in groups}
    merged: set[int] = set()
    for g in groups:
        if g.target != VTA or is_product(g.nodes[0]):
            continue
        p = pattern_of_group(graph, g)
        s = by_output.get(p.residual) if p.residual else None
        if (
            s is not None
            and s.target == VTA
            and len(s.nodes) == 1
            and _is_shortcut(graph, s.nodes[0], users)
        ):
            g.nodes = [s.nodes[0], *g.nodes]
            merged.add(id(s))
            g.reason = _describe(pattern_of_group(graph, g))
    kept = [g for g in groups if id(g) not in merged]
    return replace(graph, groups=kept, nodes=[n for g in kept for n in g.nodes])


__all__ = [
    "AccelPattern",
    "CONTEXT",
    "CPU",
    "DENSE",
    "PRODUCT",
    "SCORES",
    "VTA",
    "conv_fits",
    "is_depthwise",
    "is_product",
    "match",
    "partition",
    "pattern_of_group",
]
