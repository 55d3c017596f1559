"""The graph executor's build half: every kernel of a planned graph in one native module.

`compile_graph` compiles the kernels (PrimFuncs, or `objects.Kernel`s lowered on demand, by one
process per core) into one shared library together with an entry `graph_run(ptr table)` that
calls them in order, each argument a base pointer from the table plus a constant byte offset,
and loads it as a `graph_module.GraphModule` (which runs and saves it, and loads a saved one
without compiling). For another machine's CPU (a target triple not this host's: the board's
Arm core) the build is a `BoardGraph`: the library, linked by a cross linker with the parallel
runtime inside it (the board needs no LLVM to run it), is saved and run there.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from llvmlite import ir

from ..codegen import parallel
from ..codegen.llvm import PTR
from ..codegen.target import Target, parse_ir, target_machine
from ..errors import CodegenError
from ..tir import stmt as S
from .graph_module import ENTRY, FORMAT, NOP, BoardGraph, GraphModule, Slot, TensorSpec, table_index
from .objects import Kernel, compile_objects, default_processes, kernel_of, link


@dataclass
class Step:
    """One kernel call of the graph."""

    func: S.PrimFunc | Kernel
    args: list[Slot]
    label: str = ""  # the graph's name for it (a fused group)
    flops: int = 0  # for GFLOPS in profiles


def _entry(module: ir.Module, calls: list[tuple[str, list[tuple[int, int]]]]) -> None:
    """Add `void graph_run(ptr table)`: each kernel called on table[i] + offset arguments."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), ENTRY)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    i8, i64 = ir.IntType(8), ir.IntType(64)
    bases: dict[int, ir.Value] = {}
    for name, args in calls:
        values = []
        for index, offset in args:
            if index not in bases:
                p = b.gep(fn.args[0], [ir.Constant(i64, index)], source_etype=PTR)
                bases[index] = b.load(p, typ=PTR)
            ptr = bases[index]
            if offset:
                ptr = b.gep(ptr, [ir.Constant(i64, offset)], source_etype=i8)
            values.append(ptr)
        if name not in module.globals:
            ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR] * len(values)), name)
        b.call(module.globals[name], values)
    b.ret_void()
    nop = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), NOP)
    ir.IRBuilder(nop.append_basic_block("entry")).ret_void()


def compile_graph(
    steps: list[Step],
    inputs: list[TensorSpec],
    outputs: list[TensorSpec],
    params: list[np.ndarray],
    arena_bytes: int,
    target: str = "llvm",
    processes: int | None = None,
) -> GraphModule | BoardGraph:
    """Compile every step's kernel (a PrimFunc, or a `Kernel` lowered on demand) and the
    entry into one shared library and load it; `processes` share the kernels out
    (default: one per core, `objects.default_processes`). For another machine's triple
    the library is not loaded: a `BoardGraph` to save."""
    tgt = Target.parse(target)
    manifest = {
        "format": FORMAT,
        "target": target,
        "triple": tgt.triple,
        "runtime": "process" if tgt.is_host else "linked",
        "inputs": [asdict(s) for s in inputs],
        "outputs": [asdict(s) for s in outputs],
        "params": [{"shape": list(p.shape), "dtype": str(p.dtype)} for p in params],
        "arena_bytes": int(arena_bytes),
        "steps": [
            {
                "kernel": s.func.name,
                "label": s.label or s.func.name,
                "flops": s.flops,
                "args": [asdict(a) for a in s.args],
            }
            for s in steps
        ],
    }
    tmp = tempfile.TemporaryDirectory(prefix="vta-graph-")
    calls = [
        (s.func.name, [(table_index(a, len(inputs), len(outputs)), a.offset) for a in s.args])
        for s in steps
    ]
    library = _library(_unique_kernels(steps), calls, tgt, Path(tmp.name), processes)
    if not tgt.is_host:
        return BoardGraph(manifest, params, library, tmp)
    return GraphModule.from_library(manifest, params, library, keep=tmp)


def _library(
    kernels: list[Kernel],
    calls: list[tuple[str, list[tuple[int, int]]]],
    target: Target,
    folder: Path,
    processes: int | None,
) -> Path:
    """`folder`/graph.so: the kernels and the entry (`_entry` of `calls`) compiled for
    `target`; for another machine with the parallel runtime linked in."""
    n = processes or default_processes(len(kernels))
    objects = compile_objects(kernels, target, folder, n)
    irmod = ir.Module("graph_entry")
    irmod.triple = target.triple
    _entry(irmod, calls)
    tm = target_machine(target, pic=True)
    (folder / "entry.o").write_bytes(tm.emit_object(parse_ir(str(irmod), tm, target.triple)))
    objects.append(folder / "entry.o")
    if target.is_host:
        return link(objects, folder / "graph.so")
    (folder / "parallel.o").write_bytes(parallel.runtime_object(target))
    return link([*objects, folder / "parallel.o"], folder / "graph.so", target.triple)


def _unique_kernels(steps: list[Step]) -> list[Kernel]:
    """Each kernel once (a kernel may run at several steps); one name, one kernel. The
    kernels of the most FLOPs first: the largest take longest to compile (Winograd's and
    the other convolutions), so the processes sharing them out claim the small ones last and
    finish together."""
    funcs: dict[str, S.PrimFunc | Kernel] = {}
    flops: dict[str, int] = {}
    for s in steps:
        if funcs.setdefault(s.func.name, s.func) is not s.func:
            raise CodegenError(f"graph executor: two different kernels named '{s.func.name}'")
        flops[s.func.name] = max(flops.get(s.func.name, 0), s.flops)
    return [kernel_of(funcs[n]) for n in sorted(funcs, key=lambda n: -flops[n])]
