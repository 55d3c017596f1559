"""The toolkit's exception hierarchy: one root, one subclass per layer.

Messages name the object at fault (instruction index and field, stage and axis, ...) and what
would be valid, so a user can fix the input without reading our source.
"""

from __future__ import annotations


class VTAError(Exception):
    """Root of every error the toolkit raises on bad input or a failed run."""


class ConfigError(VTAError):
    """An accelerator configuration is invalid (names the field and the limit)."""


class ISAError(VTAError):
    """An instruction or micro-op field does not fit the ISA (names the field and the limit)."""


class ProgramError(VTAError):
    """A Program is malformed: bad file, bad manifest, or a validation failure."""


class ValidationError(ProgramError):
    """A Program breaks an ISA rule; `problems` lists every finding, the message the first
    `SHOWN` of them."""

    SHOWN = 10

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        head = f"{len(self.problems)} problem(s) in program:\n  " if len(problems) > 1 else ""
        shown = self.problems[: self.SHOWN]
        more = len(self.problems) - len(shown)
        tail = [f"... and {more} more (ValidationError.problems lists them all)"] if more else []
        super().__init__(head + "\n  ".join(shown + tail))


class DeviceError(VTAError):
    """A device failed to run a Program (unknown device, cycle limit, hardware error)."""


class DeadlockError(DeviceError):
    """The modules of a device wait on each other forever; names each blocked module."""


class BudgetError(DeviceError):
    """A run exceeded its device's cycle or step budget; names what each module was doing."""
