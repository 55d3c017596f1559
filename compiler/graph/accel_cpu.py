"""The CPU partition of an accelerator model on the llvm target: each CPU layer becomes a
one-layer graph IR compiled by the CPU network path (its passes, `build_onnx.lower_groups`,
`build.build_graph`: the same fp32 kernels `vta run --target llvm` uses), built once with the
model and saved with it.

An fp32 layer (any operator, and the CPU's conv, dense and pools of a `float_cpu` network) runs
whole in the kernel. An int8 layer runs exactly: an int8 max pool or flatten on the int8 values
as fp32 (copies and maxima of integers); an int8 conv, depthwise conv or dense layer computes
its products in the fp32 kernel, exact because every partial sum is an integer below 2^24
(checked from the weights: 128 * sum|w| per output channel), and adds bias, residual and
shift in int64 as the numpy reference does. What has no exact kernel (an int8 average pool,
whose fp32 mean would round differently, an int8 conv with a shortcut conv or larger sums)
stays in numpy, and the report says so.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from ..errors import CompilerError
from .executor import GraphModule
from .ir import Graph, Node, Value

EXACT_FP32 = 2**24  # integers below this are exact in fp32, sums of them too


@dataclasses.dataclass
class CpuKernel:
    """One CPU layer's compiled graph: its inputs in the layer's order (graph names in0,
    in1, ...) and whether it gives an int8 layer's integer products (`integer`)."""

    module: GraphModule
    integer: bool

    def __call__(self, *arrays: np.ndarray) -> np.ndarray:
        feed = {f"in{k}": np.asarray(a, np.float32) for k, a in enumerate(arrays)}
        return self.module.run(feed)["out"]


def _conv_attrs(kernel: int, stride: int, pad: int, group: int = 1) -> dict:
    return {"auto_pad": "NOTSET", "dilations": [1, 1], "group": group,
            "kernel_shape": [kernel, kernel], "pads": [pad] * 4,
            "strides": [stride, stride]}  # fmt: skip


class _Builder:
    """A one-layer graph IR: inputs in0, in1, ... (fp32, NCHW or 2-d), output `out`."""

    def __init__(self, shapes: list[tuple]):
        self.g = Graph([], [], ["out"])
        for k, shape in enumerate(shapes):
            name = f"in{k}"
            self.g.inputs.append(name)
            self.g.values[name] = Value(name, tuple(shape), "float32")
        self.n = 0

    def const(self, value: np.ndarray, keep_dtype: bool = False) -> str:
        self.n += 1
        value = np.ascontiguousarray(value, None if keep_dtype else np.float32)
        return self.g.add_constant(f"c{self.n}", value)

    def node(self, op: str, inputs: list[str], attrs: dict | None = None) -> str:
        self.n += 1
        out = self.g.fresh(f"t{self.n}")
        self.g.nodes.append(Node(op, inputs, [out], attrs or {}, f"{op.lower()}{self.n}"))
        return out

    def finish(self, last: str) -> Graph:
        """The graph with value `last` (the last node's) as its output `out`."""
        self.g.nodes[-1].outputs = ["out"]
        del self.g.values[last]
        return self.g


def layer_graph(ly, shapes: dict, q=None) -> Graph | None:
    """The graph IR of CPU layer `ly` (an `accel_onnx.Layer`; `shapes`: every tensor's shape)
    computing its fp32 output, or with the int8 layer's QConv `q` its integer products; None
    where no exact kernel exists."""
    ins = [shapes[t] for t in ly.inputs]
    if ly.kind in ("conv", "dwconv", "dense"):
        ins += [shapes[ly.residual]] if ly.residual and q is None else []
        ins += [shapes[ly.shortcut.inputs[0]]] if ly.shortcut else []
    b = _Builder(ins)
    if ly.kind == "op":
        names = {t: f"in{k}" for k, t in enumerate(ly.inputs)}
        names.update({t: b.const(v, keep_dtype=True) for t, v in ly.params.items()})
        return b.finish(b.node(ly.op, [names.get(t, "") for t in ly.op_inputs], dict(ly.attrs)))
    if ly.kind in ("conv", "dwconv", "dense"):
        return _linear(b, ly, q)
    if ly.kind == "maxpool":
        attrs = {**_conv_attrs(ly.kernel, ly.stride, ly.pad), "ceil_mode": 0, "storage_order": 0}
        del attrs["group"]
        return b.finish(b.node("MaxPool", ["in0"], attrs))
    if ly.kind == "avgpoolk":
        attrs = {**_conv_attrs(ly.kernel, ly.stride, ly.pad), "ceil_mode": 0,
                 "count_include_pad": int(ly.include_pad)}  # fmt: skip
        del attrs["group"], attrs["dilations"]
        return b.finish(b.node("AveragePool", ["in0"], attrs))
    if ly.kind == "avgpool":
        return b.finish(b.node("GlobalAveragePool", ["in0"]))
    return b.finish(b.node("Flatten", ["in0"], {"axis": 1}))


def _linear(b: _Builder, ly, q) -> Graph | None:
    """A conv, depthwise conv or dense layer: fp32 with bias, shortcut, residual and
    activation, or (QConv `q`) the int8 weights' products alone."""
    if q is not None:
        sums = np.abs(q.weight.astype(np.int64)).reshape(q.weight.shape[0], -1).sum(axis=1)
        if ly.shortcut or 128 * int(sums.max(initial=0)) >= EXACT_FP32:
            return None
        w = q.weight.astype(np.float32)
    else:
        w = ly.weight
    if ly.kind == "dense":
        inputs = ["in0", b.const(w.reshape(w.shape[0], -1))]
        inputs += [b.const(ly.bias)] if q is None else []
        gemm = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 1}
        y = b.node("Gemm", inputs, gemm)
    else:
        group = w.shape[0] if ly.kind == "dwconv" else 1
        inputs = ["in0", b.const(w)] + ([b.const(ly.bias)] if q is None else [])
        y = b.node("Conv", inputs, _conv_attrs(ly.kernel, ly.stride, ly.pad, group))
    if q is not None:
        return b.finish(y)
    k = 1
    if ly.residual:
        y, k = b.node("Add", [y, "in1"]), 2
    if ly.shortcut:
        sc = ly.shortcut
        inputs = [f"in{k}", b.const(sc.weight), b.const(sc.bias)]
        y = b.node("Add", [y, b.node("Conv", inputs, _conv_attrs(1, sc.stride, 0))])
    if ly.relu:
        hi = ly.clip_max if ly.clip_max is not None and np.isfinite(ly.clip_max) else None
        y = b.node("Clip", [y], {"min": 0.0, "max": hi}) if hi is not None else b.node("Relu", [y])
    return b.finish(y)


def compile_graph(graph: Graph, target: str = "llvm", db: str | None = None) -> GraphModule:
    """A graph IR through the CPU path's passes, lowering and build (as `compile_model` does
    for an ONNX file)."""
    from ..codegen.target import target_scope
    from .build import build_graph, plan_offsets
    from .build_onnx import lower_groups
    from .passes import run_passes

    graph, _ = run_passes(graph)
    with target_scope(target):
        groups, shapes, params, inputs, outputs = lower_groups(graph)
    offsets, arena, _ = plan_offsets(groups, shapes, set(outputs))
    return build_graph(groups, shapes, params, inputs, outputs, offsets, arena, target, db=db)


def save_kernels(kernels: dict[str, CpuKernel], folder: Path) -> None:
    """Each kernel's GraphModule in folder/cpu/K with cpu/kernels.json naming the layers."""
    index = {}
    for k, (name, kernel) in enumerate(kernels.items()):
        kernel.module.save(folder / "cpu" / str(k))
        index[name] = {"folder": str(k), "integer": kernel.integer}
    (folder / "cpu").mkdir(parents=True, exist_ok=True)
    (folder / "cpu" / "kernels.json").write_text(json.dumps(index, indent=1))


def load_kernels(folder: Path) -> dict[str, CpuKernel]:
    """The kernels `save_kernels` wrote (none if the folder has no cpu/kernels.json)."""
    path = folder / "cpu" / "kernels.json"
    if not path.is_file():
        return {}
    try:
        index = json.loads(path.read_text())
        return {
            name: CpuKernel(GraphModule.load(folder / "cpu" / d["folder"]), d["integer"])
            for name, d in index.items()
        }
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CompilerError(f"{path}: not the CPU kernels of a compiled model: {e}") from None
