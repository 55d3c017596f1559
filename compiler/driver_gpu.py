"""GPU lowering: the pass pipeline from a schedule to kernels, with the bindings checked against
the target architecture (thread extents, threads per block, shared memory per block).

The pipeline is the CPU one up to simplification, then thread bindings become kernels, loops
are unrolled and vectorized (16-byte vectors: one ld.v4.f32), and barriers go where shared
memory needs them. Loop partitioning is left out: its unswitched copies would put barriers
under thread-dependent conditions; predicates are cheap on a GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Any

from .arith import Analyzer
from .codegen.nvptx_arch import GPUArch
from .errors import LoweringError, ScheduleError
from .schedule.ops import ScheduleLowering
from .schedule.schedule import Schedule
from .te.tensor import Tensor
from .tir import expr as E
from .tir import stmt as S
from .tir.functor import collect
from .tir.transform.flatten import storage_flatten
from .tir.transform.loops import inject_virtual_thread, unroll_loops, vectorize_loops
from .tir.transform.simplify import simplify
from .tir.transform.sync import inject_barriers
from .tir.transform.thread import (
    BLOCK_TAGS,
    THREAD_TAGS,
    host_parts,
    launch_extents,
    lower_thread_bindings,
)

GPU_VECTOR_BYTES = 16


@dataclass
class DeviceKernel:
    """One kernel of a GPU function: its buffers, body and launch shape."""

    name: str
    params: list[S.Buffer]
    body: S.Stmt  # wrapped in thread_extent attributes
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    local_bytes: int

    @property
    def threads(self) -> int:
        return math.prod(self.block)

    @property
    def blocks(self) -> int:
        return math.prod(self.grid)


def _origins(s: Schedule) -> dict[E.Var, str]:
    return {
        iv.var: f"stage '{st.op.name}' axis '{iv.name}'"
        for st in s.stages
        for iv in st.leaf_iter_vars
    }


def check_bindings(low: ScheduleLowering, arch: GPUArch) -> None:
    """Thread-bound axes within the architecture's block and grid limits, naming the stage and
    axis at fault."""
    for st, info in low.infos.items():
        threads = []
        for iv in st.leaf_iter_vars:
            attr = st.iter_attrs.get(iv)
            if attr is None or attr.kind != "thread_binding":
                continue
            tag, ext = attr.thread.thread_tag, info.leaf_ext[iv]
            if tag in BLOCK_TAGS + THREAD_TAGS:
                dim = "xyz".index(tag[-1])
                limits = arch.max_block_dim if tag in THREAD_TAGS else arch.max_grid_dim
                if ext > limits[dim]:
                    raise ScheduleError(
                        f"bind: stage '{st.op.name}' axis '{iv.name}' bound to {tag} has extent "
                        f"{ext}; {arch.name} allows at most {limits[dim]}"
                    )
                if tag in THREAD_TAGS:
                    threads.append((iv.name, tag, ext))
        total = math.prod(ext for _, _, ext in threads)
        if total > arch.max_threads_per_block:
            axes = ", ".join(f"'{n}' ({tag}, {ext})" for n, tag, ext in threads)
            raise ScheduleError(
                f"bind: stage '{st.op.name}' runs {total} threads per block over axes {axes}; "
                f"{arch.name} allows at most {arch.max_threads_per_block}"
            )


def lower_gpu_passes(
    s: Schedule, args: list[Tensor], arch: GPUArch, name: str = "main"
) -> dict[str, S.PrimFunc]:
    """The GPU function after each pass, in order; every entry prints with str()."""
    ana = Analyzer()
    low = ScheduleLowering(s, list(args), ana)
    check_bindings(low, arch)
    f = S.PrimFunc(name, low.params, low.lower())
    out = {"schedule_ops": f}
    pipeline: list[tuple[str, Any]] = [
        ("inject_virtual_thread", inject_virtual_thread),
        ("storage_flatten", storage_flatten),
        ("simplify", simplify),
        ("lower_thread_bindings", partial(lower_thread_bindings, origin=_origins(s))),
        ("unroll_loops", unroll_loops),
        ("vectorize_loops", partial(vectorize_loops, max_bytes=GPU_VECTOR_BYTES)),
        ("simplify_final", simplify),
        ("inject_barriers", inject_barriers),
    ]
    for pass_name, fn in pipeline:
        f = fn(f, ana)
        out[pass_name] = f
    return out


def lower_gpu(s: Schedule, args: list[Tensor], arch: GPUArch, name: str = "main") -> S.PrimFunc:
    return list(lower_gpu_passes(s, args, arch, name).values())[-1]


def _used_buffers(stmt: S.Stmt) -> dict[E.Var, S.Buffer]:
    found: dict[E.Var, S.Buffer] = {}
    for n in collect(stmt, lambda n: isinstance(n, (E.BufferLoad, S.BufferStore))):
        found.setdefault(n.buffer.data, n.buffer)
    return found


def _alloc_bytes(stmt: S.Stmt, scope: str) -> int:
    allocs = collect(stmt, lambda n: isinstance(n, S.Allocate) and n.buffer.scope == scope)
    return sum(a.buffer.nbytes for a in allocs)


def split_kernels(f: S.PrimFunc, arch: GPUArch) -> tuple[list[S.Buffer], list[DeviceKernel]]:
    """The device buffers a lowered GPU function allocates between kernels, and its kernels
    (each taking the function's parameters and device buffers it uses, in that order)."""
    allocs, stmts = host_parts(f.body)
    kernels = []
    for k, stmt in enumerate(stmts):
        ext, _, _ = launch_extents(stmt)
        used = _used_buffers(stmt)
        params = [used[b.data] for b in [*f.params, *allocs] if b.data in used]
        kernel = DeviceKernel(
            f"{f.name}_kernel{k}",
            params,
            stmt,
            tuple(ext.get(t, 1) for t in BLOCK_TAGS),
            tuple(ext.get(t, 1) for t in THREAD_TAGS),
            _alloc_bytes(stmt, "shared"),
            _alloc_bytes(stmt, "local"),
        )
        if kernel.shared_bytes > arch.max_shared_per_block:
            allocs_in = collect(
                stmt, lambda n: isinstance(n, S.Allocate) and n.buffer.scope == "shared"
            )
            parts = ", ".join(f"'{a.buffer.name}' {a.buffer.nbytes} B" for a in allocs_in)
            raise LoweringError(
                f"kernel '{kernel.name}' needs {kernel.shared_bytes} bytes of shared memory per "
                f"block ({parts}); {arch.name} allows at most {arch.max_shared_per_block}: "
                "use smaller tiles for the shared stages"
            )
        kernels.append(kernel)
    return allocs, kernels
