"""Tuning templates registered per (operator, target kind); importing this registers them."""

from . import cpu, vta

__all__ = ["cpu", "vta"]
