"""Sketch generation: derivation rules applied from the output stage back to the inputs.

A derivation state is (steps so far, index of the working stage in the schedule's stage list,
producers first). Every rule whose condition holds derives successor states; a state whose
index is below 0 is a sketch. Rules, in the order they are tried (CPU):

  always-inline     a strict-inlinable stage (elementwise/injective, no math call such as exp,
                    not an output) is inlined
  add-cache-write   a stage with data reuse and no fusible consumer gets a `local` cache stage
                    (Ansor derives the uncached alternative too; here, accumulating in the
                    output, it measured 2-3x slower on an AVX2 host: the medians of 6 random
                    guided programs per sketch, 512^3 matmul 25 against 51 GFLOPS, ResNet-18's
                    C6 conv2d_NCHWc 28 against 46, best 30 against 81)
  tile-with-fusion  a stage with data reuse and a fusible consumer is tiled (SSRSRS) and the
                    consumer follows its outer tiles and computes it at its second level
  multi-level-tile  a stage with data reuse is tiled (SSRSRS)
                    (both tiling rules pack the inputs whose long rows the register tile
                    walks across into panels, `layout.py`: always for inputs read many
                    times over, else in a second state)
  add-rfactor       a reduction with little space parallelism is factored (rfactor.py)
  skip              anything else is left for the annotation

On a GPU (target cuda) tiling a stage also stages its inputs in shared memory
(`gpu.sketch_steps`). The accelerator (target vta) has rules of its own (`accel.VTA_RULES`).

Tile sizes are left open (`None`); `annotate.py` fills them. `register_sketch_rule` adds a
user rule (optionally before an existing one).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from ..codegen.nvptx_arch import is_cuda_target as is_gpu
from ..errors import TuningError
from ..schedule.schedule import Schedule, Stage
from ..tune.task import running_target, target_kind
from . import dag
from .gpu import sketch_steps as gpu_sketch_steps
from .layout import pack_steps
from .program import Program, SearchTask
from .steps import CacheWrite, ComputeAt, FollowSplit, Inline, Reorder, Split, Step, replay

CPU_TILING = "SSRSRS"
GPU_TILING = "SSSRRSRS"
MAX_SKETCHES = 16


class Cond(enum.Enum):
    PASS = 0
    APPLY = 1  # derive, and let later rules derive too
    APPLY_AND_SKIP_REST = 2


@dataclass
class DeriveState:
    """Steps derived so far and the working stage (an index into the replayed stages)."""

    task: SearchTask
    steps: list[Step]
    index: int

    def schedule(self) -> Schedule:
        s = self.task.initial_schedule()
        replay(s, self.steps)
        return s

    @property
    def stage(self) -> Stage:
        return self.schedule().stages[self.index]

    def derive(self, steps: list[Step], index: int) -> DeriveState:
        return DeriveState(self.task, [*self.steps, *steps], index)


@dataclass
class SketchRule:
    """`condition(state) -> Cond` and `apply(state) -> successor states`."""

    name: str
    condition: Callable[[DeriveState], Cond]
    apply: Callable[[DeriveState], list[DeriveState]]


def tiling_structure(target: str) -> str:
    return GPU_TILING if is_gpu(target) else CPU_TILING


def _tiled(steps: list[Step], name: str) -> bool:
    return any(isinstance(s, Split) and s.stage == name for s in steps)


def _cached(steps: list[Step], name: str) -> bool:
    return any(isinstance(s, CacheWrite) and s.stage == name for s in steps)


def multi_level_tile(st: Stage, structure: str) -> tuple[list[Step], dict[int, int]]:
    """Steps tiling a stage as `structure` (S: a level of every space axis, R: of every
    reduction axis); axes of extent 1 stay whole (space ones outermost, reduction ones at the
    first R level, so the innermost loop is a space loop to vectorize). Returns the steps and,
    per tiled space axis (index into op.axis), the index of its Split step among them."""
    n_s, n_r = structure.count("S"), structure.count("R")
    name = st.op.name
    axes = [*st.op.axis, *st.op.reduce_axis]
    steps: list[Step] = []
    split_of: dict[int, int] = {}
    # split from the last axis back, so earlier axes keep their positions
    for pos in reversed(range(len(axes))):
        iv = axes[pos]
        if int(iv.dom.extent.value) <= 1:
            continue
        parts = n_r if iv.kind == "reduce" else n_s
        if iv.kind != "reduce":
            split_of[pos] = len(steps)
        steps.append(Split(name, pos, (None,) * (parts - 1)))
    # leaf layout after the splits: per axis its parts (one loop if not split)
    layout, p = [], 0
    for iv in axes:
        n = 1 if int(iv.dom.extent.value) <= 1 else (n_r if iv.kind == "reduce" else n_s)
        layout.append((iv.kind == "reduce", list(range(p, p + n)), n))
        p += n
    order: list[int] = [pos[0] for red, pos, n in layout if n == 1 and not red]
    levels = {"S": 0, "R": 0}
    for ch in structure:
        red = ch == "R"
        if red and not levels["R"]:  # unit reductions (a 1x1 kernel's) before the first R
            order += [pos[0] for is_red, pos, n in layout if n == 1 and is_red]
        for is_red, pos, n in layout:
            if is_red == red and n > 1:
                order.append(pos[levels[ch]])
        levels[ch] += 1
    steps.append(Reorder(name, tuple(order)))
    return steps, {k: v for k, v in split_of.items()}


def _follow(consumer: Stage, producer: Stage, base: int, split_of: dict[int, int], levels: int):
    """Steps tiling `consumer` by the producer's outer `levels` space tiles (FollowSplit of
    the producer's split steps at `base` + offset), then computing the producer at the
    consumer's innermost outer-tile loop."""
    name = consumer.op.name
    steps: list[Step] = []
    tiled = sorted(split_of)
    for pos in reversed(tiled):
        steps.append(FollowSplit(name, pos, base + split_of[pos], levels + 1))
    n_ax = len(consumer.op.axis)
    parts = {pos: levels + 1 for pos in tiled}
    starts, p = {}, 0
    for pos in range(n_ax):
        starts[pos] = p
        p += parts.get(pos, 1)
    order = [starts[pos] for pos in range(n_ax) if pos not in parts]
    for lv in range(levels + 1):
        order += [starts[pos] + lv for pos in tiled]
    steps.append(Reorder(name, tuple(order)))
    n_untiled = n_ax - len(tiled)
    attach = n_untiled + levels * len(tiled) - 1
    steps.append(ComputeAt(producer.op.name, name, attach))
    return steps


# ------------------------------------------------------------------------------------ rules
def _inline_cond(d: DeriveState) -> Cond:
    gpu = is_gpu(d.task.target)
    return Cond.APPLY_AND_SKIP_REST if dag.is_strict_inlinable(d.stage, gpu) else Cond.PASS


def _inline_apply(d: DeriveState) -> list[DeriveState]:
    return [d.derive([Inline(d.stage.op.name)], d.index - 1)]


def _cache_cond(d: DeriveState) -> Cond:
    s = d.schedule()
    st = s.stages[d.index]
    if st.scope != "global" or _cached(d.steps, st.op.name) or _tiled(d.steps, st.op.name):
        return Cond.PASS
    if dag.has_data_reuse(st) and dag.fusible_consumer(s, st) is None:
        # the tiled stage always computes into registers: on the CPU the uncached alternative
        # (accumulating in the output) measured 2-3x slower (module docstring)
        return Cond.APPLY_AND_SKIP_REST
    return Cond.PASS


def _cache_apply(d: DeriveState) -> list[DeriveState]:
    # the cache stage takes index `index`; the stage itself (now its copy) moves to index + 1
    return [d.derive([CacheWrite(d.stage.op.name)], d.index)]


def _fusion_cond(d: DeriveState) -> Cond:
    s = d.schedule()
    st = s.stages[d.index]
    if dag.has_data_reuse(st) and dag.fusible_consumer(s, st) is not None:
        return Cond.APPLY_AND_SKIP_REST
    return Cond.PASS


def _fusion_apply(d: DeriveState) -> list[DeriveState]:
    s = d.schedule()
    st = s.stages[d.index]
    consumer = dag.fusible_consumer(s, st)
    structure = tiling_structure(d.task.target)
    tile, split_of = multi_level_tile(st, structure)
    base = len(d.steps)
    levels = structure.index("R")  # the space levels above the first reduction level
    steps = tile + _follow(consumer, st, base, split_of, levels)
    return _with_packs(d, steps + _gpu_steps(d, steps, st.op.name), st, base, split_of)


def _tile_cond(d: DeriveState) -> Cond:
    return Cond.APPLY_AND_SKIP_REST if dag.has_data_reuse(d.stage) else Cond.PASS


def _tile_apply(d: DeriveState) -> list[DeriveState]:
    st = d.stage
    steps, split_of = multi_level_tile(st, tiling_structure(d.task.target))
    return _with_packs(d, steps + _gpu_steps(d, steps, st.op.name), st, len(d.steps), split_of)


def _with_packs(
    d: DeriveState, steps: list[Step], st: Stage, base: int, split_of: dict[int, int]
) -> list[DeriveState]:
    """The tiled state; on the CPU, if the stage reads inputs worth packing into panels of
    its register tile's width (`layout.packable`), the state with them packed instead (inputs
    read many times over) or as well (the packed copies go before the stage, so the working
    index passes them by)."""
    packs, only = ([], False) if is_gpu(d.task.target) else pack_steps(st, base, split_of)
    plain = [] if only else [d.derive(steps, d.index - 1)]
    return plain + ([d.derive(steps + packs, d.index - 1)] if packs else [])


def _gpu_steps(d: DeriveState, steps: list[Step], name: str) -> list[Step]:
    """On a GPU, the shared-memory stages of a stage just tiled (`gpu.sketch_steps`)."""
    if not is_gpu(d.task.target):
        return []
    return gpu_sketch_steps(d.derive(steps, d.index).schedule(), name)


def _rfactor_cond(d: DeriveState) -> Cond:
    st = d.stage
    if _cached(d.steps, st.op.name) or st.scope != "global" or st.op.name.endswith(".rf"):
        return Cond.PASS
    return Cond.APPLY if dag.has_more_reduction_parallel(st) else Cond.PASS


def _rfactor_apply(d: DeriveState) -> list[DeriveState]:
    from .rfactor import Rfactor

    # the factored stage NAME.rf takes `index`; its sum (the stage) moves to index + 1
    return [d.derive([Rfactor(d.stage.op.name, None)], d.index)]


def _skip_apply(d: DeriveState) -> list[DeriveState]:
    return [d.derive([], d.index - 1)]


RULES: list[SketchRule] = [
    SketchRule("always-inline", _inline_cond, _inline_apply),
    SketchRule("add-cache-write", _cache_cond, _cache_apply),
    SketchRule("tile-with-fusion", _fusion_cond, _fusion_apply),
    SketchRule("multi-level-tile", _tile_cond, _tile_apply),
    SketchRule("add-rfactor", _rfactor_cond, _rfactor_apply),
    SketchRule("skip", lambda d: Cond.APPLY, _skip_apply),
]


def register_sketch_rule(rule: SketchRule, before: str | None = None) -> None:
    """Add a derivation rule, tried before the rule named `before` (default: before skip)."""
    if any(r.name == rule.name for r in RULES):
        raise TuningError(f"a sketch rule named {rule.name!r} exists already")
    names = [r.name for r in RULES]
    at = names.index(before or "skip") if (before or "skip") in names else len(RULES)
    RULES.insert(at, rule)


def unregister_sketch_rule(name: str) -> None:
    RULES[:] = [r for r in RULES if r.name != name]


def generate_sketches(task: SearchTask, rules: list[SketchRule] | None = None) -> list[Program]:
    """Every sketch the rules derive for the task (at most MAX_SKETCHES), in derivation order."""
    if rules is None and target_kind(task.target) == "vta":
        from .accel import VTA_RULES, conv_workload

        conv_workload(task)  # refuses the workloads the accelerator's rules do not place
        rules = VTA_RULES
    rules = RULES if rules is None else rules
    start = DeriveState(task, [], len(task.initial_schedule().stages) - 1)
    queue, done = [start], []
    with running_target(task.target):  # accelerator steps read its configuration
        while queue:
            state = queue.pop(0)
            if state.index < 0:
                done.append(state.steps)
                continue
            for rule in rules:
                cond = rule.condition(state)
                if cond == Cond.PASS:
                    continue
                queue.extend(rule.apply(state))
                if cond == Cond.APPLY_AND_SKIP_REST:
                    break
            if len(done) + len(queue) > 64 * MAX_SKETCHES:
                raise TuningError(f"sketch generation for {task.name} does not terminate")
    unique = list({repr(steps): steps for steps in done}.values())[:MAX_SKETCHES]
    return [Program(task, steps, sketch=k) for k, steps in enumerate(unique)]
