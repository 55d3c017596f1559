"""The accelerator's knob candidates: one setting per distinct Program."""

from compiler.graph.accel import _program_of, knob_candidates
from compiler.topi.vta.conv2d import Conv2DWorkload
from compiler.topi.vta.fused import Epilogue, estimate_space, fused_builder, fused_knob_space
from vta.config import VTAConfig

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
