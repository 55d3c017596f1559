"""A graph's kernels lowered and compiled to object files by several processes.

Lowering (Python) and LLVM's -O3 and code generation are single-threaded and each kernel is
independent, so a graph's kernels are shared out between this process and forked children:
every process claims the next kernel from a shared counter, lowers it and compiles it as one
LLVM module into a position-independent object of its own before claiming another (so the
shares even out over LLVM's time as well as lowering's); the objects are linked into one
shared library, for another machine (the board's Arm CPU) by a cross linker. A child that dies
or does not finish within a deadline is not trusted: this process then compiles the kernels it
did not claim itself. An error of the
compiler in a child (a kernel that cannot be lowered) is raised here as it was raised there.
"""

from __future__ import annotations

import importlib.util
import multiprocessing as mp
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..codegen.abi import arch_family
from ..codegen.llvm import codegen
from ..codegen.target import Target, optimize, parse_ir, target_machine
from ..errors import CodegenError
from ..tir import stmt as S

CHILD_DEADLINE_S = 30.0  # a child's grace after this process has finished its own share
DEADLINE_FACTOR = 4.0  # ... or this many times as long as this process took, if longer


@dataclass(frozen=True)
class Kernel:
    """A kernel lowered on demand (`lower()` -> PrimFunc named `name`)."""

    name: str
    lower: Callable[[], S.PrimFunc]


def kernel_of(func: S.PrimFunc | Kernel) -> Kernel:
    """A Kernel for a lowered PrimFunc or a Kernel."""
    return func if isinstance(func, Kernel) else Kernel(func.name, lambda: func)


def default_processes(n_kernels: int) -> int:
    """One process per core this process may run on, no more than there are kernels."""
    return max(1, min(n_kernels, len(os.sched_getaffinity(0))))


def compile_objects(
    kernels: Sequence[Kernel], target: Target, folder: Path, processes: int
) -> list[Path]:
    """Object files (PIC, in `folder`, `kernel<k>.o` for kernel k) of every kernel, compiled
    by `processes` processes (this one and forked children)."""
    counter = mp.get_context("fork").Value("i", 0)

    def claim() -> int | None:
        with counter.get_lock():
            k = counter.value
            counter.value += 1
        return k if k < len(kernels) else None

    children = {}
    for rank in range(1, max(1, processes)):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child's exit code and files report it
            _child(rank, kernels, claim, target, folder)
        children[rank] = pid
    try:
        start = time.perf_counter()
        done = set(_compile_claimed(kernels, claim, target, folder))
        grace = max(CHILD_DEADLINE_S, DEADLINE_FACTOR * (time.perf_counter() - start))
        for rank, pid in children.items():
            status = _wait(pid, time.monotonic() + grace)
            err = folder / f"child{rank}.err"
            if err.exists():
                raise pickle.loads(err.read_bytes())
            claimed = folder / f"child{rank}.claimed"
            if status == 0 and claimed.exists():
                done.update(int(k) for k in claimed.read_text().split())
        children = {}
        for k in range(len(kernels)):  # a child died or hung: its share is compiled here
            if k not in done:
                _emit(kernels[k].lower(), target, _object(folder, k))
        return [_object(folder, k) for k in range(len(kernels))]
    finally:
        for pid in children.values():  # this process failed: stop the children
            _kill(pid)


def _object(folder: Path, k: int) -> Path:
    return folder / f"kernel{k}.o"


def _compile_claimed(
    kernels: Sequence[Kernel], claim: Callable[[], int | None], target: Target, folder: Path
) -> list[int]:
    """Claim, lower and compile one kernel at a time until none is left: the kernels claimed."""
    mine = []
    while (k := claim()) is not None:
        _emit(kernels[k].lower(), target, _object(folder, k))
        mine.append(k)
    return mine


def _child(
    rank: int,
    kernels: Sequence[Kernel],
    claim: Callable[[], int | None],
    target: Target,
    folder: Path,
) -> None:  # pragma: no cover - runs in the forked child
    code = 1
    try:
        mine = _compile_claimed(kernels, claim, target, folder)
        (folder / f"child{rank}.claimed").write_text(" ".join(map(str, mine)))
        code = 0
    except Exception as e:  # the compiler's error, for the parent to raise
        try:
            (folder / f"child{rank}.err").write_bytes(pickle.dumps(e))
        except Exception:
            pass
    finally:
        os._exit(code)


def _emit(func: S.PrimFunc, target: Target, path: Path) -> Path:
    """A PIC object of `func` after -O3."""
    tm = target_machine(target, pic=True)
    mod = parse_ir(str(codegen([func], path.stem, target.triple)), tm, target.triple)
    optimize(mod, tm)
    path.write_bytes(tm.emit_object(mod))
    return path


def _wait(pid: int, deadline: float) -> int | None:
    """The child's exit status (0: success), None when it was killed at the deadline."""
    delay = 0.001
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            _kill(pid)
            return None
        time.sleep(delay)
        delay = min(2 * delay, 0.05)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


# another machine's Linux (`arch_family` of its triple) -> the cross toolchain's prefix, as
# Debian's gcc-<prefix> package and `zig cc -target <prefix>` name it
CROSS_PREFIX = {
    "arm": "arm-linux-gnueabihf",
    "aarch64": "aarch64-linux-gnu",
    "x86_64": "x86_64-linux-gnu",
}


def cross_linker(triple: str) -> list[str]:
    """The command that links shared libraries for `triple` on this machine: the cross gcc
    (its libgcc has the helpers 32-bit Arm code calls for 64-bit division), else the
    ziglang package's `zig cc`; CodegenError saying what to install."""
    prefix = CROSS_PREFIX.get(arch_family(triple))
    if prefix is None:
        raise CodegenError(f"no cross linker known for {triple} (known: {', '.join(CROSS_PREFIX)})")
    gcc = shutil.which(f"{prefix}-gcc")
    if gcc:
        return [gcc]
    if importlib.util.find_spec("ziglang"):
        return [sys.executable, "-m", "ziglang", "cc", "-target", prefix]
    raise CodegenError(
        f"linking for {triple} needs a cross linker: apt-get install gcc-{prefix} "
        "(or pip install ziglang)"
    )


def link(objects: list[Path], out: Path, triple: str | None = None) -> Path:
    """The objects linked into the shared library `out`: by `ld` for this machine (`triple`
    None), else by `cross_linker(triple)` with the math library, each library's references
    bound to its own definitions (-Bsymbolic: its linked-in parallel runtime)."""
    if triple is None:
        command = ["ld", "-shared", "-o", str(out), *map(str, objects)]
    else:
        command = [*cross_linker(triple), "-shared", "-Wl,-Bsymbolic", "-o", str(out)]
        command += [*map(str, objects), "-lm"]
    r = subprocess.run(command, capture_output=True, text=True)
    if r.returncode:
        raise CodegenError(f"linking {out} failed: {r.stderr.strip()}")
    return out
