"""lower() and build(): the pass pipeline from a schedule to a callable native module."""

from __future__ import annotations

import sys
from typing import Any

from .arith import Analyzer
from .codegen.nvptx_arch import is_cuda_target, parse_cuda_target
from .driver_gpu import lower_gpu
from .errors import CodegenError, LoweringError
from .runtime.gpu_module import GPUModule
from .runtime.module import build_module
from .schedule.ops import schedule_ops
from .schedule.schedule import Schedule
from .te.tensor import Tensor
from .tir import stmt as S
from .tir.transform.flatten import storage_flatten
from .tir.transform.loops import inject_virtual_thread, unroll_loops, vectorize_loops
from .tir.transform.partition import loop_partition
from .tir.transform.simplify import simplify
from .vta import build as vta_build


def lower_passes(s: Schedule, args: list[Tensor], name: str = "main") -> dict[str, S.PrimFunc]:
    """The function after each pass, in order; every entry prints with str()."""
    ana = Analyzer()
    try:
        body, params = schedule_ops(s, list(args), ana)
        f = S.PrimFunc(name, params, body)
        out = {"schedule_ops": f}
        for pass_name, fn in PIPELINE:
            f = fn(f, ana)
            out[pass_name] = f
    except RecursionError:  # the passes recurse on expressions: one too deep for Python
        raise LoweringError(
            f"lower {name}: an expression nests deeper than the passes can follow "
            f"(Python's recursion limit, {sys.getrecursionlimit()}); build it as a balanced tree"
        ) from None
    return out


PIPELINE: list[tuple[str, Any]] = [
    ("inject_virtual_thread", inject_virtual_thread),
    ("storage_flatten", storage_flatten),
    ("simplify", simplify),
    ("loop_partition", loop_partition),
    ("unroll_loops", unroll_loops),
    ("vectorize_loops", vectorize_loops),
    ("simplify_final", simplify),
]


def lower(s: Schedule, args: list[Tensor], name: str = "main") -> S.PrimFunc:
    """The lowered function (loop IR after all passes); print it to read it."""
    return list(lower_passes(s, args, name).values())[-1]


def build(
    s: Schedule | S.PrimFunc,
    args: list[Tensor] | None = None,
    target: str = "llvm",
    name: str = "main",
    **options,
):
    """Compile to a Module: callable on numpy arrays for the host, exportable for any target.

    `target="cuda -arch=sm_80"` compiles GPU kernels (a GPUModule: PTX, ptxas statistics, the
    emulator, and launches on a CUDA device); `target="vta"` compiles for the accelerator
    (options: `config`, `device`) into a module that runs its Program on a `vta.device` device.
    On the CPU, `bounds_check=False` drops the range checks of data-dependent (gather/scatter)
    accesses, which are on by default (an index out of range raises OutOfBoundsError).
    """
    if is_cuda_target(target):
        if not isinstance(s, Schedule) or options:
            raise CodegenError("target 'cuda' compiles a Schedule and takes no options")
        arch = parse_cuda_target(target)
        return GPUModule(lower_gpu(s, list(args or []), arch, name), arch)
    if target == "vta":
        if not isinstance(s, Schedule):
            raise CodegenError("target 'vta' compiles a Schedule, not a lowered PrimFunc")
        return vta_build(s, list(args or []), name, **options)
    bounds_check = options.pop("bounds_check", True)
    if options:
        raise CodegenError(
            f"target {target!r} takes only the option bounds_check, got {sorted(options)}"
        )
    f = s if isinstance(s, S.PrimFunc) else lower(s, list(args or []), name)
    imports = _imported_llvm(s) if isinstance(s, Schedule) else []
    return build_module(f, target, imports, bounds_check=bool(bounds_check))


def _imported_llvm(s: Schedule) -> list[str]:
    """LLVM IR text attached with the `import_llvm` pragma (micro-kernels of tensor intrinsics)."""
    out = []
    for st in s.stages:
        for attr in st.iter_attrs.values():
            out += [v for k, v in attr.pragmas if k == "import_llvm"]
    return out
