"""The cost of a design point: the network compiled for it, timed on the timing-only simulator;
its resources and clock from the resource model; its energy from the run's counted events.

`evaluate_point` is what a search's workers run: it takes plain arguments (a model path, a point,
a part) and loads the model once per process (`workload`), so jobs pickle in bytes.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable
from pathlib import Path

from hw.parts import part_for
from hw.resources import Resources, estimate
from vta.config import VTAConfig
from vta.device import get_device

from ..errors import CompilerError
from ..topi.vta.conv2d import Conv2DKnobs, Conv2DWorkload
from .energy import energy
from .ranker import Ranker, sample_rows
from .space import CLOCK_STEP_MHZ, MAX_CLOCK_MHZ, HardwareSpace, Point


@dataclasses.dataclass
class Evaluation:
    """A design point's cost. `error` says why a point could not be compiled (then the costs
    are None); `fits` whether it fits the part at `clock_mhz`."""

    point: Point
    config: dict
    fits: bool
    lut: float
    ff: float
    bram36: float
    dsp: int
    utilisation: dict
    fmax_mhz: float
    clock_mhz: float
    cycles: int | None = None
    layer_cycles: dict | None = None
    energy_mj: float | None = None
    macs: int | None = None
    error: str | None = None
    seconds: float = 0.0
    samples: list | None = None  # the timed candidates as `ranker.sample_rows`
    ranked: bool = False  # knobs among the learned ranker's candidates (else the estimate's)
    board_ms: float | None = None  # one inference on the part's board, modelled (`board_ms`)

    @property
    def latency_ms(self) -> float | None:
        return None if self.cycles is None else self.cycles / (self.clock_mhz * 1e3)

    @property
    def edp(self) -> float | None:
        """Energy-delay product in millijoule-milliseconds."""
        if self.energy_mj is None:
            return None
        return self.energy_mj * self.latency_ms

    @property
    def ok(self) -> bool:
        """Compiled, and fits its part."""
        return self.error is None and self.fits

    def to_dict(self, samples: bool = True) -> dict:
        """The report's object: `config`, `cycles`, `fmax_mhz`, `latency_ms`, `energy_mj`,
        `resources`, `fits`, and the rest; the timed candidates (`samples`, what a store keeps
        for rankers) only if `samples`."""
        out = {
            "label": self.point.label,
            "point": self.point.to_dict(),
            "config": self.config,
            "cycles": self.cycles,
            "fmax_mhz": self.fmax_mhz,
            "clock_mhz": self.clock_mhz,
            "latency_ms": self.latency_ms,
            "energy_mj": self.energy_mj,
            "edp": self.edp,
            "resources": {"lut": self.lut, "ff": self.ff, "bram36": self.bram36, "dsp": self.dsp},
            "utilisation": self.utilisation,
            "fits": self.fits,
            "macs": self.macs,
            "layer_cycles": self.layer_cycles,
            "error": self.error,
            "seconds": self.seconds,
            "ranked": self.ranked,
            "board_ms": self.board_ms,
        }
        return {**out, "samples": self.samples} if samples else out

    @classmethod
    def from_dict(cls, d: dict) -> Evaluation:
        r = d["resources"]
        return cls(
            Point(**d["point"]), d["config"], d["fits"], r["lut"], r["ff"], r["bram36"],
            r["dsp"], d["utilisation"], d["fmax_mhz"], d["clock_mhz"], d["cycles"],
            d["layer_cycles"], d["energy_mj"], d["macs"], d["error"], d["seconds"],
            d.get("samples"), d.get("ranked", False), d.get("board_ms"),
        )  # fmt: skip


def point_clock(fmax_mhz: float, part: str) -> float:
    """The clock a point runs at: its estimated Fmax rounded down to `CLOCK_STEP_MHZ`, at most
    the part's fastest fabric clock."""
    stepped = math.floor(fmax_mhz / CLOCK_STEP_MHZ) * CLOCK_STEP_MHZ
    return max(CLOCK_STEP_MHZ, min(stepped, MAX_CLOCK_MHZ[part]))


def closing(
    space: HardwareSpace, point: Point, clock_mhz: float | None = None, model: dict | None = None
) -> tuple[VTAConfig, Resources]:
    """`point`'s configuration at `clock_mhz`, else at the clock its estimated Fmax gives it
    (`point_clock`), and the resource model's estimate there."""
    if clock_mhz is None:
        fmax = estimate(space.config(point), space.part, model).fmax_mhz
        clock_mhz = point_clock(fmax, space.part.name)
    cfg = space.config(point, clock_mhz)
    return cfg, estimate(cfg, space.part, model)


@dataclasses.dataclass
class Workload:
    """A model prepared once per process: its fused graph and calibration inputs; each
    partition (configurations differ in it only by which groups their batch allows) is
    calibrated and quantized once."""

    graph: object
    inputs: list
    partitions: dict = dataclasses.field(default_factory=dict)

    def quantized(self, cfg: VTAConfig):
        """The graph partitioned and quantized for `cfg` (the compiler only reads it)."""
        from ..graph.passes.partition import partition
        from ..graph.passes.quantize import calibrate, quantize

        graph = partition(self.graph, cfg)
        signature = tuple((g.name, g.target) for g in graph.groups)
        if signature not in self.partitions:
            self.partitions[signature] = quantize(graph, calibrate(graph, self.inputs))
        return self.partitions[signature]

    def estimated_cycles(self, cfg: VTAConfig) -> float:
        """The offloaded layers' cycles on `cfg` by the compiler's cycle estimate
        (`estimate_space`'s best setting per layer): milliseconds, where compiling and
        timing take seconds; the learned search's prior. Infinite where a layer has no
        tiling that fits."""
        from ..graph.hybrid import accelerator_layers
        from ..topi.vta.fused import estimate_space

        total = 0.0
        try:
            layers = accelerator_layers(self.quantized(cfg), cfg).values()
        except CompilerError:
            return math.inf
        for _, _, wl, ep in layers:
            cycles = estimate_space(wl, ep, cfg)
            if not cycles.size:
                return math.inf
            total += float(cycles.min())
        return total

    def board_cpu_ms(self, cfg: VTAConfig) -> float:
        """The CPU layers' modelled time on `cfg`'s board for `cfg`'s partition (`board_ms`
        without accelerator cycles; 0 for a part without a CPU table): with the estimated
        cycles, the learned search's prior of a point's board latency."""
        from ..graph.passes.partition import VTA

        q = self.quantized(cfg)
        return board_ms(q, cfg, {g.name: 0 for g in q.groups if g.target == VTA}) or 0.0


@functools.lru_cache(maxsize=2)
def workload(model: str, calibration: str | None = None) -> Workload:
    """The model at path `model`, fused, with its calibration inputs (the .npz `calibration`, or
    seeded ones), loaded once per process."""
    from ..graph.accel_api import calibration_inputs
    from ..graph.build_onnx import fused_graph

    graph = fused_graph(Path(model))
    return Workload(graph, calibration_inputs(graph, calibration)[0])


def network_prior(
    model: str, space: HardwareSpace, calibration: str | None = None
) -> Callable[[Point], float]:
    """A point's estimated cycles for the model at `model` (`Workload.estimated_cycles`): a
    learned search's prior (`search.Study.prior`; each point's computed once)."""
    w = workload(model, calibration)
    return functools.cache(lambda point: w.estimated_cycles(space.config(point)))


def network_cpu_prior(
    model: str, space: HardwareSpace, calibration: str | None = None
) -> Callable[[Point], float]:
    """A point's CPU layers' modelled time on the board in ms (`Workload.board_cpu_ms`): with
    `network_prior`, a learned search's prior of the `board` objective."""
    w = workload(model, calibration)
    return functools.cache(lambda point: w.board_cpu_ms(space.config(point)))


def board_ms(graph, cfg: VTAConfig, cycles: dict[str, int]) -> float | None:
    """One inference of the quantized `graph` on `cfg`'s board, modelled
    (`graph.runtime.board_model` of `graph.hybrid.board_rows`): the accelerator groups'
    `cycles` at the configuration's clock plus the CPU groups on the board's CPU. The latency
    to compare points by where the partition differs between them (which layers a block size
    or clock lets the accelerator take); None for a part without a CPU table."""
    from ..graph.hybrid import board_rows
    from ..graph.runtime import board_model

    model = board_model(board_rows(graph, cycles), cfg)
    return None if model is None else model["latency_ms"]


def evaluate_point(
    model: str,
    point: Point,
    part: str,
    calibration: str | None = None,
    candidates: int = 8,
    base: str | None = None,
    clock_mhz: float | None = None,
    ranker: Ranker | None = None,
) -> Evaluation:
    """The cost of `point` on `part` for the model at `model` (knobs: the fastest on the
    timing-only simulator of the `candidates` the cycle estimate, or `ranker`, puts first). The
    point runs at `clock_mhz` if given (a preset's own clock), else at `point_clock` of its
    estimated Fmax. The evaluation keeps the timed candidates (`samples`) to train rankers."""
    from ..graph.accel import clear_caches, estimate_rank, timed_candidates
    from ..graph.hybrid import accelerator_programs

    start = time.perf_counter()
    space = HardwareSpace(part, base=VTAConfig.load(base) if base else None)
    cfg, res = closing(space, point, clock_mhz)
    clock = cfg.clock_mhz
    ev = Evaluation(point, cfg.to_dict(), res.fits, res.lut, res.ff, res.bram36, res.dsp,
                    res.utilisation, res.fmax_mhz, clock)  # fmt: skip
    ev.ranked = ranker is not None
    try:
        q = workload(model, calibration).quantized(cfg)
        programs = accelerator_programs(q, cfg, candidates, rank=ranker or estimate_rank)
        ev.samples = sample_rows(timed_candidates())
    except CompilerError as err:  # e.g. no tiling fits the buffers
        ev.error = str(err).splitlines()[0]
    else:
        sim = get_device("sim")
        stats = {name: sim.time(p) for name, p in programs.items()}
        ev.layer_cycles = {name: s.cycles for name, s in stats.items()}
        ev.cycles = sum(ev.layer_cycles.values())
        ev.board_ms = board_ms(q, cfg, ev.layer_cycles)
        ev.macs = sum(s.macs for s in stats.values())
        ev.energy_mj = sum(energy(s, cfg).total for s in stats.values())
    finally:
        clear_caches()  # a point's Programs serve no other point
    ev.seconds = time.perf_counter() - start
    return ev


def replay_knobs(k: Conv2DKnobs, wl: Conv2DWorkload, ep, old: VTAConfig, cfg: VTAConfig):
    """Knobs `k`, chosen for a layer on configuration `old`, as that schedule on `cfg`: the same
    tiles in channels and pixels (channel tiles rescaled to `cfg`'s block), or, where that does
    not divide the layer or fit `cfg`'s buffers, the legal setting nearest it (log2 distance
    over the tiles and threads)."""
    from ..topi.vta.fused import fused_knob_space

    def scaled(tile: int, old_block: int, new_block: int) -> float:
        return max(1.0, tile * old_block / new_block)

    target = (
        scaled(k.tile_b, old.batch, cfg.batch), k.tile_h, k.tile_w,
        scaled(k.tile_ci, old.block_in, cfg.block_in),
        scaled(k.tile_co, old.block_out, cfg.block_out), k.oc_nthread, k.h_nthread,
    )  # fmt: skip

    def distance(c: Conv2DKnobs) -> float:
        return sum(abs(math.log2(a) - math.log2(b))
                   for a, b in zip(dataclasses.astuple(c), target, strict=True))  # fmt: skip

    space = fused_knob_space(wl, ep, cfg)
    if not space:
        raise CompilerError(f"conv2d {wl}: no tiling fits the configuration's buffers")
    return min(space, key=distance)


def replayed_cycles(model: str, point_cfg: dict, preset_cfg: dict, calibration: str | None,
                    candidates: int = 8) -> int:  # fmt: skip
    """The cycles of the offloaded work on configuration `point_cfg` with the schedules chosen
    for `preset_cfg` replayed (`replay_knobs`): what the point gives without re-tuning."""
    from ..graph.accel import choose_knobs, clear_caches
    from ..graph.hybrid import accelerator_layers
    from ..topi.vta.fused import fused_stream

    old, cfg = VTAConfig.from_dict(preset_cfg), VTAConfig.from_dict(point_cfg)
    w = workload(model, calibration)
    try:
        before = accelerator_layers(w.quantized(old), old)
        chosen = choose_knobs([(wl, ep) for _, _, wl, ep in before.values()], old, candidates)
        sim, total = get_device("sim"), 0
        for name, (_, _, wl, ep) in accelerator_layers(w.quantized(cfg), cfg).items():
            _, _, old_wl, old_ep = before[name]
            k = replay_knobs(chosen[(old_wl, old_ep.structure())], wl, ep, old, cfg)
            total += sim.stream_cycles(fused_stream(wl, ep, k, cfg), cfg)
    finally:
        clear_caches()
    return total


def preset_point(part: str) -> tuple[Point, VTAConfig, float]:
    """The part's preset as a design point, the preset, and the clock it runs at: its own, or
    where the resource model's Fmax for it is lower (`ultra96`'s 333 MHz), `point_clock` of
    that: the preset as this RTL would close it."""
    from .space import PRESET_OF_PART, point_of

    cfg = VTAConfig.load(PRESET_OF_PART[part_for(part).name])
    return point_of(cfg), cfg, min(cfg.clock_mhz, point_clock(estimate(cfg).fmax_mhz, part))
