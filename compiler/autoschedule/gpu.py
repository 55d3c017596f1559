"""The auto-scheduler's GPU target ("cuda [-arch=sm_XX]"): sketch steps and annotation.

Sketches (`sketch.py` with target cuda) tile a stage with data reuse SSSRRSRS into a `local`
stage computed at its consumer's thread loop; `sketch_steps` adds what a GPU sketch holds
besides: every input of the tiled stage cache-read into `shared` and computed at the last loop
of the outermost reduction tile, and the `local` scope of a tiled stage computed per thread.

Annotation (`annotate_gpu`) fills the tile sizes, then, in this order and always as steps of
the same shape (so mutations change values only):
  * each tiled root stage: its first space tile level fused and bound to blockIdx.x, the
    second to vthread, the third to threadIdx.x; the tiled producer computed at the thread loop
  * each untiled root stage: its space loops fused, split by a thread count, bound to
    blockIdx.x / threadIdx.x
  * each shared stage (cooperative fetching): its loops fused, split by a vector width
    (vectorized), then by the block's threads (`FollowFusedSplit`: whatever the tile sizes,
    exactly the threads of the block) and bound to threadIdx.x
  * an `auto_unroll_max_step` pragma per computing stage (inside the shared stages' loop)
Tile sizes are resampled until the threads per block, virtual threads, fetch vector width and
shared memory fit the architecture (`resource_problems`, from bound inference).
"""

from __future__ import annotations

import math

import numpy as np

from ..arith import Analyzer
from ..codegen.nvptx_arch import GPUArch, is_cuda_target, parse_cuda_target
from ..schedule.bound import infer_bounds
from ..schedule.schedule import Schedule, Stage
from .annotate import (
    MAX_INNERMOST,
    UNROLL_CHOICES,
    factorizations,
    fill_tile_sizes,
    mutate_pragma,
    mutate_tile_size,
    tiled_stages,
)
from .gpu_steps import Bind, CacheRead, FollowFusedSplit, SetScope
from .program import Program
from .steps import (
    UNROLL_KEY,
    Annotate,
    ComputeAt,
    FollowSplit,
    Fuse,
    Pragma,
    Split,
    Step,
    replay,
    stage_named,
)

MAX_VTHREAD = 8  # virtual threads per block (each replicates the thread's registers)
MAX_LOCAL = 64  # elements per thread of local stages (accumulators kept in registers)
REGISTER_OVERHEAD = 32  # registers a thread needs besides its local elements (addresses, operands)
VECTOR_WIDTHS = (1, 2, 4)  # elements per shared-memory fetch (16 bytes at most)
THREAD_COUNTS = (32, 64, 128, 256, 512)  # threads per block of an untiled stage
SAMPLE_TRIES = 64
GPU_SPACE_LEVELS = 5  # the S levels of SSSRRSRS: block, vthread, thread, inner, inner


def is_gpu(target: str) -> bool:
    return is_cuda_target(target)


# -------------------------------------------------------------------------------- sketch
def sketch_steps(s: Schedule, name: str) -> list[Step]:
    """GPU steps after tiling stage `name` (already applied to `s`): its inputs cache-read into
    shared memory at the last loop of its outermost reduction tile, and `local` scope for a
    tiled stage computed inside its consumer."""
    st = stage_named(s, name)
    steps: list[Step] = []
    if st.attach_type == "scope" and st.scope == "global":
        steps.append(SetScope(name, "local"))
    leaves = st.leaf_iter_vars
    reduce_first = [k for k, iv in enumerate(leaves) if iv.kind == "reduce"]
    n_split = sum(int(iv.dom.extent.value) > 1 for iv in st.op.reduce_axis)
    if not reduce_first or not n_split:
        return steps
    at = reduce_first[0] + n_split - 1
    inputs = list(dict.fromkeys(t.name for t in st.op.input_tensors))
    steps += [CacheRead(t, "shared", (name,)) for t in inputs]
    steps += [ComputeAt(f"{t}.shared", name, at) for t in inputs]
    return steps


# ---------------------------------------------------------------------------- annotation
def _space_splits(steps: list[Step], st: Stage) -> list[int]:
    """Indices of the steps splitting space axes of a stage (Split or FollowSplit)."""
    n_axis = len(st.op.axis)
    return [
        k
        for k, step in enumerate(steps)
        if isinstance(step, Split | FollowSplit) and step.stage == st.op.name and step.iter < n_axis
    ]


def _without(steps: list[Step], drop: set[int]) -> list[Step]:
    """The steps without those at `drop` (FollowSplit sources renumbered)."""
    out: list[Step] = []
    for k, step in enumerate(steps):
        if k in drop:
            continue
        if isinstance(step, FollowSplit):
            src = step.src - sum(d < step.src for d in drop)
            step = FollowSplit(step.stage, step.iter, src, step.n_parts)
        out.append(step)
    return out


def _add(s: Schedule, steps: list[Step], new: list[Step]) -> None:
    for step in new:
        steps.append(step)
        step.apply(s, steps)


def _thread_tiles(
    sketch: Program, steps: list[Step], arch: GPUArch, rng: np.random.Generator
) -> list[Step]:
    """The space splits of a GPU tiling (vthread, thread, inner, inner lengths) resampled,
    axis by axis, among the factorizations that keep the block's threads, virtual threads
    and a thread's local elements (registers) within the architecture's limits."""
    s = sketch.task.initial_schedule()
    replay(s, steps)
    left = {"threads": arch.max_threads_per_block, "vthreads": MAX_VTHREAD, "local": MAX_LOCAL}
    out = list(steps)
    for k, step in enumerate(sketch.steps):
        if not (isinstance(step, Split) and len(step.lengths) == GPU_SPACE_LEVELS - 1):
            continue
        if None not in step.lengths:
            continue
        extent = int(stage_named(s, step.stage).op.axis[step.iter].dom.extent.value)
        options = [
            f
            for f in factorizations(extent, GPU_SPACE_LEVELS)
            if f[-1] <= MAX_INNERMOST
            and f[1] <= left["vthreads"]
            and f[2] <= left["threads"]
            and f[1] * f[3] * f[4] <= left["local"]
        ]
        if not options:  # no fit: keep the unconstrained draw (the resource check rejects it)
            continue
        f = options[rng.integers(len(options))]
        left["vthreads"] //= f[1]
        left["threads"] //= f[2]
        left["local"] //= f[1] * f[3] * f[4]
        out[k] = Split(step.stage, step.iter, tuple(f[1:]))
    return out


def _annotate_once(sketch: Program, rng: np.random.Generator) -> Program:
    task = sketch.task
    filled = _thread_tiles(
        sketch, fill_tile_sizes(sketch, rng, False), parse_cuda_target(task.target), rng
    )
    s = task.initial_schedule()
    replay(s, filled)
    tiled = tiled_stages(filled)
    bound = [
        st
        for st in s.stages
        if st.attach_type == "root" and st.op.name in tiled and _space_splits(filled, st)
    ]
    names = {st.op.name for st in bound}
    moved = {
        k: step
        for k, step in enumerate(filled)
        if isinstance(step, ComputeAt) and step.target in names
    }
    steps = _without(filled, set(moved))
    s = task.initial_schedule()
    replay(s, steps)
    for st in bound:  # block, virtual thread and thread levels
        n = len(_space_splits(steps, st))
        name = st.op.name
        _add(s, steps, [Fuse(name, 0, len(st.op.axis)), Bind(name, 0, "blockIdx.x")])
        _add(s, steps, [Fuse(name, 1, n), Bind(name, 1, "vthread")])
        _add(s, steps, [Fuse(name, 2, n), Bind(name, 2, "threadIdx.x")])
    _add(s, steps, [ComputeAt(step.stage, step.target, 2) for step in moved.values()])
    live = [st for st in s.stages if st.attach_type == "root" and st.op.name not in names]
    for st in live:  # untiled root stages: a block of threads over their fused space loops
        kinds = [iv.kind == "reduce" for iv in st.leaf_iter_vars]
        n_space = kinds.index(True) if True in kinds else len(kinds)
        if not n_space:
            continue
        extent = math.prod(int(iv.dom.extent.value) for iv in st.op.axis)
        options = [t for t in THREAD_COUNTS if extent % t == 0] or [
            d for d in range(1, min(extent, THREAD_COUNTS[-1]) + 1) if extent % d == 0
        ]
        threads = int(options[rng.integers(len(options))])
        name = st.op.name
        _add(s, steps, [Fuse(name, 0, n_space), Split(name, 0, (threads,))])
        _add(s, steps, [Bind(name, 0, "blockIdx.x"), Bind(name, 1, "threadIdx.x")])
    infos = infer_bounds(s, Analyzer())
    for st in [st for st in s.stages if st.scope == "shared"]:  # cooperative fetching
        owner = st.attach_stage
        extent = math.prod(infos[st].root_ext[iv] for iv in st.op.axis)
        widths = [v for v in VECTOR_WIDTHS if extent % v == 0]
        vec = int(widths[rng.integers(len(widths))])
        name = st.op.name
        srcs = tuple(k for k in _space_splits(steps, owner) if isinstance(steps[k], Split))
        _add(s, steps, [Fuse(name, 0, len(st.op.axis)), Split(name, 0, (vec,))])
        _add(s, steps, [FollowFusedSplit(name, 0, srcs, 1), Bind(name, 1, "threadIdx.x")])
        _add(s, steps, [Annotate(name, 2, "vectorize")])
    for st in s.stages:  # unroll pragmas of computing stages
        if st.attach_type == "inline" or st.scope == "shared":
            continue
        if st.op.reduce_axis or st.op.name in tiled:
            at = [
                st.leaf_iter_vars.index(o.attach_ivar) + 1
                for o in s.stages
                if o.attach_type == "scope" and o.attach_stage is st and o.scope == "shared"
            ]
            value = int(UNROLL_CHOICES[rng.integers(len(UNROLL_CHOICES))])
            _add(s, steps, [Pragma(st.op.name, max(at, default=0), UNROLL_KEY, value)])
    return Program(task, steps, sketch.sketch)


def _thread_extents(st: Stage, info) -> dict[str, int]:
    """Threads and virtual threads a stage's loops are bound to."""
    ext = {"threadIdx": 1, "vthread": 1}
    for iv, attr in st.iter_attrs.items():
        tag = attr.thread.thread_tag.split(".")[0] if attr.thread is not None else None
        if tag in ext:
            ext[tag] *= info.leaf_ext[iv]
    return ext


def resource_problems(program: Program) -> list[str]:
    """Why a GPU program cannot run well on its target's architecture (empty: it fits):
    threads per block, virtual threads, shared memory per block, registers per thread (a
    local stage's elements, all virtual threads' copies, plus REGISTER_OVERHEAD within what
    the block's threads leave each), fetch vector width."""
    arch = parse_cuda_target(program.task.target)
    s, _ = program.schedule()
    infos = infer_bounds(s, Analyzer())
    problems = []
    shared = 0
    bound = {st: _thread_extents(st, info) for st, info in infos.items()}
    for st, info in infos.items():
        ext = bound[st]
        for iv, attr in st.iter_attrs.items():
            if attr.kind == "vectorized" and info.leaf_ext[iv] not in VECTOR_WIDTHS:
                problems.append(f"{st.op.name}: vector of {info.leaf_ext[iv]} elements")
        if ext["threadIdx"] > arch.max_threads_per_block:
            problems.append(f"{st.op.name}: {ext['threadIdx']} threads per block")
        if ext["vthread"] > MAX_VTHREAD:
            problems.append(f"{st.op.name}: {ext['vthread']} virtual threads")
        n = math.prod(info.root_ext[iv] for iv in st.op.axis)
        if st.scope == "shared":
            shared += n * np.dtype(st.op.output(0).dtype).itemsize
        if st.scope == "local" and st.attach_type == "scope":
            owner = bound[st.attach_stage]
            n *= owner["vthread"]  # each virtual thread has its own copy
            regs = min(
                arch.max_registers_per_thread, arch.registers_per_block // owner["threadIdx"]
            )
            if n > min(MAX_LOCAL, regs - REGISTER_OVERHEAD):
                problems.append(
                    f"{st.op.name}: {n} local elements per thread ({regs} registers each)"
                )
    if shared > arch.max_shared_per_block:
        problems.append(f"{shared} bytes of shared memory per block")
    return problems


def annotate_gpu(sketch: Program, rng: np.random.Generator) -> Program:
    """A random complete GPU program of a sketch whose resources fit the architecture (after
    SAMPLE_TRIES draws that do not, the last draw: building it fails and is learned as such)."""
    program = _annotate_once(sketch, rng)
    for _ in range(SAMPLE_TRIES - 1):
        if not resource_problems(program):
            break
        program = _annotate_once(sketch, rng)
    return program


def mutate_gpu(program: Program, rng: np.random.Generator) -> Program | None:
    """A tile-size (p 0.8) or unroll-pragma mutation whose result still fits (else None)."""
    op = mutate_tile_size if rng.random() < 0.8 else mutate_pragma
    child = op(program, rng)
    if child is None:
        return None
    try:
        return None if resource_problems(child) else child
    except Exception:  # noqa: BLE001 - a child that does not replay is no child
        return None
