"""The main job, end to end: a seeded ResNet-18 built as an ONNX model (1x3x224x224, fp32, random
weights: no pretrained weights are available offline), quantized to int8 with power-of-two scales
(calibrated on seeded random inputs), its convolutions compiled for the accelerator as fused
kernels (bias, requantization, ReLU, residual add in one Program) and the rest kept on the CPU,
run on the cycle-level simulator, compared bit for bit with the numpy quantized reference and
against fp32; prints the per-layer report (where each layer ran and why, cycles, GEMM
utilization, DRAM bytes, roofline side) and the totals. It is `vta run MODEL.onnx --target vta`
on that model.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from compiler import zoo
from vta.cli import main as vta


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="sim", help="sim, fsim or rtl (default sim)")
    parser.add_argument("--config", default=None, help="preset, configuration string or file")
    parser.add_argument("--model", help="an ONNX model instead of the seeded ResNet-18")
    parser.add_argument("--candidates", default="8", help="knob settings timed per layer")
    parser.add_argument("--db", default=None, help="tuning records (vta tune ... --target vta)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--plot", metavar="PNG", help="write the layers' roofline plot")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(args.model) if args.model else Path(tmp) / "resnet18.onnx"
        if not args.model:
            model.write_bytes(zoo.resnet18(seed=0))
            print("built a seeded ResNet-18 (random weights) as ONNX", file=sys.stderr)
        inputs = Path(tmp) / "inputs.npz"
        import onnx

        graph = onnx.load(str(model)).graph
        consts = {t.name for t in graph.initializer}
        inputs_of = [i for i in graph.input if i.name not in consts]
        if len(inputs_of) != 1:
            print(f"demo: error: {model} has {len(inputs_of)} inputs; use vta run", file=sys.stderr)
            return 1
        inp = inputs_of[0]
        shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        np.savez(inputs, **{inp.name: x})
        argv = ["run", str(model), "--inputs", str(inputs), "--target", "vta",
                "--device", args.device, "--candidates", args.candidates]  # fmt: skip
        for flag, value in (("--config", args.config), ("--db", args.db), ("--plot", args.plot)):
            argv += [flag, value] if value else []
        return vta([*argv, *(["--json"] if args.json else [])])


if __name__ == "__main__":
    raise SystemExit(main())
