"""Sketch rules: the sketches derived for known computes, printed."""

import pytest

from compiler import te
from compiler.autoschedule import sketch
from compiler.autoschedule.program import SearchTask
from compiler.autoschedule.sketch import Cond, SketchRule, generate_sketches
from compiler.autoschedule.steps import Annotate
from compiler.autoschedule.workload import register_workload
from compiler.errors import TuningError


def _printed(name, args):
    return [str(p) for p in generate_sketches(SearchTask(name, args))]


def test_matmul_multi_level_tiling_and_cache_write():
    # the only sketch: the uncached alternative measured 2-3x slower on the CPU (sketch.py)
    (cached,) = _printed("matmul", (64, 64, 64))
    assert cached.splitlines() == [
        "C.local = cache_write(C, local)",
        "C.local: split k -> k.0, k.1 by [?]",
        "C.local: split j -> j.0, j.1, j.2, j.3 by [?, ?, ?]",
        "C.local: split i -> i.0, i.1, i.2, i.3 by [?, ?, ?]",
        "C.local: reorder i.0, j.0, i.1, j.1, k.0, i.2, j.2, k.1, i.3, j.3",
        "C: split j -> j.0, j.1, j.2 by [?, ?]",
        "C: split i -> i.0, i.1, i.2 by [?, ?]",
        "C: reorder i.0, j.0, i.1, j.1, i.2, j.2",
        "compute_at(C.local, C.j.1)",
    ]


def test_elementwise_consumer_is_fused_into_the_tiles():
    (fused,) = [p for p in _printed("matmul_relu", (64, 64, 64)) if "cache_write" not in p]
    lines = fused.splitlines()
    assert "D: split i -> i.0, i.1, i.2 by [?, ?]" in lines
    assert lines[-1] == "compute_at(C, D.j.1)"
    # a consumer to fuse: no cache-write alternative
    assert all("cache_write" not in p for p in _printed("matmul_relu", (64, 64, 64)))


def test_padding_and_softmax_exp_are_left_to_the_annotation():
    for p in _printed("conv2d_NCHWc", (32, 8, 8, 32, 3, 3)):
        # inlined, the padding's condition runs in the innermost loop: a location choice
        assert "data_pad" not in p
        assert "ic_chunk.0, ry.0, rx.0, ic_block.0" in p  # SSRSRS with reduction levels
    for p in [
        str(sk)
        for sk in generate_sketches(SearchTask("conv2d_NCHWc", (32, 8, 8, 32, 3, 3), "cuda"))
    ]:
        assert p.endswith("\ncompute_inline(data_pad)")  # a padded copy: a kernel of its own
    # a condition-free elementwise stage is always inlined
    (printed,) = _printed("shifted_matmul", (8,))
    assert printed.endswith("\ncompute_inline(A1)")


@register_workload("shifted_matmul")
def _shifted_matmul(n):
    a = te.placeholder((n, n), "float32", "A")
    a1 = te.compute((n, n), lambda i, j: a[i, j] + 1.0, "A1")
    k = te.reduce_axis((0, n), "k")
    return [a, te.compute((n, n), lambda i, j: te.sum(a1[i, k] * a1[k, j], axis=k), "C")]
    # the exp has two consumers: inlining it is a location choice, not a rule (no recompute)
    assert _printed("softmax", (64, 64)) == [""]


def test_rfactor_for_reductions_with_little_parallelism():
    plain, factored = _printed("row_norm", (4, 1024))
    assert plain == ""  # the unfactored alternative: nothing to derive
    assert factored.splitlines()[0] == "sumsq.rf = rfactor(sumsq, ?)"
    assert len(_printed("row_norm", (1024, 64))) == 1  # enough rows: no rfactor


def test_gpu_tiling_structure():
    (first, *_) = generate_sketches(SearchTask("matmul", (64, 64, 64), "cuda"))
    assert (
        "C.local: reorder i.0, j.0, i.1, j.1, i.2, j.2, k.0, k.1, i.3, j.3, k.2, i.4, j.4"
    ) in str(first).splitlines()  # the whole GPU sketch: test_gpu_sketch.py


def test_user_rule_is_tried_before_skip():
    def cond(d):
        return Cond.APPLY_AND_SKIP_REST if d.stage.op.name == "T_softmax_norm" else Cond.PASS

    def apply(d):
        return [d.derive([Annotate(d.stage.op.name, 0, "parallel")], d.index - 1)]

    sketch.register_sketch_rule(SketchRule("parallel-norm", cond, apply))
    try:
        with pytest.raises(TuningError, match="exists already"):
            sketch.register_sketch_rule(SketchRule("parallel-norm", cond, apply))
        (p,) = _printed("softmax", (64, 64))
        assert p.splitlines()[0] == "T_softmax_norm: parallel i0"
    finally:
        sketch.unregister_sketch_rule("parallel-norm")
    assert _printed("softmax", (64, 64)) == [""]


def test_unit_reductions_of_a_1x1_conv_leave_a_space_loop_innermost():
    for p in _printed("conv2d_NCHWc", (32, 8, 8, 32, 1, 1)):
        reorder = [line for line in p.splitlines() if "reorder" in line][0]  # the tiled stage
        assert reorder.endswith("ob.1, ry, rx, ic_chunk.0, ic_block.0, oc.2, y.2, x.2, ob.2, "
                                "ic_chunk.1, ic_block.1, oc.3, y.3, x.3, ob.3")  # fmt: skip


def test_long_rows_of_a_tiled_input_are_packed_into_panels():
    cached, cached_packed = _printed("matmul", (32, 128, 16))
    assert cached_packed == cached + "\nB.packed = pack(B, panels of ?, for C.local)"
    # B read by 64 rows or more: packing is not a choice
    assert _printed("matmul", (64, 128, 16)) == [cached_packed]
    # rows a register tile covers (<= 64 floats), A (not read along the vectorized axis) and
    # a conv's kernel (its oc block is short) are left as they are
    assert all("pack" not in p for p in _printed("matmul", (32, 64, 16)))
    assert all("pack" not in p for p in _printed("conv2d_NCHWc", (32, 8, 8, 128, 3, 3, 1, 16, 16)))
    gpu = generate_sketches(SearchTask("matmul", (32, 128, 16), "cuda"))
    assert all("pack" not in str(p) for p in gpu)  # the GPU stages inputs in shared memory
