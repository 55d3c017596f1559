"""The auto-scheduler's accelerator target ("vta [-config=...]"): workloads, sketch rules,
annotation, mutation and cost-model features.

Workloads: `conv2d_packed` (the template's arguments: sizes in blocks, as `Conv2DWorkload`) and
`dense_packed` (n, ci, co in blocks), the packed int8 computes of `compiler.topi.vta` with the
template's shift and clip on the ALU; their definitions take the configuration the running
task's target names.

Sketch rules (`VTA_RULES`, from the output back):
  vta-store   the output stage's outer axes are tiled in two levels, the output channels (and
              a convolution's rows) with a third, outermost level bound to virtual threads
              (`cthread`); the outer tile loops in one order per sketch (batch, channels and
              rows permuted, columns innermost); the accumulator and its ALU stage placed in
              the accumulator buffer at the innermost outer tile loop, the ALU stage's ops by
              the `alu` pragma, the store a DMA copy (`Epilogue`: the templates'
              `schedule_epilogue`)
  vta-gemm    the GEMM stage's input-channel blocks split (a tile per load), its loops ordered
              as the templates order them, its input and weight tiles loaded by DMA into the
              input and weight buffers at the tile loop and the stage tensorized with the GEMM
              intrinsic (`Gemm`: the templates' `schedule_gemm`)
  vta-placed  the stages those place (ALU, padding, buffer copies) are skipped
A stage no rule places is refused. The open lengths are the tiles: annotation draws them from
the settings whose tiles divide the workload and fit the input, weight and accumulator
buffers for every virtual thread (`conv2d.knob_space`, 1, 2 or 4 threads per axis), so a
candidate that does not fit is never drawn; guided draws (GUIDED of them) only among those
whose output tiles fill at least MIN_FILL of the accumulator buffer; mutation moves one tile
or thread count to another
fitting value (filling, where the parent's did), and crossover keeps only fitting children.

Features (`featurize`): per program the tiles, threads, the loop order and what they imply on
the accelerator (output tiles, DMA loads, elements loaded, GEMM micro-ops per load, buffer
fill, the ideal GEMM cycles), counted from the workload, not lowered.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

import numpy as np

from .. import te
from ..errors import TuningError
from ..schedule.schedule import Schedule
from ..te.tensor import Tensor
from ..topi.vta.common import schedule_epilogue, schedule_gemm
from ..topi.vta.conv2d import (
    Conv2DKnobs,
    Conv2DWorkload,
    buffer_fill,
    conv2d_from_workload,
    knob_space,
)
from ..topi.vta.conv2d import traffic as conv_traffic
from ..topi.vta.dense import dense_packed
from ..tune.features import PROGRAM_FEATURE_LENGTH
from ..tune.task import current_target, target_kind
from ..tune.templates.vta import CLIP, SHIFT, conv2d_packed_reference
from ..vta.environment import Environment, get_env, target_config
from .gpu_steps import Bind
from .program import Program, SearchTask
from .sketch import Cond, DeriveState, SketchRule
from .steps import Reorder, Split, Step, _leaf, register_step, stage_named
from .workload import register_workload

GEMM_TAGS = ("conv2d_packed", "dense_packed")
PLACED_TAGS = ("vta_alu", "pad")  # stages the store and GEMM rules place
NTHREADS = (1, 2, 4)  # virtual threads per axis the search draws from
# guided draws (the rest uniform): output tiles filling at least a quarter of the
# accumulator buffer. Smaller ones issue a DMA load pair and a micro-op kernel per few
# products: of 8 uniform draws on ResNet-18's C12, six ran 2.2-15.5 M cycles (the default
# tiling 0.47 M) and two took over 30 s to build; of 8 draws filling half of any buffer, four
# had 1- or 7-pixel output tiles and ran 2.5-15.7 M cycles
GUIDED, MIN_FILL = 0.9, 0.25
VTHREAD = "cthread"


def is_vta(target: str) -> bool:
    return target_kind(target) == "vta"


def _env() -> Environment:
    """The environment of the configuration the running task's target names."""
    target = current_target() or "vta"
    if not is_vta(target):
        raise TuningError(f"the accelerator's workloads tune on --target vta, not {target!r}")
    return get_env(target_config(target))


# ------------------------------------------------------------------------------- workloads
@register_workload(
    "conv2d_packed",
    conv2d_packed_reference,
    extents=("n", "ci", "h", "w", "co", "kh", "kw", "stride"),
)
def conv2d_packed(
    n: int, ci: int, h: int, w: int, co: int, kh: int, kw: int, stride: int, pad: int
) -> list[Tensor]:
    """The template's int8 conv2d (sizes in blocks) with its shift and clip on the ALU."""
    args, out = conv2d_from_workload(
        Conv2DWorkload(n, ci, h, w, co, kh, kw, stride, pad), _env(), shift=SHIFT, clip=CLIP
    )
    return [*args, out]


def _dense_reference(inputs, n, ci, co):
    data, weight = inputs  # as a 1x1 conv over 1x1 images
    out = conv2d_packed_reference(
        [data[:, :, None, None], weight[:, :, None, None]], n, ci, 1, 1, co, 1, 1, 1, 0
    )[0]
    return [out[:, :, 0, 0]]


@register_workload("dense_packed", _dense_reference, extents=("n", "ci", "co"))
def dense_packed_workload(n: int, ci: int, co: int) -> list[Tensor]:
    """int8 dense (blocks of batch, input and output channels) with the shift and clip."""
    env = _env()
    data = te.placeholder((n, ci, env.batch, env.block_in), "int8", "data")
    weight = te.placeholder((co, ci, env.block_out, env.block_in), "int8", "weight")
    return [data, weight, dense_packed(data, weight, shift=SHIFT, clip=CLIP, env=env)]


# ----------------------------------------------------------------------------------- steps
@register_step
@dataclass(frozen=True)
class Epilogue(Step):
    """The accumulator stage `acc` and the output's ALU stage in the accumulator buffer at
    loop #at of the output, the output stored by DMA from loop #store_at
    (`topi.vta.common.schedule_epilogue`)."""

    KIND: ClassVar[str] = "VEP"
    acc: str
    at: int
    store_at: int

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        st = stage_named(s, self.stage)
        acc = stage_named(s, self.acc).op.output(0)
        at, store = _leaf(st, self.at), _leaf(st, self.store_at)
        schedule_epilogue(s, st.op.output(0), acc, at, store, _env())
        return f"{self.stage}: {self.acc} and its ALU ops at {at.name}, stored from {store.name}"


@register_step
@dataclass(frozen=True)
class Gemm(Step):
    """Input and weight tiles loaded by DMA at loop #at of the GEMM stage, the stage
    tensorized with the GEMM intrinsic from loop #gemm_iter (`topi.vta.common.schedule_gemm`)."""

    KIND: ClassVar[str] = "VGE"
    at: int
    gemm_iter: int

    def apply(self, s: Schedule, steps: list[Step]) -> str:
        st = stage_named(s, self.stage)
        at, axis = _leaf(st, self.at), _leaf(st, self.gemm_iter)
        schedule_gemm(s, st.op.output(0), at, axis, _env())
        return f"{self.stage}: loads at {at.name}, tensorize {axis.name} with the GEMM"


# ---------------------------------------------------------------------------------- sketch
def _tag(d: DeriveState) -> str:
    return getattr(d.stage.op, "tag", "")


def _gemm_of(out) -> Tensor:
    """The GEMM stage's tensor an output stage computes (through its ALU stage)."""
    seen = [out.op.output(0)]
    while seen:
        t = seen.pop()
        if getattr(t.op, "tag", "") in GEMM_TAGS:
            return t
        seen += t.op.input_tensors
    raise TuningError(f"stage {out.op.name!r} computes no accelerator GEMM")


def _store_cond(d: DeriveState) -> Cond:
    return Cond.APPLY_AND_SKIP_REST if _tag(d) == "vta_output" else Cond.PASS


def store_orders(n_outer: int) -> list[tuple[int, ...]]:
    """The orders of the output's outer tile loops (axis indices): the batch, channel and
    convolution rows' loops permuted, the columns' innermost (n_outer 4); a dense layer's
    batch and channels (n_outer 2)."""
    if n_outer == 2:
        return list(itertools.permutations((0, 1)))
    return [(*p, 3) for p in itertools.permutations((0, 1, 2))]


def _store_apply(d: DeriveState) -> list[DeriveState]:
    st = d.stage
    name = st.op.name
    n_outer = len(st.op.axis) - 2  # the last two are the block's batch and channel lanes
    if n_outer not in (2, 4):
        raise TuningError(f"stage {name!r}: an accelerator output has 2 or 4 outer axes")
    threaded = {1, 2} if n_outer == 4 else {1}  # channels, and a convolution's rows
    steps: list[Step] = []
    for ax in reversed(range(n_outer)):  # from the last axis back: positions stay valid
        steps.append(Split(name, ax, (None, None) if ax in threaded else (None,)))
    parts = [3 if ax in threaded else 2 for ax in range(n_outer)]
    start = [sum(parts[:ax]) for ax in range(n_outer)]
    vthreads = [start[ax] for ax in sorted(threaded)]
    steps += [Bind(name, pos, VTHREAD) for pos in vthreads]
    lanes = sum(parts) + np.arange(2)
    out = []
    for order in store_orders(n_outer):
        outer = [start[ax] + (ax in threaded) for ax in order]
        inner = [start[ax] + parts[ax] - 1 for ax in range(n_outer)]
        perm = (*vthreads, *outer, *inner, *map(int, lanes))
        # the epilogue at the innermost outer tile loop, the store from the inner channel
        # loop (a convolution's; the templates'), a dense layer's from the inner batch loop
        n_v = len(vthreads)
        at, store_at = n_v + n_outer - 1, n_v + n_outer + (n_outer == 4)
        acc = _gemm_of(st).op.name
        tail = [Reorder(name, perm), Epilogue(name, acc, at, store_at)]
        out.append(d.derive(steps + tail, d.index - 1))
    return out


def _gemm_cond(d: DeriveState) -> Cond:
    return Cond.APPLY_AND_SKIP_REST if _tag(d) in GEMM_TAGS else Cond.PASS


def _gemm_apply(d: DeriveState) -> list[DeriveState]:
    st = d.stage
    name = st.op.name
    n_space = len(st.op.axis)
    split = Split(name, n_space, (None,))  # the input-channel blocks: (loads, tile)
    ko0, ko1 = n_space, n_space + 1
    if n_space == 6:  # conv: b, co, y, x, bi, ci | ko0, ko1, dy, dx, ki
        order = (0, ko0, ko1, 3, ko1 + 2, ko1 + 1, 1, 2, 4, 5, ko1 + 3)
        gemm_at = 8
    else:  # dense: b, co, bi, ci | ko0, ko1, ki
        order = (ko0, ko1, 0, 1, 2, 3, ko1 + 1)
        gemm_at = 4
    steps = [split, Reorder(name, order), Gemm(name, 1 if n_space == 6 else 0, gemm_at)]
    return [d.derive(steps, d.index - 1)]


def _placed_cond(d: DeriveState) -> Cond:
    st = d.stage
    placed = _tag(d) in PLACED_TAGS or st.scope != "global" or st.attach_type != "root"
    if placed or "." in st.op.name:  # a buffer copy (NAME.SCOPE)
        return Cond.APPLY_AND_SKIP_REST
    raise TuningError(f"stage {st.op.name!r} has no place on the accelerator")


VTA_RULES: list[SketchRule] = [
    SketchRule("vta-store", _store_cond, _store_apply),
    SketchRule("vta-gemm", _gemm_cond, _gemm_apply),
    SketchRule("vta-placed", _placed_cond, lambda d: [d.derive([], d.index - 1)]),
]


# ------------------------------------------------------------------------ tiles and knobs
def conv_workload(task: SearchTask) -> Conv2DWorkload:
    """The task's workload as a convolution (a dense layer: a 1x1 one over 1x1 images)."""
    if task.name == "dense_packed":
        n, ci, co = task.args
        return Conv2DWorkload(n, ci, 1, 1, co, 1, 1, 1, 0)
    if task.name != "conv2d_packed":
        raise TuningError(
            f"the auto-scheduler tunes conv2d_packed and dense_packed on the accelerator, "
            f"not {task.name!r}"
        )
    return Conv2DWorkload(*task.args)


@dataclass(frozen=True)
class TileSpace:
    """A task's fitting tilings, as a set, and those filling the accumulator (`MIN_FILL`)."""

    tilings: tuple[Conv2DKnobs, ...]
    members: frozenset[Conv2DKnobs]
    filling: tuple[Conv2DKnobs, ...]


@cache
def _space(name: str, args: tuple, target: str) -> TileSpace:
    task = SearchTask(name, args, target)
    wl = conv_workload(task)
    env = get_env(target_config(target))
    space = knob_space(wl, env, NTHREADS)
    if name == "dense_packed":  # no rows to thread
        space = [k for k in space if k.h_nthread == 1]
    if not space:
        raise TuningError(f"{task.workload_key}: no tiling fits the accelerator's buffers")
    filling = [k for k in space if buffer_fill(wl, k, env)[env.acc_scope] >= MIN_FILL]
    return TileSpace(tuple(space), frozenset(space), tuple(filling))


def tile_space(task: SearchTask) -> TileSpace:
    """The tilings of the task that divide it and fit the buffers for all its threads."""
    return _space(task.name, task.args, task.target)


def fitting_knobs(task: SearchTask) -> tuple[Conv2DKnobs, ...]:
    """Every tiling of the task that divides it and fits the buffers for all its threads."""
    return tile_space(task).tilings


def fits(program: Program) -> bool:
    """Does the program's tiling divide its workload and fit the buffers?"""
    try:
        k = knobs_of(program)
    except TuningError:
        return False
    return k in tile_space(program.task).members


def _splits(program: Program) -> tuple[dict[int, Split], Split]:
    """The output stage's Split steps by axis, and the GEMM stage's (the sketch's last step
    is the GEMM's)."""
    gemm = program.steps[-1] if program.steps else None
    if not isinstance(gemm, Gemm):
        raise TuningError("not an accelerator program (its last step places no GEMM)")
    splits = [st for st in program.steps if isinstance(st, Split)]
    out = {st.iter: st for st in splits if st.stage != gemm.stage}
    return out, next(st for st in splits if st.stage == gemm.stage)


def knobs_of(program: Program) -> Conv2DKnobs:
    """The tiling a program's lengths give (a dense layer: rows and columns 1, one thread
    over rows)."""
    out, gemm = _splits(program)
    wl = conv_workload(program.task)
    (co_outer, tile_co), tile_b = out[1].lengths, out[0].lengths[0]
    oc_nthread = wl.co // ((co_outer or 1) * (tile_co or 1))
    if len(out) == 2:
        return Conv2DKnobs(tile_b, 1, 1, gemm.lengths[0], tile_co, oc_nthread, 1)
    (h_outer, tile_h), tile_w = out[2].lengths, out[3].lengths[0]
    h_nthread = wl.oh // ((h_outer or 1) * (tile_h or 1))
    return Conv2DKnobs(tile_b, tile_h, tile_w, gemm.lengths[0], tile_co, oc_nthread, h_nthread)


def with_knobs(program: Program, k: Conv2DKnobs) -> Program:
    """The program with its tile lengths set to the tiling `k`."""
    wl = conv_workload(program.task)
    lengths = {
        0: (k.tile_b,),
        1: (wl.co // k.tile_co // k.oc_nthread, k.tile_co),
        2: (wl.oh // k.tile_h // k.h_nthread, k.tile_h),
        3: (k.tile_w,),
    }
    out, gemm = _splits(program)
    mine = {id(st): ax for ax, st in out.items()}
    steps = [
        dataclasses.replace(st, lengths=(k.tile_ci,))
        if st is gemm
        else dataclasses.replace(st, lengths=lengths[mine[id(st)]])
        if id(st) in mine
        else st
        for st in program.steps
    ]
    return Program(program.task, steps, program.sketch)


# ------------------------------------------------------------------- annotation, evolution
def annotate_vta(sketch: Program, rng: np.random.Generator) -> Program:
    """A random fitting tiling of the sketch; guided (with probability GUIDED), one whose
    output tiles fill at least MIN_FILL of the accumulator buffer."""
    space = tile_space(sketch.task)
    pool = space.filling if space.filling and rng.random() < GUIDED else space.tilings
    return with_knobs(sketch, pool[rng.integers(len(pool))])


def mutate_vta(program: Program, rng: np.random.Generator) -> Program | None:
    """One tile size or thread count moved to another value that still fits, and still fills
    the accumulator where the program's tiles did (None if no value does)."""
    k = knobs_of(program)
    space = tile_space(program.task)
    pool = space.filling if k in set(space.filling) else space.tilings
    fields = [f.name for f in dataclasses.fields(Conv2DKnobs)]
    name = fields[rng.integers(len(fields))]
    others = [
        c
        for c in pool
        if getattr(c, name) != getattr(k, name)
        and all(getattr(c, f) == getattr(k, f) for f in fields if f != name)
    ]
    if not others:
        return None
    return with_knobs(program, others[rng.integers(len(others))])


def if_fits(program: Program | None) -> Program | None:
    """The program if its tiling fits (a crossover child), else None."""
    return program if program is not None and fits(program) else None


# -------------------------------------------------------------------------------- features
def knob_features(wl: Conv2DWorkload, k: Conv2DKnobs, order: int, env: Environment) -> list:
    """What a tiling implies on the accelerator, counted from the workload."""
    threads = k.oc_nthread * k.h_nthread
    tiles = (wl.n // k.tile_b) * (wl.co // k.tile_co) * (wl.oh // k.tile_h) * (wl.ow // k.tile_w)
    loads = tiles * (wl.ci // k.tile_ci)
    ih, iw = (k.tile_h - 1) * wl.stride + wl.kh, (k.tile_w - 1) * wl.stride + wl.kw
    inp = tiles * k.tile_b * wl.ci * ih * iw
    wgt = conv_traffic(wl, k) - inp
    uops = k.tile_b * k.tile_co * k.tile_h * k.tile_w * wl.kh * wl.kw * k.tile_ci
    fill = list(buffer_fill(wl, k, env).values())
    gemm = wl.n * wl.co * wl.ci * wl.oh * wl.ow * wl.kh * wl.kw
    logs = [math.log2(v) for v in (*dataclasses.astuple(k), threads, tiles, loads, inp, wgt)]
    orders = np.eye(6)[order].tolist()
    return [*logs, math.log2(uops), *fill, math.log2(gemm), gemm / max(loads, 1), *orders]


def featurize(programs: list[Program]) -> tuple[np.ndarray, np.ndarray]:
    """(rows, valid) as `features.featurize` gives them: each program's knob features in the
    first columns of a PROGRAM_FEATURE_LENGTH row; a program whose tiling does not fit: valid
    False."""
    rows = np.zeros((len(programs), PROGRAM_FEATURE_LENGTH), np.float32)
    valid = np.zeros(len(programs), bool)
    for n, p in enumerate(programs):
        if not fits(p):
            continue
        env = get_env(target_config(p.task.target))
        x = knob_features(conv_workload(p.task), knobs_of(p), p.sketch, env)
        rows[n, : len(x)] = x
        valid[n] = True
    return rows, valid
