"""The VTA accelerator target: environment (scopes, intrinsics), lowering passes, Program
codegen and the Module that runs it on a device."""

from .environment import Environment, get_env, shift_left, shift_right
from .module import VTAModule, build, lower

__all__ = ["Environment", "VTAModule", "build", "get_env", "lower", "shift_left", "shift_right"]
