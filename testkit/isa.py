"""Which instruction sets this host executes: tests compile for AVX2 and AVX-512 on any host
and run the code only where it can run."""

from compiler.codegen.target import Target, cpu_facts


def host_runs(isa: str) -> bool:
    """Whether code compiled for `isa` ("avx2" or "avx512") runs on this host (read from
    the features LLVM enables for it, not from their names: "-avx512f" disables one)."""
    host = cpu_facts(Target.parse("llvm")).isa
    return host == "avx512" or host == isa == "avx2"
