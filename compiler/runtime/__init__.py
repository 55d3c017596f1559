"""Runtime: native modules callable on numpy arrays, and loading exported libraries."""

from .module import ArgumentError, LoadedModule, Module, load_module, set_num_threads

__all__ = ["ArgumentError", "LoadedModule", "Module", "load_module", "set_num_threads"]
