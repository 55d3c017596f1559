"""`build(s, args)` for the accelerator: compile the Program ahead of time and wrap it in a
Module that runs on any registered device and returns the outputs and the run's Stats."""

from __future__ import annotations

import numpy as np

from vta.config import VTAConfig
from vta.device import DEFAULT_DEVICE, get_device
from vta.errors import DeviceError
from vta.program import Program
from vta.stats import Stats

from ..schedule.schedule import Schedule
from ..te.tensor import Tensor
from ..tir import stmt as S
from .passes import build_program


class VTAModule:
    """A compiled accelerator function: its Program, parameter roles and default device."""

    def __init__(self, program: Program, params: list[S.Buffer], device: str):
        self.program, self.device = program, device
        self.params = [b.name for b in params]
        roles = {b.name: b.role for b in program.buffers}
        self.inputs = [n for n in self.params if roles[n] != "output"]
        self.outputs = [n for n in self.params if roles[n] == "output"]

    def __call__(
        self, *inputs: np.ndarray, device: str | None = None
    ) -> tuple[list[np.ndarray], Stats]:
        """Run on `device` (the module's by default) with the inputs in argument order."""
        if len(inputs) != len(self.inputs):
            raise DeviceError(
                f"module takes {len(self.inputs)} inputs ({', '.join(self.inputs)}), "
                f"got {len(inputs)}"
            )
        dev = get_device(device or self.device)
        outs, stats = dev.run(self.program, dict(zip(self.inputs, inputs, strict=True)))
        return [outs[n] for n in self.outputs], stats


def build(
    s: Schedule,
    args: list[Tensor],
    name: str = "main",
    config: VTAConfig | str | None = None,
    device: str = DEFAULT_DEVICE,
) -> VTAModule:
    """Compile a schedule for the accelerator into a VTAModule (validated Program inside)."""
    program, params = build_program(s, args, config, name)
    return VTAModule(program, params, device)
