"""The accelerator backend as named passes, each result printable (`str()`).

    lower                 loop IR: scheduled, flattened, simplified; scopes kept
    inject_ops            DMA / tensorize / micro-op form: leaf nests become operation templates
    unroll                host loops run: one operation stream per virtual thread
    tokens_per_thread     (a view) the threads one after another, with rows and tokens
    interleave_vthreads   the threads merged into one stream
    allocate_sram         on-chip rows for every buffer of every thread
    insert_out_copies     ALU copies before STOREs of loaded accumulators
    insert_tokens         dependence tokens between load, compute and store
    emit                  the Program (prints as its disassembly)

`lower_passes` returns every result; `build` runs the same chain without the view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vta.builder import ProgramBuilder
from vta.config import VTAConfig
from vta.disasm import disassemble
from vta.program import Program

from ..arith import Analyzer
from ..schedule.ops import schedule_ops
from ..schedule.schedule import Schedule
from ..te.tensor import Tensor
from ..tir import stmt as S
from ..tir.transform.flatten import storage_flatten
from ..tir.transform.simplify import simplify
from .environment import Environment, get_env
from .inject import inject_ops
from .sram import allocate_sram, insert_out_copies
from .tokens import SyncedStream, emit, insert_tokens
from .unroll import Streams, interleave_vthreads, unroll


def lower(s: Schedule, args: list[Tensor], name: str = "main") -> S.PrimFunc:
    """The loop nest the VTA backend consumes: scheduled, flattened, simplified (virtual-thread
    loops kept: the backend interleaves them itself)."""
    ana = Analyzer()
    body, params = schedule_ops(s, list(args), ana)
    f = storage_flatten(S.PrimFunc(name, params, body), ana)
    return simplify(f, ana)


class Disassembly:
    """A Program that prints as its disassembly."""

    def __init__(self, program: Program):
        self.program = program

    def __str__(self) -> str:
        return disassemble(self.program, self.program.config)


def emit_program(f: S.PrimFunc, stream: SyncedStream, env: Environment) -> Program:
    """The validated Program: the parameters as DRAM buffers, then the instructions."""
    builder = ProgramBuilder(env.config)
    roles = f.attrs["dram_roles"]
    for p in f.params:
        shape = [int(x.value) for x in p.shape]
        builder.buffer(p.name, shape, p.dtype, roles.get(p.name, "input"))
    emit(stream, builder)
    return builder.build()


def _stream_passes(env: Environment) -> list[tuple[str, Callable[[Any], Any]]]:
    depth = env.config.depth
    return [
        ("allocate_sram", lambda s: allocate_sram(s, env)),
        ("insert_out_copies", lambda s: insert_out_copies(s, env)),
        ("insert_tokens", lambda s: insert_tokens(s, depth)),
    ]


def lower_passes(
    s: Schedule,
    args: list[Tensor],
    config: VTAConfig | str | None = None,
    name: str = "main",
) -> dict[str, Any]:
    """Every pass's result, in order (see the module docstring); each prints with str()."""
    env = get_env(config)
    out: dict[str, Any] = {"lower": lower(s, args, name)}
    out["inject_ops"] = f = inject_ops(out["lower"], env)
    out["unroll"] = streams = unroll(f)
    serial = streams
    for _, fn in _stream_passes(env):
        serial = fn(serial)
    serial.title = "virtual threads one after another: rows and tokens before interleaving"
    out["tokens_per_thread"] = serial
    stream: Any = interleave_vthreads(streams)
    out["interleave_vthreads"] = stream
    for pass_name, fn in _stream_passes(env):
        out[pass_name] = stream = fn(stream)
    out["emit"] = Disassembly(emit_program(f, stream, env))
    return out


def build_program(
    s: Schedule, args: list[Tensor], config: VTAConfig | str | None = None, name: str = "main"
) -> tuple[Program, list[S.Buffer]]:
    """The Program of a schedule (the pass chain of `lower_passes`) and its parameters."""
    env = get_env(config)
    f = inject_ops(lower(s, args, name), env)
    stream: Streams | SyncedStream = interleave_vthreads(unroll(f))
    for _, fn in _stream_passes(env):
        stream = fn(stream)
    return emit_program(f, stream, env), f.params
