"""Building GPU candidates for the tuner: PTX checked by ptxas, rejected before measurement
when a kernel spills or exceeds the architecture's registers or shared memory (the tuner then
records it as a failed config, which the cost model learns as throughput 0)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..codegen.ptxas import KernelStats
from ..driver import build
from ..errors import TuningError
from ..runtime.gpu_module import GPUModule, Launch
from ..te.tensor import PlaceholderOp
from .task import Task


class InvalidGPUConfig(TuningError):
    """ptxas reports a kernel of the config cannot run well (spills) or at all (limits)."""


@dataclass
class GPUArtifact:
    """What a GPU runner needs, picklable: PTX, launches, buffer sizes and ptxas's report."""

    ptx: str
    arch: str
    kernel_names: list[str]
    launches: list[Launch]
    device_buffer_bytes: list[int]
    arg_specs: list[tuple[tuple[int, ...], str]]
    n_outputs: int
    stats: dict[str, KernelStats]
    threads: dict[str, int]


def artifact(module: GPUModule, args: list[Any]) -> GPUArtifact:
    """A built module as an artifact, after ptxas accepted every kernel."""
    problems = module.problems()
    if problems:
        raise InvalidGPUConfig("; ".join(problems))
    return GPUArtifact(
        module.ptx,
        module.arch.name,
        module.kernel_names,
        module.launches,
        module.device_buffer_bytes,
        [(tuple(a.shape), a.dtype) for a in args],
        sum(not isinstance(a.op, PlaceholderOp) for a in args),
        dict(module.stats),
        {k.name: k.threads for k in module.kernels},
    )


def cuda_build(task: Task, instance: Any) -> GPUArtifact:
    """Build function of LocalBuilder for target 'cuda [-arch=..]'."""
    schedule, args = instance
    return artifact(build(schedule, args, target=task.target), args)
