"""End-to-end latency of whole networks on the boards, modelled (`scripts/bench_vta.py --board`):
each seeded network of `compiler.zoo` compiled for a board's configuration as `vta compile
--target vta --config CONFIG` does (its CPU layers for this machine, so that the run proves
every accelerator layer bit for bit here), its accelerator layers timed on the cycle-level
simulator at the configuration's clock, and its CPU layers' time on the board's CPU from the
throughput model of `hw.parts` (`runtime.board_model`). Per network and board: the latency,
the CPU's share of it (Amdahl's law: the offloaded convolutions run many times faster than the
board's CPU would run them, so the layers left on the CPU dominate), and the offloaded layers'
time were they run on that CPU.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from compiler import zoo
from compiler.graph.accel_api import compile_vta, run_vta
from hw.parts import EFFICIENCY

NETWORKS = ("resnet18", "mobilenet_v1")
CONFIGS = ("pynq", "ultra96")


def bench_board(model: str, config: str, efficiency: float = EFFICIENCY) -> dict:
    """One network on one board configuration: the report's board model, the CPU rows (name,
    FLOPs, bytes, modelled ms, why they stay on the CPU) and the accelerator's totals."""
    if model not in zoo.NETWORKS:
        raise ValueError(f"model {model!r} is unknown (valid: {', '.join(zoo.NETWORKS)})")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{model}.onnx"
        path.write_bytes(zoo.NETWORKS[model](0))
        compiled = compile_vta(path, config)
        report, _ = run_vta(compiled, zoo.random_inputs(model), "sim", efficiency=efficiency)
    rows = report["layers"]
    cpu = [
        {k: r[k] for k in ("name", "kernel", "flops", "bytes", "board_ms", "why")}
        for r in rows
        if r["where"] == "cpu"
    ]
    accel = [r for r in rows if r["where"] == "vta"]
    return {
        "model": model,
        "config": config,
        "bit_exact": report["bit_exact"],
        "accelerator_layers": len(accel),
        "accelerator_cycles": report["cycles"],
        "accelerator_gflop": sum(r["flops"] for r in accel) / 1e9,
        "cpu_gflop": sum(r["flops"] for r in cpu) / 1e9,
        **report["board"],
        "cpu_layers": cpu,
    }


def print_board(rows: list[dict]) -> None:
    """The latency table, then each network's CPU layers on the first configuration."""
    print(f"end-to-end latency on the board, modelled (CPU layers at {rows[0]['efficiency']:.0%} "
          "of the CPU's peaks; hw/parts.py)")  # fmt: skip
    print(f"{'network':13} {'config':8} {'accel ms':>9} {'CPU ms':>8} {'latency':>8} "
          f"{'CPU share':>9} {'offloaded on CPU':>16} {'speed-up':>8}  CPU")  # fmt: skip
    for r in rows:
        print(f"{r['model']:13} {r['config']:8} {r['accelerator_ms']:9.1f} {r['cpu_ms']:8.1f} "
              f"{r['latency_ms']:8.1f} {r['cpu_share']:9.0%} {r['offloaded_on_cpu_ms']:13.0f} ms "
              f"{r['offload_speedup']:7.1f}x  {r['cpu']}")  # fmt: skip
    seen = set()
    for r in rows:
        if r["model"] in seen:
            continue
        seen.add(r["model"])
        print(f"\n{r['model']} on {r['config']}: CPU layers ({r['cpu_gflop']:.3f} GFLOP; "
              f"{r['accelerator_gflop']:.2f} offloaded in {r['accelerator_layers']} "
              "layers)")  # fmt: skip
        for c in sorted(r["cpu_layers"], key=lambda c: -c["board_ms"])[:8]:
            why = c["why"].split(";")[0]
            print(f"  {c['name']:28} {c['kernel']:5} {c['flops'] / 1e6:9.1f} MFLOP "
                  f"{c['bytes'] / 1e6:7.2f} MB {c['board_ms']:8.2f} ms  {why}")  # fmt: skip
