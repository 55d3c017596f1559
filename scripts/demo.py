"""The main job, end to end: a seeded ResNet-18 (1x3x224x224, fp32, batch norms folded, built in
numpy: no pretrained weights are available offline, and the ONNX front end is not wired in yet)
quantized to int8 with power-of-two scales (calibrated on seeded random inputs), compiled for
the accelerator (every conv after the first and the dense layer as fused kernels: bias, requant,
ReLU and the residual add or the 1x1 downsampling conv in one Program; the first conv and the
pools on the CPU), run on the cycle-level simulator, compared bit for bit with the numpy
quantized reference and against fp32; prints the per-layer report (where it ran, cycles, GEMM
utilization, DRAM bytes, roofline side, quantization error) and the totals.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from compiler.bench import vta_net as V
from compiler.bench.vta import _bound
from vta import VTAError
from vta.config import VTAConfig


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="sim", help="sim, fsim or rtl (default sim)")
    parser.add_argument("--config", default=None, help="preset, configuration string or file")
    parser.add_argument("--calibration", default="minmax", choices=("minmax", "percentile"))
    parser.add_argument("--candidates", type=int, default=24, help="knob settings timed per layer")
    parser.add_argument("--db", default=None, help="tuning records (vta tune ... --target vta)")
    parser.add_argument("--agreement", type=int, default=10, help="seeded inputs for top-1")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--plot", metavar="PNG", help="write the layers' roofline plot")
    args = parser.parse_args()
    cfg = VTAConfig.load(args.config)
    rng = np.random.default_rng(0)
    params = V.resnet18_params(0)
    calib = rng.standard_normal((4, 3, 224, 224)).astype(np.float32)
    q = V.quantize_resnet18(params, V.calibrate(params, calib, args.calibration))
    try:
        net = V.compile_resnet18(q, cfg, args.candidates, args.db)
        x = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
        start = time.perf_counter()
        acts, rows, cpu = V.run_resnet18(net, x, args.device)
        wall = time.perf_counter() - start
    except VTAError as err:
        print(f"demo: error: {err}", file=sys.stderr)
        return 2
    ref, f32 = V.forward_int(q, x), V.forward_f32(params, x)
    exact = [k for k in ref if not np.array_equal(acts[k], ref[k])]
    errors = V.quant_errors(f32, ref, q.exps)
    for r in rows:
        r["quant_error"] = errors.get(r["name"])
        if r["where"] == "vta":
            r["bound"] = _bound(r["intensity"], cfg)
    agree = 1 + sum(
        V.forward_f32(params, xi)["fc"].argmax() == V.forward_int(q, xi)["fc"].argmax()
        for xi in rng.standard_normal((args.agreement - 1, 1, 3, 224, 224)).astype(np.float32)
    )
    agree = agree if f32["fc"].argmax() == ref["fc"].argmax() else agree - 1
    report = {
        "config": cfg.name,
        "device": args.device,
        "calibration": f"{args.calibration} on 4 seeded random inputs",
        "cycles": None if args.device == "fsim" else sum(r.get("cycles", 0) for r in rows),
        "layers": rows,
        "cpu_seconds": cpu,
        "run_seconds": wall,
        "compile_seconds": net.compile_seconds,
        "bit_exact": not exact,
        "output_error": errors["fc"],
        "top1_agreement": f"{agree}/{args.agreement}",
    }
    if args.plot:
        V.plot_roofline(rows, cfg, args.plot, "ResNet-18")
    if args.json:
        print(json.dumps(report, indent=1, default=float))
        return 0 if not exact else 1
    print(f"{'layer':11} {'where':5} {'cycles':>9} {'util':>6} {'KB':>7} {'bound':8} {'qerr':>6}")
    for r in rows:
        qe = f"{r['quant_error']:6.3f}" if r.get("quant_error") is not None else "      "
        if r["where"] == "cpu":
            print(f"{r['name']:11} cpu   {'':>9} {'':>6} {'':>7} {'':8} {qe}  ({r['why']})")
            continue
        cycles, util = r["cycles"] or 0, r["gemm_utilization"] or 0.0  # fsim counts no time
        print(
            f"{r['name']:11} vta   {cycles:9d} {util:6.3f} "
            f"{r['dram_bytes'] / 1e3:7.0f} {r['bound']:8} {qe}"
        )
    total = "no" if report["cycles"] is None else f"{report['cycles']:,}"
    print(
        f"total: {total} accelerator cycles on {args.device} ({cfg.name}), "
        f"CPU parts {cpu:.2f} s, compile {net.compile_seconds:.1f} s"
    )
    print(
        f"outputs bit-identical to the numpy quantized reference: {not exact}"
        + (f" (differ: {', '.join(exact)})" if exact else "")
    )
    print(
        f"vs fp32: max output error {errors['fc']:.3f} of max|fp32|; top-1 agreement "
        f"{report['top1_agreement']} seeded inputs (calibration: {report['calibration']})"
    )
    return 0 if not exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
