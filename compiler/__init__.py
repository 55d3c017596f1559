"""The tensor compiler: te expressions, schedules, loop IR lowering and LLVM code generation.
Its exports are imported on first use (`lazy.lazy_exports`)."""

from .lazy import lazy_exports

__all__ = ["build", "load_module", "lower", "lower_passes", "te", "tir"]
__getattr__ = lazy_exports(
    __name__,
    {
        "te": ".te",
        "tir": ".tir",
        "build": ".driver",
        "lower": ".driver",
        "lower_passes": ".driver",
        "load_module": ".runtime",
    },
)
