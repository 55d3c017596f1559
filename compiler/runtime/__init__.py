"""Runtime: native modules callable on numpy arrays, and loading exported libraries."""

from .module import ArgumentError, LoadedModule, Module, load_module

__all__ = ["ArgumentError", "LoadedModule", "Module", "load_module"]
