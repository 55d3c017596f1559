"""conv2d with bias, requantization, ReLU and a residual add in one accelerator Program:
bit-exact against numpy on fsim and sim, with and without REQ, threads and border padding."""

import itertools

import numpy as np
import pytest

from compiler.errors import LoweringError
from compiler.topi.vta.conv2d import Conv2DKnobs, Conv2DWorkload
from compiler.topi.vta.fused import (
    Epilogue,
    conv2d_fused,
    default_fused_knobs,
    estimate_cycles,
    estimate_space,
    fused_knob_space,
    fused_stream,
    regions,
)
from testkit.examples import unequal_blocks
from testkit.fused import run_fused
from vta.config import VTAConfig
from vta.device import get_device

W, E, K = Conv2DWorkload, Epilogue, Conv2DKnobs
CASES = [
    (W(1, 2, 8, 8, 2, 3, 3, 1, 1), E(True, 8, True), K(1, 4, 8, 1, 1, 2, 1)),
    (W(1, 2, 8, 8, 2, 3, 3, 1, 1), E(True, 9, False, 3), K(1, 2, 4, 1, 1, 1, 2)),
    (W(1, 2, 9, 9, 4, 3, 3, 2, 1), E(False, 7, True, 0), None),
    (W(1, 2, 8, 8, 4, 1, 1, 2, 0), E(False, 4, True), None),
    (W(2, 3, 1, 1, 2, 1, 1, 1, 0), E(True, 6, False), None),  # dense as a 1x1 conv
    # a weight set and bias per batch element (an attention product's heads)
    (W(3, 2, 2, 16, 3, 1, 1, 1, 0), E(True, 7, False, batch_weights=True), None),
    (W(2, 3, 2, 8, 2, 1, 1, 1, 0), E(True, 5, False, batch_weights=True), K(1, 1, 8, 1, 1, 2, 2)),
    # a ResNet downsampling block's second conv with its 1x1 stride-2 shortcut fused
    (W(1, 2, 4, 4, 2, 3, 3, 1, 1), E(True, 9, True, None, W(1, 1, 8, 8, 2, 1, 1, 2, 0)), None),
    (W(1, 2, 4, 4, 2, 3, 3, 1, 1), E(True, 9, True, None, W(1, 3, 8, 8, 2, 1, 1, 2, 0)),
     K(1, 2, 4, 1, 1, 1, 2)),
    (W(1, 2, 8, 8, 2, 3, 3, 1, 1), E(True, 5, True, 6, None, 3), K(1, 2, 8, 1, 1, 2, 1)),
    # the shortcut's products shifted left before the main conv's accumulate
    (W(1, 2, 4, 4, 2, 3, 3, 1, 1), E(True, 9, True, None, W(1, 3, 8, 8, 2, 1, 1, 2, 0), 0, 3),
     K(1, 2, 4, 1, 1, 1, 2)),
    # with the next tiles' shortcut products computed ahead on pynq, not on tiny (accumulator)
    (W(1, 2, 16, 16, 2, 3, 3, 1, 1), E(True, 9, True, None, W(1, 2, 32, 32, 2, 1, 1, 2, 0), 0, 2),
     K(1, 8, 8, 1, 1, 1, 2)),
    # input tiles of both sources side by side on pynq, on top of each other on tiny
    (W(1, 2, 16, 16, 2, 3, 3, 1, 1), E(True, 9, True, None, W(1, 2, 32, 32, 2, 1, 1, 2, 0)),
     K(1, 8, 8, 2, 1, 1, 2)),
]  # fmt: skip


@pytest.mark.parametrize("config", ["pynq", "tiny"])
@pytest.mark.parametrize("device", ["fsim", "sim"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_fused_conv_bit_exact(case, device, config):
    wl, ep, knobs = CASES[case]
    got, want, _ = run_fused(wl, ep, knobs, config, device, seed=case)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("config", ["pynq-16x8", "pynq-8x16"])
@pytest.mark.parametrize("device", ["fsim", "sim"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_fused_conv_with_block_out_unlike_block_in_bit_exact(case, device, config):
    """Input channels in blocks of BLOCK_IN, output channels in blocks of BLOCK_OUT, the
    shortcut conv included; the residual in BLOCK_IN lanes whose lanes past BLOCK_OUT (random
    here) are ignored, or in two input elements per output position."""
    wl, ep, knobs = CASES[case]
    got, want, _ = run_fused(wl, ep, knobs, unequal_blocks(config), device, seed=case)
    np.testing.assert_array_equal(got, want)


def test_knob_space_fits_and_default_is_in_it():
    cfg = VTAConfig.load("pynq")
    wl, ep = Conv2DWorkload(1, 4, 56, 56, 4, 3, 3, 1, 1), Epilogue(True, 8, True, 2)
    space = fused_knob_space(wl, ep, cfg)
    assert space and default_fused_knobs(wl, ep, cfg) in space
    too_big = Conv2DKnobs(1, 56, 56, 4, 4, 2, 1)
    assert too_big not in space
    with pytest.raises(LoweringError, match="do not fit"):
        conv2d_fused(wl, ep, too_big, cfg)


@pytest.mark.parametrize("config", ["pynq", "tiny", "ultra96"])
def test_knob_space_is_every_dividing_setting_whose_tiles_fit(config):
    cfg = VTAConfig.load(config)
    for wl, ep, _ in CASES:
        every = itertools.product(*(
            [d for d in range(1, n + 1) if n % d == 0]
            for n in (wl.n, wl.oh, wl.ow, wl.ci, wl.co)), (1, 2), (1, 2))  # fmt: skip
        want = [
            K(*t) for t in every
            if (wl.co // t[4]) % t[5] == 0 and (wl.oh // t[1]) % t[6] == 0
            and regions(wl, K(*t), ep, cfg) is not None
        ]  # fmt: skip
        assert list(fused_knob_space(wl, ep, cfg)) == want


@pytest.mark.parametrize("config", ["pynq", "tiny", "ultra96"])
def test_estimate_space_is_each_settings_estimate(config):
    cfg = VTAConfig.load(config)
    for wl, ep, _ in CASES:
        space = fused_knob_space(wl, ep, cfg)
        assert estimate_space(wl, ep, cfg).tolist() == [
            estimate_cycles(wl, k, ep, cfg) for k in space
        ]


def test_estimate_follows_the_simulator_with_one_virtual_thread_too():
    """One thread: a tile's loads wait for the GEMMs that read its buffers (the estimate
    that overlapped them as with two put such settings 1.4x too fast, and first)."""
    cfg = VTAConfig.load("pynq")
    wl, ep = Conv2DWorkload(1, 16, 14, 14, 16, 3, 3, 1, 1), Epilogue(True, 8, True, 2)
    sim = get_device("sim")
    for knobs in (Conv2DKnobs(1, 14, 14, 1, 1, 2, 1), Conv2DKnobs(1, 14, 14, 1, 1, 1, 1)):
        cycles = sim.stream_cycles(fused_stream(wl, ep, knobs, cfg), cfg)
        assert 0.9 < cycles / estimate_cycles(wl, knobs, ep, cfg) < 1.1


@pytest.mark.parametrize("device", ["fsim", "sim"])
def test_threads_without_a_spare_accumulator_region_bit_exact(device):
    """Tiles of 784 rows: two regions fit pynq's accumulator, three do not."""
    wl, ep, knobs = W(1, 2, 56, 28, 2, 1, 1, 1, 0), E(True, 8, True), K(1, 28, 28, 1, 1, 2, 1)
    assert regions(wl, knobs, ep, VTAConfig.load("pynq")) == 2
    got, want, _ = run_fused(wl, ep, knobs, "pynq", device)
    np.testing.assert_array_equal(got, want)


def test_threads_overlap_stores_without_a_spare_accumulator_region():
    """Each thread's accumulators reset just before its products: a thread whose rows are
    still being stored holds up only itself (with both resets first, two threads on
    MobileNet-v1's 112x112 pointwise layer ran 1.7% faster than one, now 10%)."""
    cfg = VTAConfig.load("pynq")
    wl, ep = W(1, 2, 112, 112, 4, 1, 1, 1, 0), E(True, 8, True)
    two, one = K(1, 7, 28, 1, 4, 2, 1), K(1, 7, 28, 1, 4, 1, 1)
    assert regions(wl, two, ep, cfg) == 2
    sim = get_device("sim")
    cycles = [sim.stream_cycles(fused_stream(wl, ep, k, cfg), cfg) for k in (two, one)]
    assert cycles[0] < 0.93 * cycles[1]


def test_bad_epilogue_and_tiles_are_refused():
    with pytest.raises(LoweringError, match="residual shift 7"):
        Epilogue(residual_shift=7)
    with pytest.raises(LoweringError, match="shift 40"):
        Epilogue(shift=40)
    with pytest.raises(LoweringError, match="weights per batch element take no residual"):
        Epilogue(residual_shift=1, batch_weights=True)
    assert {k.tile_b for k in fused_knob_space(W(4, 1, 2, 2, 1, 1, 1, 1, 0), E(batch_weights=True),
                                               VTAConfig.load("pynq"))} == {1}  # fmt: skip
    wl = Conv2DWorkload(1, 2, 8, 8, 2, 3, 3, 1, 1)
    with pytest.raises(LoweringError, match="tile_h 3 does not divide 8"):
        conv2d_fused(wl, Epilogue(), Conv2DKnobs(1, 3, 8, 1, 1, 1, 1), "pynq")


def test_fused_layers_are_tuning_tasks_measured_without_data():
    from compiler.tune.measure import compiler_build, run_on_device
    from compiler.tune.task import create_task
    from compiler.tune.templates.resnet18 import resnet18_task_args

    op, args = resnet18_task_args("C6+C5", "vta")
    assert op == "conv2d_fused"
    task = create_task(op, args, "vta")
    program = compiler_build(task, task.instantiate(1467))
    timed = run_on_device(program, task, "sim", check=False)
    assert timed[0] > 0
    small = create_task(
        op, (1, 2, 4, 4, 2, 3, 3, 1, 1, 1, 9, 1, -1, 1, 1, 8, 8, 2, 1, 1, 2, 0), "vta"
    )
    checked = run_on_device(compiler_build(small, small.instantiate(0)), small, "sim", check=True)
    assert checked[0] > 0


def test_best_fused_is_no_slower_than_the_default():
    from benchmarks.vta import best_fused
    from compiler.graph.runtime import roofline_side

    cfg = VTAConfig.load("pynq")
    wl, ep = Conv2DWorkload(1, 4, 14, 14, 4, 3, 3, 1, 1), Epilogue(True, 8, True, 2)
    knobs, stats = best_fused(wl, ep, cfg, candidates=6)
    default = get_device("sim").time(conv2d_fused(wl, ep, default_fused_knobs(wl, ep, cfg), cfg))
    assert knobs in fused_knob_space(wl, ep, cfg) and stats.cycles <= default.cycles
    assert roofline_side(1000.0, cfg) == "compute" and roofline_side(1.0, cfg) == "memory"


def test_fused_task_arguments_round_trip():
    from compiler.tune.templates.vta import _fused, fused_args

    wl = Conv2DWorkload(1, 4, 14, 14, 4, 3, 3, 1, 1)
    sc = Conv2DWorkload(1, 2, 28, 28, 4, 1, 1, 2, 0)
    for ep, canonical in (
        (Epilogue(True, 8, True), Epilogue(True, 0, True)),
        (Epilogue(True, 6, True, 6, None, 3), Epilogue(True, 0, True, 1, None, 1)),
        (Epilogue(False, 9, False, None, sc), Epilogue(False, 0, True, None, sc)),
    ):
        assert _fused(fused_args(wl, ep)) == (wl, canonical)
    assert fused_args(wl, Epilogue(True, 7, False, 2)) == fused_args(wl, Epilogue(True, 9, True, 5))


@pytest.mark.parametrize(("config", "apart"), [("pynq", True), ("tiny", False)])
def test_shortcut_inputs_get_their_own_rows_where_they_fit(config, apart):
    from compiler.topi.vta.fused import _Layout

    wl, ep, knobs = CASES[-1]
    (main, short), _ = _Layout(wl, knobs, ep, VTAConfig.load(config)).inp
    assert (short > main) == apart


@pytest.mark.parametrize(("config", "ahead"), [("pynq", True), ("tiny", False)])
def test_shortcut_products_of_the_next_tiles_go_ahead_where_accumulators_fit(config, ahead):
    from compiler.topi.vta.fused import regions

    wl, ep, knobs = CASES[-2]
    assert (regions(wl, knobs, ep, VTAConfig.load(config)) >= 4) == ahead
