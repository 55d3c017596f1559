"""Tasks: a workload (operator name + arguments) on a target, searched through its template.

Templates are registered per (operator, target kind) with `@register_template`. A template is
called twice over: once with a ConfigSpace to collect its knobs, then with a ConfigEntity to
produce the schedule (or, for accelerator/analytic templates, the program) for one config.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..codegen.target import target_scope
from ..errors import TuningError
from ..te.tensor import MAX_EXTENT
from .space import ConfigEntity, ConfigSpace

Template = Callable[..., Any]
TEMPLATES: dict[tuple[str, str], Template] = {}
REFERENCES: dict[str, Callable[..., list]] = {}
_TARGET: ContextVar[str | None] = ContextVar("target", default=None)


def current_target() -> str | None:
    """The target of the task whose template is running (None outside one): an accelerator
    template reads its configuration from it (`compiler.vta.environment.target_config`)."""
    return _TARGET.get()


@contextmanager
def running_target(target: str) -> Iterator[None]:
    """Make `target` the running task's target (`current_target`) inside the block; an llvm
    target is also the codegen's scope (`target_scope`), so the x86 schedules a template calls
    derive from its CPU, not from the host's."""
    token = _TARGET.set(target)
    try:
        if target_kind(target) == "llvm":
            with target_scope(target):
                yield
        else:
            yield
    finally:
        _TARGET.reset(token)


def target_kind(target: str) -> str:
    """'llvm -mcpu=znver5' -> 'llvm'; 'vta/sim' -> 'vta'."""
    if not isinstance(target, str) or not target.split():
        raise TuningError(f"target {target!r} is empty; give llvm, cuda or vta")
    return target.split()[0].split("/")[0]


def register_template(
    op: str, target: str, extents: Sequence[str] = ()
) -> Callable[[Template], Template]:
    """Register `fn(cfg, *args)` as the template of `op` on targets of kind `target`; `extents`
    names its parameters that are tensor extents (each >= 1; see `check_workload_args`)."""

    def register(fn: Template) -> Template:
        old = TEMPLATES.get((op, target))
        if old is not None and old.__qualname__ != fn.__qualname__:
            raise TuningError(
                f"template ({op!r}, {target!r}) is already registered by "
                f"{old.__module__}.{old.__qualname__}"
            )
        TEMPLATES[(op, target)] = fn
        fn.workload_extents = tuple(extents)  # type: ignore[attr-defined]
        return fn

    return register


def register_reference(op: str) -> Callable[[Callable[..., list]], Callable[..., list]]:
    """Register `fn(inputs, *args) -> outputs`, the numpy ground truth runners check against."""

    def register(fn: Callable[..., list]) -> Callable[..., list]:
        REFERENCES[op] = fn
        return fn

    return register


def get_template(op: str, target: str) -> Template:
    try:
        return TEMPLATES[(op, target_kind(target))]
    except KeyError:
        known = sorted(f"{o}@{t}" for o, t in TEMPLATES)
        raise TuningError(
            f"no template for op {op!r} on target {target!r}; registered: {known}"
        ) from None


def workload_key(op: str, args: Sequence[Any]) -> str:
    """The JSON string naming a workload in records: ["op", [args...]]."""
    return json.dumps([op, list(args)], separators=(",", ":"))


@dataclass
class Task:
    """One operator workload to tune on one target."""

    op: str
    args: tuple
    target: str
    template: Template = field(repr=False, default=None)

    def __post_init__(self) -> None:
        self.args = tuple(self.args)
        if self.template is None:
            self.template = get_template(self.op, self.target)
        _check_arguments(self.op, self.template, self.args)
        check_workload_args(
            self.op,
            self.args,
            parameter_names(self.template, skip=1),  # after `cfg`
            getattr(self.template, "workload_extents", ()),
        )

    @cached_property
    def config_space(self) -> ConfigSpace:
        space = ConfigSpace()
        with running_target(self.target):
            self.template(space, *self.args)
        space.check_size()
        return space

    @property
    def workload_key(self) -> str:
        return workload_key(self.op, self.args)

    @property
    def flop(self) -> float:
        """FLOPs (or ops) per run, declared by the template with cfg.add_flop."""
        return self.config_space.flop

    def instantiate(self, config: ConfigEntity | int) -> Any:
        """Run the template for one config: the schedule/program it returns."""
        if isinstance(config, int):
            config = self.config_space.get(config)
        with running_target(self.target):
            return self.template(config, *self.args)

    def reference(self, inputs: list) -> list:
        """Expected outputs for `inputs`, from the op's registered numpy reference."""
        try:
            fn = REFERENCES[self.op]
        except KeyError:
            raise TuningError(
                f"op {self.op!r} has no reference; register one with "
                "@register_reference or measure with check=False"
            ) from None
        return list(fn(inputs, *self.args))

    def __getstate__(self) -> dict:
        # The space holds filter closures that do not pickle; workers rebuild it.
        state = dict(self.__dict__)
        state.pop("config_space", None)
        return state


LIMIT_TEXT = f"2**{MAX_EXTENT.bit_length() - 1}"  # MAX_EXTENT (a power of two) as messages say it


def check_workload_args(
    op: str, args: Sequence[Any], names: Sequence[str] = (), extents: Sequence[str] = ()
) -> None:
    """Refuse, before any search space is built, a workload argument no tensor can have: a size
    (an extent or stride: a parameter named in `extents`) must be in 1..2**62-1, and any other
    integer argument (a padding, channel block, flag or shift) lie strictly within +-2**62. A
    tensor holds fewer than 2**62 elements (`te.MAX_EXTENT`; the code generator indexes buffers
    of 2**31 elements or more in int64), so nothing larger sizes anything; the space would
    otherwise enumerate the divisors of such a number (2**70 kept `vta tune` busy for minutes).
    A product of sizes too large for a tensor is refused by `te` when the template declares it."""
    for i, value in enumerate(args):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            continue  # not a size (a dtype, a group's spec): its own checks apply
        value = int(value)
        name = names[i] if i < len(names) else f"#{i + 1}"
        if name in extents:
            if not 1 <= value < MAX_EXTENT:
                raise TuningError(
                    f"{op} argument {name} = {value}: must be in 1..{LIMIT_TEXT}-1 (a size: "
                    f"a tensor has fewer than {LIMIT_TEXT} elements)"
                )
        elif not -MAX_EXTENT < value < MAX_EXTENT:
            raise TuningError(
                f"{op} argument {name} = {value}: a workload argument must lie within "
                f"+-({LIMIT_TEXT}-1) (a tensor has fewer than {LIMIT_TEXT} elements)"
            )


def parameter_names(fn: Callable[..., Any], skip: int = 0) -> tuple[str, ...]:
    """The names of `fn`'s positional parameters after the first `skip`; () for `*args`."""
    try:
        params = list(inspect.signature(fn).parameters.values())[skip:]
    except (TypeError, ValueError):
        return ()
    return tuple(p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _check_arguments(op: str, template: Template, args: tuple) -> None:
    """The workload's arguments fit the template's parameters (after its `cfg`)."""
    try:
        sig = inspect.signature(template)
    except (TypeError, ValueError):  # not introspectable: the template checks for itself
        return
    try:
        sig.bind(None, *args)
    except TypeError:
        params = [p for p in list(sig.parameters.values())[1:] if p.kind is not p.VAR_KEYWORD]
        names = ", ".join(p.name for p in params if p.default is p.empty)
        names += "".join(f"[, {p.name}]" for p in params if p.default is not p.empty)
        raise TuningError(
            f"workload {op}{list(args)}: {op} takes arguments ({names}); got {len(args)}"
        ) from None


def create_task(op: str, args: Sequence[Any], target: str) -> Task:
    return Task(op, tuple(args), target)
