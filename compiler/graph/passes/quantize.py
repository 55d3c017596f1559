"""Quantization for the accelerator as graph passes over a partitioned graph.

`calibrate` runs the fp32 graph on the reference executor once per calibration input (so a
Reshape's shape holds whatever batch the model says) with an observer keeping every value.
`quantize` then rewrites the graph: each accelerator group becomes one `VTAConv` node (int8
weights, int32 bias with the requantizing shift's rounding and the zero points folded in, the
shift, ReLU, residual or shortcut, the Clip bound the CPU applies after it), a `Quantize` node
is inserted where an accelerator group reads an fp32 tensor and a `Dequantize` node where the
CPU or a graph output reads an int8 one; the CPU's groups stay fp32. Tensor `t`'s int8 form is
named `t__q`.

Exponents are powers of two chosen per tensor from its calibrated values (`quant.exponent`:
least mean-square error by default, a dense layer's output its maximum); a never-negative
tensor (a ReLU's output, a max pool or flatten of one) whose accelerator readers fold a zero
point exactly (no zero padding) is stored with zero point -128, one bit finer. With bias
correction each conv's bias absorbs the mean error per channel of its quantized
pre-activation on the calibration inputs, computed through the quantized groups before it. A
group whose quantization fails (a residual finer than its accumulator, a shift beyond 31)
stays on the CPU in fp32, saying why.

The quantized graph runs on the reference executor (`reference.run`): the bit-exact oracle
every device's run is checked against.
"""

from __future__ import annotations

import numpy as np

from ...errors import LoweringError
from .. import quant as Q
from ..ir import Graph, Group, Node, Pattern, Value
from ..reference import run, run_node
from .fuse import group_inputs
from .partition import (
    CPU,
    DENSE,
    PRODUCT,
    SCORES,
    VTA,
    AccelPattern,
    is_depthwise,
    is_product,
    pattern_of_group,
)

QUANTIZED = "__q"


def calibrate(graph: Graph, inputs: list[dict[str, np.ndarray]]) -> dict[str, list[np.ndarray]]:
    """Every value of the fp32 graph on each calibration input (by name, one array per input)."""
    seen: dict[str, list[np.ndarray]] = {}
    for feeds in inputs:
        run(graph, feeds, observe=lambda name, v: seen.setdefault(name, []).append(v))
    return seen


def _flat(values: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([np.ravel(v) for v in values])


def _nonnegative(graph: Graph, t: str, producers: dict, observed: dict) -> bool:
    """Whether fp32 tensor `t` is never negative by construction (a ReLU's or Softmax's output,
    a max pool or flatten of one; a graph input whose calibration values all are)."""
    while True:  # back through max pools, flattens and reshapes (a loop: chains may be long)
        if t in graph.inputs:
            return bool(_flat(observed[t]).min(initial=0.0) >= 0)
        node = producers.get(t)
        if node is None:
            return False
        low = node.attrs.get("min") if node.op == "Clip" else None
        if node.op in ("Relu", "Softmax") or (low is not None and low >= 0):
            return True
        if node.op not in ("MaxPool", "Flatten", "Reshape"):
            return False
        t = node.inputs[0]


def zero_points(
    graph: Graph,
    patterns: list[AccelPattern],
    observed: dict,
    pre_shift: bool = False,
    products: list[Node] = (),
) -> dict[str, int]:
    """The int8 tensors stored with zero point -128: never negative, and read by the
    accelerator only where the zero point folds into an int32 bias exactly (a conv input
    without zero padding or pre-shift, a residual, a shortcut input, an attention product's
    input); the CPU reads int8 tensors through a Dequantize, which is exact."""
    exact: dict[str, bool] = {p.inputs[0]: True for p in products}
    for p in patterns:
        x = p.conv.inputs[0]
        pre = pre_shift and p.residual is not None
        exact[x] = exact.get(x, True) and not any(p.conv.attrs["pads"]) and not pre
        if p.residual:
            exact.setdefault(p.residual, True)
        if p.shortcut:
            sc = p.shortcut.inputs[0]
            exact[sc] = exact.get(sc, True) and not pre
    outputs = {p.output: p for p in patterns}
    producers = graph.producers()
    zeros = {}
    for t in {*exact, *outputs}:
        if t in outputs:
            nonneg = outputs[t].relu
        else:
            nonneg = _nonnegative(graph, t, producers, observed)
        if nonneg and exact.get(t, True):
            zeros[t] = -128
    return zeros


class _Quantizer:
    """The quantized graph under construction, with every value of it on each calibration
    input (`env`: the quantized groups before the current one, run by the reference kernels)."""

    def __init__(self, graph: Graph, observed: dict, method: str, zeros: dict):
        self.src, self.observed, self.method, self.zeros = graph, observed, method, zeros
        self.q = Graph([], list(graph.inputs), list(graph.outputs), dict(graph.values),
                       dict(graph.constants), [], graph.name)  # fmt: skip
        n = len(observed[graph.inputs[0]]) if graph.inputs else 1
        self.env = [{t: observed[t][i] for t in graph.inputs} for i in range(n)]
        self.fp32 = set(graph.inputs) | set(graph.constants)
        self.int8: dict[str, tuple[int, int]] = {}  # tensor -> (exponent, zero) of its t__q
        self._chosen: dict[str, tuple[int, int]] = {}  # exponents chosen, Quantize or not

    def add(self, group: Group, outputs: list[np.ndarray] | None = None) -> None:
        """Append `group` and run its nodes on every calibration input (or take its one
        node's `outputs`, one per input, computed already)."""
        self.q.groups.append(group)
        if outputs is not None:
            (name,) = group.nodes[0].outputs
            for e, y in zip(self.env, outputs, strict=True):
                e[name] = y
            return
        consts = self.q.constants
        for node in group.nodes:
            for e in self.env:
                args = [(e[t] if t in e else consts[t]) if t else None for t in node.inputs]
                outs = run_node(node, args)
                for name, v in zip(node.outputs, outs, strict=False):
                    dtype = self.q.value(name).dtype
                    e[name] = v.astype(dtype) if dtype and v.dtype != dtype else v
            if group.target == CPU:
                self.fp32.update(o for o in node.outputs if o)

    def exponent(self, t: str, method: str | None = None) -> tuple[int, int]:
        """(exponent, zero point) of tensor `t`'s int8 form (chosen now by `method`, by
        default the graph's, if it has none yet)."""
        if t in self.int8:
            return self.int8[t]
        if t not in self._chosen:  # asked by a group before its Quantize exists
            z = self.zeros.get(t, 0)
            self._chosen[t] = Q.exponent(_flat(self.observed[t]), method or self.method, z), z
        return self._chosen[t]

    def need_int8(self, t: str, method: str | None = None) -> None:
        """A Quantize of fp32 tensor `t` unless its int8 form exists (`exponent`)."""
        if t in self.int8:
            return
        e, z = self.int8[t] = self.exponent(t, method)
        name = t + QUANTIZED
        self.q.values[name] = Value(name, self.src.value(t).shape, "int8")
        node = Node("Quantize", [t], [name], {"exponent": e, "zero": z}, f"quantize_{t}")
        self.add(Group(node.name, Pattern.ELEMWISE, [node], CPU, "CPU -> accelerator boundary"))

    def need_fp32(self, t: str) -> None:
        """A Dequantize of int8 tensor `t` unless its fp32 form exists."""
        if not t or t in self.fp32:
            return
        e, z = self.int8[t]
        attrs = {"exponent": e, "zero": z}
        node = Node("Dequantize", [t + QUANTIZED], [t], attrs, f"dequantize_{t}")
        self.add(Group(node.name, Pattern.ELEMWISE, [node], CPU, "accelerator -> CPU boundary"))

    def int8_batch(self, t: str) -> np.ndarray:
        """Int8 tensor `t` on every calibration input, along the batch axis."""
        return np.concatenate([e[t + QUANTIZED] for e in self.env])


def _conv_parts(graph: Graph, node: Node) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(fp32 weight, fp32 bias, stride, pad) of a Conv node."""
    w = graph.constants[node.inputs[1]].astype(np.float32)
    b = node.inputs[2] if len(node.inputs) > 2 else ""
    bias = graph.constants[b].astype(np.float32) if b else np.zeros(w.shape[0], np.float32)
    return w, bias, node.attrs["strides"][0], node.attrs["pads"][0]


def _quantize_group(
    s: _Quantizer, g: Group, p: AccelPattern, correct_bias: bool, pre_shift: bool
) -> tuple[Node, list[np.ndarray]]:
    """The VTAConv node of accelerator group `g` (its int8 inputs made first) and its output on
    each calibration input (from the accumulator bias correction computed anyway)."""
    src = s.src
    x, res = p.conv.inputs[0], p.residual
    sc_x = p.shortcut.inputs[0] if p.shortcut else None
    e_x, z_x = s.exponent(x)
    e_res, z_res = s.exponent(res) if res else (None, 0)
    z_out = s.zeros.get(p.output, 0)
    # a dense layer's outliers feed the residual stream and its LayerNorm: clipped, they cost
    # more than the rounding of a coarser exponent (encoder4: 3.3% of max|fp32| against 5.1%)
    method = "minmax" if p.conv.attrs.get(DENSE) else s.method
    e_out = Q.exponent(_flat(s.observed[p.output]), method, z_out)
    w, bias, stride, pad = _conv_parts(src, p.conv)
    shortcut, z_sc = None, 0
    if p.shortcut:
        e_sc, z_sc = s.exponent(sc_x)
        sw, sb, sstride, _ = _conv_parts(src, p.shortcut)
        shortcut = (sw, sb, e_sc, sstride)

    def quantized(b: np.ndarray) -> Q.QConv:
        return Q.quantize_conv(w, b, e_x, e_out, p.relu, stride, pad, e_residual=e_res,
                               shortcut=shortcut, pre_shift=pre_shift,
                               zeros=(z_x, z_res, z_sc, z_out),
                               depthwise=is_depthwise(p.conv))  # fmt: skip

    qc = quantized(bias)  # may raise LoweringError before anything is added
    for t in filter(None, (x, res, sc_x)):
        s.need_int8(t)
    acc = Q.accumulate(qc, s.int8_batch(x), res and s.int8_batch(res),
                       sc_x and s.int8_batch(sc_x))  # fmt: skip
    if correct_bias:
        offset = (1 << qc.shift >> 1) + (z_out << qc.shift)  # rounding, output zero point
        err = (acc - offset) * 2.0 ** (qc.e_out - qc.shift) - np.concatenate(s.observed[p.preact])
        corrected = quantized(bias - err.mean(axis=(0, 2, 3)))
        acc += (corrected.bias.astype(np.int64) - qc.bias)[None, :, None, None]  # only it moved
        qc = corrected
    hi = 127
    if p.clip_max is not None:
        hi = int(np.clip(np.floor(p.clip_max * 2.0**-qc.e_out) + z_out, z_out, 127))
    y = np.minimum(Q.requantize(acc, qc), np.int8(hi))  # the node's reference kernel, on acc
    q = s.q
    consts = [q.add_constant(f"{g.name}__w", qc.weight), q.add_constant(f"{g.name}__b", qc.bias)]
    sc_w = q.add_constant(f"{g.name}__scw", qc.sc_weight) if p.shortcut else ""
    inputs = [x + QUANTIZED, *consts, res + QUANTIZED if res else "",
              sc_x + QUANTIZED if sc_x else "", sc_w]  # fmt: skip
    out = p.output + QUANTIZED
    q.values[out] = Value(out, src.value(p.output).shape, "int8")
    s.int8[p.output] = (qc.e_out, z_out)
    attrs = {**Q.qconv_attrs(qc), "clip_hi": hi}
    per_input = np.cumsum([e[x + QUANTIZED].shape[0] for e in s.env])[:-1]
    return Node("VTAConv", inputs, [out], attrs, g.name), np.split(y, per_input)


def _quantize_product(s: _Quantizer, g: Group) -> Node:
    """The VTAMatMul node of an attention product's group (its int8 input and run-time weight
    made first). Q, K and V, layouts of dense layers' outputs (whose exponents are their
    maxima), take their maxima's exponents too, so their Quantize after that Dequantize is
    exact; so do the scores, whose largest values the Softmax keeps; the probabilities (never
    negative: zero point -128) and the context take the graph's method."""
    conv = g.nodes[0]
    x, w = conv.inputs[:2]
    (y,) = conv.outputs
    scores = conv.attrs[PRODUCT] == SCORES  # QK^T, else the context
    methods = ((x, "minmax" if scores else s.method), (w, "minmax"))
    (e_x, z_x), (e_w, _) = (s.exponent(t, m) for t, m in methods)
    e_y = Q.exponent(_flat(s.observed[y]), "minmax" if scores else s.method)
    attrs = Q.product_attrs(conv.attrs["group"], e_x, e_w, e_y, z_x)  # may raise first
    for t, m in methods:
        s.need_int8(t, m)
    out = y + QUANTIZED
    s.q.values[out] = Value(out, s.src.value(y).shape, "int8")
    s.int8[y] = (attrs["e_out"], 0)
    return Node("VTAMatMul", [x + QUANTIZED, w + QUANTIZED], [out], attrs, g.name)


LAYOUT = ("Reshape", "Transpose")


def _round_trip(graph: Graph, quantize: Node, producers: dict, users: dict) -> list[Node] | None:
    """The Dequantize and the layout nodes in order from it to `quantize`, at the same exponent
    and zero point, each layout node's output read by the next alone (None: no such chain)."""
    chain, t = [], quantize.inputs[0]
    while (node := producers.get(t)) is not None and node.op in LAYOUT:
        if len(users.get(t, [])) != 1 or t in graph.outputs:
            return None
        chain.append(node)
        t = node.inputs[0]
    if node is None or node.op != "Dequantize" or not chain or node.attrs != quantize.attrs:
        return None
    return [node, *chain[::-1]]


def int8_layouts(graph: Graph) -> Graph:
    """(In place, on a quantized graph's groups.) Each Dequantize -> Reshape / Transpose ... ->
    Quantize round trip at one exponent and zero point, which changes no value (an int8 value
    times a power of two is exact in fp32, and so is its quantization back), as the layout
    nodes on the int8 tensor: the Quantize goes, and the Dequantize where nothing else reads
    its output; the CPU moves a quarter of the bytes and skips two numpy steps (an attention's
    Q, K and V after their dense layers, its context before the output projection)."""
    graph.nodes = [n for g in graph.groups for n in g.nodes]
    producers, users = graph.producers(), graph.consumers()
    dropped: set[int] = set()
    int8: dict[int, Node] = {}  # the layout nodes on int8 tensors, by the node they replace
    for node in [n for n in graph.nodes if n.op == "Quantize"]:
        found = _round_trip(graph, node, producers, users)
        if found is None:
            continue
        t = found[0].inputs[0]
        for k, n in enumerate(found[1:], 1):
            out = node.outputs[0] if k == len(found) - 1 else n.outputs[0] + QUANTIZED
            graph.values[out] = Value(out, graph.value(n.outputs[0]).shape, "int8")
            int8[id(n)] = Node(n.op, [t], [out], dict(n.attrs), n.name)
            t = out
        dropped.add(id(node))
    for g in graph.groups:  # new nodes: the fp32 graph's are shared with the partitioned one
        g.nodes = [int8.get(id(n), n) for n in g.nodes if id(n) not in dropped]
    read = {t for g in graph.groups for n in g.nodes for t in n.inputs}
    for g in graph.groups:
        g.nodes = [n for n in g.nodes if not (
            n.op == "Dequantize" and n.outputs[0] not in read | set(graph.outputs))]  # fmt: skip
    graph.groups = [g for g in graph.groups if g.nodes]
    graph.nodes = [n for g in graph.groups for n in g.nodes]
    return graph


def quantize(
    graph: Graph,
    observed: dict[str, list[np.ndarray]],
    method: str = "mse",
    correct_bias: bool = True,
    unsigned: bool = True,
    pre_shift: bool = False,
) -> Graph:
    """The quantized graph of a partitioned one, from the values `calibrate` observed:
    `method` picks exponents (`quant.CALIBRATIONS`), `correct_bias` corrects biases,
    `unsigned` allows zero point -128, `pre_shift` (see `quant.quantize_conv`) keeps the
    weights' precision at the cost of an ALU op per output row where a residual is coarse."""
    vta = [g for g in graph.groups if g.target == VTA]
    products = [g.nodes[0] for g in vta if is_product(g.nodes[0])]
    patterns = {id(g): pattern_of_group(graph, g) for g in vta if not is_product(g.nodes[0])}
    zeros = (zero_points(graph, list(patterns.values()), observed, pre_shift, products)
             if unsigned else {})  # fmt: skip
    s = _Quantizer(graph, observed, method, zeros)
    for g in graph.groups:
        if g.target == VTA and is_product(g.nodes[0]):
            try:
                node = _quantize_product(s, g)
            except LoweringError as e:
                g = Group(g.name, g.pattern, g.nodes, CPU, f"fp32: {e}")
            else:
                s.add(Group(g.name, Pattern.OUT_FUSABLE, [node], VTA, g.reason))
                continue
        elif g.target == VTA:
            try:
                node, outputs = _quantize_group(s, g, patterns[id(g)], correct_bias, pre_shift)
            except LoweringError as e:
                g = Group(g.name, g.pattern, g.nodes, CPU, f"fp32: {e}")
            else:
                s.add(Group(g.name, Pattern.OUT_FUSABLE, [node], VTA, g.reason), outputs)
                continue
        for t in group_inputs(g):
            s.need_fp32(t)
        s.add(g)
    for t in graph.outputs:
        s.need_fp32(t)
    q = int8_layouts(s.q)
    read = {t for n in q.nodes for t in n.inputs}
    q.constants = {k: v for k, v in q.constants.items() if k in read}
    live = read | set(q.inputs) | set(q.outputs) | {o for n in q.nodes for o in n.outputs}
    q.values = {k: v for k, v in q.values.items() if k in live}
    return q


__all__ = ["QUANTIZED", "calibrate", "int8_layouts", "quantize", "zero_points"]
