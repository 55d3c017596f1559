"""Panel tilings: accumulators held through the reduction, a register tile within one block of
the held operand, a panel of it kept in L2; the footprint model of affine indices."""

import re

import numpy as np

from compiler import te
from compiler.autoschedule import blocking
from compiler.autoschedule import register_tile as rt
from compiler.autoschedule.annotate import (
    MIN_FILL,
    annotate,
    mutate,
    mutate_location,
    panel_faults,
    register_faults,
    register_tile,
)
from compiler.autoschedule.program import SearchTask
from compiler.autoschedule.sketch import generate_sketches
from compiler.autoschedule.steps import Inline, Reorder, stage_named

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
    # two register tiles' columns (128 KB) under the row tiles do not stay in a 192 KB L2
    assert _faults(1024, (8,), (2, 1, 16), (256, 1, 4), cache=192 << 10) == 1
    # in a 64 KB L2 not even one register tile's panel (64 KB) stays: the model does not apply
    assert _faults(1024, (8,), (1, 1, 16), (256, 1, 4), cache=64 << 10) is None
    # an index that is not affine in the loop variables: the model does not apply
    a, b = te.placeholder((64, 64), name="A"), te.placeholder((64, 64), name="B")
    r = te.reduce_axis((0, 64), "k")
    odd = te.compute((64, 64), lambda i, j: te.sum(a[i, (r * r) % 64] * b[r, j], axis=r))
    assert blocking.held_operands(odd.op) is None


def test_guided_matmul_draws_include_panel_tilings():
    task = SearchTask("matmul", (1024, 1024, 1024))
    (sketch,) = generate_sketches(task)
    rng = np.random.default_rng(0)
    programs = [annotate(sketch, rng, guided=True) for _ in range(60)]
    panels = [p for p in programs if panel_faults(p) == 0]
    host_l2 = blocking.l2_bytes("llvm")
    assert 0.3 <= len(panels) / len(programs) <= 0.8  # half the draws, the rest as before
    for p in panels:
        text = str(p)
        # no level of register tiles between k.0 and k.1: i.2 = j.2 = 1
        for axis in "ij":
            (lengths,) = re.findall(
                rf"C.local: split {axis} -> .* by \[(\d+), (\d+), (\d+)\]", text
            )
            assert lengths[1] == "1"
        # a panel of K x (j.1 j.3) floats within half the L2 the draws read (the host's),
        # under more than one row tile
        (j1, _, j3) = (
            int(x) for x in re.findall(r"split j -> .* by \[(\d+), (\d+), (\d+)\]", text)[0]
        )
        assert 1024 * j1 * j3 * 4 <= host_l2 // 2
        assert register_faults(p) == 0
    # mutations keep the properties a parent has
    for p in panels[:3]:
        children = [c for c in (mutate(p, rng) for _ in range(40)) if c is not None]
        assert children and all(panel_faults(c) == 0 for c in children)


def _conv(c, size, stride=1):
    task = SearchTask("conv2d_NCHWc", (c, size, size, c, 3, 3, stride, 16, 16))
    (sketch,) = generate_sketches(task)
    return task, sketch


def test_footprints_of_a_convolutions_loads():
    task, _ = _conv(64, 28, stride=2)
    op = task.outputs[0].op
    data, kernel = blocking.operands(op)
    b, oc, y, x, ob = (iv.var for iv in op.axis)
    icc, ry, rx, icb = (iv.var for iv in op.reduce_axis)
    # data_pad[b, icc, y * 2 + ry, x * 2 + rx, icb]: a row of 4 outputs under 3 taps reads
    # 2 * 3 + 2 + 1 = 9 input rows
    assert [sp.width({y: 4, ry: 3}) for sp in data.loads[0]] == [1, 1, 9, 1, 1]
    assert data.footprint({y: 4, ry: 3, x: 2, rx: 1, icb: 16}) == 4 * 9 * 3 * 16
    assert data.used == {b, icc, y, ry, x, rx, icb}
    # the weights are indexed by loop variables: the product of the extents
    assert kernel.footprint({oc: 1, icc: 4, ry: 3, rx: 3, icb: 16, ob: 16}) == 4 * 4 * 9 * 256
    # the weights are held (read along ob and the reduction, not along y or x); the data not
    (held,) = blocking.held_operands(op)
    assert held.used == kernel.used
    assert blocking.held_axes(op) == {1}  # oc: the weights' other space axis


def _conv_faults(c, size, oc, y, x, ob, red=(1, 1, 1, 1), cache=L2):
    task, sketch = _conv(c, size)
    op = task.outputs[0].op
    order = next(s.order for s in sketch.steps if isinstance(s, Reorder))
    icc, ry, rx, icb = ((n,) for n in red)
    lengths = {8: icb, 7: rx, 6: ry, 5: icc, 4: ob, 3: x, 2: y, 1: oc}
    return blocking.panel_faults(op, blocking.nest(op, lengths, order), cache)


def test_panel_faults_of_known_conv_tilings():
    # C9 as the template tiles it: 2 x 2 x 16 accumulators through all 256 input channels and
    # the taps, under 7 row tiles of one block's 147 KB of weights
    assert _conv_faults(256, 14, (1, 1, 1), (7, 1, 2), (1, 1, 2), (1, 1, 16), (16, 3, 3, 16)) == 0
    # a level of 2 x 1 register tiles between the reduction levels
    assert _conv_faults(256, 14, (1, 1, 1), (7, 2, 1), (1, 1, 2), (1, 1, 16), (4, 3, 3, 4)) == 1
    # C6 (73 KB of weights a block): a register tile of two blocks, the panel still in L2
    assert _conv_faults(128, 28, (1, 1, 2), (7, 1, 2), (1, 1, 1), (1, 1, 16), (8, 3, 3, 16)) == 1
    # C9: two blocks (295 KB) do not stay in 256 KB either
    assert _conv_faults(256, 14, (1, 1, 2), (7, 1, 2), (1, 1, 1), (1, 1, 16), (16, 3, 3, 16)) == 2
    # the row tiles outside all 16 blocks (2.4 MB of weights): each streams them all again
    assert _conv_faults(256, 14, (16, 1, 1), (1, 1, 2), (1, 1, 2), (1, 1, 16), (16, 3, 3, 16)) == 1
    # C12: a register tile's 16 output channels read 295 KB of weights, which never stay in
    # half the L2: the model does not apply; with 8 of them (147 KB) it does, and so it does
    # with 16 in a 1 MB L2
    assert _conv_faults(512, 7, (1, 1, 1), (7, 1, 1), (1, 1, 2), (1, 1, 16), (32, 3, 3, 16)) is None
    assert _conv_faults(512, 7, (1, 1, 1), (7, 1, 1), (1, 1, 2), (1, 1, 8), (32, 3, 3, 16)) == 0
    assert _conv_faults(512, 7, (1, 1, 1), (7, 1, 1), (1, 1, 2), (1, 1, 16), cache=1 << 20) == 0


def test_guided_conv_draws_include_panel_tilings():
    task, sketch = _conv(256, 14)
    rng = np.random.default_rng(0)
    programs = [annotate(sketch, rng, guided=True) for _ in range(40)]
    panels = [p for p in programs if panel_faults(p) == 0]
    assert 0.3 <= len(panels) / len(programs) <= 0.8
    for p in panels:
        text = str(p)
        # one output-channel block in the register tile, no tiles between the reductions
        (oc,) = re.findall(r"local: split oc -> .* by \[(\d+), (\d+), (\d+)\]", text)
        assert oc[1:] == ("1", "1")
        for axis in ("y", "x", "ob"):
            (lengths,) = re.findall(rf"local: split {axis} -> .* by \[(\d+), (\d+), (\d+)\]", text)
            assert lengths[1] == "1"
        assert register_faults(p) == 0
    for p in panels[:3]:
        children = [c for c in (mutate(p, rng) for _ in range(40)) if c is not None]
        assert children and all(panel_faults(c) == 0 for c in children)


def test_guided_draws_keep_padding_out_of_the_register_tile():
    task, sketch = _conv(64, 14)
    rng = np.random.default_rng(1)
    for _ in range(30):
        p = annotate(sketch, rng, guided=True)
        assert Inline("data_pad") not in p.steps
        for _ in range(5):
            child = mutate_location(p, rng)
            assert child is None or Inline("data_pad") not in child.steps
    # unguided draws still inline it sometimes (a location like any other)
    assert any(Inline("data_pad") in annotate(sketch, rng, guided=False).steps for _ in range(30))


def test_no_panel_tiling_whose_one_block_tile_leaves_half_the_registers_idle():
    """C12's 7x7 outputs: within one output-channel block a register tile has at most 7
    accumulators, under half of AVX-512's 32 registers, so guided draws there tile across
    blocks instead (panel or not, every guided tile fills half the registers)."""
    task = SearchTask("conv2d_NCHWc", (512, 7, 7, 512, 3, 3), "llvm -mcpu=skylake-avx512")
    (sketch,) = generate_sketches(task)
    rng = np.random.default_rng(0)
    for _ in range(30):
        p = annotate(sketch, rng, guided=True)
        st = stage_named(p.schedule()[0], "conv2d_NCHWc.local")
        rf = rt.register_file(task.target, "float32")
        used = rt.registers_needed(st.op, register_tile(p.steps, "conv2d_NCHWc.local"), rf.lanes)
        assert used >= MIN_FILL * rf.registers
