"""The accelerator contract: configuration, ISA, Program format, devices."""

from .config import VTAConfig, load_config, preset_names
from .errors import (
    CodegenError,
    ConfigError,
    DeadlockError,
    DeviceError,
    ISAError,
    LoweringError,
    OperatorError,
    ProgramError,
    ScheduleError,
    TuningError,
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
    "ScheduleError",
    "LoweringError",
    "OperatorError",
    "CodegenError",
    "TuningError",
]
