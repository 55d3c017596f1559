"""Program features of a config, computed from its loop nest (AutoTVM's itervar + curve).

A LoopNest is the loop path down to a program's main statement: each loop's extent and
annotation, and for every buffer touched, the coefficient (stride) of each loop variable in the
buffer's flattened index. From it come
  * loop-context features, per loop: log2 extent, annotation one-hot, log2 top-down and
    bottom-up extent products, and per buffer log2 touch count, log2 reuse and log2 stride;
  * context-relation ("curve") features: R_t(i|j) = max over loops with Z_j < t of Z_i, sampled
    at log2-spaced thresholds t, for (reuse|count), (count|reuse), (topdown|count) and
    (count|topdown) per buffer -- invariant to the loop count, so they transfer across shapes.
  * GPU facts, from the loops bound to blockIdx/threadIdx: log2 threads per block, log2
    blocks, log2 iterations per thread (all 0 for a nest with no thread loops, i.e. the CPU's).
Every vector has the same length (loops and buffers are padded). Nests with the same structure
are stacked and featurized together with numpy, so thousands of configs take milliseconds.
`featurizer.Featurizer` gives a task's configs these rows (or knob features).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import TuningError
from .space import ANNOTATIONS

MAX_LOOPS = 24
MAX_BUFFERS = 4
CURVE_SAMPLES = 20
LOOP_KINDS = (*ANNOTATIONS, "blockIdx", "threadIdx")  # a loop's annotation, one-hot
PER_LOOP = 1 + len(LOOP_KINDS) + 2 + 3 * MAX_BUFFERS
GPU_FACTS = 3
PROGRAM_FEATURE_LENGTH = MAX_LOOPS * PER_LOOP + MAX_BUFFERS * 4 * CURVE_SAMPLES + GPU_FACTS


@dataclass(frozen=True)
class Loop:
    name: str
    extent: int
    annotation: str = "none"


@dataclass
class LoopNest:
    """Loops outermost first and, per buffer, each loop variable's stride in its flat index."""

    loops: list[Loop]
    strides: dict[str, Sequence[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, s in self.strides.items():
            if len(s) != len(self.loops):
                raise TuningError(
                    f"buffer {name!r} has {len(s)} strides for {len(self.loops)} loops"
                )

    @property
    def signature(self) -> tuple:
        return len(self.loops), tuple(sorted(self.strides))


def nest_arrays(nest: LoopNest) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    """Extents (L,), annotation indices (L,), strides (B, L) with buffers sorted, buffer names."""
    buffers = tuple(sorted(nest.strides))
    ext = np.array([lp.extent for lp in nest.loops], dtype=np.float64)
    ann = np.array([LOOP_KINDS.index(lp.annotation) for lp in nest.loops], dtype=np.int64)
    strides = np.array([nest.strides[b] for b in buffers], dtype=np.float64)
    return ext, ann, strides.reshape(len(buffers), len(nest.loops)), buffers


def program_features(nests: Sequence[LoopNest]) -> np.ndarray:
    """(len(nests), PROGRAM_FEATURE_LENGTH) float32; nests of one structure share one pass."""
    out = np.zeros((len(nests), PROGRAM_FEATURE_LENGTH), dtype=np.float32)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, nest in enumerate(nests):
        groups[nest.signature].append(i)
    for rows in groups.values():
        arrays = [nest_arrays(nests[r]) for r in rows]
        out[rows] = nest_features(*(np.stack([a[k] for a in arrays]) for k in range(3)))
    return out


def _suffix_sum(x: np.ndarray) -> np.ndarray:
    return np.flip(np.cumsum(np.flip(x, axis=-1), axis=-1), axis=-1)


def nest_features(ext: np.ndarray, ann: np.ndarray, strides: np.ndarray) -> np.ndarray:
    """Feature rows of n nests of one structure: extents and annotations (n, L), strides
    (n, B, L) with buffers sorted by name."""
    n, n_loops = ext.shape
    n_buf = strides.shape[1]
    if n_loops > MAX_LOOPS or n_buf > MAX_BUFFERS:
        raise TuningError(
            f"loop nest has {n_loops} loops and {n_buf} buffers; "
            f"features hold at most {MAX_LOOPS} and {MAX_BUFFERS}"
        )
    log_ext = np.log2(np.maximum(ext, 1))
    topdown = np.cumsum(log_ext, axis=1)
    bottomup = _suffix_sum(log_ext)
    touches = strides != 0  # (n, B, L)
    count = _suffix_sum(log_ext[:, None, :] * touches)  # log2 distinct elements under the loop
    reuse = bottomup[:, None, :] - count  # log2 of the iterations that revisit them
    log_stride = np.log2(np.abs(strides) + 1)

    per_loop = np.zeros((n, MAX_LOOPS, PER_LOOP), dtype=np.float32)
    per_loop[:, :n_loops, 0] = log_ext
    per_loop[:, :n_loops, 1 : 1 + len(LOOP_KINDS)] = np.eye(len(LOOP_KINDS))[ann]
    col = 1 + len(LOOP_KINDS)
    per_loop[:, :n_loops, col] = topdown
    per_loop[:, :n_loops, col + 1] = bottomup
    for b in range(n_buf):
        base = col + 2 + 3 * b
        per_loop[:, :n_loops, base] = count[:, b]
        per_loop[:, :n_loops, base + 1] = reuse[:, b]
        per_loop[:, :n_loops, base + 2] = log_stride[:, b]

    thresholds = np.arange(1, CURVE_SAMPLES + 1, dtype=np.float64)
    curve = np.zeros((n, MAX_BUFFERS, 4, CURVE_SAMPLES), dtype=np.float32)
    td = np.broadcast_to(topdown[:, None, :], count.shape)
    for r, (zi, zj) in enumerate(((reuse, count), (count, reuse), (td, count), (count, td))):
        below = zj[..., None] < thresholds  # (n, B, L, T)
        curve[:, :n_buf, r] = np.where(below, zi[..., None], 0.0).max(axis=2)
    return np.concatenate(
        [per_loop.reshape(n, -1), curve.reshape(n, -1), gpu_facts(log_ext, ann)], axis=1
    )


def gpu_facts(log_ext: np.ndarray, ann: np.ndarray) -> np.ndarray:
    """(n, GPU_FACTS): log2 threads per block, log2 blocks, log2 iterations per thread."""
    threads = (log_ext * (ann == LOOP_KINDS.index("threadIdx"))).sum(axis=1)
    blocks = (log_ext * (ann == LOOP_KINDS.index("blockIdx"))).sum(axis=1)
    on_gpu = (threads + blocks) > 0
    work = np.where(on_gpu, log_ext.sum(axis=1) - threads - blocks, 0.0)
    return np.stack([threads, blocks, work], axis=1).astype(np.float32)
