"""Quantized convolutions and dense layers on the accelerator: each `QConv` becomes one fused
Program (conv2d_fused: bias, shift, ReLU, residual or shortcut conv in the same kernel) with its
weights packed once at compile time; activations stay in the accelerator's NCHW{b}n{c}c layout
between offloaded layers and are packed and unpacked only at CPU boundaries. Channel counts that
are not a multiple of the block are padded with zeros (the padded outputs are zero).

Programs are cached by their structure (workload, epilogue, knobs, configuration), so repeated
layers are built once; knobs come from a records database when it has the layer, else from a
short search on the timing-only simulator over the cycle estimate's best candidates.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path

from vta.config import VTAConfig
from vta.device import get_device
from vta.program import Program

from ..errors import LoweringError
from ..topi.vta.conv2d import Conv2DKnobs, Conv2DWorkload
from ..topi.vta.fused import (
    Epilogue,
    conv2d_fused,
    estimate_space,
    fused_builder,
    fused_knob_space,
)
from .objects import default_processes
from .quant import QConv
from .runtime import AccelConv, pad_to

Job = tuple[Conv2DWorkload, Epilogue, Conv2DKnobs, VTAConfig]  # one Program to build
_PROGRAMS: dict[Job, Program] = {}  # built in this process, by structure


def fused_program(wl: Conv2DWorkload, ep: Epilogue, knobs: Conv2DKnobs, cfg: VTAConfig) -> Program:
    """The validated Program of one layer structure (built once per structure and process)."""
    job = (wl, ep, knobs, cfg)
    if job not in _PROGRAMS:
        _PROGRAMS[job] = conv2d_fused(wl, ep, knobs, cfg)
    return _PROGRAMS[job]


def worker_pool(processes: int | None = None) -> contextlib.AbstractContextManager:
    """Forked workers (one per core by default) for a compile's independent jobs, which
    inherit this process's imports; None (run them here) with one, or in a daemonic process
    (another pool's worker, which may not have children)."""
    n = processes or default_processes(1 << 30)
    if n <= 1 or multiprocessing.current_process().daemon:
        return contextlib.nullcontext(None)
    return ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork"))


Structure = tuple[Conv2DWorkload, Epilogue]  # a layer's workload and canonical epilogue
SearchJob = tuple[Structure, list[Conv2DKnobs], list[Epilogue], VTAConfig]
_CHOSEN: dict[tuple, Conv2DKnobs] = {}  # choices made in this process


Timed = tuple[Conv2DWorkload, Epilogue, Conv2DKnobs, VTAConfig, int]  # a candidate's cycles
_TIMED: list[Timed] = []  # every candidate timed in this process since `clear_caches`
# Ranks a structure's knob settings (wl, ep, cfg, settings: its `fused_knob_space`, in that
# order) -> scores, lower first.
Rank = Callable[[Conv2DWorkload, Epilogue, VTAConfig, Sequence[Conv2DKnobs]], Sequence[float]]


def clear_caches() -> None:
    """Forget this process's knob choices, built Programs and timed candidates (a benchmark
    times cold compiles)."""
    _CHOSEN.clear()
    _PROGRAMS.clear()
    _TIMED.clear()


def timed_candidates() -> list[Timed]:
    """Every candidate timed in this process since `clear_caches`, with its cycles: what a
    learned ranker (`choose_knobs`'s `rank`) trains on."""
    return list(_TIMED)


def estimate_rank(
    wl: Conv2DWorkload, ep: Epilogue, cfg: VTAConfig, space: Sequence[Conv2DKnobs]
) -> list[float]:
    """The cycle estimate of each setting (`estimate_space`: `space` is the whole knob space)."""
    scores = estimate_space(wl, ep, cfg).tolist()
    if len(scores) != len(space):
        raise LoweringError(f"conv2d {wl}: ranked {len(space)} settings, not its knob space")
    return scores


def _program_of(k: Conv2DKnobs) -> tuple[int, ...]:
    """What a fused Program depends on: its tiles and the number of virtual threads (which
    axis they split does not matter: the tiles are dealt to the threads in one order)."""
    return k.tile_b, k.tile_h, k.tile_w, k.tile_ci, k.tile_co, k.oc_nthread * k.h_nthread


def knob_candidates(
    wl: Conv2DWorkload,
    ep: Epilogue,
    cfg: VTAConfig,
    candidates: int,
    db: str | None,
    rank: Rank = estimate_rank,
) -> list[Conv2DKnobs]:
    """The records database's best knobs (`db`) and the `candidates` settings `rank` puts
    first (by default the cycle estimate's; of equals, those with virtual threads; a short
    tuning run can record knobs worse than the estimate's best, a long one finds better),
    one per distinct Program (`_program_of`): settings that differ only in which axis the
    virtual threads split build the same stream, and timing it twice would waste a slot. The
    template records no layer of a weight set per batch element (`Epilogue.batch_weights`)."""
    settings = fused_knob_space(wl, ep, cfg)
    scores = rank(wl, ep, cfg, settings)
    order = sorted(
        range(len(settings)),
        key=lambda i: (scores[i], settings[i].oc_nthread * settings[i].h_nthread == 1),
    )
    first: dict[tuple[int, ...], Conv2DKnobs] = {}  # one per distinct Program, in rank order
    for i in order:
        first.setdefault(_program_of(settings[i]), settings[i])
    space = list(first.values())
    if not space:
        raise LoweringError(f"conv2d {wl}: no tiling fits the configuration's buffers")
    tried = space[: max(1, candidates)]
    if db is not None and not ep.batch_weights and Path(db).exists():
        from ..tune.templates.vta import tuned_fused_knobs  # the tuner is optional here

        tuned = tuned_fused_knobs(wl, ep, db, cfg)
        if tuned is not None and tuned in settings:
            same = _program_of(tuned)
            tried = [tuned, *(k for k in tried if _program_of(k) != same)]
    return tried


# The estimate's first candidates, always timed; the rest only when these disagree by more than
# AGREE: on the zoo's networks (pynq, ultra96) timing all 8 then finds at most 0.015-0.085% fewer
# cycles per network for 40% fewer timings (docs/benchmarks.md).
FIRST, AGREE = 4, 0.01


def search_structure(job: SearchJob) -> tuple[Conv2DKnobs, list[Program], list[int]]:
    """The candidate (`knob_candidates`) the timing-only simulator finds fastest (the first
    of equals; candidates timed as instruction streams, neither encoded nor validated), the
    validated Programs of the structure's layers (`epilogues`) with it, and the candidates'
    cycles (none timed when there is one). The first FIRST candidates are timed, the others
    only when those spread by more than AGREE (where the estimate ranks them well, they
    agree). Candidates are built with the first layer's own epilogue (immediates change no
    cycles), so the fastest one's builder gives that layer's Program without building its
    stream again."""
    (wl, _), candidates, epilogues, cfg = job
    sim = get_device("sim")
    best, kept, cycles = candidates[0], None, []
    for i, k in enumerate(candidates):
        if i == FIRST and max(cycles) <= min(cycles) * (1 + AGREE):
            break
        builder = fused_builder(wl, epilogues[0], k, cfg)
        if len(candidates) > 1:
            cycles.append(sim.stream_cycles(builder.stream(), cfg))
            if cycles[-1] >= min(cycles[:-1], default=cycles[-1] + 1):
                continue
        best, kept = k, builder
    programs = [kept.build(), *(conv2d_fused(wl, ep, best, cfg) for ep in epilogues[1:])]
    return best, programs, cycles


def _tiles(wl: Conv2DWorkload, k: Conv2DKnobs) -> int:
    """How many tiles knobs `k` cut the workload into (its stream's length grows with it)."""
    return (
        (wl.n // k.tile_b)
        * (wl.oh // k.tile_h)
        * (wl.ow // k.tile_w)
        * (1 if wl.depthwise else wl.ci // k.tile_ci)
        * (wl.co // k.tile_co)
    )


def choose_knobs(
    layers: list[tuple[Conv2DWorkload, Epilogue]],
    cfg: VTAConfig,
    candidates: int = 8,
    db: str | None = None,
    pool: Executor | None = None,
    rank: Rank = estimate_rank,
) -> dict[Structure, Conv2DKnobs]:
    """Each layer structure's knobs (`search_structure` over `knob_candidates` ranked by
    `rank`), keyed by workload and canonical epilogue (`Epilogue.structure`: immediates do not
    change cycles, so layers that differ only in them search once), and the layers' Programs
    built with them (`fused_program` returns them). One job per structure, in the `pool`
    (`worker_pool`) if given, the longest (by the tiles of the candidates always timed) first,
    so the workers finish together."""
    key = (cfg, candidates, db, rank)
    layers_of: dict[Structure, list[Epilogue]] = {}
    for wl, ep in layers:
        layers_of.setdefault((wl, ep.structure()), [])
        if ep not in layers_of[(wl, ep.structure())]:
            layers_of[(wl, ep.structure())].append(ep)
    todo = [s for s in layers_of if (*s, *key) not in _CHOSEN]
    jobs = [(s, knob_candidates(*s, cfg, candidates, db, rank), layers_of[s], cfg) for s in todo]
    jobs.sort(key=lambda j: -sum(_tiles(j[0][0], k) for k in j[1][:FIRST]))  # those timed
    found = pool.map(search_structure, jobs) if pool else map(search_structure, jobs)
    for job, (knobs, programs, cycles) in zip(jobs, found, strict=True):
        (wl, canonical), tried, epilogues, _ = job
        _TIMED.extend((wl, canonical, k, cfg, c) for k, c in zip(tried, cycles, strict=False))
        _CHOSEN[(*job[0], *key)] = knobs
        _PROGRAMS.update(
            {(wl, ep, knobs, cfg): p for ep, p in zip(epilogues, programs, strict=True)}
        )
    return {s: _CHOSEN[(*s, *key)] for s in layers_of}


def layer_structure(
    name: str,
    q: QConv,
    in_shape: tuple[int, int, int, int],
    cfg: VTAConfig,
    sc_shape: tuple[int, int, int, int] | None = None,
) -> tuple[Conv2DWorkload, Epilogue]:
    """The packed workload (channels padded to the block) and epilogue of a quantized conv on
    NCHW input `in_shape` (`sc_shape`: the shortcut conv's input): what its Program and its
    tuning task are made of."""
    n, c, h, w = in_shape
    o, i, kh, kw = q.weight.shape
    if (o if q.depthwise else i) != c:
        raise LoweringError(f"{name}: weights take {i} input channels, the input has {c}")
    bn, bc, bo = cfg.batch, cfg.block_in, cfg.block_out
    wl = Conv2DWorkload(n // bn, pad_to(c, bc) // bc, h, w, pad_to(o, bo) // bo, kh, kw,
                        q.stride, q.pad, q.depthwise)  # fmt: skip
    shortcut = None
    if q.sc_weight is not None:
        sn, sc, sh, sw = sc_shape
        shortcut = Conv2DWorkload(sn // bn, pad_to(sc, bc) // bc, sh, sw, wl.co, 1, 1,
                                  q.sc_stride, 0)  # fmt: skip
    return wl, Epilogue(True, q.shift, q.relu, q.residual_shift, shortcut, q.pre_shift,
                        q.sc_shift)  # fmt: skip


def compile_qconv(
    name: str,
    q: QConv,
    in_shape: tuple[int, int, int, int],
    cfg: VTAConfig,
    sc_shape: tuple[int, int, int, int] | None = None,
    candidates: int = 8,
    db: str | None = None,
    knobs: Conv2DKnobs | None = None,
) -> AccelConv:
    """The accelerator layer of a quantized conv on NCHW input `in_shape` (`sc_shape`: the
    shortcut conv's input), with the given `knobs` or ones chosen by `choose_knobs`, and its
    Program."""
    wl, ep = layer_structure(name, q, in_shape, cfg, sc_shape)
    if knobs is None:
        knobs = choose_knobs([(wl, ep)], cfg, candidates, db)[(wl, ep.structure())]
    elif knobs not in fused_knob_space(wl, ep, cfg):
        raise LoweringError(f"{name}: knobs {knobs} do not fit the configuration")
    program = fused_program(wl, ep, knobs, cfg)
    return AccelConv.of(name, q, cfg, dataclasses.asdict(knobs), program)
