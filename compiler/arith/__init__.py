"""Integer arithmetic: simplification, constant bounds and symbolic interval sets."""

from .intset import eval_interval
from .simplify import Analyzer, structural_equal

__all__ = ["Analyzer", "eval_interval", "structural_equal"]
