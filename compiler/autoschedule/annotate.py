"""Random annotation of sketches into complete programs, and the evolutionary operators.

Annotation fills every open tile size (a random factorization of the loop's extent, innermost
at most MAX_INNERMOST), then per stage: a vector split of an untiled stage's innermost space
loop, the parallel loop of every root stage (its leading space loops fused, how many is the
granularity), the compute location of every untiled stage with one consumer (root or one of
the consumer's space loops), vectorization of the innermost space loop, and an unroll pragma.
The annotation steps come in that order and always exist (a granularity of 1, a location at
root, an unroll limit of 0), so mutations change values, never the step list's shape, and
crossover can mix the stages of two programs of one sketch.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..codegen.nvptx_arch import is_cuda_target
from ..schedule.schedule import Schedule, Stage
from . import dag
from .program import Program
from .rfactor import Rfactor
from .steps import (
    UNROLL_KEY,
    Annotate,
    ComputeAt,
    ComputeRoot,
    FollowSplit,
    Fuse,
    Inline,
    Pragma,
    Split,
    Step,
    loop_extents,
    stage_named,
)

MAX_INNERMOST = 64
UNROLL_CHOICES = (0, 16, 64, 512)


@lru_cache(maxsize=4096)
def factorizations(extent: int, parts: int) -> tuple[tuple[int, ...], ...]:
    """Every way to write `extent` as an ordered product of `parts` factors."""
    if parts == 1:
        return ((extent,),)
    out = []
    for d in range(1, extent + 1):
        if extent % d == 0:
            out += [(d, *rest) for rest in factorizations(extent // d, parts - 1)]
    return tuple(out)


def sample_lengths(extent: int, n: int, rng: np.random.Generator) -> tuple[int, ...]:
    """Inner lengths of an n-length split of `extent`, uniformly over its factorizations
    whose innermost factor is at most MAX_INNERMOST."""
    options = [f for f in factorizations(extent, n + 1) if f[-1] <= MAX_INNERMOST]
    return tuple(options[rng.integers(len(options))][1:])


def _kind(st: Stage, iv) -> str:
    attr = st.iter_attrs.get(iv)
    return attr.kind if attr else "serial"


def _replay_into(s: Schedule, steps: list[Step], new: list[Step]) -> None:
    for step in new:
        steps.append(step)
        step.apply(s, steps)


def tiled_stages(steps: list[Step]) -> set[str]:
    return {s.stage for s in steps if isinstance(s, Split | FollowSplit)}


def effective_consumers(s: Schedule, st: Stage) -> list[Stage]:
    """Consumers of a stage, looking through inlined ones."""
    out: list[Stage] = []
    for c in dag.consumers(s, st):
        found = effective_consumers(s, c) if c.attach_type == "inline" else [c]
        out += [f for f in found if f not in out]
    return out


def _anchor(s: Schedule, st: Stage) -> tuple[Stage, int]:
    """The root stage whose loops run `st` and how many of its leading loops enclose all of
    `st` (every loop but the innermost for the root stage itself)."""
    if st.attach_type == "scope":
        root, limit = _anchor(s, st.attach_stage)
        pos = st.attach_stage.leaf_iter_vars.index(st.attach_ivar) + 1
        return root, min(limit, pos) if root is not st.attach_stage else pos
    return st, len(st.leaf_iter_vars) - 1


Location = tuple[str, int] | str | None  # (stage, loop position), "inline", or None: root


def location_options(s: Schedule, st: Stage) -> list[Location]:
    """Where an untiled stage may be computed: at root (None), inlined (no reduction), or at a
    leading space loop of the output stage that runs all its consumers, outside every loop
    that a consumer is computed in (so each consumer sees the whole region it reads)."""
    opts: list[Location] = [None]
    if dag.is_inlinable(st):
        opts.append("inline")
    cons = effective_consumers(s, st)
    if st.is_output or not cons or any(c.attach_type == "inline" for c in cons):
        return opts
    anchors = [_anchor(s, c) for c in cons]
    root = anchors[0][0]
    if not root.is_output or any(r is not root for r, _ in anchors):
        # only in an output's nest: a softmax max computed in the exp's root nest sent LLVM's
        # optimizer into a run without bound
        return opts
    limit = min(n for _, n in anchors)
    for p, iv in enumerate(root.leaf_iter_vars[:limit]):
        if iv.kind == "reduce":
            break
        opts.append((root.op.name, p))
    return opts


def location_step(name: str, choice: Location) -> Step:
    if choice is None:
        return ComputeRoot(name)
    if choice == "inline":
        return Inline(name)
    return ComputeAt(name, *choice)


def _attach_limit(s: Schedule, st: Stage) -> int:
    """How many leading loops of `st` may be fused: none at or inside an attach point."""
    limit = len(st.leaf_iter_vars)
    for other in s.stages:
        if other.attach_type == "scope" and other.attach_stage is st:
            limit = min(limit, st.leaf_iter_vars.index(other.attach_ivar))
    return limit


def parallel_limit(s: Schedule, st: Stage) -> int:
    """The most leading space loops of a root stage that may be fused into its parallel loop."""
    n = 0
    for iv in st.leaf_iter_vars[: _attach_limit(s, st)]:
        if iv.kind == "reduce":
            break
        n += 1
    return n


def fill_tile_sizes(program: Program, rng: np.random.Generator) -> list[Step]:
    """The sketch's steps with every open split length sampled."""
    s = program.task.initial_schedule()
    steps: list[Step] = []
    for step in program.steps:
        if isinstance(step, Split) and None in step.lengths:
            st = stage_named(s, step.stage)
            iv = st.leaf_iter_vars[step.iter]
            extent = loop_extents(st)[iv]
            step = Split(step.stage, step.iter, sample_lengths(extent, len(step.lengths), rng))
        elif isinstance(step, Rfactor) and step.factor is None:
            (k,) = stage_named(s, step.stage).op.reduce_axis
            extent = int(k.dom.extent.value)
            options = [d for d in range(2, min(extent, 1024) + 1) if extent % d == 0] or [1]
            step = Rfactor(step.stage, options[rng.integers(len(options))])
        _replay_into(s, steps, [step])
    return steps


def annotate(sketch: Program, rng: np.random.Generator) -> Program:
    """A random complete program of a sketch."""
    if is_cuda_target(sketch.task.target):
        from .gpu import annotate_gpu

        return annotate_gpu(sketch, rng)
    steps = fill_tile_sizes(sketch, rng)
    s = sketch.task.initial_schedule()
    for step in steps:
        step.apply(s, steps)
    tiled = tiled_stages(steps)
    live = [st for st in s.stages if st.attach_type != "inline"]
    for st in live:  # vector split of untiled stages
        leaves = st.leaf_iter_vars
        if st.op.name in tiled or not leaves or leaves[-1].kind == "reduce":
            continue
        extent = loop_extents(st)[leaves[-1]]
        if extent > 1:
            options = [d for d in range(1, min(extent, MAX_INNERMOST) + 1) if extent % d == 0]
            vec = options[rng.integers(len(options))]
            _replay_into(s, steps, [Split(st.op.name, len(leaves) - 1, (vec,))])
    flexible = [
        st
        for st in live
        if st.op.name not in tiled and st.attach_type == "root" and not st.is_output
    ]
    targets = {c.op.name for st in flexible for c in effective_consumers(s, st)}

    def parallelize(st: Stage) -> None:
        limit = parallel_limit(s, st)
        if st.op.name in targets:  # keep a loop to compute an untiled producer at
            limit = min(limit, len(st.leaf_iter_vars) - 1)
        if limit >= 1:
            count = int(rng.integers(1, limit + 1))
            _replay_into(
                s, steps, [Fuse(st.op.name, 0, count), Annotate(st.op.name, 0, "parallel")]
            )

    for st in live:  # parallel granularity of root stages with a fixed location
        if st.attach_type == "root" and st not in flexible:
            parallelize(st)
    for st in reversed(flexible):  # locations of untiled stages, consumers first
        opts = location_options(s, st)
        choice = opts[rng.integers(len(opts))]
        _replay_into(s, steps, [location_step(st.op.name, choice)])
        if choice is None:
            parallelize(st)
    live = [st for st in live if st.attach_type != "inline"]
    for st in live:  # vectorize the innermost space loop
        inner = st.leaf_iter_vars[-1] if st.leaf_iter_vars else None
        if inner is None or inner.kind == "reduce" or _kind(st, inner) != "serial":
            continue
        _replay_into(s, steps, [Annotate(st.op.name, -1, "vectorize")])
    for st in live:  # unroll pragma of computing stages
        if st.op.reduce_axis or st.op.name in tiled:
            value = UNROLL_CHOICES[rng.integers(len(UNROLL_CHOICES))]
            _replay_into(s, steps, [Pragma(st.op.name, 0, UNROLL_KEY, int(value))])
    return Program(sketch.task, steps, sketch.sketch)


# ------------------------------------------------------------------------------- mutation
def _schedule_before(program: Program, k: int) -> Schedule:
    s = program.task.initial_schedule()
    for step in program.steps[:k]:
        step.apply(s, program.steps)
    return s


def _replace(program: Program, k: int, step: Step) -> Program:
    return Program(
        program.task, [*program.steps[:k], step, *program.steps[k + 1 :]], program.sketch
    )


def mutate_tile_size(program: Program, rng: np.random.Generator) -> Program | None:
    """Move a factor of one tile level of a split to another level (or the outer loop)."""
    splits = [k for k, s in enumerate(program.steps) if isinstance(s, Split)]
    if not splits:
        return None
    k = splits[rng.integers(len(splits))]
    step = program.steps[k]
    st = stage_named(_schedule_before(program, k), step.stage)
    extent = loop_extents(st)[st.leaf_iter_vars[step.iter]]
    levels = [extent // math.prod(step.lengths), *step.lengths]  # outer first
    src, dst = rng.choice(len(levels), size=2, replace=False) if len(levels) > 1 else (0, 0)
    factors = [d for d in range(2, levels[src] + 1) if levels[src] % d == 0]
    if not factors or src == dst:
        return None
    d = factors[rng.integers(len(factors))]
    levels[src] //= d
    levels[dst] *= d
    if levels[-1] > MAX_INNERMOST:
        return None
    return _replace(program, k, Split(step.stage, step.iter, tuple(levels[1:])))


def mutate_parallel(program: Program, rng: np.random.Generator) -> Program | None:
    """Fuse one more or one fewer leading loop into a parallel loop."""
    fuses = [
        k
        for k, s in enumerate(program.steps[:-1])
        if isinstance(s, Fuse)
        and isinstance(program.steps[k + 1], Annotate)
        and program.steps[k + 1].kind == "parallel"
    ]
    if not fuses:
        return None
    k = fuses[rng.integers(len(fuses))]
    step = program.steps[k]
    limit = parallel_limit(
        _schedule_before(program, k), stage_named(_schedule_before(program, k), step.stage)
    )
    count = step.count + (1 if rng.random() < 0.5 else -1)
    if not 1 <= count <= limit:
        return None
    return _replace(program, k, Fuse(step.stage, step.first, count))


def mutate_pragma(program: Program, rng: np.random.Generator) -> Program | None:
    pragmas = [k for k, s in enumerate(program.steps) if isinstance(s, Pragma)]
    if not pragmas:
        return None
    k = pragmas[rng.integers(len(pragmas))]
    step = program.steps[k]
    value = int(UNROLL_CHOICES[rng.integers(len(UNROLL_CHOICES))])
    if value == step.value:
        return None
    return _replace(program, k, Pragma(step.stage, step.iter, step.key, value))


def mutate_location(program: Program, rng: np.random.Generator) -> Program | None:
    """Move an untiled stage to another valid compute location."""
    tiled = tiled_stages(program.steps)
    always_inlined = {  # by the sketch's always-inline rule: not a location choice
        st.op.name for st in program.task.initial_schedule().stages if dag.is_strict_inlinable(st)
    }
    locs = [
        k
        for k, s in enumerate(program.steps)
        if isinstance(s, ComputeAt | ComputeRoot | Inline)
        and s.stage not in tiled
        and s.stage not in always_inlined
    ]
    if not locs:
        return None
    k = locs[rng.integers(len(locs))]
    step = program.steps[k]
    s = _schedule_before(program, k)
    opts = location_options(s, stage_named(s, step.stage))
    new = location_step(step.stage, opts[rng.integers(len(opts))])
    return None if new == step else _replace(program, k, new)


MUTATIONS = {
    "tile_size": mutate_tile_size,
    "parallel": mutate_parallel,
    "pragma": mutate_pragma,
    "location": mutate_location,
}


def mutate(program: Program, rng: np.random.Generator) -> Program | None:
    """One random mutation (None if the chosen one does not apply)."""
    if is_cuda_target(program.task.target):
        from .gpu import mutate_gpu

        return mutate_gpu(program, rng)
    names = list(MUTATIONS)
    weights = np.array([0.7, 0.1, 0.1, 0.1])
    return MUTATIONS[names[rng.choice(len(names), p=weights)]](program, rng)


def crossover(a: Program, b: Program, rng: np.random.Generator) -> Program | None:
    """Node-based crossover: each stage's steps from one parent (the parents must come from
    one sketch, so their step lists align)."""
    if a.sketch != b.sketch or len(a.steps) != len(b.steps):
        return None
    if any(
        type(x) is not type(y) or x.stage != y.stage for x, y in zip(a.steps, b.steps, strict=True)
    ):
        return None
    stages = sorted({s.stage for s in a.steps})
    pick = {name: (a if rng.random() < 0.5 else b) for name in stages}
    steps = [pick[x.stage].steps[k] for k, x in enumerate(a.steps)]
    return Program(a.task, steps, a.sketch)
