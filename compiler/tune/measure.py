"""Measurement: a Builder compiles candidates, a Runner measures them on the target.

Both run their jobs in a pool of isolated worker processes (or on Dask), so an exception, a
crash or a hang in one candidate becomes a Record with a classified error and never stops the
tuner. Costs are in the runner's `cost_unit`: seconds for wall time, cycles for accelerator
devices. A record's `cost`, the figure tuners rank by, is the minimum of its costs: foreign load
on a shared machine only ever adds time, so the fastest of several short timings is the
estimate it disturbs least. Deterministic runners (simulated cycles) are measured once per
config: a MeasureOption hands a repeated config the record it already has.
"""

from __future__ import annotations

import abc
import math
import os
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

import numpy as np

from vta.device import get_device
from vta.program import Program

from ..codegen.abi import aligned, default_threads
from ..driver import build
from ..errors import TuningError
from ..runtime import load_module, set_num_threads
from ..runtime.cuda import time_module
from ..te import PlaceholderOp
from ..vta.environment import target_config
from .gpu_build import GPUArtifact, cuda_build
from .host import host_of
from .pool import LocalPool, Outcome
from .record import MeasureErrorNo, MeasureInput, Record
from .task import Task, target_kind


@dataclass
class BuildResult:
    """An artifact that a Runner can load (a picklable Kernel, a vta Program), or the error."""

    artifact: Any
    error_no: MeasureErrorNo = MeasureErrorNo.NO_ERROR
    error_msg: str = ""
    time_cost: float = 0.0


class WrongAnswer(TuningError):
    """A candidate's outputs differ from the reference."""


class Kernel(Protocol):
    """What a CPU build produces: a picklable callable on numpy arrays (inputs, then outputs)."""

    arg_specs: Sequence[tuple[tuple[int, ...], str]]
    n_outputs: int

    def __call__(self, *arrays: np.ndarray) -> None: ...


def _short(text: str, limit: int = 2000) -> str:
    return text if len(text) <= limit else text[: limit // 2] + "\n...\n" + text[-limit // 2 :]


# ------------------------------------------------------------------------------------ building
@dataclass
class LibraryKernel:
    """A built CPU function as shared-library bytes: picklable, so it crosses from the build
    worker to the runner (even on another machine), where it is written out and loaded."""

    library: bytes
    arg_specs: list[tuple[tuple[int, ...], str]]
    n_outputs: int
    name: str = "main"

    def __post_init__(self) -> None:
        self._fn: Any = None

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_fn"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _fn=None)

    def __call__(self, *arrays: np.ndarray) -> None:
        if self._fn is None:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "kernel.so")
                with open(path, "wb") as f:
                    f.write(self.library)
                self._fn = load_module(path, self.name)  # stays mapped after the unlink
        self._fn(*arrays)


def compiler_build(task: Task, instance: Any) -> Any:
    """Default build: the template returned (schedule, args); compile for the task's target:
    a vta Program for the accelerator, a ptxas-checked GPUArtifact for a GPU, else a shared
    library (non-placeholder args are outputs).
    """
    if target_kind(task.target) == "cuda":
        return cuda_build(task, instance)
    if isinstance(instance, Program):  # a template that emits its Program directly
        return instance
    schedule, args = instance
    if target_kind(task.target) == "vta":  # the configuration the target names
        return build(schedule, args, target="vta", config=target_config(task.target)).program
    module = build(schedule, args, target=task.target)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.so")
        module.export_library(path)
        with open(path, "rb") as f:
            library = f.read()
    return LibraryKernel(
        library,
        [(tuple(a.shape), a.dtype) for a in args],
        sum(not isinstance(a.op, PlaceholderOp) for a in args),
        module.name,
    )


def _build_job(
    build_func: Callable[[Task, Any], Any], task: Task, knobs: dict[str, Any]
) -> BuildResult:
    start = time.perf_counter()
    try:
        # by knob values, not index: a template changed since the tuner started fails here
        # instead of building whichever config the index now names
        instance = task.instantiate(task.config_space.from_json(knobs))
    except Exception:  # noqa: BLE001
        return BuildResult(
            None,
            MeasureErrorNo.INSTANTIATION_ERROR,
            _short(traceback.format_exc()),
            time.perf_counter() - start,
        )
    try:
        artifact = build_func(task, instance)
    except Exception:  # noqa: BLE001
        return BuildResult(
            None,
            MeasureErrorNo.COMPILE_ERROR,
            _short(traceback.format_exc()),
            time.perf_counter() - start,
        )
    return BuildResult(artifact, time_cost=time.perf_counter() - start)


class LocalBuilder:
    """Builds candidates in parallel worker processes, each within `timeout` seconds."""

    def __init__(
        self,
        build_func: Callable[[Task, Any], Any] = compiler_build,
        timeout: float = 10.0,
        n_parallel: int | None = None,
        pool: Any = None,
    ):
        self.build_func = build_func
        self.timeout = timeout
        self.pool = pool or LocalPool(n_parallel or os.cpu_count())

    def build(self, inputs: Sequence[MeasureInput]) -> list[BuildResult]:
        jobs = [(self.build_func, inp.task, inp.config.to_json()) for inp in inputs]
        return [_outcome_to_build(o) for o in self.pool.map(_build_job, jobs, self.timeout)]

    def close(self) -> None:
        self.pool.close()


def _outcome_to_build(outcome: Outcome) -> BuildResult:
    if outcome.ok:
        return outcome.value
    error = MeasureErrorNo.TIMEOUT if outcome.status == "timeout" else MeasureErrorNo.COMPILE_ERROR
    return BuildResult(None, error, "build: " + outcome.message)


# ------------------------------------------------------------------------------------- running
def random_arrays(specs: Sequence[tuple[Sequence[int], str]], seed: int = 0) -> list[np.ndarray]:
    """Deterministic test data: small integers for integer dtypes, normals for floats, 64-byte
    aligned as a compiled network's weights are (numpy's 16-byte starts made timings swing)."""
    rng = np.random.default_rng(seed)
    out = []
    for shape, dtype in specs:
        if np.issubdtype(np.dtype(dtype), np.integer):
            out.append(aligned(rng.integers(-8, 8, size=shape).astype(dtype)))
        else:
            out.append(aligned(rng.standard_normal(size=shape).astype(dtype)))
    return out


_DATA: dict[tuple, tuple[list[np.ndarray], list[np.ndarray]]] = {}


def _test_data(
    task: Task, specs: Sequence[tuple[Sequence[int], str]], check: bool
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Inputs and (if checking) expected outputs of a task, computed once per worker process:
    they are the same for every config, so only the first job of a task pays for them."""
    key = (task.workload_key, task.target, tuple((tuple(s), d) for s, d in specs), check)
    if key not in _DATA:
        inputs = random_arrays(specs)
        _DATA.clear()  # one task at a time: a worker keeps just the latest
        _DATA[key] = (inputs, task.reference(inputs) if check else [])
    return _DATA[key]


def check_outputs(
    task: Task,
    inputs: list[np.ndarray],
    outputs: list[np.ndarray],
    rtol: float,
    expected: list[np.ndarray] | None = None,
) -> None:
    """Raise WrongAnswer naming the first output that differs from the reference's (given as
    `expected` when already computed for these inputs)."""
    if expected is None:
        expected = task.reference(inputs)
    for i, (got, want) in enumerate(zip(outputs, expected, strict=True)):
        if not np.allclose(got, want, rtol=rtol, atol=rtol):
            bad = np.abs(np.asarray(got, np.float64) - want).max()
            raise WrongAnswer(
                f"output {i} of {task.workload_key} differs from the reference "
                f"by up to {bad:.3g} (rtol {rtol:g})"
            )


def time_kernel(
    kernel: Kernel,
    task: Task,
    check: bool,
    rtol: float,
    number: int,
    repeat: int,
    min_repeat_ms: float,
    warmup: int,
    threads: int | None = None,
) -> list[float]:
    """Wall-clock seconds per call: `repeat` timings, each of >= `number` calls lasting
    >= min_repeat_ms. Keep them short and many: their minimum (Record.cost) then likely
    includes one that no burst of foreign load hit. `threads` sets the parallel loops' thread
    count (None: OpenMP's default, every core)."""
    if threads is not None:
        set_num_threads(threads)
    specs = list(kernel.arg_specs)
    n_in = len(specs) - kernel.n_outputs
    inputs, expected = _test_data(task, specs[:n_in], check)
    outputs = [aligned(np.zeros(shape, dtype)) for shape, dtype in specs[n_in:]]
    kernel(*inputs, *outputs)
    if check:
        check_outputs(task, inputs, outputs, rtol, expected)
    for _ in range(warmup):
        kernel(*inputs, *outputs)
    start = time.perf_counter()
    kernel(*inputs, *outputs)
    once = max(time.perf_counter() - start, 1e-9)
    number = max(number, math.ceil(min_repeat_ms / 1e3 / once))
    costs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            kernel(*inputs, *outputs)
        costs.append((time.perf_counter() - start) / number)
    return costs


def run_on_device(program: Any, task: Task, device: str, check: bool) -> list[float]:
    """Cycles of one run of a vta Program on a registered device (sim, rtl, pynq, ...)."""
    if not check:  # timing only: the cycle simulator needs no data
        stats = get_device(device).time(program)
    else:
        names = [b.name for b in program.buffers if b.role in ("input", "weight")]
        specs = [(program.buffer(n).shape, program.buffer(n).dtype) for n in names]
        inputs, expected = _test_data(task, specs, check)
        outputs, stats = get_device(device).run(program, dict(zip(names, inputs, strict=True)))
        check_outputs(task, inputs, list(outputs.values()), 0.0, expected)
    if stats.cycles is None:
        raise TuningError(f"device {device!r} reports no cycle count; measure on 'sim' or 'rtl'")
    return [float(stats.cycles)]


def time_gpu(
    art: GPUArtifact, task: Task, check: bool, rtol: float, number: int, repeat: int
) -> list[float]:
    """Seconds per run of a GPU artifact on the CUDA device, timed with events."""
    specs = list(art.arg_specs)
    n_in = len(specs) - art.n_outputs
    inputs, expected = _test_data(task, specs[:n_in], check)
    outputs = [aligned(np.zeros(shape, dtype)) for shape, dtype in specs[n_in:]]
    costs, results = time_module(art, [*inputs, *outputs], number, repeat)
    if check:
        check_outputs(task, inputs, results[n_in:], rtol, expected)
    return costs


def _run_job(measure: Callable[[Any, Task], list[float]], task: Task, artifact: Any) -> tuple:
    try:
        return measure(artifact, task), MeasureErrorNo.NO_ERROR, ""
    except WrongAnswer as err:
        return [], MeasureErrorNo.WRONG_ANSWER, str(err)
    except Exception:  # noqa: BLE001
        return [], MeasureErrorNo.RUNTIME_ERROR, _short(traceback.format_exc())


class Runner(abc.ABC):
    """Measures built candidates in isolated workers; one at a time unless n_parallel > 1.

    `deterministic` runners give a config the same costs every time (simulated cycles), so a
    config needs measuring only once.
    """

    cost_unit = "s"
    deterministic = False
    threads: int | None = None  # the thread count its records were measured with (None: n/a)

    def __init__(self, timeout: float = 10.0, n_parallel: int = 1, pool: Any = None):
        self.timeout = timeout
        self.pool = pool or LocalPool(n_parallel)

    @abc.abstractmethod
    def measure_func(self) -> Callable[[Any, Task], list[float]]:
        """A picklable function (artifact, task) -> costs, run inside a worker."""

    def run(self, inputs: Sequence[MeasureInput], builds: Sequence[BuildResult]) -> list[Record]:
        jobs = [
            (self.measure_func(), inp.task, b.artifact)
            for inp, b in zip(inputs, builds, strict=True)
        ]
        records = []
        for inp, outcome in zip(inputs, self.pool.map(_run_job, jobs, self.timeout), strict=True):
            if outcome.ok:
                costs, error_no, msg = outcome.value
                error = MeasureErrorNo(error_no)
            else:
                costs, msg = [], "run: " + outcome.message
                timeout = outcome.status == "timeout"
                error = MeasureErrorNo.TIMEOUT if timeout else MeasureErrorNo.RUNTIME_ERROR
            records.append(Record.of(inp, costs, error, msg, self.threads, self.host(inp.task)))
        return records

    def host(self, task: Task) -> dict[str, Any] | None:
        """The host a task's records are measured on: this machine's facts for a local CPU
        runner (`host.host_of`), None where the workers are elsewhere or not a CPU."""
        return host_of(task.target) if isinstance(self.pool, LocalPool) else None

    def close(self) -> None:
        self.pool.close()


MAX_THREADS = 1024  # the most threads a runner (and `vta tune --threads`) accepts


class CPURunner(Runner):
    """Wall time on this CPU: warm-up, then `repeat` timings of >= min_repeat_ms each; the
    fastest is the config's cost. `threads` fixes the kernels' thread count; None: the size of
    the thread pool a compiled network runs its kernels on (`codegen.parallel.default_threads`:
    VTA_NUM_THREADS / OMP_NUM_THREADS, else the cores this process may use), so records are
    measured as the code will run. With a Dask pool and None the workers' own pools decide
    and the records' thread count is unknown. Each record says its count (`Record.threads`).
    On a shared machine one thread per kernel measures more steadily (a foreign process busy on
    one of two cores halves a 2-thread kernel's speed but leaves a 1-thread kernel's alone),
    but it tunes for one thread: use it where the code will run with one."""

    def __init__(
        self,
        number: int = 1,
        repeat: int = 10,
        min_repeat_ms: float = 5.0,
        warmup: int = 1,
        check: bool = True,
        rtol: float = 1e-3,
        threads: int | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if threads is not None and not 1 <= threads <= MAX_THREADS:
            raise TuningError(f"threads must be 1 to {MAX_THREADS}, got {threads}")
        if threads is None and isinstance(self.pool, LocalPool):
            threads = default_threads()
        self.threads = threads
        self.params = dict(
            check=check,
            rtol=rtol,
            number=number,
            repeat=repeat,
            min_repeat_ms=min_repeat_ms,
            warmup=warmup,
            threads=threads,
        )

    def measure_func(self) -> Callable[[Any, Task], list[float]]:
        return partial(time_kernel, **self.params)


class DeviceRunner(Runner):
    """Cycles of a vta Program on `vta.device.get_device(device)`, one run each. Simulated
    devices (`sim`, `rtl`) count the same cycles every run; set `deterministic=False` for a
    board whose count can vary."""

    cost_unit = "cycles"

    def __init__(
        self, device: str = "sim", check: bool = True, deterministic: bool = True, **kwargs: Any
    ):
        super().__init__(**kwargs)
        self.device = device
        self.check = check
        self.deterministic = deterministic

    def measure_func(self) -> Callable[[Any, Task], list[float]]:
        return partial(run_on_device, device=self.device, check=self.check)


class CUDARunner(Runner):
    """Kernel time on the CUDA device (event-timed batches of `number` runs; the fastest is
    the config's cost). A Dask pool should ask for workers with a GPU (resources gpu=1)."""

    def __init__(
        self,
        number: int = 10,
        repeat: int = 5,
        check: bool = True,
        rtol: float = 1e-3,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.params = dict(check=check, rtol=rtol, number=number, repeat=repeat)

    def measure_func(self) -> Callable[[Any, Task], list[float]]:
        return partial(time_gpu, **self.params)


# ------------------------------------------------------------------------------------- options
@dataclass
class MeasureOption:
    """A builder and a runner: measure(inputs) builds then runs every candidate.

    With a deterministic runner a config already measured through this option is not built or
    run again: it gets a copy of its record (timestamped now, `all_cost` 0). `reused` counts
    those records, `measured` the ones the builder and runner produced.
    """

    builder: Any
    runner: Runner
    measured: int = 0
    reused: int = 0
    _known: dict[tuple[str, str, int], Record] = field(default_factory=dict, repr=False)

    @property
    def cost_unit(self) -> str:
        return self.runner.cost_unit

    def measure(self, inputs: Sequence[MeasureInput]) -> list[Record]:
        keys = [(i.task.workload_key, i.task.target, i.config.index) for i in inputs]
        records: list[Record | None] = [None] * len(inputs)
        if self.runner.deterministic:
            for n, key in enumerate(keys):
                if (known := self._known.get(key)) is not None:
                    records[n] = Record.of(
                        inputs[n],
                        known.costs,
                        known.error_no,
                        known.error_msg,
                        known.threads,
                        known.host,
                    )
        todo = [n for n, r in enumerate(records) if r is None]
        for n, r in zip(todo, self._build_and_run([inputs[n] for n in todo]), strict=True):
            records[n] = r
            self._learn(r)
        self.measured += len(todo)
        self.reused += len(inputs) - len(todo)
        return records  # type: ignore[return-value]

    def remember(self, records: Iterable[Record]) -> int:
        """Let a deterministic runner reuse stored measurements (records of earlier runs, e.g.
        another process's database) instead of building and running those configs again.
        Timeouts are not remembered. Returns how many records were taken."""
        return sum(self._learn(r) for r in records)

    def _learn(self, record: Record) -> bool:
        """Keep a deterministic runner's record for reuse (not a timeout: it may pass later)."""
        if not self.runner.deterministic or record.error_no == MeasureErrorNo.TIMEOUT:
            return False
        self._known[record.workload, record.target, record.config_index] = record
        return True

    def _build_and_run(self, inputs: Sequence[MeasureInput]) -> list[Record]:
        if not inputs:
            return []
        start = time.perf_counter()
        builds = self.builder.build(inputs)
        built = [i for i, b in enumerate(builds) if b.error_no == MeasureErrorNo.NO_ERROR]
        ran = self.runner.run([inputs[i] for i in built], [builds[i] for i in built])
        records = [
            Record.of(
                inp, [], b.error_no, b.error_msg, self.runner.threads, self.runner.host(inp.task)
            )
            for inp, b in zip(inputs, builds, strict=True)
        ]
        for i, r in zip(built, ran, strict=True):
            records[i] = r
        per_item = (time.perf_counter() - start) / len(inputs)
        for r in records:
            r.all_cost = per_item
        return records

    def close(self) -> None:
        self.builder.close()
        self.runner.close()


def measure_option(builder: Any = None, runner: Runner | None = None) -> MeasureOption:
    """Defaults: the compiler's build in a local process pool, CPU wall time."""
    return MeasureOption(builder or LocalBuilder(), runner or CPURunner())
