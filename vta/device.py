"""The device protocol and registry: every realization of the accelerator runs a Program.

Devices register under the `vta.devices` entry-point group (see pyproject.toml), so `vta` names
them without importing the packages that implement them.
"""

from __future__ import annotations

import abc
import functools
from importlib.metadata import EntryPoint, entry_points

import numpy as np

from .config import VTAConfig
from .errors import DeviceError
from .isa import FinishInsn, Insn
from .program import Program
from .stats import Stats

ENTRY_POINT_GROUP = "vta.devices"
DEFAULT_DEVICE = "sim"


class Device(abc.ABC):
    """Runs Programs. `execute` works on a whole DRAM image; `run` on named buffers."""

    name: str = "device"

    @abc.abstractmethod
    def execute(self, program: Program, dram: np.ndarray) -> tuple[np.ndarray, Stats]:
        """Run `program` on DRAM image `dram`; return the final image and the run's Stats."""

    def run(
        self, program: Program, buffers: dict[str, np.ndarray] | None = None
    ) -> tuple[dict[str, np.ndarray], Stats]:
        """Run with some input/weight buffers replaced; return the output buffers and Stats."""
        final, stats = self.execute(program, program.dram_with(buffers))
        return program.outputs(final), stats

    def time(self, program: Program) -> Stats:
        """The Stats of a run where only its timing matters (the tuner's, a report). Devices
        that can tell cycles without computing data (the cycle-level simulator) override it;
        others run the Program on its own DRAM image."""
        return self.execute(program, program.dram)[1]

    def cycles(self, program: Program) -> int | None:
        """The cycles of a run and nothing else (a knob search ranks candidates by it)."""
        return self.time(program).cycles

    def new_stats(self, config: VTAConfig) -> Stats:
        return Stats(
            device=self.name, clock_mhz=config.clock_mhz, macs_per_cycle=config.macs_per_cycle
        )


def until_finish(program: Program) -> list[Insn]:
    """The instructions a device runs: the stream up to and including its first FINISH."""
    return finish_prefix(program.instructions)


def finish_prefix(insns: list[Insn]) -> list[Insn]:
    """A stream up to and including its first FINISH (DeviceError without one)."""
    for index, insn in enumerate(insns):
        if isinstance(insn, FinishInsn):
            return insns[: index + 1]
    raise DeviceError(
        f"the {len(insns)}-instruction stream ends without FINISH; the device would never "
        "signal done (append a FINISH instruction)"
    )


MAX_BUDGET = 1 << 62  # fits the RTL harness's 64-bit cycle counter


def check_budget(value: object, option: str, device: str) -> int:
    """A device's budget option (`max_cycles`, `max_steps`): an integer in 1..MAX_BUDGET."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_BUDGET:
        raise DeviceError(f"device {device!r}: {option} = {value!r} must be an integer in 1..2**62")
    return value


@functools.cache
def _factories() -> dict[str, EntryPoint]:
    """The registered devices by name, read once per process (reading the installed packages'
    metadata opens dozens of files: a knob search asking for `sim` per candidate paid 5 ms)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def device_names() -> list[str]:
    """Names of every registered device."""
    return sorted(_factories())


def get_device(name: str = DEFAULT_DEVICE, **options) -> Device:
    """Instantiate a registered device by name (`sim`, `fsim`, `rtl`, `pynq`, ...)."""
    ep = _factories().get(name)
    if ep is None:
        raise DeviceError(f"unknown device {name!r} (registered: {', '.join(device_names())})")
    try:
        factory = ep.load()
    except ImportError as err:
        raise DeviceError(f"device {name!r} is not available here: {err}") from err
    return factory(**options)
