"""Schedules and their lowering to loop IR (bound inference, loop nests, tensorize)."""

# te first: its package imports this one's schedule module, which needs te's tensors; entered
# here first, the schedule module would meet te half-initialized.
from .. import te  # noqa: F401
from .schedule import Schedule, Stage, create_schedule

__all__ = ["Schedule", "Stage", "create_schedule"]
