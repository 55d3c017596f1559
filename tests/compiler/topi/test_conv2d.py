"""conv2d (NCHW, NCHWc) and depthwise conv2d against numpy, incl. odd sizes and strides."""

import re

import numpy as np
import pytest

from compiler import te, topi
from compiler.codegen.parallel import get_num_threads, set_num_threads
from compiler.codegen.target import cpu_facts, target_scope
from compiler.driver import build, lower
from compiler.errors import OperatorError
from compiler.topi import testing, x86
from compiler.topi.utils import vector_lanes
from compiler.topi.x86.utils import reduction_unroll
from testkit.isa import host_runs

# (batch, in_ch, size, out_ch, kernel, stride, padding, dilation)
CASES = [
    (1, 16, 14, 32, 3, 1, 1, 1),
    (2, 8, 9, 16, 3, 2, 1, 1),
    (1, 16, 11, 16, 1, 1, 0, 1),
    (1, 8, 10, 16, 3, 1, "SAME", 2),
    (1, 8, 12, 16, 5, 2, (2, 1), 1),
]


TARGETS = {
    "avx512": "llvm -mcpu=skylake-avx512 -mattr=+avx512f,+avx2,+fma",
    "avx2": "llvm -mcpu=haswell -mattr=+avx2,+fma,-avx512f",
}


def rand(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("n,ic,size,oc,k,stride,pad,dil", CASES)
def test_conv2d_nchw(run, rng, n, ic, size, oc, k, stride, pad, dil):
    a, w = rand(rng, (n, ic, size, size + 1)), rand(rng, (oc, ic, k, k))
    A, W = te.placeholder(a.shape, name="A"), te.placeholder(w.shape, name="W")
    C = topi.nn.conv2d_nchw(A, W, stride, pad, dil)
    got = run(x86.schedule_conv2d_nchw(C), [A, W], C, a, w)
    ref = testing.conv2d_nchw_python(a, w, stride, pad, dil)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n,ic,size,oc,k,stride,pad,dil", CASES)
@pytest.mark.parametrize("ic_bn,oc_bn", [(8, 16), (4, 8)])
def test_conv2d_NCHWc(run, rng, n, ic, size, oc, k, stride, pad, dil, ic_bn, oc_bn):
    a, w = rand(rng, (n, ic, size, size + 1)), rand(rng, (oc, ic, k, k))
    ap, wp = testing.nchw_pack(a, ic_bn), testing.oihw_pack(w, ic_bn, oc_bn)
    A, W = te.placeholder(ap.shape, name="A"), te.placeholder(wp.shape, name="W")
    C = topi.nn.conv2d_NCHWc(A, W, stride, pad, dil)
    got = run(x86.schedule_conv2d_NCHWc(C), [A, W], C, ap, wp)
    ref = testing.conv2d_nchw_python(a, w, stride, pad, dil)
    np.testing.assert_allclose(testing.nchwc_unpack(got), ref, rtol=1e-4, atol=1e-4)


def test_conv2d_NCHWc_fused_bias_relu(run, rng):
    a, w, b = rand(rng, (1, 16, 8, 8)), rand(rng, (32, 16, 3, 3)), rand(rng, (2, 1, 1, 16))
    ap, wp = testing.nchw_pack(a, 16), testing.oihw_pack(w, 16, 16)
    A, W = te.placeholder(ap.shape, name="A"), te.placeholder(wp.shape, name="W")
    B = te.placeholder(b.shape, name="B")
    Y = topi.nn.relu(topi.add(topi.nn.conv2d_NCHWc(A, W, 1, 1), B))
    s = x86.schedule_conv2d_NCHWc(Y, reg_n=4)
    got = testing.nchwc_unpack(run(s, [A, W, B], Y, ap, wp, b))
    bias = b.reshape(2, 16).reshape(32)[None, :, None, None]
    ref = np.maximum(testing.conv2d_nchw_python(a, w, 1, 1) + bias, 0)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_conv2d_channel_mismatch_is_named():
    with pytest.raises(ValueError, match="16 channels, filter expects 8"):
        topi.nn.conv2d_nchw(te.placeholder((1, 16, 5, 5)), te.placeholder((4, 8, 3, 3)), 1, 1)


@pytest.mark.parametrize(
    "n,c,size,mult,k,stride,pad",
    [(1, 8, 14, 1, 3, 1, 1), (2, 3, 9, 2, 3, 2, 1), (1, 4, 10, 1, 5, 1, "VALID")],
)
def test_depthwise_conv2d_nchw(run, rng, n, c, size, mult, k, stride, pad):
    a, w = rand(rng, (n, c, size, size + 3)), rand(rng, (c, mult, k, k))
    A, W = te.placeholder(a.shape, name="A"), te.placeholder(w.shape, name="W")
    C = topi.nn.depthwise_conv2d_nchw(A, W, stride, pad)
    got = run(x86.schedule_depthwise_conv2d_nchw(C), [A, W], C, a, w)
    ref = testing.depthwise_conv2d_python_nchw(a, w, stride, pad)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "c,size,k,stride,pad,cb",
    [(32, 14, 3, 1, 1, 16), (16, 9, 3, 2, 1, 8), (8, 10, 5, 1, (2, 1, 1, 2), 8)],
)
def test_depthwise_conv2d_NCHWc_fused_bias_clip(run, rng, c, size, k, stride, pad, cb):
    """MobileNet's block: depthwise conv, bias, ReLU6, all in one kernel."""
    a, w, b = rand(rng, (1, c, size, size + 1)), rand(rng, (c, 1, k, k)), rand(rng, (c,))
    ap = testing.nchw_pack(a, cb)
    wp = np.ascontiguousarray(w.reshape(c // cb, cb, k, k).transpose(0, 2, 3, 1))[
        :, None, :, :, None
    ]
    A, W = te.placeholder(ap.shape, name="A"), te.placeholder(wp.shape, name="W")
    B = te.placeholder((c // cb, 1, 1, cb), name="B")
    conv = topi.nn.depthwise_conv2d_NCHWc(A, W, stride, pad)
    Y = topi.minimum(topi.nn.relu(topi.add(conv, B)), 6.0)
    s = x86.schedule_depthwise_conv2d_NCHWc(Y)
    got = testing.nchwc_unpack(
        run(s, [A, W, B], Y, ap, np.ascontiguousarray(wp), b.reshape(B.shape))
    )
    ref = testing.depthwise_conv2d_python_nchw(a, w, stride, pad) + b[None, :, None, None]
    np.testing.assert_allclose(got, np.clip(ref, 0, 6), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "rows,cols,outside", [(None, None, None), (2, 7, None), (3, 4, None), (4, 1, True)]
)
def test_conv2d_NCHWc_fused_residual_add_relu(run, rng, rows, cols, outside):
    """ResNet's block end: conv, bias, the shortcut added, ReLU, in one kernel; register tiles
    of several rows, also with a partial last row or column tile, and with the input-channel
    blocks outside the tiles."""
    a, w, r = rand(rng, (1, 32, 7, 7)), rand(rng, (64, 32, 3, 3)), rand(rng, (1, 64, 7, 7))
    ap, wp, rp = testing.nchw_pack(a, 16), testing.oihw_pack(w, 16, 64), testing.nchw_pack(r, 64)
    A, W = te.placeholder(ap.shape, name="A"), te.placeholder(wp.shape, name="W")
    R = te.placeholder(rp.shape, name="R")
    Y = topi.nn.relu(topi.add(topi.nn.conv2d_NCHWc(A, W, 1, 1), R))
    s = x86.schedule_conv2d_NCHWc(Y, reg_n=cols, reg_rows=rows, outside=outside)
    got = testing.nchwc_unpack(run(s, [A, W, R], Y, ap, wp, rp))
    ref = np.maximum(testing.conv2d_nchw_python(a, w, 1, 1) + r, 0)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("isa", sorted(TARGETS))
def test_chunks_outside_keeps_the_tile_sums_in_registers(rng, isa):
    """With the input-channel blocks outside, a block's accumulators live in a local buffer
    indexed by the tile, inside a parallel loop: its sums stay in registers across the
    reduction only if LLVM can tell that buffer from the input (a 2 x 7 tile stored every FMA's
    sum while the input's pointer was loaded from the parallel loop's context)."""
    with target_scope(TARGETS[isa]):
        b = vector_lanes("float32")
        a, w = rand(rng, (1, 4 * b, 7, 7)), rand(rng, (4 * b, 4 * b, 3, 3))
        ap, wp = testing.nchw_pack(a, b), testing.oihw_pack(w, b, b)
        A, W = te.placeholder(ap.shape, name="A"), te.placeholder(wp.shape, name="W")
        Y = topi.nn.conv2d_NCHWc(A, W, 1, 1)
        s = x86.schedule_conv2d_NCHWc(Y, reg_n=7, reg_rows=2, outside=True)
        mod = build(s, [A, W, Y], target=TARGETS[isa])
    blocks = re.split(r"\n(?=[\w.]+:)", mod.get_source("ll"))
    sums = [bl for bl in blocks if "fmuladd.v" in bl]
    assert sums and not any("store <" in bl for bl in sums)
    if host_runs(isa):
        y = np.zeros([int(d) for d in Y.shape], np.float32)
        mod(ap, wp, y)
        ref = testing.conv2d_nchw_python(a, w, 1, 1)
        np.testing.assert_allclose(testing.nchwc_unpack(y), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("isa", sorted(TARGETS))
@pytest.mark.parametrize("schedule", ["default", "outside", "knobs"])
def test_channel_steps_unrolled_on_16_register_targets(rng, isa, schedule):
    """On AVX2 (16 vector registers) a conv's reduction takes 4 channels of a block per step,
    unrolled (one step per channel elsewhere), in the default, chunks-outside and tuned
    schedules alike; the result is the convolution's either way."""
    with target_scope(TARGETS[isa]):
        a, w = rand(rng, (1, 32, 9, 9)), rand(rng, (32, 32, 3, 3))
        ap, wp = testing.nchw_pack(a, 16), testing.oihw_pack(w, 16, 16)
        A, W = te.placeholder(ap.shape, name="A"), te.placeholder(wp.shape, name="W")
        Y = topi.nn.relu(topi.nn.conv2d_NCHWc(A, W, 2, 1))
        if schedule == "knobs":
            s = x86.schedule_conv2d_NCHWc_knobs(Y, 2, 2, False, "rows", "task")
        else:
            s = x86.schedule_conv2d_NCHWc(Y, outside=schedule == "outside")
        ir = str(lower(s, [A, W, Y], "conv"))
        mod = build(s, [A, W, Y], target=TARGETS[isa])
        assert reduction_unroll(16) == (4 if isa == "avx2" else 1)
    assert ("for ic_block.outer in range(4)" in ir) == (isa == "avx2")
    assert ("for ic_block in range(16)" in ir) == (isa == "avx512")
    if host_runs(isa):
        y = np.zeros([int(d) for d in Y.shape], np.float32)
        mod(ap, wp, y)
        ref = np.maximum(testing.conv2d_nchw_python(a, w, 2, 1), 0)
        np.testing.assert_allclose(testing.nchwc_unpack(y), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ow,vectors,want", [(56, 1, 14), (56, 2, 14), (56, 4, 4), (7, 4, 7)])
def test_tile_columns_avx512(ow, vectors, want):
    with target_scope("llvm -mcpu=skylake-avx512 -mattr=+avx512f,+avx2,+fma"):
        assert x86.tile_columns(ow, vectors) == want


@pytest.mark.parametrize(
    "isa,oh,cols,vectors,want",
    [
        ("avx512", 7, 7, 2, 2),
        ("avx512", 14, 14, 2, 1),
        ("avx512", 7, 4, 1, 7),
        ("avx2", 7, 7, 2, 1),
    ],
)
def test_tile_rows(isa, oh, cols, vectors, want):
    """Rows x columns x vectors accumulators fill the registers left beside the weights and a
    broadcast (32 on AVX-512, 16 on AVX2), in row tiles as even as their count allows."""
    with target_scope(TARGETS[isa]):
        assert x86.tile_rows(oh, cols, vectors) == want


@pytest.mark.parametrize(
    "isa,size,vectors,want",
    [
        ("avx512", 56, 2, (1, 14)),
        ("avx512", 7, 2, (2, 7)),
        ("avx512", 112, 1, (2, 14)),
        ("avx2", 14, 2, (3, 2)),  # 7 columns x 2 vectors would spill an accumulator
        ("avx2", 7, 2, (4, 1)),
        ("avx2", 56, 1, (1, 14)),
    ],
)
def test_conv_tile_fewest_tiles_within_the_registers(isa, size, vectors, want):
    with target_scope(TARGETS[isa]):
        rows, cols = x86.conv_tile(size, size, vectors)
        assert (rows, cols) == want
        assert rows * cols * vectors + vectors + 1 <= cpu_facts().vector_registers


@pytest.mark.parametrize(
    "weight_bytes, tiles, want",
    [
        (512 * 9 * 16 * 4, 14, True),  # 512 channels to a 7x7 output on AVX2 (4 x 1 tiles)
        (512 * 9 * 32 * 4, 4, False),  # the same on AVX-512: 2 x 7 tiles, 4 per block
        (128 * 9 * 16 * 4, 35, False),  # 128 channels to 14x14 on AVX2: 73 KB of weights
    ],
)
def test_chunks_outside_when_many_tiles_stream_large_weights(weight_bytes, tiles, want):
    assert x86.conv2d.chunks_outside(weight_bytes, tiles, 512 << 10) is want


def test_channel_block():
    with target_scope("llvm -mcpu=haswell -mattr=+avx2,+fma,-avx512f"):
        assert [x86.channel_block(c) for c in (64, 24, 3, 6)] == [16, 8, 3, 6]


@pytest.mark.parametrize("parallel", list(x86.PARALLEL))
@pytest.mark.parametrize("pad", ["inline", "task", "root"])
def test_conv2d_NCHWc_tuned_knobs_with_fused_relu(run, rng, parallel, pad):
    a, w = rand(rng, (1, 16, 8, 8)), rand(rng, (32, 16, 3, 3))
    ap, wp = testing.nchw_pack(a, 8), testing.oihw_pack(w, 8, 16)
    A, W = te.placeholder(ap.shape, name="A"), te.placeholder(wp.shape, name="W")
    Y = topi.nn.relu(topi.nn.conv2d_NCHWc(A, W, 1, 1))
    s = x86.schedule_conv2d_NCHWc_knobs(Y, 2, 4, True, parallel, pad)
    got = testing.nchwc_unpack(run(s, [A, W], Y, ap, wp))
    ref = np.maximum(testing.conv2d_nchw_python(a, w, 1, 1), 0)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("oc, tasks", [(32, 4), (64, 2)])
def test_conv2d_NCHWc_knobs_give_every_thread_a_task(run, rng, oc, tasks):
    # "oc" parallelizes over output-channel blocks: one block (32 channels) would leave one of
    # two threads idle, so the row tiles (8 rows by 2) join the parallel loop; two blocks stay
    a, w = rand(rng, (1, 4, 10, 10)), rand(rng, (oc, 4, 3, 3))
    ap, wp = testing.nchw_pack(a, 4), testing.oihw_pack(w, 4, 32)
    A, W = te.placeholder(ap.shape, name="A"), te.placeholder(wp.shape, name="W")
    Y = topi.nn.conv2d_NCHWc(A, W, 1, 0)
    previous = get_num_threads()
    set_num_threads(2)
    try:
        s = x86.schedule_conv2d_NCHWc_knobs(Y, 2, 4, False, "oc", "none")
    finally:
        set_num_threads(previous)
    (extent,) = re.findall(r"range\((\d+)\) parallel", str(lower(s, [A, W, Y], "conv")))
    assert int(extent) == tasks
    got = testing.nchwc_unpack(run(s, [A, W], Y, ap, wp))
    np.testing.assert_allclose(got, testing.conv2d_nchw_python(a, w, 1, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "ic,size,oc,chunk,tile_p",
    [
        (64, 7, 32, 1, None),  # 49 positions: 8 tiles of 6 and one of 1; 4 partial sums
        (64, 5, 16, 2, 4),
        (32, 3, 32, 2, 16),  # one tile wider than the 9 positions
    ],
)
def test_conv2d_1x1_NCHWc_partial_sums_with_fused_bias_relu(run, rng, ic, size, oc, chunk, tile_p):
    a, w, b = rand(rng, (1, ic, size, size)), rand(rng, (oc, ic, 1, 1)), rand(rng, (oc,))
    ap, wp = testing.nchw_pack(a, 16), testing.oihw_pack(w, 16, 16)
    bp = b.reshape(oc // 16, 1, 1, 16)
    A, W, B = (te.placeholder(v.shape, name=n) for v, n in ((ap, "A"), (wp, "W"), (bp, "B")))
    Y = topi.nn.relu(topi.add(topi.nn.conv2d_1x1_NCHWc(A, W, chunk), B))
    got = run(x86.schedule_conv2d_1x1_NCHWc(Y, tile_p), [A, W, B], Y, ap, wp, bp)
    ref = np.maximum(testing.conv2d_nchw_python(a, w, 1, 0) + b[None, :, None, None], 0)
    np.testing.assert_allclose(testing.nchwc_unpack(got), ref, rtol=1e-4, atol=1e-4)


def test_conv2d_1x1_NCHWc_refuses_other_windows_and_uneven_chunks():
    A = te.placeholder((1, 4, 6, 6, 16), name="A")
    with pytest.raises(OperatorError, match="1x1 expected"):
        topi.nn.conv2d_1x1_NCHWc(A, te.placeholder((2, 4, 3, 3, 16, 16), name="W"), 1)
    with pytest.raises(OperatorError, match="chunks of 3 blocks do not divide 4"):
        topi.nn.conv2d_1x1_NCHWc(A, te.placeholder((2, 4, 1, 1, 16, 16), name="W"), 3)


@pytest.mark.parametrize("isa,blocks,want", [("avx2", 32, 8), ("avx2", 12, 6), ("avx512", 64, 8)])
def test_pointwise_chunk_keeps_a_quarter_of_l1(isa, blocks, want):
    with target_scope(TARGETS[isa]):
        assert x86.pointwise_chunk(blocks, 16, 16) == want
        assert blocks // want * want == blocks and want * 1024 <= cpu_facts().l1d_bytes // 4


@pytest.mark.parametrize(
    "blocks,positions,want",
    [
        (32, 196, True),  # 512 channels at 14x14: 4 partial sums of 12.5 KB
        (8, 196, False),  # one chunk holds every block
        (32, 56 * 56, True),  # 4 partial sums of 200 KB
        (32, 224 * 224, False),  # 4 of 3.2 MB: over 4x the L2
        (136, 4, False),  # 17 chunks of 8 blocks: over MAX_PARTIALS
    ],
)
def test_pointwise_pays_with_chunks_and_partials_within_4x_the_l2(blocks, positions, want):
    with target_scope(TARGETS["avx2"]):  # another host's: the facts' 32 KB L1 and 1 MB L2
        chunk = x86.pointwise_chunk(blocks, 16, 16)
        assert x86.pointwise_pays(blocks, chunk, positions, 16) == want


def test_conv2d_1x1_NCHWc_adds_many_partial_sums(run, rng):
    # 257 input channels in blocks of 1, a chunk each: the output's sum of 257 partials is a
    # balanced tree (a chain that deep exhausted the simplifier's recursion)
    a, w = rand(rng, (1, 257, 3, 3)), rand(rng, (8, 257, 1, 1))
    ap, wp = testing.nchw_pack(a, 1), testing.oihw_pack(w, 1, 8)
    A, W = te.placeholder(ap.shape, name="A"), te.placeholder(wp.shape, name="W")
    Y = topi.nn.conv2d_1x1_NCHWc(A, W, 1)
    got = run(x86.schedule_conv2d_1x1_NCHWc(Y), [A, W], Y, ap, wp)
    ref = testing.conv2d_nchw_python(a, w, 1, 0)
    np.testing.assert_allclose(testing.nchwc_unpack(got), ref, rtol=1e-4, atol=1e-4)
