"""The reference example Programs: valid, non-trivial, and bit-exact on every simulator."""

import numpy as np
import pytest

from testkit.examples import all_examples, alu, alu_reference, blocked_gemm
from vta.device import get_device
from vta.errors import DeviceError, ProgramError
from vta.isa import AluOp, MemType
from vta.validate import find_problems

CONFIGS = ("pynq", "tiny")
EXAMPLES = [ex for cfg in CONFIGS for ex in all_examples(cfg)]
IDS = [f"{ex.program.config.name}-{ex.name}" for ex in EXAMPLES]


def _device(name: str):
    try:
        return get_device(name)
    except DeviceError as err:
        pytest.skip(f"device {name!r} not available: {err}")


def test_names_are_unique_per_config():
    for cfg in CONFIGS:
        names = [ex.name for ex in all_examples(cfg)]
        assert len(names) == len(set(names))


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_example_is_valid_and_not_trivial(example):
    assert find_problems(example.program) == []
    assert set(example.expected) == {b.name for b in example.program.buffers if b.role == "output"}
    for name, want in example.expected.items():
        spec = example.program.buffer(name)
        assert want.shape == spec.shape and want.dtype == np.dtype(spec.dtype)
        assert len(np.unique(want)) > 2, "expected output too uniform to catch a wrong result"
        # the initial image holds no answer: outputs start zeroed
        assert not example.program.view(name).any()


@pytest.mark.parametrize("device", ["fsim", "sim"])
@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_example_runs_bit_exact(device, example):
    outputs, _ = _device(device).run(example.program)
    for name, want in example.expected.items():
        np.testing.assert_array_equal(outputs[name], want, err_msg=f"{example.name}: {name}")


def test_every_alu_op_is_covered():
    tiny, pynq = ({ex.name for ex in all_examples(c)} for c in ("tiny", "pynq"))
    for names, ops in ((tiny, ("min", "max", "add", "shr", "mul")), (pynq, ("req",))):
        for op in ops:
            assert {f"alu_{op}_tensor"} <= names
            assert any(n.startswith(f"alu_{op}_imm") for n in names)
    assert not any("mul" in name for name in pynq)
    assert not any("req" in name for name in tiny)


@pytest.mark.parametrize(
    ("config", "op", "field"), [("pynq", "MUL", "alu_mul"), ("tiny", "REQ", "alu_requant")]
)
def test_gated_op_needs_a_config_with_it(config, op, field):
    with pytest.raises(ProgramError, match=f"no ALU {op} \\({field} is false\\)"):
        alu(config, AluOp[op])


def test_alu_reference_semantics():
    a = np.array([5, -5, 2**31 - 1, 1, -(2**31)], dtype=np.int32)
    np.testing.assert_array_equal(alu_reference(AluOp.SHR, a, 1), [2, -3, 2**30 - 1, 0, -(2**30)])
    np.testing.assert_array_equal(alu_reference(AluOp.SHR, a[:2], -2), [20, -20])
    np.testing.assert_array_equal(alu_reference(AluOp.ADD, a[2:3], 1), [-(2**31)])  # wraps
    np.testing.assert_array_equal(alu_reference(AluOp.SHR, a[:1], 40), [0])  # saturates at 31
    # REQ: add (wrapping), shift by imm[4:0], clip to int8 or, with imm[5] (relu), to [0, 127]
    np.testing.assert_array_equal(alu_reference(AluOp.REQ, a, 0, imm=1), [2, -3, 127, 0, -128])
    np.testing.assert_array_equal(alu_reference(AluOp.REQ, a, 0, imm=0x21), [2, 0, 127, 0, 0])
    np.testing.assert_array_equal(alu_reference(AluOp.REQ, a[2:3], 1, imm=31), [-1])  # wraps
    np.testing.assert_array_equal(alu_reference(AluOp.REQ, a[:2], 300, imm=8), [1, 1])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(batch=4, in_channels=20, out_channels=16), "in_channels = 20"),
        (dict(batch=4, in_channels=32, out_channels=32, block=(4, 24, 16)), "block 24"),
        (dict(batch=4, in_channels=32, out_channels=48, threads=2, block=(4, 16, 16)), "split"),
        (dict(batch=4, in_channels=32, out_channels=32, threads=3), "threads = 3"),
        (dict(batch=1, in_channels=32, out_channels=32, block=(1, 32, 16)), "same ACC row"),
        (dict(batch=2048, in_channels=16, out_channels=32), "ACC entries"),
    ],
)
def test_blocked_gemm_rejects_bad_tilings(kwargs, match):
    with pytest.raises(ProgramError, match=match):
        blocked_gemm("pynq", **kwargs)


def test_two_threads_interleave_with_tokens():
    one = blocked_gemm("pynq", 16, 64, 64, block=(16, 32, 32), threads=1).program
    two = blocked_gemm("pynq", 16, 64, 64, block=(16, 32, 32), threads=2).program
    flags = lambda p: sum(  # noqa: E731
        i.pop_prev_dep + i.pop_next_dep + i.push_prev_dep + i.push_next_dep for i in p.instructions
    )
    assert flags(two) > flags(one)
    sram_bases = {i.sram_base for i in two.instructions if getattr(i, "memory_type", None) == 2}
    assert sram_bases == {0, two.config.depth[MemType.INP] // 2}  # one INP half per virtual thread


def test_two_threads_hide_load_latency_on_the_cycle_simulator():
    sim = _device("sim")
    stats = {}
    for threads in (1, 2):
        ex = blocked_gemm("pynq", 64, 256, 256, block=(64, 64, 64), threads=threads)
        outputs, stats[threads] = sim.run(ex.program)
        np.testing.assert_array_equal(outputs["c"], ex.expected["c"])
    assert stats[2].cycles < stats[1].cycles
    assert stats[2].utilization > stats[1].utilization


def test_benchmark_size_gemm_runs_millions_of_cycles():
    ex = blocked_gemm("pynq", 256, 1024, 1024, block=(64, 256, 256), threads=2)
    assert len(ex.program) < 1000  # big tiles: few instructions, long GEMMs
    outputs, stats = _device("sim").run(ex.program)
    assert stats.cycles > 1_000_000
    assert stats.utilization > 0.8
    np.testing.assert_array_equal(outputs["c"], ex.expected["c"])
