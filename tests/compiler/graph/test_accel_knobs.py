"""The accelerator's knob candidates: one setting per distinct Program, the estimate's first
ones timed and the rest only where those disagree."""

import numpy as np
import pytest

from compiler.graph.accel import _program_of, knob_candidates, search_structure
from compiler.topi.vta.conv2d import Conv2DWorkload
from compiler.topi.vta.fused import Epilogue, estimate_space, fused_builder, fused_knob_space
from vta.config import VTAConfig
from vta.device import get_device

CFG = VTAConfig.load("pynq")
WL = Conv2DWorkload(1, 4, 56, 56, 4, 3, 3, 1, 1)  # ResNet-18's 64-channel 3x3 layer
EP = Epilogue(True, 8, True)


def test_settings_splitting_threads_differently_build_one_stream():
    space = fused_knob_space(WL, EP, CFG)
    twins = {
        (a.tile_b, a.tile_h, a.tile_w, a.tile_ci, a.tile_co): a
        for a in space
        if (a.oc_nthread, a.h_nthread) == (2, 1) and a.tile_h * a.tile_w >= 196  # short streams
    }
    pairs = [
        (twins[key], b)
        for b in space
        if (b.oc_nthread, b.h_nthread) == (1, 2)
        and (key := (b.tile_b, b.tile_h, b.tile_w, b.tile_ci, b.tile_co)) in twins
    ][:2]
    assert pairs
    for a, b in pairs:
        assert fused_builder(WL, EP, a, CFG).stream() == fused_builder(WL, EP, b, CFG).stream()


def test_candidates_are_distinct_programs_in_estimate_order():
    tried = knob_candidates(WL, EP, CFG, 8, None)
    assert len(tried) == 8 and len({_program_of(k) for k in tried}) == 8
    est = dict(
        zip(fused_knob_space(WL, EP, CFG), estimate_space(WL, EP, CFG).tolist(), strict=True)
    )
    scores = [est[k] for k in tried]
    assert scores == sorted(scores)
    assert scores[0] == min(est.values())


@pytest.mark.parametrize(
    "timings, timed, best",
    [
        ([1000, 1004, 1009, 1001, 900, 900, 900, 900], 4, 0),  # the first 4 agree within 1%
        ([1000, 1004, 1030, 1001, 990, 1020, 950, 950], 8, 6),  # they do not: all are timed
    ],
)
def test_the_rest_are_timed_only_where_the_first_candidates_disagree(
    monkeypatch, timings, timed, best
):
    candidates = knob_candidates(WL, EP, CFG, 8, None)
    script = iter(timings)
    monkeypatch.setattr(type(get_device("sim")), "stream_cycles", lambda *_: next(script))
    knobs, (program,), cycles = search_structure(((WL, EP.structure()), candidates, [EP], CFG))
    assert cycles == timings[:timed] and knobs == candidates[best]
    assert np.array_equal(program.insns, fused_builder(WL, EP, knobs, CFG).build().insns)
