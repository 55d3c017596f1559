"""The accelerator contract: configuration, ISA, Program format, devices."""

from .config import VTAConfig, load_config, preset_names
from .errors import (
    ConfigError,
    DeadlockError,
    DeviceError,
    ISAError,
    ProgramError,
    ValidationError,
    VTAError,
)

__all__ = [
    "VTAConfig",
    "load_config",
    "preset_names",
    "VTAError",
    "ConfigError",
    "ISAError",
    "ProgramError",
    "ValidationError",
    "DeviceError",
    "DeadlockError",
]
