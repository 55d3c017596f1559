"""Benchmark an AVX2-only host on an AVX-512 one: every library in the process sees no AVX-512.

Our kernels (LLVM's host target), onnxruntime's and OpenBLAS's all choose their code from the
CPUID instruction, so running ours as AVX2 code (`VTA_LLVM_TARGET`) against peers running
AVX-512 code is no comparison. `hide_avx512.c`, preloaded, makes CPUID fault and answers it
with the AVX-512 bits cleared (see its header): every library then takes its AVX2 path, at full
speed, in this process and in the processes it starts. The microarchitecture stays the host's
(its caches, clock and ports), so the figures are an AVX2 host's only in instruction set. Needs
Linux on x86-64 with CPUID faulting ("cpuid_fault" in /proc/cpuinfo) and a C compiler.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from compiler.codegen.parallel import cache_root
from compiler.errors import CompilerError

SOURCE = Path(__file__).with_name("hide_avx512.c")
MARK = "VTA_AVX512_HIDDEN"  # set in the re-executed process


def cpuid_faulting() -> bool:
    """Whether this CPU and kernel can make CPUID fault (Linux reports 'cpuid_fault')."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "cpuid_fault" in flags.split()


def shim() -> Path:
    """The preload library, compiled once per source version into the toolkit's cache."""
    if not cpuid_faulting():
        raise CompilerError(
            "cannot hide AVX-512: this CPU or kernel has no CPUID faulting "
            "('cpuid_fault' is not in /proc/cpuinfo)"
        )
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        raise CompilerError("cannot hide AVX-512: no C compiler ('cc' or $CC) to build its shim")
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    lib = cache_root() / "hostisa" / f"hide_avx512_{digest}.so"
    if not lib.exists():
        lib.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=lib.parent) as tmp:
            part = Path(tmp) / lib.name
            cmd = [cc, "-O2", "-shared", "-fPIC", "-o", str(part), str(SOURCE)]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise CompilerError(f"cannot build {SOURCE.name}: {done.stderr.strip()}")
            os.replace(part, lib)  # atomic: concurrent builders write the same bytes
    return lib


def preload_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) with the shim preloaded."""
    env = dict(os.environ if env is None else env)
    preload = " ".join(p for p in (str(shim()), env.get("LD_PRELOAD", "")) if p)
    return {**env, "LD_PRELOAD": preload, MARK: "1"}


def hidden() -> bool:
    """Whether this process runs with AVX-512 hidden (re-executed by `reexec_without_avx512`)."""
    return os.environ.get(MARK) == "1"


def reexec_without_avx512() -> None:
    """Run this Python program again from the start with AVX-512 hidden; returns only in the
    re-executed process (at once there), after checking LLVM sees no AVX-512 in it."""
    if hidden():
        import llvmlite.binding as llvm

        if llvm.get_host_cpu_features().get("avx512f", False):
            raise CompilerError("the AVX-512 hiding shim is loaded but LLVM still sees AVX-512F")
        return
    env = preload_env()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def add_option(ap: argparse.ArgumentParser) -> None:
    """A benchmark script's --hide-avx512 option."""
    ap.add_argument(
        "--hide-avx512",
        action="store_true",
        help="run as on an AVX2-only host: CPUID hides AVX-512 from us and the peers alike",
    )


def apply_option(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """With --hide-avx512, re-execute the script without AVX-512 (exit 1 where it cannot)."""
    if args.hide_avx512:
        try:
            reexec_without_avx512()
        except CompilerError as e:
            ap.exit(1, f"error: {e}\n")
        print("AVX-512 hidden by CPUID: an AVX2-only host in instruction set", file=sys.stderr)
