"""ResNet-18 C2-C12 compiled for the accelerator and run on the cycle-level simulator
(scripts/bench_vta.py, scripts/demo.py).

Per layer: the best knobs of a cheap search (the candidates with the least DRAM traffic, each
built and simulated with its virtual threads), cycles and GEMM utilization with and without the
virtual threads (the same tiles, oc_nthread = h_nthread = 1), GOPS at the configured clock and
DRAM bytes; every output is checked against the int8 numpy reference. Goal: latency hiding
raises utilization on every layer; compute-bound layers reach >= 0.90.

The ALU epilogue shares the compute module with the GEMM, which bounds utilization per layer
(`utilization_ceiling`: MAC cycles over the cycles compute instructions occupy that module, i.e.
the utilization with every load and store hidden). Per output row a 3x3 layer with c
input-channel blocks issues 9c GEMM micro-ops against its epilogue. With the REQ ALU op
(`alu_requant`, on in the default config) the epilogue is reset (1) + one tensor REQ = bias add,
shift and clip (II 2): 3 cycles, so C2/C4 (c = 4) cap at 36/39 = 0.923, C6/C7 0.96, C9/C10
0.98, C12 0.99, and 1x1 layers at c/(c+3): C3/C5 0.57, C8 0.73, C11 0.84. On the reference ISA
(`alu_requant` off) the epilogue is reset + bias add (II 2) + shift + clip max/min = 6 cycles:
C2/C4 cap at 36/42 = 0.857. Layers whose ceiling is below the goal are ALU-bound.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from compiler.errors import LoweringError
from compiler.graph.accel import knob_candidates
from compiler.graph.runtime import identity_weight, roofline_side
from compiler.topi.vta.conv2d import (
    RESNET18,
    Conv2DKnobs,
    Conv2DWorkload,
    conv2d_from_workload,
    default_knobs,
    knob_space,
    schedule_conv2d_packed,
    traffic,
)
from compiler.topi.vta.fused import (
    RESNET18_NETWORK,
    Epilogue,
    conv2d_fused,
    default_fused_knobs,
    fused_reference,
)
from compiler.topi.vta.reference import conv2d_packed_ref
from compiler.vta import build, get_env
from compiler.vta.environment import Environment
from compiler.vta.passes import build_program
from vta.config import VTAConfig
from vta.device import get_device
from vta.program import Program
from vta.stats import Stats

UTILIZATION_GOAL = 0.90
CANDIDATES = 16  # knob settings per layer: many tie on traffic; C4's best ranks 14th
EPILOGUE = dict(shift=8, clip=(0, 127))


def run_layer(
    wl: Conv2DWorkload,
    knobs: Conv2DKnobs,
    inputs: Sequence[np.ndarray],
    device: str = "sim",
    env: Environment | None = None,
) -> tuple[np.ndarray, Stats]:
    """Build the layer (bias, shift, clip epilogue) with `knobs` and run it on `device`."""
    env = env or get_env()
    args, out = conv2d_from_workload(wl, env, bias=True, **EPILOGUE)
    s = schedule_conv2d_packed(out, knobs, env)
    mod = build(s, [*args, out], config=env.config, device=device)
    (res,), stats = mod(*inputs)
    return res, stats


def compute_ceiling(stats: Stats) -> float:
    """Utilization if the compute module never waited for a token: MAC cycles over the cycles
    its instructions occupy it (GEMM, reset, ALU epilogue, ACC/UOP loads, decode, pipeline)."""
    c = stats.modules["compute"]
    return stats.macs / stats.macs_per_cycle / (c.busy + c.stall_dram)


def bench_layer(
    name: str,
    candidates: int,
    rng: np.random.Generator,
    tuned: Conv2DKnobs | None = None,
    config: VTAConfig | str | None = None,
) -> dict:
    """Best of `candidates` low-traffic threaded knob settings (plus `tuned`, e.g. from tuning
    records, when it fits this epilogue), and the same tiles without virtual threads."""
    wl, env = RESNET18[name], get_env(config)
    args, _ = conv2d_from_workload(wl, env, bias=True)
    inputs = [rng.integers(-128, 128, a.shape, dtype=np.int8) for a in args[:2]]
    inputs.append(rng.integers(-4000, 4000, args[2].shape, dtype=np.int32))
    expected = conv2d_packed_ref(inputs[0], inputs[1], wl.stride, wl.pad, inputs[2], **EPILOGUE)
    threaded = [k for k in knob_space(wl, env) if k.oc_nthread * k.h_nthread > 1]
    best = None
    tried = sorted(threaded, key=lambda k: traffic(wl, k))[:candidates]
    for knobs in ([tuned] if tuned else []) + tried:
        try:
            res, stats = run_layer(wl, knobs, inputs, env=env)
        except LoweringError:
            if knobs is tuned:  # tuned without the bias buffer; it may not fit with it
                continue
            raise
        if not np.array_equal(res, expected):
            raise SystemExit(f"{name} {knobs}: output differs from the numpy reference")
        if best is None or stats.cycles < best[1].cycles:
            best = (knobs, stats)
    knobs, stats = best
    serial = dataclasses.replace(knobs, oc_nthread=1, h_nthread=1)
    res, base = run_layer(wl, serial, inputs, env=env)
    if not np.array_equal(res, expected):
        raise SystemExit(f"{name} {serial}: output differs from the numpy reference")
    dram = sum(stats.bytes_loaded.values()) + stats.bytes_stored
    return {
        "layer": name,
        "cycles": stats.cycles,
        "cycles_no_vthread": base.cycles,
        "utilization": stats.utilization,
        "utilization_no_vthread": base.utilization,
        "utilization_ceiling": compute_ceiling(stats),
        "gops": stats.gops,
        "gops_no_vthread": base.gops,
        "dram_bytes": dram,
        "intensity": 2 * stats.macs / dram,
        "intensity_no_vthread": 2
        * base.macs
        / (sum(base.bytes_loaded.values()) + base.bytes_stored),
        "knobs": dataclasses.asdict(knobs),
        "config": env.config.name,
    }


def verdicts(rows: Sequence[dict]) -> tuple[bool, list[str]]:
    """Whether virtual threads raise utilization on every layer, and the ALU-bound layers
    (their ceiling is below UTILIZATION_GOAL)."""
    raised = all(r["utilization"] > r["utilization_no_vthread"] for r in rows)
    return raised, [r["layer"] for r in rows if r["utilization_ceiling"] < UTILIZATION_GOAL]


def roofline(rows: Sequence[dict], path: str | Path, cfg: VTAConfig) -> None:
    """The layers on the configuration's roofline (peak GOPS, DRAM bandwidth), as a PNG."""
    import matplotlib  # optional (the 'plot' extra), and slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    peak = cfg.peak_gops
    bandwidth = cfg.bus_bytes * cfg.clock_mhz * 1e6 / 1e9  # GB/s
    xs = np.logspace(0, 3, 100)
    fig, ax = plt.subplots(figsize=(7, 5))
    ax.loglog(xs, np.minimum(peak, bandwidth * xs), "k-", label="roofline")
    for key, marker, label in (("", "o", "virtual threads"), ("_no_vthread", "x", "serial")):
        ax.scatter(
            [r["intensity" + key] for r in rows],
            [r["gops" + key] for r in rows],
            marker=marker,
            label=label,
        )
    for r in rows:
        ax.annotate(r["layer"], (r["intensity"], r["gops"]), fontsize=7)
    ax.set_xlabel("arithmetic intensity (ops / DRAM byte)")
    ax.set_ylabel("GOPS")
    ax.set_title(f"ResNet-18 on VTA ({cfg.name}, {cfg.clock_mhz:g} MHz)")
    ax.legend()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def print_table(rows: Sequence[dict]) -> None:
    """The per-layer table for people."""
    print(
        f"{'layer':6} {'cycles':>9} {'no-vt':>9} {'util':>6} {'no-vt':>6} {'ceil':>6} "
        f"{'GOPS':>6} {'MB':>6}  knobs (h, w, ci, co, oc_nt, h_nt)"
    )
    for r in rows:
        k = r["knobs"]
        print(
            f"{r['layer']:6} {r['cycles']:9d} {r['cycles_no_vthread']:9d} "
            f"{r['utilization']:6.3f} {r['utilization_no_vthread']:6.3f} "
            f"{r['utilization_ceiling']:6.3f} {r['gops']:6.1f} "
            f"{r['dram_bytes'] / 1e6:6.2f}  ({k['tile_h']}, {k['tile_w']}, {k['tile_ci']}, "
            f"{k['tile_co']}, {k['oc_nthread']}, {k['h_nthread']})"
        )


# ---------------------------------------------------------------------------------- network
# the same network as separate conv kernels of conv2d_packed (no residual adds: they cannot be
# expressed there), the peer of the fused kernels
RESNET18_COUNTS = {"C2": 4, "C4": 1, "C5": 1, "C6": 3, "C7": 1, "C8": 1, "C9": 3, "C10": 1,
                   "C11": 1, "C12": 3}  # fmt: skip
NETWORK_GOAL = 7_000_000


def fused_inputs(
    wl: Conv2DWorkload, ep: Epilogue, program, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Seeded inputs for every input/weight buffer of a conv2d_fused Program."""
    feed = {}
    for b in program.buffers:
        if b.role in ("input", "weight"):
            if b.name == "bias":
                feed[b.name] = rng.integers(-4000, 4000, b.shape).astype(np.int32)
            else:
                feed[b.name] = rng.integers(-128, 128, b.shape).astype(np.int8)
    if "eye" in feed:
        feed["eye"] = identity_weight(ep.residual_shift, program.config)
    return feed


def best_fused(
    wl: Conv2DWorkload, ep: Epilogue, cfg: VTAConfig, candidates: int
) -> tuple[Conv2DKnobs, Stats]:
    """The fastest on the timing-only simulator of the `candidates` knob settings the cycle
    estimate ranks best."""
    best = None
    for knobs in knob_candidates(wl, ep, cfg, candidates, None):
        stats = get_device("sim").time(conv2d_fused(wl, ep, knobs, cfg))
        if best is None or stats.cycles < best[1].cycles:
            best = (knobs, stats)
    return best


def resnet18_programs(cfg: VTAConfig) -> list[tuple[str, Program]]:
    """The Programs of ResNet-18's fused layers with the estimate's default knobs."""
    return [
        (name, conv2d_fused(RESNET18[conv], ep, default_fused_knobs(RESNET18[conv], ep, cfg), cfg))
        for name, conv, ep, _ in RESNET18_NETWORK
    ]


def bench_network(cfg: VTAConfig, candidates: int, check: bool = True) -> dict:
    """ResNet-18's offloaded work as fused kernels (best of `candidates` knob settings each),
    every output checked against numpy on `sim` when `check`; the peer: the same convolutions
    as conv2d_packed kernels with their default knobs (residual adds left out)."""
    env = get_env(cfg)
    rng = np.random.default_rng(0)
    rows = []
    for name, conv, ep, count in RESNET18_NETWORK:
        wl = RESNET18[conv]
        knobs, stats = best_fused(wl, ep, cfg, candidates)
        if check:
            program = conv2d_fused(wl, ep, knobs, cfg)
            feed = fused_inputs(wl, ep, program, rng)
            sc = (feed["sc_data"], feed["sc_kernel"]) if ep.shortcut else None
            want = fused_reference(
                feed["data"], feed["kernel"], wl, ep, feed.get("bias"), feed.get("residual"), sc
            )
            outs, checked = get_device("sim").run(program, feed)
            if not np.array_equal(outs["out"], want) or checked.cycles != stats.cycles:
                raise SystemExit(f"{name} {knobs}: output differs from the numpy reference")
        dram = sum(stats.bytes_loaded.values()) + stats.bytes_stored
        rows.append(
            {
                "layer": name,
                "count": count,
                "cycles": stats.cycles,
                "utilization": stats.utilization,
                "dram_bytes": dram,
                "intensity": 2 * stats.macs / dram,
                "bound": roofline_side(2 * stats.macs / dram, cfg),
                "knobs": dataclasses.asdict(knobs),
            }
        )
    peer = {}
    for conv in RESNET18_COUNTS:
        wl = RESNET18[conv]
        args, out = conv2d_from_workload(wl, env, bias=True, **EPILOGUE)
        s = schedule_conv2d_packed(out, default_knobs(wl, env), env)
        peer[conv] = get_device("sim").time(build_program(s, [*args, out], cfg)[0]).cycles
    total = sum(r["cycles"] * r["count"] for r in rows)
    peer_total = sum(peer[c] * n for c, n in RESNET18_COUNTS.items())
    ideal = sum(RESNET18[c].macs(env) * n for c, n in RESNET18_COUNTS.items())
    return {
        "config": cfg.name,
        "layers": rows,
        "cycles": total,
        "ideal_cycles": ideal // cfg.macs_per_cycle,
        "peer_conv2d_packed_cycles": peer_total,
        "peer_layers": peer,
        "goal": NETWORK_GOAL,
        "met": total <= NETWORK_GOAL,
    }


def print_network(result: dict) -> None:
    print(
        f"{'layer':8} {'x':>2} {'cycles':>9} {'util':>6} {'MB':>6} {'ops/B':>6} {'bound':8} "
        "knobs (h, w, ci, co, oc_nt, h_nt)"
    )
    for r in result["layers"]:
        k = r["knobs"]
        print(
            f"{r['layer']:8} {r['count']:2d} {r['cycles']:9d} {r['utilization']:6.3f} "
            f"{r['dram_bytes'] / 1e6:6.2f} {r['intensity']:6.1f} {r['bound']:8} "
            f"({k['tile_h']}, {k['tile_w']}, {k['tile_ci']}, {k['tile_co']}, "
            f"{k['oc_nthread']}, {k['h_nthread']})"
        )
    total, peer = result["cycles"], result["peer_conv2d_packed_cycles"]
    print(
        f"ResNet-18 offloaded work (convs, residual adds, requant): {total:,} cycles "
        f"(ideal for the convs {result['ideal_cycles']:,}; goal {result['goal']:,}: "
        f"{'met' if result['met'] else 'NOT met'})"
    )
    print(
        f"peer, conv2d_packed kernels without the residual adds: {peer:,} cycles "
        f"(ratio {peer / total:.3f})"
    )
