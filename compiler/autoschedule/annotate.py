"""Random annotation of sketches into complete programs, and the evolutionary operators.

Annotation fills every open tile size (a random factorization of the loop's extent, innermost
at most MAX_INNERMOST; guided, a multi-level tiled stage's innermost tiles form a register
tile that fits the target's vector registers, `register_tile.py`), then per stage: a vector
split of an untiled stage's innermost space loop, the parallel loop of every root stage (its
leading space loops fused, how many is the granularity; guided, enough of them that each of
the threads the program runs with has PARALLEL_TASKS iterations, `parallel_counts`), the
compute location of every untiled stage with one consumer (root or one of the consumer's space
loops), vectorization of the innermost space loop, and an unroll pragma.
The annotation steps come in that order and always exist (a granularity of 1, a location at
root, an unroll limit of 0), so mutations change values, never the step list's shape, and
crossover can mix the stages of two programs of one sketch. A mutation that breaks a register
tile rule its parent kept is dropped, so the rules hold through the evolution too.
"""

from __future__ import annotations

import itertools
import math
import operator

import numpy as np

from ..codegen.abi import default_threads
from ..codegen.nvptx_arch import is_cuda_target
from ..errors import CompilerError
from ..schedule.schedule import Schedule, Stage
from ..te.tensor import ComputeOp
from ..tune.task import target_kind
from . import blocking, dag, partial
from . import register_tile as rt
from .partial import factorizations
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
    Reorder,
    Split,
    Step,
    loop_extents,
    stage_named,
)

MAX_INNERMOST = 64
UNROLL_CHOICES = (0, 16, 64, 512)
GUIDED = 0.9  # share of annotations that follow the register-file rules
MIN_FILL, FILL_TRIES = 0.5, 32  # tiles using under half the registers or load-bound: redrawn
PANEL, PANEL_TRIES = 0.5, 32  # guided draws of a matmul-like stage that are panel tilings
PARALLEL_TASKS = 2  # guided: parallel iterations per thread at least, where the loops have them


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
    """Where an untiled stage may be computed: at root (None; a packed copy only there),
    inlined (no reduction), or at a leading space loop of the output stage that runs all its
    consumers, outside every loop that a consumer is computed in (so each consumer sees the
    whole region it reads)."""
    opts: list[Location] = [None]
    if st.op.tag == dag.PACKED:  # packed once (layout.py)
        return opts
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


def inlines_condition(s: Schedule, st: Stage, tiled: set[str]) -> bool:
    """Would inlining `st` put a condition (padding's) into a multi-level tiled stage, where
    it runs at every step of the register tile? In 200 random guided programs of ResNet-18's
    C6 and C9 on an AVX2 host, one thread, an inlined padding ran at medians of 29 and 24
    GFLOPS, computed at root or at a loop 62-69 and 40-50 (60 of the operator table's
    depthwise conv: 2.6 against 3.7-7.3)."""
    return dag.has_condition(st) and any(c.op.name in tiled for c in effective_consumers(s, st))


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


def parallel_counts(st: Stage, limit: int, threads: int) -> list[int]:
    """How many of a stage's leading loops (up to `limit`) a guided draw fuses into its
    parallel loop: the counts giving each of `threads` threads PARALLEL_TASKS iterations (a
    2-thread kernel whose parallel loop has 3 iterations idles a thread a third of the time),
    else `limit`, the most iterations there are; of those, the ones stopping above the loops
    of a partial tile's cut axis, where there are some (`partial.cut_loops`)."""
    ext = loop_extents(st)
    sizes = itertools.accumulate((ext[iv] for iv in st.leaf_iter_vars[:limit]), operator.mul)
    enough = [c for c, n in enumerate(sizes, 1) if n >= PARALLEL_TASKS * threads]
    cut = partial.cut_loops(st)
    above = [c for c in enough if not cut & set(st.leaf_iter_vars[:c])]
    return above or enough or [limit]


def rfactor_options(st: Stage) -> list[int]:
    """The factors an rfactor of `st` may take: divisors of its reduction's extent."""
    (k,) = st.op.reduce_axis
    extent = int(k.dom.extent.value)
    return [d for d in range(2, min(extent, 1024) + 1) if extent % d == 0] or [1]


def register_tile(steps: list[Step], name: str) -> dict[int, int]:
    """The innermost lengths of a stage's multi-level space splits (its register tile), by
    axis position; empty for a stage that is not multi-level tiled."""
    return {
        s.iter: s.lengths[-1]
        for s in steps
        if isinstance(s, Split) and s.stage == name and len(s.lengths) >= 2
    }


def _register_file(task, st: Stage) -> rt.RegisterFile | None:
    return rt.register_file(task.target, st.op.output(0).dtype)


def _innermost_options(extent: int, parts: int) -> tuple[tuple[int, ...], ...]:
    return tuple(f for f in factorizations(extent, parts) if f[-1] <= MAX_INNERMOST)


def _innermost_lengths(extent: int, parts: int, cut: bool) -> list[int]:
    """The innermost lengths a split of `parts` levels may take: divisors of `extent` (at most
    MAX_INNERMOST), and with `cut` the partial ones (`partial.partial_options`)."""
    found = {f[-1] for f in _innermost_options(extent, parts)}
    if cut:
        found |= {f[-1] for f in partial.partial_options(extent, parts, MAX_INNERMOST)}
    return sorted(found)


def sample_register_tile(
    op: ComputeOp,
    splits: dict[int, int],
    extent: dict[int, int],
    rng: np.random.Generator,
    rf: rt.RegisterFile,
    flat: frozenset[int] = frozenset(),
    cut: bool = False,
) -> dict[int, int] | None:
    """Innermost lengths of the split space axes forming a register tile that fits `rf`: the
    vectorized axis' a lane multiple (else at least half a vector), then the other axes in
    random order, each uniform among the lengths that still fit (1 on the axes in `flat`;
    with `cut` partial lengths too, `partial.py`). A tile using under MIN_FILL of the
    registers (it leaves the FMA latency uncovered) or issuing more loads than FMAs
    (`register_tile.load_bound`) is drawn again, up to FILL_TRIES times, the best kept
    (`_tile_rank`). None if nothing fits."""
    vec = rt.vector_axis(op)
    others = [p for p in splits if p < len(op.axis) and splits[p] >= 2 and p != vec]
    best: dict[int, int] | None = None
    for _ in range(FILL_TRIES):
        inner: dict[int, int] = {}
        for pos in [vec, *(others[k] for k in rng.permutation(len(others)))]:
            lasts = _innermost_lengths(extent[pos], splits[pos] + 1, cut and pos != vec)
            if pos == vec:
                wide = [d for d in lasts if 2 * d >= rf.lanes]
                lasts = rt.lane_multiples(extent[pos], rf.lanes, MAX_INNERMOST) or wide or lasts
            lasts = [d for d in lasts if rt.fits(op, {**inner, pos: d}, rf)]
            lasts = [1] if pos in flat else lasts
            if not lasts:
                return best
            inner[pos] = lasts[rng.integers(len(lasts))]
        if best is None or _tile_rank(op, inner, rf) > _tile_rank(op, best, rf):
            best = inner
        if _tile_rank(op, inner, rf)[:2] == (True, True):
            break
    return best


def _tile_rank(op: ComputeOp, inner: dict[int, int], rf: rt.RegisterFile) -> tuple:
    """How good a register tile draw is: not load-bound, at least MIN_FILL of the
    registers used, then the registers used."""
    used = rt.registers_needed(op, inner, rf.lanes)
    return (not rt.load_bound(op, inner, rf.lanes), used >= MIN_FILL * rf.registers, used)


def sample_tiles(
    st: Stage,
    splits: dict[int, int],
    rng: np.random.Generator,
    rf: rt.RegisterFile | None,
    order: tuple[int, ...] | None = None,
    cache: int | None = None,
) -> dict[int, tuple[int, ...]]:
    """Inner lengths of a stage's open splits (axis position -> number of lengths), each
    uniform over its factorizations; with a register file, those of a multi-level tiled
    stage's space axes uniform given innermost lengths that form a register tile
    (`sample_register_tile`; in partial.PARTIAL of the draws its unrolled axes may take
    partial tiles, `partial.py`); with the loop order the splits are reordered by and the L2
    size as well, in PANEL of the draws of a stage that holds an operand (matmul's B, a
    convolution's weights) whose register tile's panel fits in L2 (`blocking.tile_panel_fits`),
    a panel tiling (`blocking.panel_faults`): no space loop between the reduction loops, a
    register tile within one block of the held operand, and up to PANEL_TRIES draws for one
    whose held panel stays in L2 across row tiles -- unless no tile within one block fills
    MIN_FILL of the registers (7x7 outputs: 7 accumulators of AVX-512's 32 registers; on
    AVX2's 16 they fill half)."""
    axes = [*st.op.axis, *st.op.reduce_axis]
    extent = {pos: int(axes[pos].dom.extent.value) for pos in splits}
    vec = rt.vector_axis(st.op)
    tiled = rf is not None and vec in splits and splits[vec] >= 2
    cut = tiled and rng.random() < partial.PARTIAL
    tile = (sample_register_tile(st.op, splits, extent, rng, rf, cut=cut) if tiled else None) or {}
    held = tiled and order is not None and cache is not None and blocking.held_operands(st.op)
    fits = held and blocking.tile_panel_fits(
        st.op, {axes[pos].var: n for pos, n in tile.items()}, cache or 0
    )
    panel = bool(fits) and rng.random() < PANEL
    flat = frozenset(blocking.held_axes(st.op)) if panel else frozenset()
    if any(tile.get(pos, 1) > 1 for pos in flat):  # a panel tiling's tile: one held block
        one_block = sample_register_tile(st.op, splits, extent, rng, rf, flat, cut) or {}
        if one_block and _tile_rank(st.op, one_block, rf)[1]:
            tile = one_block
        else:  # one block's tiles leave half the registers idle: no panel tiling
            panel, flat = False, frozenset()
    loop_order, l2 = order or (), cache or 0
    ones = blocking.between_reductions(st.op, splits, loop_order) if panel else set()
    options = {}
    for pos, n in splits.items():
        opts = _innermost_options(extent[pos], n + 1)
        if partial.is_partial(extent[pos], (tile.get(pos, 1),)):
            opts = partial.partial_options(extent[pos], n + 1, MAX_INNERMOST)
        opts = [f for f in opts if f[-1] == tile.get(pos, f[-1])]
        options[pos] = [f for f in opts if all(f[lv] == 1 for p, lv in ones if p == pos)] or opts

    def draw() -> dict[int, tuple[int, ...]]:
        return {pos: opts[rng.integers(len(opts))][1:] for pos, opts in options.items()}

    best = draw()
    fewest = _panel_faults(st.op, best, loop_order, l2) if panel else 0
    for _ in range(PANEL_TRIES - 1):
        if not fewest:
            break
        lengths = draw()
        faults = _panel_faults(st.op, lengths, loop_order, l2)
        if faults < fewest:
            best, fewest = lengths, faults
    return best


def _panel_faults(
    op: ComputeOp, lengths: dict[int, tuple[int, ...]], order: tuple[int, ...], cache: int
) -> int:
    """`blocking.panel_faults` of a stage split by `lengths` and reordered by `order` (0
    where the model does not apply)."""
    loops = blocking.nest(op, lengths, order)
    return (blocking.panel_faults(op, loops, cache) if loops else None) or 0


def _reorder_of(steps: list[Step], name: str) -> tuple[int, ...] | None:
    """The loop order of a stage's (first) Reorder step."""
    return next((x.order for x in steps if isinstance(x, Reorder) and x.stage == name), None)


def fill_tile_sizes(program: Program, rng: np.random.Generator, guided: bool) -> list[Step]:
    """The sketch's steps with every open split length sampled (`sample_tiles`, with the
    target's register file if `guided`)."""
    s = program.task.initial_schedule()
    steps: list[Step] = []
    lengths: dict[tuple[str, int], tuple[int, ...]] = {}
    for step in program.steps:
        if isinstance(step, Split) and None in step.lengths:
            st = stage_named(s, step.stage)
            if (step.stage, step.iter) not in lengths and not st.relations:
                # the stage's first split: all of them at once, if they split its root axes
                # from the last back (as multi-level tiling does), so positions are axes
                opened = [
                    x
                    for x in program.steps
                    if isinstance(x, Split) and x.stage == step.stage and None in x.lengths
                ]
                positions = [x.iter for x in opened]
                if positions == sorted(set(positions), reverse=True):
                    rf = _register_file(program.task, st) if guided else None
                    cache = blocking.l2_bytes(program.task.target) if guided else None
                    splits = {x.iter: len(x.lengths) for x in opened}
                    order = _reorder_of(program.steps, step.stage)
                    for pos, lens in sample_tiles(st, splits, rng, rf, order, cache).items():
                        lengths[step.stage, pos] = lens
            lens = lengths.get((step.stage, step.iter))
            if lens is None:
                extent = loop_extents(st)[st.leaf_iter_vars[step.iter]]
                lens = sample_lengths(extent, len(step.lengths), rng)
            step = Split(step.stage, step.iter, lens)
        elif isinstance(step, Rfactor) and step.factor is None:
            options = rfactor_options(stage_named(s, step.stage))
            step = Rfactor(step.stage, options[rng.integers(len(options))])
        _replay_into(s, steps, [step])
    return steps


def unroll_choices(st: Stage, steps: list[Step], guided: bool) -> tuple[int, ...]:
    """Unroll limits to sample for a stage: guided, those that unroll its whole register tile
    (the accumulators are registers only when every access to them is at a constant index)."""
    points = math.prod(register_tile(steps, st.op.name).values())
    covering = tuple(v for v in UNROLL_CHOICES if v >= points)
    return covering if guided and points > 1 and covering else UNROLL_CHOICES


def annotate(
    sketch: Program,
    rng: np.random.Generator,
    guided: bool | None = None,
    threads: int | None = None,
) -> Program:
    """A random complete program of a sketch; `guided` (default: with probability GUIDED)
    samples register tiles that fit the target's registers, whole vectors, unroll limits
    covering the tiles and parallel loops with work for `threads` threads (default: the
    thread pool's size), else every choice is uniform (a GPU sketch: `gpu.annotate_gpu`)."""
    if is_cuda_target(sketch.task.target):
        from .gpu import annotate_gpu

        return annotate_gpu(sketch, rng)
    if target_kind(sketch.task.target) == "vta":
        from .accel import annotate_vta

        return annotate_vta(sketch, rng)
    guided = bool(rng.random() < GUIDED) if guided is None else guided
    threads = threads or default_threads()
    steps = fill_tile_sizes(sketch, rng, guided)
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
            rf = _register_file(sketch.task, st) if guided else None
            options = (rf and rt.lane_multiples(extent, rf.lanes, MAX_INNERMOST)) or options
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
            counts = parallel_counts(st, limit, threads) if guided else range(1, limit + 1)
            count = int(counts[rng.integers(len(counts))])
            _replay_into(
                s, steps, [Fuse(st.op.name, 0, count), Annotate(st.op.name, 0, "parallel")]
            )

    for st in live:  # parallel granularity of root stages with a fixed location
        if st.attach_type == "root" and st not in flexible:
            parallelize(st)
    for st in reversed(flexible):  # locations of untiled stages, consumers first
        opts = location_options(s, st)
        if guided and inlines_condition(s, st, tiled):
            opts = [o for o in opts if o != "inline"]
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
            choices = unroll_choices(st, steps, guided)
            value = choices[rng.integers(len(choices))]
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
    extent = _split_extent(program, k)
    levels = partial.split_levels(extent, step.lengths)  # outer first
    if levels is None:
        return None
    # a partial tile's length stays (the outer levels factorize its tile count)
    n = len(levels) - partial.is_partial(extent, step.lengths)
    src, dst = rng.choice(n, size=2, replace=False) if n > 1 else (0, 0)
    factors = [d for d in range(2, levels[src] + 1) if levels[src] % d == 0]
    if not factors or src == dst:
        return None
    d = factors[rng.integers(len(factors))]
    levels[src] //= d
    levels[dst] *= d
    if levels[-1] > MAX_INNERMOST:
        return None
    return _replace(program, k, Split(step.stage, step.iter, tuple(levels[1:])))


def _split_extent(program: Program, k: int) -> int:
    """The extent of the loop Split step #k splits."""
    step = program.steps[k]
    st = stage_named(_schedule_before(program, k), step.stage)
    return loop_extents(st)[st.leaf_iter_vars[step.iter]]


def mutate_register_tile(program: Program, rng: np.random.Generator) -> Program | None:
    """Reshape a register tile: move a factor from the innermost tile of one space axis (to its
    outer loop) into the innermost tile of another (from one of its outer levels), e.g. a
    conv's tile from output rows to output columns."""
    by_stage: dict[str, list[int]] = {}
    for k, s in enumerate(program.steps):
        if isinstance(s, Split) and len(s.lengths) >= 2:
            by_stage.setdefault(s.stage, []).append(k)
    stages = [ks for ks in by_stage.values() if len(ks) >= 2]
    if not stages:
        return None
    ks = stages[rng.integers(len(stages))]
    ka, kb = (ks[k] for k in rng.choice(len(ks), size=2, replace=False))
    a, b = program.steps[ka], program.steps[kb]
    ea, eb = _split_extent(program, ka), _split_extent(program, kb)
    if partial.is_partial(ea, a.lengths) or partial.is_partial(eb, b.lengths):
        return None  # factors do not move into or out of a partial tile: `mutate_partial_tile`
    factors = [d for d in range(2, a.lengths[-1] + 1) if a.lengths[-1] % d == 0]
    if not factors:
        return None
    d = factors[rng.integers(len(factors))]
    lb = list(b.lengths)
    levels = [lv for lv in range(len(lb) - 1) if lb[lv] % d == 0]
    if eb // math.prod(lb) % d == 0:
        levels.append(-1)  # b's outer loop gives the factor
    if not levels:
        return None
    lv = levels[rng.integers(len(levels))]
    if lv >= 0:
        lb[lv] //= d
    lb[-1] *= d
    if lb[-1] > MAX_INNERMOST:
        return None
    la = (*a.lengths[:-1], a.lengths[-1] // d)
    child = _replace(program, ka, Split(a.stage, a.iter, la))
    return _replace(child, kb, Split(b.stage, b.iter, tuple(lb)))


def mutate_partial_tile(program: Program, rng: np.random.Generator) -> Program | None:
    """Another innermost length, partial or exact (`partial.py`), for an unrolled space axis
    of a multi-level tiled stage (its middle levels kept where they still fit,
    `partial.retile`)."""
    splits = [
        k for k, s in enumerate(program.steps) if isinstance(s, Split) and len(s.lengths) >= 2
    ]
    if not splits:
        return None
    k = splits[rng.integers(len(splits))]
    step = program.steps[k]
    st = stage_named(_schedule_before(program, k), step.stage)
    if step.iter >= len(st.op.axis) or step.iter == rt.vector_axis(st.op):
        return None
    extent = loop_extents(st)[st.leaf_iter_vars[step.iter]]
    options = [n for n in range(1, min(extent, MAX_INNERMOST) + 1) if n != step.lengths[-1]]
    if not options:
        return None
    lengths = partial.retile(extent, step.lengths, options[rng.integers(len(options))])
    return _replace(program, k, Split(step.stage, step.iter, lengths))


def mutate_rfactor(program: Program, rng: np.random.Generator) -> Program | None:
    """Another factor for an rfactor (the steps on the factored stage replay with it: their
    splits are of loops whose extents follow the factor)."""
    rfs = [k for k, s in enumerate(program.steps) if isinstance(s, Rfactor)]
    if not rfs:
        return None
    k = rfs[rng.integers(len(rfs))]
    step = program.steps[k]
    s = _schedule_before(program, k)
    options = [f for f in rfactor_options(stage_named(s, step.stage)) if f != step.factor]
    if not options:
        return None
    return _replace(program, k, Rfactor(step.stage, options[rng.integers(len(options))]))


def mutate_parallel(program: Program, rng: np.random.Generator, threads: int) -> Program | None:
    """Fuse one more or one fewer leading loop into a parallel loop (not fewer than give
    `threads` threads work, `parallel_counts`, where the program's loop did)."""
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
    s = _schedule_before(program, k)  # one schedule: the attach points are its stages'
    limit = parallel_limit(s, stage_named(s, step.stage))
    count = step.count + (1 if rng.random() < 0.5 else -1)
    if not 1 <= count <= limit:
        return None
    enough = parallel_counts(stage_named(s, step.stage), limit, threads)
    if step.count in enough and count not in enough:
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
    """Move an untiled stage to another valid compute location (not a condition into a tiled
    stage, `inlines_condition`, unless the program has it there already)."""
    tiled = tiled_stages(program.steps)
    gpu = is_cuda_target(program.task.target)
    always_inlined = {  # by the sketch's always-inline rule: not a location choice
        st.op.name
        for st in program.task.initial_schedule().stages
        if dag.is_strict_inlinable(st, gpu)
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
    st = stage_named(s, step.stage)
    opts = location_options(s, st)
    if not isinstance(step, Inline) and inlines_condition(s, st, tiled):
        opts = [o for o in opts if o != "inline"]  # keep a condition out of a register tile
    new = location_step(step.stage, opts[rng.integers(len(opts))])
    return None if new == step else _replace(program, k, new)


# mutation -> its probability
MUTATIONS = {
    mutate_tile_size: 0.45,
    mutate_register_tile: 0.12,
    mutate_partial_tile: 0.08,
    mutate_rfactor: 0.05,
    mutate_parallel: 0.1,
    mutate_pragma: 0.1,
    mutate_location: 0.1,
}


def _tiled_stages(program: Program) -> list[str]:
    """The multi-level tiled stages of a program."""
    return sorted({s.stage for s in program.steps if isinstance(s, Split) and len(s.lengths) >= 2})


def register_faults(program: Program, s: Schedule | None = None) -> int:
    """How many of a program's register tiles do not fit the target's registers or are not
    covered by their stage's unroll limit (0 on a target without a register file); `s`: the
    program's schedule, if replayed already."""
    tiles = _tiled_stages(program)
    if not tiles:
        return 0
    s = s or program.schedule()[0]
    unroll = {p.stage: p.value for p in program.steps if isinstance(p, Pragma)}
    faults = 0
    for name in tiles:
        st = stage_named(s, name)
        rf = _register_file(program.task, st)
        if rf is None:
            continue
        inner = register_tile(program.steps, name)
        faults += not rt.fits(st.op, inner, rf)
        faults += unroll.get(name, 0) < math.prod(inner.values())
    return faults


def panel_faults(program: Program, s: Schedule | None = None) -> int:
    """How many panel properties (`blocking.panel_faults`) a program's multi-level tiled
    stages miss, counted where the model applies (0 off the CPU); `s`: the program's
    schedule, if replayed already."""
    cache = blocking.l2_bytes(program.task.target)
    tiles = _tiled_stages(program)
    if cache is None or not tiles:
        return 0
    s = s or program.schedule()[0]
    faults = 0
    for name in tiles:
        lengths = {
            x.iter: tuple(n or 1 for n in x.lengths)
            for x in program.steps
            if isinstance(x, Split) and x.stage == name
        }
        order = _reorder_of(program.steps, name) or ()
        faults += _panel_faults(stage_named(s, name).op, lengths, order, cache)
    return faults


def mutate(
    program: Program, rng: np.random.Generator, threads: int | None = None
) -> Program | None:
    """One random mutation (None if the chosen one does not apply or breaks a register tile
    rule, a panel property or the parallel work of `threads` threads (default: the thread
    pool's size) the program kept; a GPU program: `gpu.mutate_gpu`)."""
    if is_cuda_target(program.task.target):
        from .gpu import mutate_gpu

        return mutate_gpu(program, rng)
    if target_kind(program.task.target) == "vta":
        from .accel import mutate_vta

        return mutate_vta(program, rng)
    funcs = list(MUTATIONS)
    k = rng.choice(len(funcs), p=np.array(list(MUTATIONS.values())))
    if funcs[k] is mutate_parallel:
        child = mutate_parallel(program, rng, threads or default_threads())
    else:
        child = funcs[k](program, rng)
    if child is None or not _tiled_stages(child):
        return child
    try:
        cs = child.schedule()[0]
    except CompilerError:  # its steps no longer replay (a loop they name is gone)
        return None
    s = program.schedule()[0]
    if register_faults(child, cs) > register_faults(program, s):
        return None
    if panel_faults(child, cs) > panel_faults(program, s):
        return None
    return child


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
    child = Program(a.task, steps, a.sketch)
    if is_cuda_target(a.task.target):
        from .gpu import if_fits

        return if_fits(child)
    if target_kind(a.task.target) == "vta":
        from . import accel

        return accel.if_fits(child)
    return child
