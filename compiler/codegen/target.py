"""Targets: parse "llvm -mtriple=... -mcpu=... -mattr=...", make LLVM target machines, optimize.

The host target takes the CPU name and features from LLVM (znver5 with AVX-512 here); -O3 runs
through the new pass manager.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import llvmlite.binding as llvm

from ..errors import CodegenError

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
        triple = opts.get("-mtriple", llvm.get_process_triple())
        if triple == llvm.get_process_triple():
            cpu, feats = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
        else:
            arch = triple.split("-")[0]
            cpu, feats = next(
                (v for k, v in _DEFAULT_CPU.items() if arch.startswith(k)), ("generic", "")
            )
        return Target(triple, opts.get("-mcpu", cpu), opts.get("-mattr", feats))


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
