"""Host facts of a CPU target and the default register tiles derived from them."""

import numpy as np
import pytest

from compiler import te
from compiler.codegen.target import TARGET_ENV, Target, cpu_facts, current_target, target_scope
from compiler.driver import build
from compiler.topi import x86
from compiler.topi.utils import vector_lanes
from compiler.topi.x86.utils import register_block
from testkit.isa import host_runs

AVX2 = "llvm -mcpu=haswell -mattr=+avx2,+fma,-avx512f"
AVX512 = "llvm -mcpu=skylake-avx512 -mattr=+avx512f,+avx2,+fma"


@pytest.mark.parametrize(
    "spec,isa,width,regs,block",
    [(AVX2, "avx2", 32, 16, (6, 2)), (AVX512, "avx512", 64, 32, (6, 4))],
)
def test_facts_and_register_block(spec, isa, width, regs, block):
    facts = cpu_facts(Target.parse(spec))
    assert (facts.isa, facts.vector_bytes, facts.vector_registers) == (isa, width, regs)
    assert facts.lanes("float32") == width // 4 and facts.l1d_bytes > 0
    assert register_block(facts) == block


@pytest.mark.parametrize(
    "cpu,isa", [("skylake-avx512", "avx512"), ("znver4", "avx512"), ("haswell", "avx2")]
)
def test_a_cpu_name_alone_implies_its_features_on_any_host(cpu, isa):
    """-mcpu without -mattr: the named CPU's vector features, whatever the host has."""
    target = Target.parse(f"llvm -mcpu={cpu}")
    assert target.cpu == cpu and cpu_facts(target).isa == isa


def test_arm_target_has_neon_facts():
    facts = cpu_facts(Target.parse("llvm -mtriple=aarch64-linux-gnu"))
    assert (facts.isa, facts.vector_bytes, facts.vector_registers) == ("neon", 16, 32)


def test_scope_and_environment_select_the_target(monkeypatch):
    with target_scope(AVX2):
        assert vector_lanes("float32") == 8
        assert current_target().cpu == "haswell"
    monkeypatch.setenv(TARGET_ENV, AVX2)
    assert Target.parse("llvm").cpu == "haswell" and vector_lanes("float32") == 8


def test_avx2_matmul_is_correct_on_this_host(monkeypatch):
    """The AVX2 schedule, compiled for AVX2, runs on any x86-64 host that has AVX2."""
    if not host_runs("avx2"):
        pytest.skip("the host has no AVX2")
    monkeypatch.setenv(TARGET_ENV, AVX2)
    n, m, k = 37, 48, 29
    A, B = te.placeholder((n, k), name="A"), te.placeholder((k, m), name="B")
    C = x86.matmul_pack(A, B)
    assert C.op.input_tensors[1].shape[2] == 16  # packed panel: 2 ymm vectors
    mod = build(x86.schedule_dense_pack(C), [A, B, C])
    assert "zmm" not in mod.get_source("asm") and "ymm" in mod.get_source("asm")
    rng = np.random.default_rng(0)
    a, b = rng.random((n, k), dtype=np.float32), rng.random((k, m), dtype=np.float32)
    c = np.zeros((n, m), np.float32)
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
