"""A compiled graph's run half: load a saved folder (`graph.so`, `graph.json`, `params.npz`)
and run it, with numpy and ctypes alone, no LLVM (what the board runs; `executor.py` builds).

An inference is one native call of the library's entry `graph_run(ptr table)`, which calls every
kernel in order on the table's base pointers plus constant byte offsets (intermediate tensors
live at planned offsets of one arena). The table holds the arena, the graph's inputs, its
outputs and its parameters (weights), in that order.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import math
import platform
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..codegen.abi import OOB_PREFIX, address, aligned, arch_family, default_threads
from ..errors import ArgumentError, CodegenError, OutOfBoundsError

ENTRY = "graph_run"
NOP = "graph_nop"  # the entry's signature, no work: times the executor's own overhead
ALIGN = 64  # bytes: every arena offset and the arena itself
FORMAT = 2  # the saved folder's version
SEALED = ("graph.so", "params.npz")  # their digests are in graph.json


@dataclass(frozen=True)
class TensorSpec:
    """A named tensor's shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class Slot:
    """Where a kernel argument lives: an input, output or parameter (by number), or the arena
    at a byte offset."""

    kind: str  # "input", "output", "param" or "arena"
    index: int = 0
    offset: int = 0


def table_index(slot: Slot, n_in: int, n_out: int) -> int:
    base = {"arena": 0, "input": 1, "output": 1 + n_in, "param": 1 + n_in + n_out}
    if slot.kind not in base:
        raise CodegenError(f"graph executor: unknown slot kind {slot.kind!r}")
    return base[slot.kind] + (0 if slot.kind == "arena" else slot.index)


class GraphModule:
    """A compiled graph (`executor.compile_graph`, or `load` of a saved folder):
    `run({name: array}) -> {name: array}`, `save(folder)`."""

    def __init__(
        self,
        manifest: dict,
        params: list[np.ndarray],
        entry: Any,
        kernels: dict[str, Any],
        keep: Any = None,
    ):
        self.manifest = manifest
        self.inputs, self.outputs = _specs(manifest["inputs"]), _specs(manifest["outputs"])
        self._input_names = {s.name for s in self.inputs}
        self.params = [aligned(p) for p in params]  # as built, and as np.load gives them
        self._entry, self._kernels, self._keep = entry, kernels, keep
        self._nop = kernels[NOP]
        self._oob: dict[str, Any] = {}  # kernel -> its out-of-range record (`_oob_records`)
        n = 1 + len(self.inputs) + len(self.outputs) + len(self.params)
        self._table = (ctypes.c_void_p * n)()
        _check_memory(manifest["arena_bytes"], self.inputs + self.outputs)
        raw = np.empty(manifest["arena_bytes"] + ALIGN, np.uint8)
        start = (-raw.ctypes.data) % ALIGN
        self._arena = raw[start : start + manifest["arena_bytes"]]
        self._table[0] = self._arena.ctypes.data
        first = 1 + len(self.inputs) + len(self.outputs)
        for k, p in enumerate(self.params):
            self._table[first + k] = p.ctypes.data

    # ---- running ---------------------------------------------------------------------------
    def _bind_inputs(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        want = self._input_names
        if inputs.keys() != want:
            missing = [n for n in want if n not in inputs]
            extra = [n for n in inputs if n not in want]
            raise ArgumentError(
                "graph inputs: "
                + "; ".join(
                    ([f"missing {', '.join(sorted(missing))}"] if missing else [])
                    + ([f"unknown {', '.join(sorted(extra))}"] if extra else [])
                )
                + f" (the graph takes {', '.join(s.name for s in self.inputs)})"
            )
        arrays = []
        for spec in self.inputs:
            a = np.asarray(inputs[spec.name])
            if a.shape != spec.shape:
                raise ArgumentError(
                    f"graph input '{spec.name}' has shape {list(a.shape)}, "
                    f"expected {list(spec.shape)}"
                )
            arrays.append(np.ascontiguousarray(a, dtype=spec.dtype))
        return arrays

    def _prepare(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Checked inputs and new outputs, their addresses in the table (keep them alive)."""
        arrays = self._bind_inputs(inputs) + [np.empty(s.shape, s.dtype) for s in self.outputs]
        for k, a in enumerate(arrays):
            self._table[1 + k] = address(a)
        return arrays

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One inference (not thread-safe: the arena is shared by calls); an index out of
        range (a Gather's, read from a tensor) raises OutOfBoundsError."""
        arrays = self._prepare(inputs)
        self._entry(self._table)
        self._check_indices()
        outs = arrays[len(self.inputs) :]
        return {s.name: o for s, o in zip(self.outputs, outs, strict=True)}

    def _check_indices(self) -> None:
        """Raise for the first kernel whose bounds-checked loads (indices read from a tensor)
        found an index out of range: it read element 0 instead (`codegen.llvm.OOB_PREFIX`)."""
        for kernel, record in self._oob.items():
            if record[0]:
                record[0] = record[1] = 0
                label = next(s["label"] for s in self.manifest["steps"] if s["kernel"] == kernel)
                raise OutOfBoundsError(
                    f"graph run: {label}: an index read from a tensor (a Gather's indices) is "
                    "out of range for its axis; the outputs are not valid"
                )

    def overhead_us(self, inputs: dict[str, np.ndarray], reps: int = 200) -> float:
        """The executor's own time per inference in microseconds (median): everything `run`
        does but the kernels (input checks, output allocation, the table, the ctypes call of
        an entry that returns at once, the result dict)."""
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            arrays = self._prepare(inputs)
            self._nop(self._table)
            outs = arrays[len(self.inputs) :]
            dict(zip([s.name for s in self.outputs], outs, strict=True))
            ts.append(time.perf_counter() - t)
        return float(np.median(ts)) * 1e6

    def profile(self, inputs: dict[str, np.ndarray], reps: int = 10) -> list[dict]:
        """Each step's kernel timed alone (`ms`: the median of `reps` calls in a row, its data
        and weights warm in the caches) and in the network (`in_network_ms`: the median over
        `reps` inferences of its call in order, after the kernels before it, as an inference
        runs it): [{"kernel", "label", "flops", "ms", "in_network_ms"}] in order."""
        keep = self._prepare(inputs)
        self._entry(self._table)
        n_in, n_out = len(self.inputs), len(self.outputs)
        calls = []
        for step in self.manifest["steps"]:
            slots = [Slot(**a) for a in step["args"]]
            ptrs = [self._table[table_index(a, n_in, n_out)] + a.offset for a in slots]
            calls.append((self._kernels[step["kernel"]], ptrs))
        alone: list[list[float]] = [[] for _ in calls]
        in_network: list[list[float]] = [[] for _ in calls]
        for times, (fn, ptrs) in zip(alone, calls, strict=True):
            fn(*ptrs)
            for _ in range(reps):
                t = time.perf_counter()
                fn(*ptrs)
                times.append(time.perf_counter() - t)
        for _ in range(reps):
            for times, (fn, ptrs) in zip(in_network, calls, strict=True):
                t = time.perf_counter()
                fn(*ptrs)
                times.append(time.perf_counter() - t)
        del keep
        return [
            {
                "kernel": step["kernel"],
                "label": step["label"],
                "flops": step["flops"],
                "ms": float(np.median(a)) * 1e3,
                "in_network_ms": float(np.median(b)) * 1e3,
            }
            for step, a, b in zip(self.manifest["steps"], alone, in_network, strict=True)
        ]

    # ---- saving ----------------------------------------------------------------------------
    def save(self, folder: str | Path) -> None:
        """graph.so (the kernels and the entry), graph.json (the manifest), params.npz."""
        save_graph(folder, self.manifest, self.params, self._library)

    @classmethod
    def load(cls, folder: str | Path) -> GraphModule:
        """A graph saved by `save`, ready to run (nothing is compiled)."""
        folder = Path(folder)
        try:
            manifest = json.loads((folder / "graph.json").read_text())
        except (OSError, ValueError) as e:
            raise CodegenError(f"{folder} is not a compiled model folder: {e}") from e
        if not isinstance(manifest, dict):
            raise CodegenError(f"{folder} is not a compiled model folder: graph.json is no object")
        if manifest.get("format") != FORMAT:
            raise CodegenError(
                f"{folder}: compiled model format {manifest.get('format')!r}, expected {FORMAT}"
            )
        triple = str(manifest.get("triple"))
        if arch_family(triple) != arch_family(platform.machine()):
            raise CodegenError(
                f"{folder} was compiled for {triple}, not this {platform.machine()} machine "
                "(a board's model: run it there, `vta deploy`)"
            )
        # the kernels trust every address and shape: run nothing but what `save` wrote
        digests = manifest.pop("sha256", {})
        for name in SEALED:
            path = folder / name
            if not path.is_file() or _sha256(path.read_bytes()) != digests.get(name):
                raise CodegenError(
                    f"{path} is missing or not the one graph.json was saved with "
                    "(changed after `vta compile`?): compile the model again"
                )
        if _manifest_sha256(manifest) != digests.get("manifest"):
            raise CodegenError(
                f"{folder / 'graph.json'} was changed after `vta compile`: compile the model again"
            )
        with np.load(folder / "params.npz") as z:
            params = [z[f"arr_{k}"] for k in range(len(manifest["params"]))]
        return cls.from_library(manifest, params, folder / "graph.so")

    @classmethod
    def from_library(
        cls, manifest: dict, params: list[np.ndarray], library: Path, keep: Any = None
    ) -> GraphModule:
        """The graph of `manifest` on the kernels of the shared library `library` (the
        parallel runtime: this process's, or the library's own where it is linked in); `keep`
        (the library's temporary folder) lives as long as the graph."""
        linked = manifest.get("runtime") == "linked"
        if not linked:  # a build of this machine: the compiler's pool, built with LLVM
            from ..codegen import parallel

            parallel.load_runtime()
        try:
            lib = ctypes.CDLL(str(library.resolve()))
        except OSError as e:
            raise CodegenError(f"cannot load {library}: {e}") from e
        if linked:
            lib.vta_runtime_init()
            lib.vta_set_num_threads(default_threads())

        def symbol(name: str) -> int:
            return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value

        graph = cls(manifest, params, *_bind(symbol, manifest), keep=(lib, keep))
        graph._library = library
        graph._oob = _oob_records(lib, manifest)
        return graph


@dataclass
class BoardGraph:
    """A graph compiled for another machine's CPU (the board's): its manifest, parameters and
    shared library (in the temporary folder `keep`), to save and run there."""

    manifest: dict
    params: list[np.ndarray]
    library: Path
    keep: Any = None

    @property
    def inputs(self) -> list[TensorSpec]:
        """The graph's inputs, as `GraphModule.inputs`."""
        return _specs(self.manifest["inputs"])

    @property
    def outputs(self) -> list[TensorSpec]:
        """The graph's outputs, as `GraphModule.outputs`."""
        return _specs(self.manifest["outputs"])

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Refused: the kernels are another machine's code."""
        raise CodegenError(
            f"this graph is compiled for {self.manifest['triple']}: save it and run it there"
        )

    def save(self, folder: str | Path) -> None:
        """As `GraphModule.save`."""
        save_graph(folder, self.manifest, self.params, self.library)


def save_graph(folder: str | Path, manifest: dict, params: list[np.ndarray], library: Path) -> None:
    """The folder `GraphModule.load` reads: graph.so (a copy of `library`), params.npz and
    graph.json (`manifest` with the digests of all three)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(library, folder / "graph.so")
    np.savez(folder / "params.npz", *params)
    sealed = {f: _sha256((folder / f).read_bytes()) for f in SEALED}
    digests = {**sealed, "manifest": _manifest_sha256(manifest)}
    (folder / "graph.json").write_text(json.dumps({**manifest, "sha256": digests}, indent=1))


def _specs(specs: list[dict]) -> list[TensorSpec]:
    """TensorSpecs of a manifest's inputs or outputs."""
    return [TensorSpec(s["name"], tuple(s["shape"]), s["dtype"]) for s in specs]


def available_memory() -> int | None:
    """Bytes the kernel can give without swapping (MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _check_memory(arena_bytes: int, tensors: list[TensorSpec]) -> None:
    """Refuse a model whose arena, inputs and outputs the machine cannot hold: memory is
    committed lazily, so allocating them would succeed and the process be killed when the
    kernels touch them."""
    free = available_memory()
    io_bytes = sum(math.prod(t.shape) * np.dtype(t.dtype).itemsize for t in tensors)
    if free is not None and arena_bytes + io_bytes > free:
        raise CodegenError(
            f"the model's intermediate tensors ({arena_bytes / 2**30:.1f} GiB), inputs and "
            f"outputs ({io_bytes / 2**30:.1f} GiB) need more than the "
            f"{free / 2**30:.1f} GiB this machine has available"
        )


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _manifest_sha256(manifest: dict) -> str:
    return _sha256(json.dumps(manifest, sort_keys=True).encode())


def _oob_records(lib: ctypes.CDLL, manifest: dict) -> dict[str, Any]:
    """The out-of-range record (i64[2]: checked buffer + 1, index) of every kernel with
    bounds-checked loads."""
    records = {}
    for kernel in dict.fromkeys(s["kernel"] for s in manifest["steps"]):
        try:
            records[kernel] = (ctypes.c_int64 * 2).in_dll(lib, OOB_PREFIX + kernel)
        except ValueError:  # no data-dependent index in this kernel
            continue
    return records


def _bind(address, manifest: dict) -> tuple[Any, dict[str, Any]]:
    """The entry and every kernel as ctypes functions from their addresses."""
    entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address(ENTRY))
    kernels = {NOP: ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address(NOP))}
    for step in manifest["steps"]:
        proto = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(step["args"]))
        kernels[step["kernel"]] = proto(address(step["kernel"]))
    return entry, kernels
