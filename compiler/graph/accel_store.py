"""A compiled `--target vta` model saved to a folder and loaded back (`vta compile --target vta`):
accel.json, weights.npz and the CPU layers' kernels; loading rebuilds the Programs without
calibrating, searching or compiling again."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from vta.config import VTAConfig

from ..errors import OperatorError
from .accel import compile_qconv
from .accel_cpu import load_kernels, save_kernels
from .accel_onnx import FORMAT, Compiled, Layer, Network, QNetwork, _is_float, _offloaded
from .quant import QConv

_LAYER_FIELDS = ("name", "kind", "inputs", "output", "stride", "pad", "kernel", "relu",
                 "clip_max", "residual", "include_pad", "op", "attrs", "op_inputs",
                 "out_shape")  # fmt: skip
_QCONV_SCALARS = ("shift", "relu", "stride", "pad", "e_in", "e_out", "residual_shift",
                  "sc_stride", "pre_shift", "sc_shift")  # fmt: skip


def save(c: Compiled, folder: str | Path) -> None:
    """accel.json (layers, exponents, configuration, each offloaded layer's knobs),
    weights.npz (the quantized weights and biases) and cpu/ (the CPU layers' compiled kernels):
    `load` rebuilds the Programs from them without calibrating, searching or compiling for the
    CPU again."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    net, arrays = c.qn.net, {}

    def layer_json(ly: Layer) -> dict:
        d = {f: getattr(ly, f) for f in _LAYER_FIELDS}
        if ly.shortcut:
            d["shortcut"] = layer_json(ly.shortcut)
        return d

    for ly in net.layers:  # fp32 CPU layers keep their fp32 weights, operators their constants
        if _is_float(ly, c.qn) and ly.weight is not None:
            arrays[f"{ly.name}.f32_weight"], arrays[f"{ly.name}.f32_bias"] = ly.weight, ly.bias
        for k, value in enumerate(ly.params.values()):
            arrays[f"{ly.name}.param{k}"] = value
    convs = {}
    for name, q in c.qn.convs.items():
        convs[name] = {f: getattr(q, f) for f in _QCONV_SCALARS}
        arrays[f"{name}.weight"], arrays[f"{name}.bias"] = q.weight, q.bias
        if np.ndim(q.shift):  # one per channel
            convs[name]["shift"], arrays[f"{name}.shift"] = None, q.shift
        if q.sc_weight is not None:
            arrays[f"{name}.sc_weight"] = q.sc_weight
    manifest = {
        "format": FORMAT,
        "config": c.cfg.to_dict(),
        "input": net.input,
        "input_shape": list(net.input_shape),
        "output": net.output,
        "layers": [layer_json(ly) for ly in net.layers],
        "exps": c.qn.exps,
        "calibration": c.qn.calibration,
        "float_cpu": c.qn.float_cpu,
        "zeros": c.qn.zeros,
        "convs": convs,
        "knobs": {name: dataclasses.asdict(a.knobs) for name, a in c.accel.items()},
        "numpy": c.numpy,
    }
    (folder / "accel.json").write_text(json.dumps(manifest, indent=1))
    np.savez(folder / "weights.npz", **arrays)
    save_kernels(c.cpu, folder)


def is_saved(folder: str | Path) -> bool:
    return (Path(folder) / "accel.json").is_file()


def load(folder: str | Path) -> Compiled:
    """A model saved by `save`, ready to run on any device (Programs rebuilt from the knobs)."""
    from vta.program_file import read_arrays

    from ..topi.vta.conv2d import Conv2DKnobs

    folder = Path(folder)
    try:
        m = json.loads((folder / "accel.json").read_text())
        if m.get("format") != FORMAT:
            raise OperatorError(f"{folder}: format {m.get('format')!r}, expected {FORMAT}")
        arrays = read_arrays(folder / "weights.npz", what="weights")

        def layer(d: dict) -> Layer:
            sc = layer(d["shortcut"]) if d.get("shortcut") else None
            return Layer(**{f: d[f] for f in _LAYER_FIELDS}, shortcut=sc)

        layers = [layer(d) for d in m["layers"]]
        for ly in layers:
            consts = dict.fromkeys(n for n in ly.op_inputs if n and n not in ly.inputs)
            ly.params = {n: arrays[f"{ly.name}.param{k}"] for k, n in enumerate(consts)}
            if f"{ly.name}.f32_weight" in arrays:
                ly.weight, ly.bias = arrays[f"{ly.name}.f32_weight"], arrays[f"{ly.name}.f32_bias"]
        convs = {}
        for name, scalars in m["convs"].items():
            if scalars["shift"] is None:
                scalars["shift"] = arrays[f"{name}.shift"].astype(np.int64)
            convs[name] = QConv(arrays[f"{name}.weight"], arrays[f"{name}.bias"],
                                sc_weight=arrays.get(f"{name}.sc_weight"), **scalars)  # fmt: skip
        net = Network(layers, m["input"], tuple(m["input_shape"]), m["output"])
        qn = QNetwork(net, m["exps"], convs, m.get("calibration", ""), m.get("float_cpu", False),
                      m.get("zeros", {}))  # fmt: skip
        cfg = VTAConfig.from_dict(m["config"], source=str(folder / "accel.json"))
        knobs = {name: Conv2DKnobs(**k) for name, k in m["knobs"].items()}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise OperatorError(f"{folder} is not a compiled accelerator model: {e}") from None
    start = time.perf_counter()
    accel = {
        ly.name: compile_qconv(ly.name, q, shape, cfg, sc_shape, knobs=knobs[ly.name])
        for ly, q, shape, sc_shape in _offloaded(qn)
    }
    cpu = load_kernels(folder)
    return Compiled(qn, cfg, accel, time.perf_counter() - start, cpu, m.get("numpy", {}))
