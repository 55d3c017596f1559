"""Search tasks and programs: a program is a task's compute definition plus transformation
steps (`steps.py`), replayed onto a fresh schedule whenever it is built, featurized or shown.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import TuningError
from ..schedule.schedule import Schedule, create_schedule
from ..te.tensor import PlaceholderOp, Tensor
from ..tune.dispatch import register_program_kind
from ..tune.task import running_target, workload_key
from . import dag
from .steps import Step, replay, step_from_json
from .workload import REFERENCES, WORKLOADS, import_workload, workload_module, workload_tensors

KIND = "ansor"  # records of auto-scheduler programs: workload "ansor:OP", config {"kind": ...}


@dataclass
class SearchTask:
    """A workload (registered compute definition and its arguments) on a target."""

    name: str
    args: tuple
    target: str = "llvm"

    def __post_init__(self) -> None:
        self.args = tuple(self.args)
        self.tensors  # noqa: B018 - build the definition now, so bad arguments fail here

    @cached_property
    def tensors(self) -> list[Tensor]:
        with running_target(self.target):  # an accelerator definition reads its configuration
            return workload_tensors(self.name, self.args)

    @property
    def outputs(self) -> list[Tensor]:
        return [t for t in self.tensors if not isinstance(t.op, PlaceholderOp)]

    @property
    def op(self) -> str:
        return self.name

    @property
    def workload_key(self) -> str:
        """The records' workload: ["ansor:NAME", [args]] (the template tuner's is ["NAME", ...])."""
        return workload_key(f"{KIND}:{self.name}", self.args)

    @cached_property
    def flop(self) -> float:
        return dag.flop(self.initial_schedule())

    def initial_schedule(self) -> Schedule:
        return create_schedule([t.op for t in self.outputs])

    @property
    def config_space(self) -> ProgramSpace:
        """What the template tuner's loop and builders ask of a task's space, for programs."""
        return ProgramSpace(self)

    def instantiate(self, program: Program) -> tuple[Schedule, list[Tensor]]:
        """The (schedule, args) a builder compiles: the program's steps replayed."""
        return program.schedule()

    def reference(self, inputs: list) -> list:
        if self.name not in REFERENCES:
            raise TuningError(f"workload {self.name!r} has no numpy reference to check against")
        return list(REFERENCES[self.name](inputs, *self.args))

    def __getstate__(self) -> dict:
        # the module registering the workload travels with it: a worker imports it before
        # rebuilding the definition (the graph's `graph_group` is registered by
        # compiler.graph.tasks, which the auto-scheduler does not import)
        state = {"name": self.name, "args": self.args, "target": self.target}
        module = workload_module(self.name)
        return {**state, "module": module} if module else state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        import_workload(state["name"], state.pop("module", None))
        self.__dict__.update(state)


@dataclass(eq=False)
class Program:
    """A task's compute definition transformed by `steps`; `sketch` names the sketch it was
    annotated from (crossover mixes only programs of one sketch)."""

    task: SearchTask
    steps: list[Step] = field(default_factory=list)
    sketch: int = 0

    def schedule(self) -> tuple[Schedule, list[Tensor]]:
        """Replay the steps onto a fresh schedule: (schedule, build arguments)."""
        s = self.task.initial_schedule()
        with running_target(self.task.target):  # accelerator steps read its configuration
            replay(s, self.steps)
        return s, list(self.task.tensors)

    def lines(self) -> list[str]:
        s = self.task.initial_schedule()
        with running_target(self.task.target):
            return replay(s, self.steps)

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def steps_json(self) -> list:
        return [st.to_json() for st in self.steps]

    def to_json(self) -> dict[str, Any]:
        """The record's config: the step list."""
        return {"kind": KIND, "sketch": self.sketch, "steps": self.steps_json()}

    @cached_property
    def key(self) -> str:
        return json.dumps(self.steps_json(), separators=(",", ":"))

    @property
    def index(self) -> int:
        """A stable 62-bit id of the step list (the record's config_index)."""
        return int.from_bytes(hashlib.sha256(self.key.encode()).digest()[:8], "big") >> 2

    @classmethod
    def from_json(cls, task: SearchTask, config: dict[str, Any]) -> Program:
        if not isinstance(config, dict) or config.get("kind") != KIND:
            raise TuningError(f"not an auto-scheduler record config: {str(config)[:80]}")
        steps = [step_from_json(s) for s in config.get("steps", [])]
        return cls(task, steps, int(config.get("sketch", 0)))


def _load_program(op: str, args: tuple, target: str, config: Any) -> Program | None:
    """A record's program, for the dispatch context (`tune.dispatch.ApplyHistoryBest`); None
    for an unregistered workload or a record of another version of the step language."""
    if op not in WORKLOADS:
        return None
    try:
        return Program.from_json(SearchTask(op, args, target), config)
    except TuningError:
        return None


register_program_kind(KIND, _load_program)


def run_program(program: Program, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Build and run a program on numpy inputs (for checks and examples)."""
    from ..driver import build

    s, args = program.schedule()
    module = build(s, args, target=program.task.target)
    n_in = sum(isinstance(t.op, PlaceholderOp) for t in args)
    outs = [np.zeros(t.shape, t.dtype) for t in args[n_in:]]
    module(*inputs, *outs)
    return outs


@dataclass
class ProgramSpace:
    """A task's programs seen through the config-space interface the template tuner's loop
    (`tune.tuner.Tuner`) and builders use: records' configs parse into Programs."""

    task: SearchTask
    range_length: int = 2**62  # unbounded for practical purposes: never exhausted

    def from_json(self, config: dict[str, Any]) -> Program:
        return Program.from_json(self.task, config)
