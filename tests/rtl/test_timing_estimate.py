"""hw.timing on hand-made netlists: the longest register-to-register path with the documented
per-cell delays and net allowance."""

import pytest

from hw import timing
from hw.timing import critical_path, slow_signals


def cell(kind, inputs, outputs, **params):
    """A yosys JSON cell: inputs/outputs map port names to bit lists."""
    return {
        "type": kind,
        "parameters": {k: format(v, "032b") for k, v in params.items()},
        "port_directions": {**dict.fromkeys(inputs, "input"), **dict.fromkeys(outputs, "output")},
        "connections": {**inputs, **outputs},
    }


def netlist(cells, netnames=None):
    return {"modules": {"top": {"cells": cells, "netnames": netnames or {}}}}


def test_a_lut_chain_between_registers():
    cells = {
        "a": cell("FDRE", {"C": [1], "D": [2], "CE": ["1"], "R": ["0"]}, {"Q": [3]}),
        "l1": cell("LUT2", {"I0": [3], "I1": [3]}, {"O": [4]}),
        "l2": cell("LUT6", {"I0": [4], "I1": [3]}, {"O": [5]}),
        "b": cell("FDRE", {"C": [1], "D": [5], "CE": ["1"], "R": ["0"]}, {"Q": [2]}),
    }
    path = critical_path(netlist(cells), "top")
    want = timing.FF_CLK_TO_Q + 3 * timing.NET + 2 * timing.LUT + timing.FF_SETUP
    assert path.delay_ns == pytest.approx(want)
    assert path.levels == 2 and [k for k, _ in path.cells] == ["FDRE", "LUT2", "LUT6", "FDRE"]


def test_carry_chains_and_unregistered_multipliers_add_up():
    cells = {
        "ram": cell("RAMB36E1", {"ADDRARDADDR": [9]}, {"DOADO": [1, 2]}, DOA_REG=0),
        "dsp": cell("DSP48E1", {"A": [1], "B": [2]}, {"P": [3]}, AREG=0, BREG=0, MREG=0, PREG=0),
        "c0": cell("CARRY4", {"S": [3], "CI": ["0"]}, {"CO": [4], "O": [5]}),
        "c1": cell("CARRY4", {"S": [3], "CI": [4]}, {"CO": [6], "O": [7]}),
        "q": cell("FDRE", {"C": [8], "D": [7], "CE": ["1"], "R": ["0"]}, {"Q": [9]}),
    }
    path = critical_path(netlist(cells), "top")
    want = (
        timing.BRAM_CLK_TO_OUT
        + timing.NET
        + timing.DSP_MULT
        + timing.NET
        + timing.CARRY_DATA
        + timing.CARRY_CHAIN  # the chained CARRY4: dedicated wire, no net allowance
        + timing.NET
        + timing.FF_SETUP
    )
    assert path.delay_ns == pytest.approx(want)
    assert path.fmax_mhz == pytest.approx(1000 / want)


def test_a_registered_multiplier_ends_and_starts_paths():
    cells = {
        "a": cell("FDRE", {"C": [0], "D": [9], "CE": ["1"], "R": ["0"]}, {"Q": [1]}),
        "dsp": cell("DSP48E1", {"A": [1], "B": [1]}, {"P": [2]}, AREG=1, BREG=1, MREG=1, PREG=1),
        "l": cell("LUT1", {"I0": [2]}, {"O": [3]}),
        "b": cell("FDRE", {"C": [0], "D": [3], "CE": ["1"], "R": ["0"]}, {"Q": [9]}),
    }
    path = critical_path(netlist(cells), "top")
    into_dsp = timing.FF_CLK_TO_Q + timing.NET + timing.DSP_INPUT_SETUP
    out_of_dsp = timing.DSP_CLK_TO_P + 2 * timing.NET + timing.LUT + timing.FF_SETUP
    assert path.delay_ns == pytest.approx(max(into_dsp, out_of_dsp))


def test_paths_are_named_by_the_rtl_signals_and_slow_signals_listed_slowest_first():
    cells = {
        "a": cell("FDRE", {"C": [1], "D": [9], "CE": ["1"], "R": ["0"]}, {"Q": [2]}),
        "l1": cell("LUT2", {"I0": [2], "I1": [2]}, {"O": [3]}),
        "l2": cell("LUT2", {"I0": [3], "I1": [3]}, {"O": [4]}),
        "b": cell("FDRE", {"C": [1], "D": [4], "CE": ["1"], "R": ["0"]}, {"Q": [5]}),
        "c": cell("FDRE", {"C": [1], "D": [3], "CE": ["1"], "R": ["0"]}, {"Q": [6]}),
    }
    names = {
        "count": {"bits": [2], "hide_name": 0},
        "$abc$1": {"bits": [3, 4], "hide_name": 1},
        "mid": {"bits": [3], "hide_name": 0},  # a public name wins over a generated one
        "full": {"bits": [5, 6], "hide_name": 0},
    }
    path = critical_path(netlist(cells, names), "top")
    assert path.nets == ["count[0]", "mid[0]", "$abc$1[1]", "full[0]"]
    one_lut = timing.FF_CLK_TO_Q + 2 * timing.NET + timing.LUT + timing.FF_SETUP
    two_luts = one_lut + timing.NET + timing.LUT
    slow = slow_signals(netlist(cells, names), "top", one_lut - 0.01)
    # both ends load bits of `full`: one entry, its worst path
    assert [(p.nets[-1], p.delay_ns) for p in slow] == [("full[0]", pytest.approx(two_luts))]
    assert slow_signals(netlist(cells, names), "top", two_luts) == []
    assert timing.analyse(netlist(cells, names), "top", one_lut - 0.01) == (path, slow)


def test_an_ultrascale_plus_netlist_has_every_delay_scaled_by_its_family_factor():
    cells = {
        "a": cell("FDRE", {"C": [1], "D": [2], "CE": ["1"], "R": ["0"]}, {"Q": [3]}),
        "c": cell("CARRY8", {"S": [3], "CI": ["0"]}, {"O": [4]}),
        "b": cell("FDRE", {"C": [1], "D": [4], "CE": ["1"], "R": ["0"]}, {"Q": [2]}),
    }
    xc7 = critical_path(netlist(cells), "top")
    xcup = critical_path(netlist(cells), "top", "xcup")
    assert xcup.cells == xc7.cells
    assert xcup.delay_ns == pytest.approx(xc7.delay_ns * timing.DELAY_SCALE["xcup"], abs=1e-3)
    # the factor maps the table's unpipelined DSP48 multiply onto UltraScale+'s 338 MHz
    dsp = timing.DSP_CLK_TO_P + timing.DSP_MULT + timing.DSP_INPUT_SETUP
    assert 1000.0 / (dsp * timing.DELAY_SCALE["xcup"]) == pytest.approx(338.0)
    assert slow_signals(netlist(cells), "top", xcup.delay_ns - 0.01, "xcup")
    assert not slow_signals(netlist(cells), "top", xcup.delay_ns + 0.01, "xcup")
