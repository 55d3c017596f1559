"""ONNX models on the accelerator (`vta run MODEL.onnx --target vta`): import, int8 quantization
with power-of-two scales, partitioning and execution.

The importer reads the operators of convolutional networks (Conv with BatchNormalization folded,
Relu, Clip, Add, MaxPool, AveragePool, GlobalAveragePool, Flatten, Gemm) into a list of layers.
Convolutions (with groups 1) take their bias, requantization, ReLU and a following residual Add
in one fused Program (`accel.compile_qconv`); the rest runs on the CPU with llvm kernels
(`accel_cpu`), and every device gives outputs bit-identical to `run(compiled, x)` (the same CPU
kernels, the offloaded layers in numpy); `run(qnetwork, x)` is all numpy:

  conv with fewer than 4 input channels   CPU  (a network's first conv: the block of 16 input
                                                channels would be mostly padding)
  depthwise conv                          CPU  (one channel per product: 1/16 of the GEMM used)
  Clip's upper bound                      CPU  (an int8 minimum after the fused ReLU)
  Gemm (dense)                            CPU  (memory-bound: each weight is used once)
  pools, flatten                          CPU

Activations are packed into the accelerator's layout at each CPU -> accelerator boundary and
stay packed between offloaded layers. Calibration: each tensor's exponent from its values over
the calibration inputs (seeded random ones unless given: no data sets exist offline); ReLU outputs
that no reader zero-pads are stored with zero point -128 (`zero_points`), one bit finer.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np

from vta.config import VTAConfig

from ..errors import OperatorError
from . import quant as Q
from .accel import (
    AccelConv,
    compile_qconv,
    layer_structure,
    pack_act,
    report_row,
    unpack_act,
)
from .accel_cpu import CpuKernel, compile_graph, layer_graph
from .quant import QConv

# after the graph passes (batch norms folded, copies removed)
SUPPORTED = (
    "Conv", "Relu", "Clip", "Add", "MaxPool", "AveragePool", "GlobalAveragePool", "Flatten",
    "Gemm",
)  # fmt: skip
MIN_OFFLOAD_CHANNELS = 4


@dataclasses.dataclass
class Layer:
    """One step: `kind` conv | dwconv | maxpool | avgpoolk (windowed) | avgpool (global) |
    flatten | dense | op (any other operator, on the CPU in fp32); a conv or dense
    carries fp32 weights (O, I, KH, KW) with batch norm folded, its ReLU, Clip upper bound and
    the tensor added before the activation (`residual`) or the 1x1 conv whose products
    accumulate into the same outputs (`shortcut`: ResNet's downsampling path)."""

    name: str
    kind: str
    inputs: list[str]
    output: str
    weight: np.ndarray | None = None
    bias: np.ndarray | None = None
    stride: int = 1
    pad: int = 0
    kernel: int = 1
    relu: bool = False
    clip_max: float | None = None
    residual: str | None = None
    shortcut: Layer | None = None
    include_pad: bool = False  # a windowed average pool's count_include_pad
    # kind "op": any other operator, run in fp32 by the graph's reference kernel
    op: str = ""
    attrs: dict = dataclasses.field(default_factory=dict)
    op_inputs: list[str] = dataclasses.field(default_factory=list)  # all, constants included
    params: dict = dataclasses.field(default_factory=dict)  # its constant inputs by name
    out_shape: tuple = ()


@dataclasses.dataclass
class Network:
    layers: list[Layer]
    input: str
    input_shape: tuple[int, ...]
    output: str


def _same(values) -> bool:
    return len(set(values)) == 1


def _residual_target(ys: list[str], producer: dict) -> Layer | None:
    """The conv an Add of `ys` can join as its residual (before its activation), if any."""
    convs = [producer[y] for y in ys if y in producer]
    layer = next((ly for ly in convs if ly.kind == "conv"), None)
    ok = layer is not None and not layer.relu and not layer.residual and len(ys) == 2
    return layer if ok else None


def _fits(node, graph, producer: dict, src) -> bool:
    """Whether a node of SUPPORTED takes the accelerator path's layer form (a conv the
    accelerator or its CPU kernels run, an activation or residual joining one, a square pool,
    a dense layer); otherwise it runs as an fp32 CPU operator."""
    a, op, consts = node.attrs, node.op, graph.constants
    rank = len(graph.values[node.inputs[0]].shape or ())
    if op == "Conv":
        w = consts.get(node.inputs[1])
        bias = node.inputs[2] if len(node.inputs) > 2 else ""
        depthwise = w is not None and a["group"] == w.shape[0] and w.shape[1] == 1
        return (
            rank == 4 and w is not None and (not bias or bias in consts)
            and list(a["dilations"]) == [1, 1] and (a["group"] == 1 or depthwise)
            and w.shape[2] == w.shape[3] and _same(a["strides"]) and _same(a["pads"])
        )  # fmt: skip
    if op == "Add":
        return _residual_target([src(t) for t in node.inputs], producer) is not None
    if op in ("Relu", "Clip"):
        layer = producer.get(src(node.inputs[0]))
        joinable = layer is not None and layer.kind in ("conv", "dwconv", "dense")
        return joinable and not layer.relu and (op == "Relu" or a.get("min") == 0)
    if op in ("MaxPool", "AveragePool"):
        return (
            rank == 4 and _same(a["kernel_shape"]) and _same(a["strides"]) and _same(a["pads"])
            and not a.get("ceil_mode", 0) and list(a.get("dilations", [1, 1])) == [1, 1]
        )  # fmt: skip
    if op == "GlobalAveragePool":
        return rank == 4
    if op == "Flatten":
        return a["axis"] == 1
    # Gemm
    bias = node.inputs[2] if len(node.inputs) > 2 else ""
    return (
        not a["transA"] and bool(a["transB"]) and node.inputs[1] in consts
        and (not bias or bias in consts) and rank == 2
    )  # fmt: skip


def import_network(path: str | Path, shapes: dict | None = None) -> Network:
    """The model's layers, from the graph IR after shape inference, constant and batch-norm
    folding and simplification (`compiler.graph.passes`), with activations and residual adds
    attached to the conv they follow; an OperatorError listing every node that cannot be
    imported."""
    from .onnx_import import import_onnx
    from .passes import PASSES

    try:
        graph = import_onnx(path, shapes)
    except OperatorError as e:
        raise OperatorError(f"{path}: {e}") from None
    for pass_name, fn in PASSES:
        if pass_name != "fuse":
            graph = fn(graph)
    consts = graph.constants
    if len(graph.inputs) != 1 or len(graph.outputs) != 1:
        raise OperatorError(f"{path}: --target vta runs models with one input and one output")
    bad = [f"{n.label} ({n.op})" for n in graph.nodes if len([o for o in n.outputs if o]) != 1]
    if bad:
        raise OperatorError(
            f"{path}: {len(bad)} node(s) with several outputs, which --target vta does not run: "
            f"{', '.join(bad[:20])}"
        )
    alias: dict[str, str] = {}  # tensor -> the tensor it equals (an activation or add fused)
    producer: dict[str, Layer] = {}
    layers: list[Layer] = []

    def src(t: str) -> str:
        while t in alias:
            t = alias[t]
        return t

    def weight(node, k: int) -> np.ndarray | None:
        t = node.inputs[k] if len(node.inputs) > k else ""
        return consts[t].astype(np.float32) if t else None

    def generic(node) -> None:
        """The node as an fp32 CPU layer (run by the graph's reference kernel)."""
        names = [src(t) if t else "" for t in node.inputs]
        layer = Layer(
            node.label, "op", [t for t in names if t and t not in consts], node.outputs[0],
            op=node.op, attrs=dict(node.attrs), op_inputs=names,
            params={t: consts[t] for t in names if t in consts},
            out_shape=tuple(graph.values[node.outputs[0]].shape),
        )  # fmt: skip
        layers.append(layer)

    for node in graph.nodes:
        a, op, name, out = node.attrs, node.op, node.label, node.outputs[0]
        x = src(node.inputs[0]) if node.inputs and node.inputs[0] else ""
        if op not in SUPPORTED or not _fits(node, graph, producer, src):
            generic(node)
        elif op == "Conv":
            w, b = weight(node, 1), weight(node, 2)
            b = np.zeros(w.shape[0], np.float32) if b is None else b
            layer = Layer(
                name, "conv" if a["group"] == 1 else "dwconv", [x], out, w, b,
                a["strides"][0], a["pads"][0], w.shape[2],
            )  # fmt: skip
            layers.append(layer)
            producer[out] = layer
        elif op == "Add":
            ys = [src(t) for t in node.inputs]
            layer = _residual_target(ys, producer)
            layer.residual = ys[1] if ys[0] == layer.output else ys[0]
            alias[out] = layer.output
        elif op in ("Relu", "Clip"):
            layer = producer[x]
            layer.relu, layer.clip_max = True, a.get("max") if op == "Clip" else None
            alias[out] = x
        elif op in ("MaxPool", "AveragePool", "GlobalAveragePool", "Flatten"):
            kinds = {"MaxPool": "maxpool", "AveragePool": "avgpoolk",
                     "GlobalAveragePool": "avgpool"}  # fmt: skip
            layer = Layer(name, kinds.get(op, "flatten"), [x], out)
            if op in ("MaxPool", "AveragePool"):
                layer.kernel, layer.stride = a["kernel_shape"][0], a["strides"][0]
                layer.pad = a["pads"][0]
                layer.include_pad = bool(a.get("count_include_pad", 0))
            layers.append(layer)
        else:  # Gemm
            w = weight(node, 1) * a["alpha"]
            b = weight(node, 2)
            b = np.broadcast_to((0.0 if b is None else b) * a["beta"], (w.shape[0],))
            layer = Layer(name, "dense", [x], out, w[:, :, None, None], b.astype(np.float32))
            layers.append(layer)
            producer[out] = layer
    for layer in layers:  # outputs of fused adds and activations are the conv's own
        layer.inputs = [src(t) for t in layer.inputs]
        layer.residual = src(layer.residual) if layer.residual else None
    source, output = graph.inputs[0], src(graph.outputs[0])
    layers = _fuse_shortcuts(layers, output)
    shape = tuple(graph.values[source].shape)
    return Network(_dependency_order(layers, source), source, shape, output)


def _fuse_shortcuts(layers: list[Layer], output: str) -> list[Layer]:
    """A residual that is a 1x1 conv's output used nowhere else (no padding, no activation)
    becomes that conv's `shortcut`: its products accumulate into the adding conv's outputs, so
    it needs no Program and no DRAM round trip of its own."""
    uses: dict[str, int] = {output: 1}
    for ly in layers:
        for t in _needs(ly):
            uses[t] = uses.get(t, 0) + 1
    by_output = {ly.output: ly for ly in layers}
    fused = set()
    for ly in layers:
        sc = by_output.get(ly.residual)
        if (ly.kind == "conv" and sc is not None and sc.kind == "conv" and sc.kernel == 1
                and sc.pad == 0 and not sc.relu and sc.residual is None
                and uses[sc.output] == 1):  # fmt: skip
            ly.shortcut, ly.residual = sc, None
            fused.add(sc.name)
    return [ly for ly in layers if ly.name not in fused]


def _needs(ly: Layer) -> list[str]:
    extra = [ly.residual] if ly.residual else []
    return [*ly.inputs, *extra, *(ly.shortcut.inputs if ly.shortcut else [])]


def _dependency_order(layers: list[Layer], source: str) -> list[Layer]:
    """The layers in graph order, except that a conv waits for the residual it adds."""
    ready, pending, order = {source}, list(layers), []
    while pending:
        k = next((k for k, ly in enumerate(pending) if set(_needs(ly)) <= ready), None)
        if k is None:
            raise OperatorError(f"layer {pending[0].name}: its inputs are never computed")
        ly = pending.pop(k)
        order.append(ly)
        ready.add(ly.output)
    return order


# ---------------------------------------------------------------------------------- fp32
def _conv_f32(x: np.ndarray, w: np.ndarray, stride: int, pad: int, dw: bool) -> np.ndarray:
    zero = np.zeros(w.shape[0], np.float32)
    return (Q.depthwise if dw else Q.conv_f32)(x, w, zero, stride, pad)


def _maxpool(x: np.ndarray, k: int, stride: int, pad: int) -> np.ndarray:
    low = np.iinfo(x.dtype).min if x.dtype.kind == "i" else -np.inf
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=low)
    oh, ow = (x.shape[2] - k) // stride + 1, (x.shape[3] - k) // stride + 1
    views = [x[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
             for i in range(k) for j in range(k)]  # fmt: skip
    return np.max(views, axis=0)


def _window_sums(x: np.ndarray, k: int, stride: int, pad: int, include_pad: bool):
    """(sums over each k x k window, the number of elements each average divides by)."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ones = np.pad(np.ones(x.shape[2:], np.int64), pad, constant_values=int(include_pad))
    oh, ow = (xp.shape[2] - k) // stride + 1, (xp.shape[3] - k) // stride + 1
    sums = sum(xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
               for i in range(k) for j in range(k))  # fmt: skip
    counts = sum(ones[i : i + stride * oh : stride, j : j + stride * ow : stride]
                 for i in range(k) for j in range(k))  # fmt: skip
    return sums, counts


def _preactivation_f32(ly: Layer, t: dict) -> np.ndarray:
    """A conv or dense layer's NCHW output before its activation, in fp32."""
    h = t[ly.inputs[0]]
    h = h.reshape(h.shape[0], -1, 1, 1) if ly.kind == "dense" else h
    y = _conv_f32(h, ly.weight, ly.stride, ly.pad, ly.kind == "dwconv")
    y = y + ly.bias[None, :, None, None]
    if ly.residual:
        y = y + t[ly.residual]
    if ly.shortcut:
        sc = ly.shortcut
        y = y + _conv_f32(t[sc.inputs[0]], sc.weight, sc.stride, 0, False)
        y = y + sc.bias[None, :, None, None]
    return y


def _run_op(ly: Layer, t: dict) -> np.ndarray:
    """An "op" layer in fp32 by the graph's reference kernel (`t`: its input tensors)."""
    from .ir import Node as IRNode
    from .reference import run_node

    node = IRNode(ly.op, ly.op_inputs, [ly.output], ly.attrs, ly.name)
    args = [t[i] if i in t else ly.params.get(i) for i in ly.op_inputs]
    return np.asarray(run_node(node, args)[0], np.float32)


def forward_f32(net: Network, x: np.ndarray) -> dict[str, np.ndarray]:
    """Every tensor of the fp32 network (the quantization's calibration and accuracy baseline)."""
    t = {net.input: x.astype(np.float32)}
    for ly in net.layers:
        h = t[ly.inputs[0]] if ly.inputs else None
        if ly.kind == "op":
            t[ly.output] = _run_op(ly, t)
        elif ly.kind in ("conv", "dwconv", "dense"):
            y = _preactivation_f32(ly, t)
            if ly.relu:
                y = np.clip(y, 0, ly.clip_max if ly.clip_max is not None else np.inf)
            t[ly.output] = y.reshape(y.shape[0], -1) if ly.kind == "dense" else y
        elif ly.kind == "maxpool":
            t[ly.output] = _maxpool(h, ly.kernel, ly.stride, ly.pad)
        elif ly.kind == "avgpool":
            t[ly.output] = h.mean(axis=(2, 3), keepdims=True)
        elif ly.kind == "avgpoolk":
            sums, counts = _window_sums(h, ly.kernel, ly.stride, ly.pad, ly.include_pad)
            t[ly.output] = (sums / counts).astype(np.float32)
        else:
            t[ly.output] = h.reshape(h.shape[0], -1)
    return t


# ------------------------------------------------------------------------------- quantized
@dataclasses.dataclass
class QNetwork:
    """The quantized network: each tensor's exponent and each conv/dense layer's QConv; with
    `float_cpu`, the conv and dense layers the CPU runs compute in fp32 (their QConv then only
    gives shapes): int8 tensors are dequantized into them and their fp32 outputs quantized at
    each tensor's exponent where an accelerator layer takes them. `zeros`: the tensors stored
    with zero point -128 (see `zero_points`; the others have 0)."""

    net: Network
    exps: dict[str, int]
    convs: dict[str, QConv]
    calibration: str = ""  # where the exponents came from
    float_cpu: bool = False  # the CPU's conv and dense layers compute in fp32
    zeros: dict[str, int] = dataclasses.field(default_factory=dict)

    def zero(self, name: str) -> int:
        return self.zeros.get(name, 0)


def quantize_network(
    net: Network,
    calibration: np.ndarray,
    method: str = "mse",
    correct_bias: bool = True,
    float_cpu: bool = True,
    pre_shift: bool = False,
    unsigned: bool = True,
) -> QNetwork:
    """Exponents from the fp32 tensors on the calibration inputs; convs quantized with them
    (an exponent a shift cannot reach is raised, as `quantize_conv` decides), with an exponent
    per output channel for the weights of layers the CPU runs (its shift can differ by
    channel; the accelerator's REQ takes one shift per instruction). With `correct_bias`, each
    conv's bias absorbs the mean error per channel of its quantized pre-activation on the
    calibration inputs (run through the quantized layers before it), so rounding errors that
    do not average out are not passed on. Calibration `method` mse by default: on the seeded
    ONNX networks (`scripts/bench_vta.py --accuracy 100`) its worst output error is the lowest
    for ResNet-18 (2.3%, min/max 2.8%), the same for MobileNet-v1 (2.7%) and 0.2 points above
    min/max's for the DQN (4.4%). `float_cpu`: see QNetwork; `pre_shift`: see
    `quant.quantize_conv` (off by default: on the seeded ResNet-18 the coarser weights of the
    residual convs cost about one point of output error and save an ALU op per output row, 37 k
    cycles); `unsigned`: tensors `zero_points` allows are stored with zero point -128."""
    acts = forward_f32(net, calibration)
    qn = QNetwork(net, {}, {}, float_cpu=float_cpu)
    if unsigned:
        qn.zeros = zero_points(net, qn, acts[net.input], pre_shift)
    exps = qn.exps
    exps.update({k: Q.exponent(v, method, qn.zero(k)) for k, v in acts.items()})
    t = {net.input: _entry(qn, calibration)}
    for ly in net.layers:
        if ly.kind in ("maxpool", "flatten"):
            exps[ly.output] = exps[ly.inputs[0]]
        elif ly.kind in ("conv", "dwconv", "dense"):
            q = _quantize_layer(ly, qn, ly.bias, pre_shift)
            if correct_bias and not _is_float(ly, qn):
                err = _preactivation(ly, q, t, qn) - _preactivation_f32(ly, acts)
                q = _quantize_layer(ly, qn, ly.bias - err.mean(axis=(0, 2, 3)), pre_shift)
            qn.convs[ly.name] = q
            exps[ly.output] = q.e_out
        if correct_bias:
            t[ly.output] = _clip(ly, qn, _cpu_layer(ly, qn, t))
    return qn


def zero_points(net: Network, qn: QNetwork, x: np.ndarray, pre_shift: bool) -> dict[str, int]:
    """The tensors stored with zero point -128: never negative (a ReLU's output, a max pool or
    flatten of one, the network input if no calibration input is negative) and read only where
    the zero point folds into a bias exactly (a conv or dense without zero padding or pre-shift,
    a residual or shortcut input) or where they are dequantized (fp32 layers, the output); a
    max pool or flatten passes its input's zero point on."""
    readers: dict[str, list[tuple[Layer, str]]] = {}
    for ly in net.layers:
        roles = [(ly.inputs[0], "input")] if ly.inputs else []
        roles += [(ly.residual, "residual")] if ly.residual else []
        roles += [(ly.shortcut.inputs[0], "residual")] if ly.shortcut else []
        roles += [(t, "float") for t in ly.inputs[1:]]
        for t, role in roles:
            readers.setdefault(t, []).append((ly, role))
    nonneg = {net.input} if x.min(initial=0.0) >= 0 else set()
    for ly in net.layers:
        if (ly.kind in ("conv", "dwconv", "dense") and ly.relu) or (
            ly.kind in ("maxpool", "flatten") and ly.inputs[0] in nonneg
        ):
            nonneg.add(ly.output)
    zeros: dict[str, int] = {}

    def exact(ly: Layer, role: str) -> bool:
        if role != "input" or ly.kind == "op" or _is_float(ly, qn):
            return True
        if ly.kind in ("maxpool", "flatten"):
            return ly.output in zeros
        pre = pre_shift and ly.residual is not None
        return ly.kind in ("conv", "dwconv", "dense") and ly.pad == 0 and not pre

    for t in reversed([net.input, *(ly.output for ly in net.layers)]):  # readers first
        if t in nonneg and all(exact(ly, role) for ly, role in readers.get(t, [])):
            zeros[t] = -128
    return zeros


def _quantize_layer(ly: Layer, qn: QNetwork, bias: np.ndarray, pre_shift: bool) -> QConv:
    exps = qn.exps
    e_res = exps[ly.residual] if ly.residual else None
    sc = ly.shortcut
    shortcut = (sc.weight, sc.bias, exps[sc.inputs[0]], sc.stride) if sc else None
    per_channel = _place(ly)[0] == "cpu" and not (ly.residual or sc)
    zeros = (qn.zero(ly.inputs[0]), qn.zero(ly.residual) if ly.residual else 0,
             qn.zero(sc.inputs[0]) if sc else 0, qn.zero(ly.output))  # fmt: skip
    zeros = (0, 0, 0, 0) if _is_float(ly, qn) else zeros  # its QConv only gives shapes
    return Q.quantize_conv(ly.weight, bias, exps[ly.inputs[0]], exps[ly.output], ly.relu,
                           ly.stride, ly.pad, e_residual=e_res, shortcut=shortcut,
                           per_channel=per_channel, pre_shift=pre_shift,
                           zeros=zeros)  # fmt: skip


def _entry(qn: QNetwork, x: np.ndarray) -> np.ndarray:
    """The network input as the first layer takes it (fp32 into an fp32 CPU layer)."""
    first = next(ly for ly in qn.net.layers if qn.net.input in _needs(ly))
    if _is_float(first, qn):
        return x.astype(np.float32)
    return Q.quantize(x, qn.exps[qn.net.input], qn.zero(qn.net.input))


def _is_float(ly: Layer, qn: QNetwork) -> bool:
    """Whether the layer computes in fp32: any other operator ("op"), and a CPU conv or dense,
    or an average pool, of a network with `float_cpu`."""
    if ly.kind == "op":
        return True
    if not qn.float_cpu or ly.kind not in ("conv", "dwconv", "dense", "avgpool", "avgpoolk"):
        return False
    return ly.kind.startswith("avgpool") or _place(ly, qn.convs.get(ly.name))[0] == "cpu"


def _int8(qn: QNetwork, t: dict, name: str) -> np.ndarray:
    """Tensor `name` in int8 (quantized at its exponent if an fp32 layer made it)."""
    v = t[name]
    return v if v.dtype == np.int8 else Q.quantize(v, qn.exps[name], qn.zero(name))


def dequantized(qn: QNetwork, t: dict, name: str) -> np.ndarray:
    """Tensor `name` in fp32 (int8 tensors dequantized at their exponent and zero point)."""
    v = t[name]
    return Q.dequantize(v, qn.exps[name], qn.zero(name)) if v.dtype == np.int8 else v


def _preactivation(ly: Layer, q: QConv, t: dict, qn: QNetwork) -> np.ndarray:
    """The quantized layer's NCHW pre-activation (its accumulator before the shift) in fp32."""
    h = _int8(qn, t, ly.inputs[0])
    h = h.reshape(h.shape[0], -1, 1, 1) if ly.kind == "dense" else h
    res = _int8(qn, t, ly.residual) if ly.residual else None
    sc_in = _int8(qn, t, ly.shortcut.inputs[0]) if ly.shortcut else None
    acc = Q.accumulate(q, h, res, sc_in, dw=ly.kind == "dwconv")
    shift = np.asarray(q.shift).reshape(-1, 1, 1) if np.ndim(q.shift) else q.shift
    offset = (1 << shift >> 1) + (qn.zero(ly.output) << shift)  # rounding, output zero point
    return (acc - offset) * 2.0 ** (q.e_out - shift)


def _clip(ly: Layer, qn: QNetwork, y: np.ndarray) -> np.ndarray:
    """A layer's int8 output with its Clip upper bound (if any) applied."""
    hi = _clip_max(ly, qn) if y.dtype == np.int8 else None
    return y if hi is None else np.minimum(y, np.int8(hi))


def _place(ly: Layer, q: QConv | None = None) -> tuple[str, str]:
    """(where, why) a layer runs (its weights: the quantized ones `q`, else the layer's)."""
    if ly.kind == "conv":
        channels = (ly.weight if q is None else q.weight).shape[1]
        if channels < MIN_OFFLOAD_CHANNELS:
            return "cpu", f"conv with {channels} input channels (block padding)"
        extra = ", residual" if ly.residual else ", 1x1 shortcut conv" if ly.shortcut else ""
        return "vta", "conv: fused bias, requant" + (", ReLU" if ly.relu else "") + extra
    why = {
        "dwconv": "depthwise conv: one channel per product",
        "dense": "dense: memory-bound on the accelerator",
        "maxpool": "max pool",
        "avgpool": "global average pool",
        "avgpoolk": "average pool",
        "flatten": "flatten",
        "op": f"{ly.op}: the graph's reference kernel",
    }
    return "cpu", why[ly.kind]


def _clip_max(ly: Layer, qn: QNetwork) -> int | None:
    """The int8 bound of the layer's Clip max (None: none, or the int8 range bounds it)."""
    if not ly.relu or ly.clip_max is None or not np.isfinite(ly.clip_max):
        return None
    zero = qn.zero(ly.output)
    hi = int(np.clip(np.floor(ly.clip_max * 2.0 ** -qn.exps[ly.output]) + zero, zero, 127))
    return hi if hi < 127 else None


def _cpu_layer(ly: Layer, qn: QNetwork, t: dict, kernel: CpuKernel | None = None) -> np.ndarray:
    """A layer on the CPU: integer arithmetic, or fp32 for an fp32 layer (`_is_float`) and for
    max pool and flatten of an fp32 tensor; in numpy (the reference), or with its compiled
    `kernel` (`accel_cpu`: exact on int8 layers)."""
    if ly.kind == "op":
        args = {n: dequantized(qn, t, n) for n in ly.inputs}
        return kernel(*args.values()) if kernel else _run_op(ly, args)
    h = t[ly.inputs[0]]
    exact = ly.kind in ("maxpool", "flatten")  # the same on int8 and fp32
    if exact and kernel:
        y = kernel(h)
        return y.astype(np.int8) if h.dtype == np.int8 else y
    if (exact and h.dtype != np.int8) or (ly.kind.startswith("avgpool") and _is_float(ly, qn)):
        if kernel:
            return kernel(dequantized(qn, t, ly.inputs[0]))
        one = Network([ly], ly.inputs[0], (), ly.output)
        return forward_f32(one, dequantized(qn, t, ly.inputs[0]))[ly.output]
    if _is_float(ly, qn):
        if kernel:
            return kernel(*(dequantized(qn, t, n) for n in _needs(ly)))
        y = _preactivation_f32(ly, {n: dequantized(qn, t, n) for n in _needs(ly)})
        if ly.relu:
            y = np.clip(y, 0, ly.clip_max if ly.clip_max is not None else np.inf)
        return (y.reshape(y.shape[0], -1) if ly.kind == "dense" else y).astype(np.float32)
    if ly.kind in ("conv", "dwconv", "dense"):
        t = {n: _int8(qn, t, n) for n in _needs(ly)}
        h = t[ly.inputs[0]]
    if ly.kind == "maxpool":
        return _maxpool(h, ly.kernel, ly.stride, ly.pad)
    if ly.kind == "flatten":
        return h.reshape(h.shape[0], -1)
    if ly.kind == "avgpool":
        total = h.astype(np.int64).sum(axis=(2, 3), keepdims=True)
        e_in = qn.exps[ly.inputs[0]]
        return Q.quantize(total * 2.0**e_in / (h.shape[2] * h.shape[3]), qn.exps[ly.output])
    if ly.kind == "avgpoolk":
        sums, counts = _window_sums(h.astype(np.int64), ly.kernel, ly.stride, ly.pad,
                                    ly.include_pad)  # fmt: skip
        return Q.quantize(sums * 2.0 ** qn.exps[ly.inputs[0]] / counts, qn.exps[ly.output])
    q = qn.convs[ly.name]
    x = h.reshape(h.shape[0], -1, 1, 1) if ly.kind == "dense" else h
    products = kernel(h) if kernel else None
    if products is not None and ly.kind == "dense":
        products = products.reshape(*products.shape, 1, 1)
    sc_in = t[ly.shortcut.inputs[0]] if ly.shortcut else None
    res = t[ly.residual] if ly.residual else None
    acc = Q.accumulate(q, x, res, sc_in, ly.kind == "dwconv", products)
    out = Q.requantize(acc, q)
    return out.reshape(out.shape[0], -1) if ly.kind == "dense" else out


@dataclasses.dataclass
class Compiled:
    """A quantized network with its offloaded layers compiled for one configuration and its
    CPU layers for the llvm target (`cpu`; `numpy`: why a CPU layer has no kernel)."""

    qn: QNetwork
    cfg: VTAConfig
    accel: dict[str, AccelConv]
    compile_seconds: float
    cpu: dict[str, CpuKernel] = dataclasses.field(default_factory=dict)
    numpy: dict[str, str] = dataclasses.field(default_factory=dict)


def _out_channels(ly: Layer, qn: QNetwork) -> int:
    return (qn.convs[ly.name].weight if ly.name in qn.convs else ly.weight).shape[0]


def _shapes(qn: QNetwork) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape, from the input's and the layers' arithmetic."""
    shapes = {qn.net.input: tuple(qn.net.input_shape)}
    for ly in qn.net.layers:
        if ly.kind == "op":
            shapes[ly.output] = tuple(ly.out_shape)
            continue
        n, *rest = shapes[ly.inputs[0]]
        if ly.kind in ("conv", "dwconv", "maxpool", "avgpoolk"):
            c, h, w = rest
            o = _out_channels(ly, qn) if ly.kind in ("conv", "dwconv") else c
            h, w = ((x + 2 * ly.pad - ly.kernel) // ly.stride + 1 for x in (h, w))
            shapes[ly.output] = (n, o, h, w)
        elif ly.kind == "avgpool":
            shapes[ly.output] = (n, rest[0], 1, 1)
        elif ly.kind == "flatten":
            shapes[ly.output] = (n, int(np.prod(rest)))
        else:  # dense
            shapes[ly.output] = (n, _out_channels(ly, qn))
    return shapes


def _offloaded(qn: QNetwork) -> list[tuple[Layer, QConv, tuple, tuple | None]]:
    """(layer, QConv, input shape, shortcut input shape) of every layer the accelerator runs."""
    shapes = _shapes(qn)
    out = []
    for ly in qn.net.layers:
        q = qn.convs.get(ly.name)
        if _place(ly, q)[0] == "vta":
            sc_shape = shapes[ly.shortcut.inputs[0]] if ly.shortcut else None
            out.append((ly, q, shapes[ly.inputs[0]], sc_shape))
    return out


def compile_network(
    qn: QNetwork, cfg: VTAConfig, candidates: int = 8, db: str | None = None
) -> Compiled:
    """The offloaded layers' Programs (knobs from `db` or the best of `candidates`) and the
    CPU layers' llvm kernels."""
    start = time.perf_counter()
    accel = {
        ly.name: compile_qconv(ly.name, q, shape, cfg, sc_shape, candidates, db)
        for ly, q, shape, sc_shape in _offloaded(qn)
    }
    cpu, numpy_why = compile_cpu(qn)
    return Compiled(qn, cfg, accel, time.perf_counter() - start, cpu, numpy_why)


def compile_cpu(qn: QNetwork) -> tuple[dict[str, CpuKernel], dict[str, str]]:
    """Each CPU layer's llvm kernel (`accel_cpu`), and why a layer has none (it runs in numpy)."""
    shapes = _shapes(qn)
    kernels, why = {}, {}
    for ly in qn.net.layers:
        if _place(ly, qn.convs.get(ly.name))[0] != "cpu":
            continue
        floating = _is_float(ly, qn)
        if ly.kind.startswith("avgpool") and not floating:
            why[ly.name] = "int8 average pool: an fp32 mean would round differently"
            continue
        integer = ly.kind in ("conv", "dwconv", "dense") and not floating
        graph = layer_graph(ly, shapes, qn.convs[ly.name] if integer else None)
        if graph is None:
            why[ly.name] = "int8 products not exact in fp32 (sums reach 2^24, or a shortcut)"
            continue
        try:
            kernels[ly.name] = CpuKernel(compile_graph(graph), integer)
        except OperatorError as e:
            why[ly.name] = f"no llvm kernel ({e})"
    return kernels, why


def tuning_tasks(qn: QNetwork, cfg: VTAConfig) -> list[tuple[tuple, int]]:
    """The network's distinct conv2d_fused tuning tasks (template arguments) with how many of
    its layers each one makes; records of them serve `compile_network(..., db=...)`."""
    from ..tune.templates.vta import fused_args

    weights: dict[tuple, int] = {}
    for ly, q, shape, sc_shape in _offloaded(qn):
        args = fused_args(*layer_structure(ly.name, q, shape, cfg, sc_shape))
        weights[args] = weights.get(args, 0) + 1
    return list(weights.items())


def run(
    c: Compiled | QNetwork, x: np.ndarray, device: str | None = None
) -> tuple[dict, list[dict], float]:
    """(every tensor: int8, fp32 from fp32 CPU layers; per-layer rows; CPU seconds) on `device`.
    A QNetwork runs in numpy: the quantized reference. A Compiled model runs its CPU layers
    with their llvm kernels (each row has its `cpu_seconds` and `kernel`) and its offloaded
    layers on `device`, or with device None in numpy: the bit-exact reference of every device
    (int8 CPU layers are bit-identical to numpy's, fp32 ones equal to fp32 rounding)."""
    compiled = isinstance(c, Compiled)
    qn = c.qn if compiled else c
    kernels = c.cpu if compiled else {}
    if kernels and x.shape[0] != qn.net.input_shape[0]:
        raise OperatorError(f"input batch {x.shape[0]}: the CPU layers were compiled for "
                            f"batch {qn.net.input_shape[0]}")  # fmt: skip
    t = {qn.net.input: _entry(qn, x)}
    packed: dict[str, np.ndarray] = {}  # tensors also held in the accelerator's layout
    rows, cpu = [], 0.0
    for ly in qn.net.layers:
        where, why = _place(ly, qn.convs.get(ly.name))
        if device is None or not compiled or where == "cpu":
            kernel = kernels.get(ly.name) if where == "cpu" else None
            start = time.perf_counter()
            t[ly.output] = _cpu_layer(ly, qn, t, kernel)
            took = time.perf_counter() - start
            cpu += took
            fp32 = "; fp32" if t[ly.output].dtype != np.int8 else ""
            row = {"name": ly.name, "where": "cpu", "why": why + fp32}
            if compiled and where == "cpu":
                row.update(cpu_seconds=took, kernel="llvm" if kernel else "numpy")
                row["why"] += f"; numpy: {c.numpy[ly.name]}" if ly.name in c.numpy else ""
            rows.append(row)
        else:
            start = time.perf_counter()
            for name in _needs(ly):
                if name not in packed:
                    packed[name] = pack_act(_int8(qn, t, name), c.cfg)
            cpu += time.perf_counter() - start
            layer = c.accel[ly.name]
            res = packed[ly.residual] if ly.residual else None
            sc_in = packed[ly.shortcut.inputs[0]] if ly.shortcut else None
            out, st = layer.run(c.cfg, device, packed[ly.inputs[0]], res, sc_in)
            packed[ly.output] = out
            t[ly.output] = unpack_act(out, layer.out_channels)
            rows.append({**report_row(layer, st), "why": why})
        hi = _clip_max(ly, qn)
        if hi is not None:  # Clip's upper bound: an int8 minimum on the CPU
            t[ly.output] = _clip(ly, qn, t[ly.output])
            packed.pop(ly.output, None)
            rows[-1]["why"] += f"; Clip max on the CPU (int8 min {hi})"
    return t, rows, cpu


def dequantized_output(qn: QNetwork, t: dict) -> np.ndarray:
    return dequantized(qn, t, qn.net.output)


# --------------------------------------------------------------------------- save and load
FORMAT = "vta-accel-1"
