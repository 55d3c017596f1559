"""Schedules and their lowering to loop IR (bound inference, loop nests, tensorize)."""

from .schedule import Schedule, Stage, create_schedule

__all__ = ["Schedule", "Stage", "create_schedule"]
