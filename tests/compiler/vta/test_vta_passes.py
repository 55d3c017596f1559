"""The accelerator backend as named passes: each result prints, each hands the next what it
needs, and the chain gives the Program `build` gives."""

import numpy as np
import pytest

from compiler import te
from compiler.tir.functor import collect
from compiler.topi.vta import DenseKnobs, dense_packed, schedule_dense_packed
from compiler.topi.vta.conv2d import (
    Conv2DKnobs,
    Conv2DWorkload,
    conv2d_from_workload,
    schedule_conv2d_packed,
)
from compiler.vta import build, get_env, lower_passes
from compiler.vta.ops import Alu, Gemm, Load, Store
from compiler.vta.template import OpTemplate
from vta.isa import AluOp, MemType, TokenQueue

PASSES = [
    "lower",
    "inject_ops",
    "unroll",
    "tokens_per_thread",
    "interleave_vthreads",
    "allocate_sram",
    "insert_out_copies",
    "insert_tokens",
    "emit",
]


def conv2d_schedule(threads: int = 2):
    wl = Conv2DWorkload(1, 2, 8, 8, 2, 3, 3, 1, 1)
    args, out = conv2d_from_workload(wl, bias=True, shift=8, clip=(0, 127))
    s = schedule_conv2d_packed(out, Conv2DKnobs(tile_h=4, tile_w=8, oc_nthread=threads))
    return s, [*args, out]


def dense_schedule():
    env = get_env()
    a = te.placeholder((2, 4, env.batch, env.block_in), "int8", "a")
    w = te.placeholder((4, 4, env.block_out, env.block_in), "int8", "w")
    out = dense_packed(a, w, shift=4, clip=(-128, 127))
    return schedule_dense_packed(out, DenseKnobs(oc_nthread=2)), [a, w, out]


@pytest.mark.parametrize("make", [conv2d_schedule, dense_schedule], ids=["conv2d", "dense"])
def test_every_pass_prints_and_the_chain_gives_builds_program(make):
    s, args = make()
    passes = lower_passes(s, args)
    assert list(passes) == PASSES
    for name, result in passes.items():
        assert str(result).strip(), name
    program = passes["emit"].program
    built = build(*make()).program
    assert np.array_equal(program.insns, built.insns)
    assert np.array_equal(program.dram, built.dram)
    assert str(passes["emit"]).startswith(f"; {len(program)} instructions")


def test_inject_ops_leaves_host_loops_and_templates():
    s, args = conv2d_schedule()
    f = lower_passes(s, args)["inject_ops"]
    templates = collect(f.body, lambda n: isinstance(n, OpTemplate))
    kinds = sorted(type(t).__name__ for t in templates)
    assert kinds == ["AluTemplate", "DmaTemplate", "DmaTemplate", "DmaTemplate"] + [
        "DmaTemplate",
        "GemmTemplate",
        "GemmTemplate",
    ]
    text = str(f)
    assert "vthread" in text and "LOAD INP data_pad" in text and "GEMM reset (conv)" in text
    assert "ALU conv_alu = conv in place: REQ" in text
    assert f.attrs["dram_roles"] == {"data": "input", "kernel": "weight", "bias": "input"} | {
        "res": "output"
    }


def test_unroll_gives_each_thread_its_program_order_and_interleave_merges_them():
    s, args = conv2d_schedule()
    passes = lower_passes(s, args)
    per_thread, merged = passes["unroll"], passes["interleave_vthreads"]
    assert sorted(map(id, per_thread)) == sorted(map(id, merged))  # the same entries
    threads = [e.thread for e in per_thread]
    assert threads == sorted(threads) and set(threads) == {(0,), (1,)}
    for t in ((0,), (1,)):  # each thread's own order survives the merge
        assert [e for e in merged if e.thread == t] == [e for e in per_thread if e.thread == t]
    # merged: the two threads' GEMM resets come first, one after the other
    assert [e.thread for e in merged[:2]] == [(0,), (1,)]
    assert all(isinstance(e.item, Gemm) and e.item.reset for e in merged[:2])


def test_token_pass_input_and_output():
    """insert_tokens reads the stream with rows and adds pops/pushes: a GEMM waits (l2g) for the
    loads of its own thread; with two threads, thread 1's loads overlap thread 0's GEMM."""
    s, args = conv2d_schedule()
    passes = lower_passes(s, args)
    before, after = passes["insert_out_copies"], passes["insert_tokens"]
    assert [e.item for e in before] == [x.op for x in after]
    gemms = [x for x in after if isinstance(x.op, Gemm) and not x.op.reset]
    assert all(TokenQueue.L2G in x.pops for x in gemms)
    stores = [x for x in after if isinstance(x.op, Store)]
    assert all(x.pops == [TokenQueue.G2S] for x in stores)
    text = str(after)
    assert "pop l2g | GEMM" in text and "| push g2s" in text
    serial = passes["tokens_per_thread"]
    # serialized, the threads reuse one set of rows; interleaved, each thread has its own
    inp_rows = {x.op.row for x in serial if isinstance(x.op, Load) and x.op.memory == MemType.INP}
    inp_rows_vt = {x.op.row for x in after if isinstance(x.op, Load) and x.op.memory == MemType.INP}
    assert len(inp_rows) == 1 and len(inp_rows_vt) == 2


def test_out_copy_inserted_before_a_store_of_loaded_accumulators():
    env = get_env()
    shape = (1, 2, env.batch, env.block_out)
    x = te.placeholder(shape, "int32", "x")
    xl = te.compute(shape, lambda *i: x(*i), "xl")
    y = te.compute(shape, lambda *i: xl(*i).astype("int8"), "y")
    s = te.create_schedule(y.op)
    s[xl].set_scope(env.acc_scope)
    s[xl].pragma(s[xl].op.axis[0], env.dma_copy)
    s[y].pragma(s[y].op.axis[0], env.dma_copy)
    passes = lower_passes(s, [x, y])
    before = [e.item for e in passes["allocate_sram"]]
    after = [e.item for e in passes["insert_out_copies"]]
    assert [type(op).__name__ for op in before] == ["Load", "Store"]
    assert [type(op).__name__ for op in after] == ["Load", "Alu", "Store"]
    copy = after[1]
    assert isinstance(copy, Alu) and copy.op == AluOp.SHR and copy.use_imm and copy.imm == 0
