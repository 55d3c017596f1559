"""The VTA accelerator target: environment (scopes, intrinsics), the backend's named passes
(`lower_passes`), Program codegen and the Module that runs it on a device."""

from .environment import Environment, get_env, shift_left, shift_right
from .module import VTAModule, build
from .passes import lower, lower_passes

__all__ = [
    "Environment",
    "VTAModule",
    "build",
    "get_env",
    "lower",
    "lower_passes",
    "shift_left",
    "shift_right",
]
