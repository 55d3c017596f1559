"""Tuning templates registered per (operator, target kind); importing this registers them."""

from . import cpu, cuda, vta

__all__ = ["cpu", "cuda", "vta"]
