"""Targets: parse "llvm -mtriple=... -mcpu=... -mattr=...", make LLVM target machines, optimize;
the facts of a CPU target that default schedules are derived from (`CPUFacts`).

The host target takes the CPU name and features from LLVM; the environment variable
`VTA_LLVM_TARGET` (e.g. "llvm -mcpu=haswell -mattr=+avx2,+fma,-avx512f") replaces the plain
"llvm" target, so an AVX-512 machine can compile and schedule as an AVX2-only one. -O3 runs
through the new pass manager.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import llvmlite.binding as llvm

from ..errors import CodegenError
from .abi import arch_family

# the PYNQ board's Cortex-A9 and a 64-bit Arm host, so `-mtriple` alone gives sensible code
_DEFAULT_CPU = {"aarch64": ("generic", "+neon"), "armv7": ("cortex-a9", "+neon,+vfp3")}


@dataclass(frozen=True)
class Target:
    """An LLVM code generation target."""

    triple: str
    cpu: str
    features: str

    @property
    def is_host(self) -> bool:
        return self.triple == llvm.get_process_triple()

    @staticmethod
    def parse(spec: str) -> Target:
        override = os.environ.get(TARGET_ENV, "").strip()
        if spec.strip() == "llvm" and override:
            spec = override
        return _parse(spec)


@cache
def _parse(spec: str) -> Target:
    """Target.parse after the environment's override (cached: asking LLVM for the host's
    features costs ~0.5 ms, and default schedules ask often)."""
    words = spec.split()
    if not words or words[0] != "llvm":
        raise CodegenError(
            f"unknown target {spec!r}; expected 'llvm [-mtriple=..] [-mcpu=..] [-mattr=..]'"
        )
    opts = {}
    for w in words[1:]:
        key, _, value = w.partition("=")
        if key not in ("-mtriple", "-mcpu", "-mattr"):
            raise CodegenError(f"target {spec!r}: unknown option {key!r}")
        opts[key] = value
    triple = _normalized(opts.get("-mtriple", llvm.get_process_triple()))
    if triple == llvm.get_process_triple():
        cpu, feats = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    else:
        arch = triple.split("-")[0]
        cpu, feats = next(
            (v for k, v in _DEFAULT_CPU.items() if arch.startswith(k)), ("generic", "")
        )
    if "-mcpu" in opts and opts["-mcpu"] != cpu:
        # another CPU than the host's: its own features, not the host's (an AVX2 host
        # compiling for skylake-avx512 must not switch AVX-512 off)
        cpu, feats = opts["-mcpu"], implied_features(opts["-mcpu"])
    return Target(triple, cpu, opts.get("-mattr", feats))


def long_bits(triple: str) -> int:
    """The width of C's `long` and `size_t` on Linux for `triple`: 32 on 32-bit Arm, else 64."""
    return 32 if arch_family(triple) == "arm" else 64


def _normalized(triple: str) -> str:
    """ARCH-linux-ENV as LLVM reads it, ARCH-unknown-linux-ENV (LLVM takes a three-part
    triple's second part for the vendor: armv7a-linux-gnueabihf would lose its hard-float
    ABI)."""
    parts = triple.split("-")
    if len(parts) == 3 and parts[1] == "linux":
        return f"{parts[0]}-unknown-linux-{parts[2]}"
    return triple


# x86 CPU names (LLVM's) by the vector instruction set their code may use
_AVX512_CPUS = (
    "skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake-client",
    "icelake-server", "tigerlake", "rocketlake", "sapphirerapids", "emeraldrapids",
    "graniterapids", "znver4", "znver5", "x86-64-v4",
)  # fmt: skip
_AVX2_CPUS = (
    "haswell", "broadwell", "skylake", "alderlake", "raptorlake", "meteorlake", "arrowlake",
    "lunarlake", "znver1", "znver2", "znver3", "x86-64-v3",
)  # fmt: skip


def implied_features(cpu: str) -> str:
    """The vector features an x86 CPU name implies ("" for other names: LLVM's defaults for
    the CPU, which `CPUFacts` cannot see)."""
    if cpu in _AVX512_CPUS:
        return "+avx512f,+avx512bw,+avx512dq,+avx512vl,+avx2,+fma,+avx"
    if cpu in _AVX2_CPUS:
        return "+avx2,+fma,+avx"
    return ""


TARGET_ENV = "VTA_LLVM_TARGET"
_SCOPE: contextvars.ContextVar[Target | None] = contextvars.ContextVar("target", default=None)


@contextmanager
def target_scope(spec: str | Target) -> Iterator[Target]:
    """Within the block, default schedules derive from `spec` instead of the host."""
    target = spec if isinstance(spec, Target) else Target.parse(spec)
    token = _SCOPE.set(target)
    try:
        yield target
    finally:
        _SCOPE.reset(token)


def current_target() -> Target:
    """The target of the innermost `target_scope`, else "llvm" (the host, or VTA_LLVM_TARGET)."""
    return _SCOPE.get() or Target.parse("llvm")


@dataclass(frozen=True)
class CPUFacts:
    """What default CPU schedules are derived from: SIMD register width and count, caches."""

    isa: str  # "avx512", "avx2", "sse", "neon" or "scalar"
    vector_bytes: int
    vector_registers: int
    fma: bool
    l1d_bytes: int
    l2_bytes: int
    cores: int

    def lanes(self, dtype: str = "float32") -> int:
        """Elements of `dtype` in one vector register."""
        from ..tir import dtype as dt  # the tir package imports nothing of codegen

        return max(1, self.vector_bytes // dt.itemsize(dtype))


def _features(target: Target) -> set[str]:
    return {f[1:] for f in target.features.split(",") if f.startswith("+")}


def cpu_facts(target: Target | None = None) -> CPUFacts:
    """The facts of `target` (default: `current_target()`); caches from sysfs on the host."""
    target = target or current_target()
    return _facts(target)


@cache
def _facts(target: Target) -> CPUFacts:
    feats = _features(target)
    arch = target.triple.split("-")[0]
    if "avx512f" in feats:
        isa, width, regs = "avx512", 64, 32
    elif "avx2" in feats or "avx" in feats:
        isa, width, regs = "avx2" if "avx2" in feats else "avx", 32, 16
    elif arch.startswith(("aarch64", "arm")) and "neon" in feats:
        isa, width, regs = "neon", 16, 32 if arch.startswith("aarch64") else 16
    elif arch.startswith("x86_64"):
        isa, width, regs = "sse", 16, 16
    else:
        isa, width, regs = "scalar", 8, 16
    l1, l2 = (_host_cache(1), _host_cache(2)) if target.is_host else (None, None)
    return CPUFacts(
        isa=isa,
        vector_bytes=width,
        vector_registers=regs,
        fma="fma" in feats or arch.startswith("aarch64") or "avx512f" in feats,
        l1d_bytes=l1 or 32 << 10,
        l2_bytes=l2 or 1 << 20,
        cores=(os.cpu_count() or 1) if target.is_host else 1,
    )


def _host_cache(level: int) -> int | None:
    """Bytes of the host's level-`level` data (or unified) cache per core, from sysfs."""
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in sorted(root.glob("index*")):
        try:
            if int((index / "level").read_text()) != level:
                continue
            if (index / "type").read_text().strip() == "Instruction":
                continue
            size = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        scale = {"K": 1 << 10, "M": 1 << 20}.get(size[-1:], 1)
        return int(size.rstrip("KM")) * scale
    return None


@cache
def _init() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def target_machine(target: Target, pic: bool = False) -> llvm.TargetMachine:
    """A new target machine (an MCJIT engine takes ownership of the one it is given)."""
    _init()
    try:
        t = llvm.Target.from_triple(target.triple)
    except RuntimeError as e:
        raise CodegenError(f"LLVM has no target for triple {target.triple!r}: {e}") from e
    return t.create_target_machine(
        cpu=target.cpu,
        features=target.features,
        opt=3,
        reloc="pic" if pic else "default",
        codemodel="default" if pic else "jitdefault",
        jit=not pic,
    )


def optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine) -> None:
    """Run the -O3 pipeline (new pass manager) with loop and SLP vectorization."""
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


def parse_ir(text: str, tm: llvm.TargetMachine, triple: str) -> llvm.ModuleRef:
    mod = llvm.parse_assembly(text)
    mod.triple = triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    return mod
