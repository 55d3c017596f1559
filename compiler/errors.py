"""The compiler's exceptions, rooted in the toolkit's one base class `vta.errors.VTAError`.

Catch `CompilerError` for any failure of the compiler or tuner, `VTAError` for any failure of
the toolkit. Messages name the object at fault (stage and axis, buffer, knob, ONNX node) and
what would be valid.
"""

from __future__ import annotations

from vta.errors import VTAError


class CompilerError(VTAError):
    """Root of the compiler's errors: expressions, schedules, lowering, codegen, tuning."""


class OperatorError(CompilerError, ValueError):
    """A tensor expression or operator got arguments it cannot take (shape, dtype, layout)."""


class ScheduleError(CompilerError):
    """A schedule primitive was applied where it is not legal."""


class LoweringError(CompilerError):
    """Lowering a schedule to loop IR (or to accelerator instructions) failed."""


class CodegenError(CompilerError):
    """Generating or loading native code failed."""


class TuningError(CompilerError):
    """The tuner, its measurements or its records failed."""


class ArgumentError(CompilerError, ValueError):
    """Arrays passed to a compiled function or graph do not match its signature (names the
    parameter)."""


class OutOfBoundsError(CompilerError, IndexError):
    """A data-dependent index (a gather or scatter) fell outside its buffer during a call."""
