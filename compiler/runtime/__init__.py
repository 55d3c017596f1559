"""Runtime: native modules callable on numpy arrays, and loading exported libraries."""

from ..errors import ArgumentError
from .module import LoadedModule, Module, load_module, set_num_threads

__all__ = ["ArgumentError", "LoadedModule", "Module", "load_module", "set_num_threads"]
