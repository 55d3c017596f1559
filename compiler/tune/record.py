"""What a measurement is: its input (one config of a task) and its Record (costs or failure).

One Record type travels through the whole tuner: runners produce it, the database stores it
(SQLite rows and JSON lines), tuners learn from it, callbacks and studies read it. A record
names its workload, target and config (knob values, and the index they had when measured), so it
stands alone outside the run that made it. Its `cost`, the figure configs are ranked by, is the
fastest of its timings: foreign load on a shared machine only ever adds time.
"""

from __future__ import annotations

import enum
import json
import math
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from .space import ConfigEntity
from .task import Task

# The records' format version: the SQLite schema's and each JSON line's "v". Version 1 ranked
# configs by the mean of their costs (its files are migrated on open); 2 by the minimum; 3 adds
# the thread count a CPU record was measured with (`Record.threads`; `legacy_threads` for older
# records); 4 the host (`Record.host`, `host.host_of`; older records' is unknown, None).
SCHEMA_VERSION = 4


class MeasureErrorNo(enum.IntEnum):
    """Why a measurement failed (0 = it did not)."""

    NO_ERROR = 0
    INSTANTIATION_ERROR = 1  # the template rejected the config
    COMPILE_ERROR = 2  # lowering/codegen raised or the build worker died
    RUNTIME_ERROR = 3  # the kernel raised or its process died
    WRONG_ANSWER = 4  # outputs differ from the reference
    TIMEOUT = 5  # build or run exceeded its deadline


@dataclass(frozen=True)
class MeasureInput:
    """One config of one task, to be built and measured."""

    task: Task
    config: ConfigEntity


@dataclass
class Record:
    """One measurement: which config of which workload on which target, and what it cost
    (`costs` in the runner's unit, empty on failure) or why it failed."""

    workload: str
    target: str
    config: dict[str, Any]
    config_index: int
    costs: list[float]
    error_no: MeasureErrorNo = MeasureErrorNo.NO_ERROR
    error_msg: str = ""
    all_cost: float = 0.0  # seconds of building and running, per config of its batch
    timestamp: float = field(default_factory=time.time)
    threads: int | None = None  # the kernels' thread count when measured (None: unknown, n/a)
    host: dict[str, Any] | None = None  # the CPU host measured on (`host.host_of`; None: unknown)

    def __post_init__(self) -> None:
        self.error_no = MeasureErrorNo(self.error_no)

    @classmethod
    def of(
        cls,
        inp: MeasureInput,
        costs: Iterable[float],
        error_no: MeasureErrorNo = MeasureErrorNo.NO_ERROR,
        error_msg: str = "",
        threads: int | None = None,
        host: dict[str, Any] | None = None,
    ) -> Record:
        """The record of measuring `inp` (with `threads` threads on `host`: CPU wall time)."""
        task, config = inp.task, inp.config
        return cls(
            task.workload_key,
            task.target,
            config.to_json(),
            config.index,
            list(costs),
            error_no,
            error_msg,
            threads=threads,
            host=host,
        )

    @property
    def ok(self) -> bool:
        return self.error_no == MeasureErrorNo.NO_ERROR

    @property
    def cost(self) -> float:
        """The cost configs are ranked by: the fastest timing (inf for a failure)."""
        return min(self.costs) if self.ok and self.costs else math.inf

    def to_json(self) -> str:
        """One JSON line (the `v` key is SCHEMA_VERSION)."""
        return json.dumps({**asdict(self), "v": SCHEMA_VERSION}, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> Record:
        data = json.loads(line)
        workload, target = data.get("workload"), data.get("target")
        if data.pop("v", 1) < 3 and isinstance(workload, str) and isinstance(target, str):
            data["threads"] = legacy_threads(workload, target)
        return cls(**data)


def legacy_threads(workload: str, target: str) -> int | None:
    """The thread count of a record written before records said it (schema < 3), as far as
    its workload and target tell: the auto-scheduler (workload ["ansor:OP", ...]) measured on
    the CPU with `CPURunner(threads=1)` from its first version, so 1; a template record on the
    CPU was measured with 1 thread by `vta tune MODEL.onnx` but with every core of the tuning
    host by `vta tune WORKLOAD`, which the record cannot tell apart, so unknown (None); other
    targets' records (cycles, GPU time) have no thread count (None)."""
    if target.split()[:1] == ["llvm"] and workload.startswith('["ansor:'):
        return 1
    return None
