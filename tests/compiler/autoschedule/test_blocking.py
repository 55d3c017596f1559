"""Panel tilings: accumulators held through the reduction, a panel of B kept in L2."""

import re

import numpy as np

from compiler.autoschedule import blocking
from compiler.autoschedule.annotate import annotate, mutate, panel_faults, register_faults
from compiler.autoschedule.program import SearchTask
from compiler.autoschedule.sketch import generate_sketches

L2 = 512 << 10
# leaves of matmul's SSRSRS tiling: i.0-i.3 (0-3), j.0-j.3 (4-7), k.0, k.1 (8, 9)
ORDER = (0, 4, 1, 5, 8, 2, 6, 9, 3, 7)


def _faults(n, k, j, i, cache=L2):
    op = SearchTask("matmul", (n, n, n)).outputs[0].op
    return blocking.panel_faults(op, blocking.nest(op, {2: k, 1: j, 0: i}, ORDER), cache)


def test_panel_faults_of_known_matmul_tilings():
    # the template's order: a 64 KB panel of 16 columns outside 256 row tiles of 4 rows
    assert _faults(1024, (8,), (1, 1, 16), (256, 1, 4)) == 0
    # one row tile per i.0 step: every row tile streams all of B again
    assert _faults(1024, (8,), (1, 1, 16), (1, 1, 4)) == 1
    # row tiles under a 16 x 32-column (2 MB) panel: it does not stay in 256 KB of L2
    assert _faults(1024, (8,), (16, 1, 32), (64, 1, 2)) == 1
    # 2 x 2 register tiles between k.0 and k.1: the accumulators leave the registers
    assert _faults(1024, (8,), (1, 2, 16), (16, 2, 4)) == 1
    assert _faults(1024, (8,), (16, 2, 16), (1, 2, 4)) == 2
    # the same panel in a 64 KB L2 does not stay
    assert _faults(1024, (8,), (1, 1, 16), (256, 1, 4), cache=64 << 10) == 1
    # a convolution's input index (y + ry) is not a loop variable: the model does not apply
    conv = SearchTask("conv2d_NCHWc", (32, 14, 14, 32, 3, 3)).outputs[0].op
    assert blocking.held_operands(conv) is None


def test_guided_matmul_draws_include_panel_tilings():
    task = SearchTask("matmul", (1024, 1024, 1024))
    (sketch,) = generate_sketches(task)
    rng = np.random.default_rng(0)
    programs = [annotate(sketch, rng, guided=True) for _ in range(60)]
    panels = [p for p in programs if panel_faults(p) == 0]
    assert 0.3 <= len(panels) / len(programs) <= 0.8  # half the draws, the rest as before
    for p in panels:
        text = str(p)
        # no level of register tiles between k.0 and k.1: i.2 = j.2 = 1
        for axis in "ij":
            (lengths,) = re.findall(
                rf"C.local: split {axis} -> .* by \[(\d+), (\d+), (\d+)\]", text
            )
            assert lengths[1] == "1"
        # a panel of K x (j.1 j.3) floats within half the L2, under more than one row tile
        (j1, _, j3) = (
            int(x) for x in re.findall(r"split j -> .* by \[(\d+), (\d+), (\d+)\]", text)[0]
        )
        assert 1024 * j1 * j3 * 4 <= L2 // 2
        assert register_faults(p) == 0
    # mutations keep the properties a parent has
    for p in panels[:3]:
        children = [c for c in (mutate(p, rng) for _ in range(40)) if c is not None]
        assert children and all(panel_faults(c) == 0 for c in children)


def test_convolutions_draw_as_before():
    task = SearchTask("conv2d_NCHWc", (32, 14, 14, 32, 3, 3, 1, 16, 16))
    (sketch,) = generate_sketches(task)
    rng = np.random.default_rng(0)
    assert all(panel_faults(annotate(sketch, rng, guided=True)) == 0 for _ in range(5))
