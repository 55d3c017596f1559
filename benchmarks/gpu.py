"""The GPU benchmark behind scripts/bench_gpu.py: every kernel of the GPU target's workloads
(matmul 1024^3 and a non-divisible one, ResNet-18's conv layers, MobileNet depthwise layers,
softmax) built with its default config: ptxas's registers, shared memory and spills per kernel
for each architecture, and, where a CUDA GPU exists, our time against a cuBLAS/cuDNN-backed peer
(torch, else cupy for matmul) measured in the same run, with the ratio."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from compiler.runtime.cuda import cuda_status, time_module
from compiler.tune.measure import random_arrays
from compiler.tune.task import create_task
from compiler.tune.templates.cuda import default_build
from compiler.tune.templates.resnet18 import LAYERS, resnet18_task_args

WORKLOADS: list[tuple[str, str, tuple]] = [
    ("matmul 1024^3", "matmul", (1024, 1024, 1024)),
    ("matmul 1000x999x777", "matmul", (1000, 999, 777)),
    *[(f"resnet18 {n}", *resnet18_task_args(n, "cuda")) for n in LAYERS],
    ("mobilenet dw 32x112", "depthwise_conv2d_nchw", (32, 112, 112, 3, 1, 1)),
    ("mobilenet dw 512x14", "depthwise_conv2d_nchw", (512, 14, 14, 3, 1, 1)),
    ("softmax 4096x1000", "softmax", (4096, 1000)),
]


@dataclass
class KernelRow:
    """One kernel of one workload on one architecture."""

    workload: str
    arch: str
    kernel: str
    grid: str
    block: str
    registers: int
    shared_bytes: int
    spill_bytes: int
    build_s: float
    ours_ms: float | None = None
    peer: str | None = None
    peer_ms: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.ours_ms is None or self.peer_ms is None:
            return None
        return self.ours_ms / self.peer_ms


def _peer_ms(op: str, args: tuple, inputs: list[np.ndarray]) -> tuple[str, float] | None:
    """The peer's time (ms) of the same workload on the GPU: torch (cuBLAS/cuDNN) or cupy."""
    try:
        import torch  # noqa: PLC0415 - an optional peer
        import torch.nn.functional as F  # noqa: N812, PLC0415
    except ImportError:
        return None
    x = [torch.from_numpy(a).cuda() for a in inputs]
    if op == "matmul":
        fn = lambda: x[0] @ x[1]  # noqa: E731
    elif op == "conv2d_nchw":
        fn = lambda: F.conv2d(x[0], x[1], stride=args[6], padding=args[7])  # noqa: E731
    elif op == "depthwise_conv2d_nchw":
        fn = lambda: F.conv2d(x[0], x[1], stride=args[4], padding=args[5], groups=args[0])  # noqa: E731
    else:
        fn = lambda: torch.softmax(x[0], dim=-1)  # noqa: E731
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for _ in range(5):
        start.record()
        for _ in range(10):
            fn()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / 10)
    return "torch", best


def run(archs: tuple[str, ...] = ("sm_80", "sm_90"), only: str | None = None) -> dict[str, Any]:
    """Rows for every workload and architecture, plus whether timing was possible and why."""
    reason = cuda_status()
    rows: list[KernelRow] = []
    for label, op, args in WORKLOADS:
        if only and only not in label:
            continue
        for arch in archs:
            task = create_task(op, args, f"cuda -arch={arch}")
            start = time.perf_counter()
            cfg, module = default_build(task)
            build_s = time.perf_counter() - start
            for k in module.kernels:
                st = module.stats[k.name]
                rows.append(
                    KernelRow(
                        label,
                        arch,
                        k.name,
                        "x".join(map(str, k.grid)),
                        "x".join(map(str, k.block)),
                        st.registers,
                        st.shared_bytes,
                        st.spills,
                        build_s,
                    )
                )
            if reason is None:
                _time(rows[-1], module, task, op, args)
    return {"rows": [{**asdict(r), "ratio": r.ratio} for r in rows], "timing": reason or "ok"}


def _time(row: KernelRow, module: Any, task: Any, op: str, args: tuple) -> None:
    _, tensors = task.instantiate(task.config_space.get(0))
    specs = [(tuple(t.shape), t.dtype) for t in tensors]
    inputs = random_arrays(specs[:-1])
    costs, _ = time_module(module, [*inputs, np.zeros(*specs[-1])])
    row.ours_ms = min(costs) * 1e3
    peer = _peer_ms(op, args, inputs)
    if peer is not None:
        row.peer, row.peer_ms = peer


def format_table(report: dict[str, Any]) -> str:
    head = (
        f"{'workload':<22} {'arch':<6} {'grid':>11} {'block':>9} {'regs':>5} {'smem B':>7} "
        f"{'spill B':>7} {'build s':>8} {'ours ms':>8} {'peer ms':>8} {'ratio':>6}"
    )
    lines = [head, "-" * len(head)]
    for r in report["rows"]:
        ours = f"{r['ours_ms']:.3f}" if r["ours_ms"] is not None else "-"
        peer = f"{r['peer_ms']:.3f}" if r["peer_ms"] is not None else "-"
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "-"
        lines.append(
            f"{r['workload']:<22} {r['arch']:<6} {r['grid']:>11} {r['block']:>9} "
            f"{r['registers']:>5} {r['shared_bytes']:>7} {r['spill_bytes']:>7} "
            f"{r['build_s']:>8.2f} {ours:>8} {peer:>8} {ratio:>6}"
        )
    if report["timing"] != "ok":
        lines.append(f"no timing was possible: {report['timing']}")
    return "\n".join(lines)
