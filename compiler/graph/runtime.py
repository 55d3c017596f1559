"""The board runtime: a compiled model's folder (`vta compile`) loaded and run with numpy, ctypes
and the `vta` package alone (no LLVM, no graph passes, no tuner), so a PYNQ board's Python runs
what this machine compiled (`vta run DIR`, which `vta deploy` runs there; docs/pynq.md).

A `HybridModule` holds the accelerator groups as Programs (`AccelConv`, run by any device)
beside the CPU groups' native kernels (each run of consecutive CPU groups one
`graph_module.GraphModule`, one native call), and the boundary Quantize / Dequantize nodes in
numpy. Activations are packed into the accelerator's layout where the accelerator first reads
them and stay packed between its groups (where BLOCK_OUT differs from BLOCK_IN, an output's
BLOCK_OUT lanes are unpacked and packed again in BLOCK_IN lanes for its reader, and a residual
as `pack_residual` says).
`run(feeds, device)` checks every accelerator group's output bit for bit against the quantized
reference kernel on the same inputs
(`reference.vta_conv`); with device None the accelerator groups run that kernel. Saved to a
folder (`model.json`, each CPU segment's GraphModule folder, each accelerator group's Program
file, `accel.npz` with the quantized weights) and loaded without calibrating, searching or
compiling. `hybrid.py` compiles one. A run's report (`run_vta`) gives the latency on the board
as timed where it ran and as modelled for the configuration's board (`board_model`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hw.parts import CPU, EFFICIENCY, part_for
from vta.config import VTAConfig
from vta.device import get_device
from vta.errors import ConfigError
from vta.program import Program
from vta.stats import Stats

from ..errors import LoweringError, OperatorError
from . import quant as Q
from .graph_module import BoardGraph, GraphModule
from .ir import Graph, Node
from .reference import run, run_node

FORMAT = "vta-model-1"


def pad_to(n: int, block: int) -> int:
    """`n` rounded up to a multiple of `block`."""
    return -(-n // block) * block


def pack_act(x: np.ndarray, cfg: VTAConfig) -> np.ndarray:
    """NCHW int8 -> (N/b, C'/c, H, W, b, c), channels zero-padded to the block."""
    n, c, h, w = x.shape
    bn, bc = cfg.batch, cfg.block_in
    if n % bn:
        raise LoweringError(f"batch {n} is not a multiple of the configuration's batch {bn}")
    x = np.pad(x, ((0, 0), (0, pad_to(c, bc) - c), (0, 0), (0, 0)))
    x = x.reshape(n // bn, bn, -1, bc, h, w).transpose(0, 2, 4, 5, 1, 3)
    return np.ascontiguousarray(x)


def pack_residual(x: np.ndarray, cfg: VTAConfig) -> np.ndarray:
    """NCHW int8 -> a fused conv's residual: each block of BLOCK_OUT channels in BLOCK_IN lanes
    (zero past BLOCK_OUT), or in BLOCK_OUT/BLOCK_IN input elements where BLOCK_OUT is wider:
    (N/b, C'/o, H, W, [o/c,] b, c); `pack_act` where the blocks are equal."""
    n, c, h, w = x.shape
    bo, bc = cfg.block_out, cfg.block_in
    x = np.pad(x, ((0, 0), (0, pad_to(c, bo) - c), (0, 0), (0, 0)))
    if bo < bc:  # every block of bo channels padded to bc
        x = x.reshape(n, -1, bo, h, w)
        x = np.pad(x, ((0, 0), (0, 0), (0, bc - bo), (0, 0), (0, 0))).reshape(n, -1, h, w)
    packed = pack_act(x, cfg)
    if bo <= bc:
        return packed
    nb, cb, _, _, bn, _ = packed.shape
    packed = packed.reshape(nb, cb * bc // bo, bo // bc, h, w, bn, bc)
    return np.ascontiguousarray(packed.transpose(0, 1, 3, 4, 2, 5, 6))


def unpack_act(x: np.ndarray, channels: int) -> np.ndarray:
    """(N/b, C'/c, H, W, b, c) -> NCHW with the first `channels` channels."""
    n, c, h, w, bn, bc = x.shape
    out = x.transpose(0, 4, 1, 5, 2, 3).reshape(n * bn, c * bc, h, w)
    return np.ascontiguousarray(out[:, :channels])


def pack_weight(w: np.ndarray, cfg: VTAConfig) -> np.ndarray:
    """OIHW int8 -> (O'/o, I'/i, KH, KW, o, i), both channel counts zero-padded."""
    o, i, kh, kw = w.shape
    bo, bi = cfg.block_out, cfg.block_in
    w = np.pad(w, ((0, pad_to(o, bo) - o), (0, pad_to(i, bi) - i), (0, 0), (0, 0)))
    w = w.reshape(-1, bo, w.shape[1] // bi, bi, kh, kw).transpose(0, 2, 4, 5, 1, 3)
    return np.ascontiguousarray(w)


def pack_depthwise_weight(w: np.ndarray, cfg: VTAConfig) -> np.ndarray:
    """Depthwise C1HW int8 -> (C'/o, 1, KH, KW, o, i): per block and tap the diagonal matrix of
    its channels' weights (a depthwise fused conv's GEMM operand; needs BLOCK_IN == BLOCK_OUT)."""
    c, _, kh, kw = w.shape
    bo = cfg.block_out
    blocks = np.pad(w[:, 0], ((0, pad_to(c, bo) - c), (0, 0), (0, 0))).reshape(-1, bo, kh, kw)
    diagonal = np.einsum("bokl,oi->bkloi", blocks, np.eye(bo, cfg.block_in, dtype=np.int8))
    return np.ascontiguousarray(diagonal[:, None])


def pack_bias(bias: np.ndarray, cfg: VTAConfig) -> np.ndarray:
    """int32 per output channel -> (O'/o, b, o), zero-padded, the same for each batch row."""
    o, bo = bias.shape[0], cfg.block_out
    padded = np.zeros(pad_to(o, bo), np.int32)
    padded[:o] = bias
    shape = (pad_to(o, bo) // bo, cfg.batch, bo)
    return np.ascontiguousarray(np.broadcast_to(padded.reshape(-1, 1, bo), shape))


def identity_weight(shift: int, cfg: VTAConfig) -> np.ndarray:
    """The weight 2^shift * I that adds a residual tile (`pack_residual`) into the
    accumulator: (1, max(1, BLOCK_OUT/BLOCK_IN), 1, 1, BLOCK_OUT, BLOCK_IN)."""
    eye = np.eye(cfg.block_out, dtype=np.int8) << shift
    return pack_weight(eye[:, :, None, None], cfg)


@dataclasses.dataclass
class AccelConv:
    """One offloaded layer: its Program, the packed constant inputs the Program reads, and
    the knobs it was built with (by name)."""

    name: str
    knobs: dict[str, int]
    consts: dict[str, np.ndarray]
    out_channels: int
    program: Program

    @classmethod
    def of(cls, name: str, q: Q.QConv, cfg: VTAConfig, knobs: dict, program: Program) -> AccelConv:
        """The layer of quantized conv `q` run by `program` (built with `knobs`), which must
        be of this configuration and read the layer's buffers."""
        pack = pack_depthwise_weight if q.depthwise else pack_weight
        consts = {"kernel": pack(q.weight, cfg)}
        if q.sc_weight is not None:
            consts["sc_kernel"] = pack_weight(q.sc_weight, cfg)
        consts["bias"] = pack_bias(q.bias, cfg)
        if q.residual_shift is not None:
            consts["eye"] = identity_weight(q.residual_shift, cfg)
        if program.config != cfg or {b.name for b in program.buffers} < {"data", "out", *consts}:
            raise LoweringError(f"{name}: its Program is not one of this layer and configuration")
        return cls(name, dict(knobs), consts, q.weight.shape[0], program)

    def run(
        self,
        device: str,
        x: np.ndarray,
        residual: np.ndarray | None = None,
        sc_in: np.ndarray | None = None,
    ) -> tuple[np.ndarray, Stats]:
        """Run on `device` with packed activations; the packed int8 output and the Stats."""
        feed = {"data": x, **self.consts}
        if residual is not None:
            feed["residual"] = residual
        if sc_in is not None:
            feed["sc_data"] = sc_in
        outs, stats = get_device(device).run(self.program, feed)
        return outs["out"], stats


@dataclasses.dataclass
class AccelProduct:
    """An offloaded attention product (a `VTAMatMul` node): one Program over its heads as the
    batch, each with its own weight and bias (`Epilogue.batch_weights`; `quant.product_qconv`:
    the bias depends on the weight), packed on the CPU from the run-time int8 operand before
    the run, as activations are packed at CPU boundaries; the knobs it was built with."""

    name: str
    knobs: dict[str, int]
    program: Program

    def run(
        self, device: str, cfg: VTAConfig, attrs: dict, x: np.ndarray, w: np.ndarray
    ) -> tuple[np.ndarray, Stats]:
        """Run on `device` with packed activation `x` (1, H*K/c, ..., 1, c) and int8 weight `w`
        (H*M, K, 1, 1) (batch 1): the packed int8 output (1, H*M/o, ..., 1, o) and Stats."""
        heads = attrs["heads"]
        m = w.shape[0] // heads
        heads_q = [Q.product_qconv(attrs, w[h * m : (h + 1) * m]) for h in range(heads)]
        feed = {
            "data": x.reshape(heads, x.shape[1] // heads, *x.shape[2:]),
            "kernel": np.concatenate([pack_weight(q.weight, cfg) for q in heads_q]),
            "bias": np.concatenate([pack_bias(q.bias, cfg) for q in heads_q]),
        }
        outs, stats = get_device(device).run(self.program, feed)
        out = outs["out"]
        return out.reshape(1, -1, *out.shape[2:]), stats


def report_row(layer: AccelConv | AccelProduct, st: Stats) -> dict:
    """A report row of an offloaded layer's run: cycles, GEMM utilization, DRAM bytes, FLOPs
    (2 per MAC, channels padded to the block) and its arithmetic intensity (ops per DRAM
    byte)."""
    dram = sum(st.bytes_loaded.values()) + st.bytes_stored
    return {
        "name": layer.name,
        "where": "vta",
        "cycles": st.cycles,
        "flops": 2 * st.macs,
        "gemm_utilization": st.utilization,
        "dram_bytes": dram,
        "intensity": 2 * st.macs / dram,
    }


def roofline_side(intensity: float, cfg: VTAConfig) -> str:
    """Compute- or memory-bound on the configuration's roofline (ridge = peak / bandwidth)."""
    ridge = cfg.macs_per_cycle * 2 / cfg.bus_bytes
    return "compute" if intensity >= ridge else "memory"


def qconv_of_node(node: Node, constants: Mapping[str, np.ndarray]) -> Q.QConv:
    """The QConv of a VTAConv node."""
    w, b = constants[node.inputs[1]], constants[node.inputs[2]]
    return Q.qconv_of(node.attrs, w, b, constants[node.inputs[5]] if node.inputs[5] else None)


@dataclasses.dataclass
class Step:
    """One step: `kind` cpu (a GraphModule over `inputs` -> `outputs`), quantize / dequantize
    (numpy), or vta (an AccelConv); `groups` names the graph's groups it runs."""

    kind: str
    name: str
    inputs: list[str]
    outputs: list[str]
    groups: list[str]
    reason: str = ""
    module: GraphModule | BoardGraph | None = None
    node: Node | None = None
    accel: AccelConv | AccelProduct | None = None
    shapes: tuple = ()  # vta: the NCHW shapes of its input and shortcut input (or None)


@dataclasses.dataclass
class HybridModule:
    """A compiled model for one accelerator configuration (see the module's docstring), or,
    with `cfg` None, for the CPU alone (one step: the whole graph's GraphModule): the one
    compiled-model folder format of both targets."""

    cfg: VTAConfig | None
    steps: list[Step]
    inputs: dict[str, tuple[int, ...]]
    outputs: list[str]
    constants: dict[str, np.ndarray]
    compile_seconds: float = 0.0
    calibration: str = ""
    compile_times: dict[str, float] = dataclasses.field(default_factory=dict)  # by stage
    fp32: Graph | None = None  # the fp32 graph it was compiled from (not saved)

    def run(
        self, feeds: dict[str, np.ndarray], device: str | None = None, check: bool = True
    ) -> tuple[dict[str, np.ndarray], list[dict]]:
        """(outputs by name, one report row per step) on `device` (None: the accelerator
        groups in numpy), each accelerator group checked against the reference kernel unless
        not `check` (on a board the check is seconds of its CPU); raises OperatorError naming
        the inputs given wrongly."""
        if set(feeds) != set(self.inputs):
            raise OperatorError(f"inputs: give exactly {sorted(self.inputs)}, got {sorted(feeds)}")
        env = {}
        for t, shape in self.inputs.items():
            env[t] = np.asarray(feeds[t], np.float32)
            if env[t].shape != shape:
                raise OperatorError(f"input '{t}' has shape {list(env[t].shape)}, expected "
                                    f"{list(shape)}")  # fmt: skip
        env.update(self.constants)
        packed: dict[str, np.ndarray] = {}
        rows = []
        for step in self.steps:
            start = time.perf_counter()
            if step.kind == "cpu":
                env.update(step.module.run({t: env[t] for t in step.inputs}))
                rows.append(self._row(step, "llvm", start, *_segment_work(step.module.manifest)))
            elif step.kind == "vta" and device is not None:
                rows.append(self._device(step, env, packed, device, check))
            else:
                node = step.node
                ins = [env[t] if t else None for t in node.inputs]
                outs = run_node(node, ins)
                env.update(zip(node.outputs, outs, strict=True))
                moved = sum(a.nbytes for a in (*ins, *outs) if a is not None)
                rows.append(self._row(step, "numpy", start, 0, moved))
        return {t: env[t] for t in self.outputs}, rows

    def _row(self, step: Step, kernel: str, start: float, flops: int, nbytes: int) -> dict:
        took = time.perf_counter() - start
        where = "vta" if step.kind == "vta" else "cpu"
        row = {"name": step.name, "where": where, "why": step.reason, "cpu_seconds": took}
        return {**row, "kernel": kernel, "groups": step.groups, "flops": flops, "bytes": nbytes}

    def _device(self, step: Step, env: dict, packed: dict, device: str, check: bool) -> dict:
        """Run an accelerator step on `device`; with `check`, its output must equal the
        reference kernel's (the row's `bit_exact` is None without)."""
        node = step.node
        run = self._product if node.op == "VTAMatMul" else self._conv
        y, stats = run(step, env, packed, device)
        if check:
            expected = run_node(node, [env[t] if t else None for t in node.inputs])[0]
            if not np.array_equal(y, expected):
                bad = int((y != expected).sum())
                raise OperatorError(f"{step.name}: {device} differs from the quantized reference "
                                    f"in {bad} of {y.size} values")  # fmt: skip
        env[node.outputs[0]] = y
        return {
            **report_row(step.accel, stats),
            "why": step.reason,
            "bit_exact": True if check else None,
        }

    def _packed(self, t: str, env: dict, packed: dict) -> np.ndarray:
        if t not in packed:
            packed[t] = pack_act(env[t], self.cfg)
        return packed[t]

    def _conv(self, step: Step, env: dict, packed: dict, device: str) -> tuple[np.ndarray, Stats]:
        """A VTAConv step's NCHW int8 output and Stats (its output kept packed for a reader
        where BLOCK_OUT is BLOCK_IN)."""
        node, layer, cfg = step.node, step.accel, self.cfg
        x, res, sc = node.inputs[0], node.inputs[3], node.inputs[4]
        same = cfg.block_out == cfg.block_in  # outputs and residuals in the inputs' layout
        res_in = None if not res else self._packed(res, env, packed) if same else pack_residual(
            env[res], cfg)  # fmt: skip
        sc_in = self._packed(sc, env, packed) if sc else None
        out, stats = layer.run(device, self._packed(x, env, packed), res_in, sc_in)
        y = unpack_act(out, layer.out_channels)
        hi = node.attrs["clip_hi"]
        if hi < 127:  # Clip's upper bound: an int8 minimum on the CPU
            y = np.minimum(y, np.int8(hi))
        elif same:  # else a reader packs y again
            packed[node.outputs[0]] = out
        return y, stats

    def _product(self, step: Step, env: dict, packed: dict, device: str) -> tuple:
        """A VTAMatMul step's NCHW int8 output and Stats (`AccelProduct.run`)."""
        node, cfg = step.node, self.cfg
        x, w = node.inputs
        out, stats = step.accel.run(device, cfg, node.attrs, self._packed(x, env, packed), env[w])
        if cfg.block_out == cfg.block_in:
            packed[node.outputs[0]] = out
        return unpack_act(out, out.shape[1] * cfg.block_out), stats

    # ---- save and load ------------------------------------------------------------------
    def save(self, folder: str | Path) -> None:
        """model.json, accel.npz (quantized weights, biases, the constants numpy steps read),
        cpu<k>/ (each CPU segment's GraphModule) and <group>.npz (each accelerator group's
        Program, in the Program file format every device and `vta sim` read)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        steps = []
        for k, s in enumerate(self.steps):
            d = {f: getattr(s, f) for f in ("kind", "name", "inputs", "outputs", "groups",
                                              "reason")}  # fmt: skip
            if s.module is not None:
                d["module"] = f"cpu{k}"
                s.module.save(folder / d["module"])
            if s.node is not None:
                n = s.node
                d["node"] = {"op": n.op, "inputs": n.inputs, "outputs": n.outputs,
                             "attrs": n.attrs, "name": n.name}  # fmt: skip
            if s.accel is not None:
                d["knobs"] = s.accel.knobs
                d["program"] = f"{s.name}.npz"
                s.accel.program.save(folder / d["program"])
                d["shapes"] = [None if x is None else list(x) for x in s.shapes]
            steps.append(d)
        manifest = {
            "format": FORMAT,
            "target": "llvm" if self.cfg is None else "vta",
            "config": None if self.cfg is None else self.cfg.to_dict(),
            "inputs": {t: list(v) for t, v in self.inputs.items()},
            "outputs": self.outputs,
            "calibration": self.calibration,
            "steps": steps,
        }
        (folder / "model.json").write_text(json.dumps(manifest, indent=1, default=int))
        np.savez(folder / "accel.npz", **self.constants)

    @staticmethod
    def is_saved(folder: str | Path) -> bool:
        return (Path(folder) / "model.json").is_file()

    @staticmethod
    def saved_target(folder: str | Path) -> str | None:
        """The target a folder `save` wrote was compiled for (llvm or vta), None for any
        other path."""
        try:
            target = json.loads((Path(folder) / "model.json").read_text()).get("target")
        except (OSError, ValueError, AttributeError):
            return None
        return target if target in ("llvm", "vta") else None

    @classmethod
    def cpu_only(cls, module: GraphModule | BoardGraph) -> HybridModule:
        """A model compiled for the CPU alone (`vta compile --target llvm`) as one step."""
        inputs = {s.name: tuple(s.shape) for s in module.inputs}
        outputs = [s.name for s in module.outputs]
        step = Step("cpu", "graph", list(inputs), outputs, [], "", module=module)
        return cls(None, [step], inputs, outputs, {})

    @classmethod
    def load(cls, folder: str | Path) -> HybridModule:
        """The module `save` wrote, its Programs read back (validated, as every Program file)."""
        folder = Path(folder)
        try:
            m = json.loads((folder / "model.json").read_text())
            if m.get("format") != FORMAT:
                raise OperatorError(f"{folder}: model.json is not a {FORMAT} manifest")
            cfg = None if m["config"] is None else VTAConfig.from_dict(m["config"])
            with np.load(folder / "accel.npz", allow_pickle=False) as z:
                constants = {k: z[k] for k in z.files}
            steps = []
            for d in m["steps"]:
                node = Node(**d["node"]) if "node" in d else None
                step = Step(d["kind"], d["name"], d["inputs"], d["outputs"], d["groups"],
                            d["reason"], node=node)  # fmt: skip
                if "module" in d:
                    step.module = GraphModule.load(folder / d["module"])
                if "knobs" in d:
                    step.shapes = tuple(None if x is None else tuple(x) for x in d["shapes"])
                    program = Program.load(folder / d["program"])
                    if node.op == "VTAMatMul":
                        step.accel = AccelProduct(node.name, d["knobs"], program)
                    else:
                        q = qconv_of_node(node, constants)
                        step.accel = AccelConv.of(node.name, q, cfg, d["knobs"], program)
                steps.append(step)
        except (OSError, KeyError, TypeError, ValueError) as e:
            why = f"{type(e).__name__}: {e}"
            raise OperatorError(f"{folder}: not a compiled model ({why})") from None
        inputs = {t: tuple(v) for t, v in m["inputs"].items()}
        return cls(cfg, steps, inputs, m["outputs"], constants, 0.0, m.get("calibration", ""))


def _segment_work(manifest: dict) -> tuple[int, int]:
    """A compiled CPU segment's FLOPs and DRAM bytes: its kernels' FLOPs; its inputs, outputs
    and parameters moved once and its arena (the intermediate tensors) written and read once."""
    flops = sum(s["flops"] for s in manifest["steps"])
    tensors = [*manifest["inputs"], *manifest["outputs"], *manifest["params"]]
    nbytes = sum(math.prod(t["shape"]) * np.dtype(t["dtype"]).itemsize for t in tensors)
    return flops, nbytes + 2 * manifest["arena_bytes"]


def time_inferences(
    graph: GraphModule, inputs: Mapping[str, np.ndarray], repeat: int
) -> dict[str, float]:
    """The median, minimum and maximum latency in ms of `repeat` inferences."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        graph.run(dict(inputs))
        times.append((time.perf_counter() - t) * 1e3)
    return {"median": float(np.median(times)), "min": min(times), "max": max(times)}


def board_model(
    rows: list[dict], cfg: VTAConfig, efficiency: float = EFFICIENCY, cpu: CPU | None = None
) -> dict | None:
    """One inference on the configuration's board, modelled: the accelerator's cycles at the
    configuration's clock plus each CPU row's time on the board's CPU (`hw.parts.CPU`, of the
    configuration's part unless `cpu` is given: compiled kernels on every core, numpy steps on
    one, at `efficiency` of its peaks); the CPU's share of the latency, and the offloaded
    layers' time were they run on that CPU (the speed-up the accelerator gives them). Sets each
    CPU row's `board_ms`. None for a part of no CPU table; no latency without cycles."""
    if cpu is None:
        try:
            cpu = part_for(cfg.fpga_part).cpu
        except ConfigError:
            return None
    cpu_ms = 0.0
    for r in rows:
        if r["where"] == "cpu":
            threads = cpu.cores if r["kernel"] == "llvm" else 1
            r["board_ms"] = cpu.seconds(r["flops"], r["bytes"], threads, efficiency) * 1e3
            cpu_ms += r["board_ms"]
    accel = [r for r in rows if r["where"] == "vta"]
    offloaded = sum(cpu.seconds(r.get("flops", 0), r.get("dram_bytes", 0), cpu.cores, efficiency)
                    for r in accel) * 1e3  # fmt: skip
    cycles = [r.get("cycles") for r in accel]
    accel_ms = None if None in cycles else sum(cycles) / (cfg.clock_mhz * 1e3)
    latency = None if accel_ms is None else accel_ms + cpu_ms
    return {
        "cpu": cpu.describe(),
        "efficiency": efficiency,
        "accelerator_ms": accel_ms,
        "cpu_ms": cpu_ms,
        "latency_ms": latency,
        "cpu_share": None if not latency else cpu_ms / latency,
        "offloaded_on_cpu_ms": offloaded,
        "offload_speedup": offloaded / accel_ms if accel_ms else None,
    }


def board_latency_ms(cycles: int | None, cfg: VTAConfig, cpu_seconds: float) -> float | None:
    """One inference's latency on the board in milliseconds: the accelerator's `cycles` at the
    configuration's clock, then the CPU steps' `cpu_seconds` as timed where they ran (on the
    board, its own CPU); None without cycles (fsim counts none)."""
    if cycles is None:
        return None
    return cycles / (cfg.clock_mhz * 1e3) + cpu_seconds * 1e3


def run_vta(
    compiled: HybridModule,
    inputs: Mapping[str, np.ndarray],
    device: str = "sim",
    model: str = "",
    plot: str | None = None,
    efficiency: float = EFFICIENCY,
    check: bool = True,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Run the compiled model on `device`, every accelerator group checked bit for bit against
    the quantized reference kernel on its inputs unless not `check` (`HybridModule.run` raises
    on a difference; `bit_exact` is None unchecked);
    returns the report (per-step rows: where each ran and why, cycles, GEMM utilization, DRAM
    bytes, roofline side, FLOPs, a CPU step's time, kernel and DRAM bytes; totals;
    `latency_ms`: `board_latency_ms`; `board`: `board_model` at `efficiency`; `bit_exact`:
    every group matched; `output_error` against the fp32 graph where the model was compiled in
    this process) and the outputs by name. `plot` writes the groups' roofline plot
    (matplotlib)."""
    cfg = compiled.cfg
    # the device run checks each accelerator group against the reference kernel on the same
    # inputs (a difference raises), so a second, reference run would compute them again
    start = time.perf_counter()
    outputs, rows = compiled.run(dict(inputs), device, check)
    wall = time.perf_counter() - start
    exact = all(r["bit_exact"] for r in rows if r["where"] == "vta") if check else None
    error = None
    if compiled.fp32 is not None:
        f32 = run(compiled.fp32, {t: np.asarray(v, np.float32) for t, v in inputs.items()})
        error = max(float(np.abs(outputs[t] - f32[t]).max() / max(np.abs(f32[t]).max(), 1e-30))
                    for t in f32)  # fmt: skip
    for r in rows:
        if r["where"] == "vta" and "intensity" in r:
            r["bound"] = roofline_side(r["intensity"], cfg)
    cycles = None if device == "fsim" else sum(r.get("cycles") or 0 for r in rows)
    cpu_seconds = sum(r["cpu_seconds"] for r in rows if r["where"] == "cpu")
    report = {
        "model": str(model),
        "config": cfg.name,
        "device": device,
        "calibration": compiled.calibration,
        "cycles": cycles,
        "layers": rows,
        "cpu_seconds": cpu_seconds,
        "latency_ms": board_latency_ms(cycles, cfg, cpu_seconds),
        "board": board_model(rows, cfg, efficiency),
        "run_seconds": wall,
        "compile_seconds": compiled.compile_seconds,
        "compile_times": compiled.compile_times,
        "bit_exact": exact,
        "output_error": error,
    }
    if plot:
        plot_roofline([r for r in rows if "intensity" in r], cfg, plot, Path(model).stem)
    return report, outputs


def plot_roofline(rows: list[dict], cfg: VTAConfig, path: str, title: str) -> None:
    """The offloaded layers on the configuration's roofline (peak GOPS, DRAM bandwidth)."""
    import matplotlib  # optional (the 'plot' extra)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bandwidth = cfg.bus_bytes * cfg.clock_mhz * 1e6 / 1e9
    xs = np.logspace(-1, 3, 100)
    fig, ax = plt.subplots(figsize=(7, 5))
    ax.loglog(xs, np.minimum(cfg.peak_gops, bandwidth * xs), "k-", label="roofline")
    accel = [r for r in rows if r["where"] == "vta"]
    gops = [r["gemm_utilization"] * cfg.peak_gops for r in accel]
    ax.scatter([r["intensity"] for r in accel], gops, label="offloaded layers")
    for r, g in zip(accel, gops, strict=True):
        ax.annotate(r["name"], (r["intensity"], g), fontsize=6)
    ax.set_xlabel("arithmetic intensity (ops / DRAM byte)")
    ax.set_ylabel("GOPS")
    ax.set_title(f"{title} on VTA ({cfg.name}, {cfg.clock_mhz:g} MHz)")
    ax.legend()
    fig.savefig(path, dpi=120)
    plt.close(fig)
