"""The tensor compiler: te expressions, schedules, loop IR lowering and LLVM code generation."""

from . import te, tir
from .driver import build, lower, lower_passes
from .runtime import load_module

__all__ = ["build", "load_module", "lower", "lower_passes", "te", "tir"]
