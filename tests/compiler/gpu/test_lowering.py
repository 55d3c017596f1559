"""GPU lowering: bound inference relaxes thread loops for shared buffers, thread bindings become
kernels, barriers go only where shared memory is written then read, bad bindings are named."""

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.codegen.nvptx_arch import get_arch
from compiler.driver_gpu import lower_gpu, lower_gpu_passes, split_kernels
from compiler.errors import CodegenError, LoweringError, ScheduleError
from compiler.runtime.emulator import EmulatorError, RaceError
from compiler.tir import stmt as S
from compiler.tir.functor import Mutator, collect
from compiler.tir.transform.thread import is_barrier
from compiler.topi import cuda

SM80 = get_arch("sm_80")


def test_shared_fetch_covers_the_whole_block_tile_and_local_tile_one_thread(gemm_schedule):
    s, args = gemm_schedule(128, 128, 64)
    text = str(lower_gpu_passes(s, args, SM80)["schedule_ops"])
    assert "allocate A.shared: float32[64, 8] scope='shared'" in text  # 16 threads x 4 rows
    assert "allocate matmul.local: float32[4, 4] scope='local'" in text


def test_kernel_has_launch_extents_and_two_barriers_per_reduction_step(gemm_schedule):
    s, args = gemm_schedule(128, 128, 64)
    f = lower_gpu(s, args, SM80)
    allocs, kernels = split_kernels(f, SM80)
    assert not allocs and len(kernels) == 1
    k = kernels[0]
    assert k.grid == (2, 2, 1) and k.block == (16, 16, 1) and k.shared_bytes == 2 * 512 * 4
    loop = next(x for x in collect(k.body, lambda n: isinstance(n, S.For)) if x.extent.value == 8)
    barriers = collect(loop.body, lambda n: isinstance(n, S.Evaluate) and is_barrier(n))
    assert len(barriers) == 2  # before the fetch (WAR) and before the compute (RAW)
    assert len(collect(k.body, is_barrier)) == 2  # and nowhere else


def test_no_barrier_without_shared_memory():
    x = te.placeholder((256,), "float32", "x")
    y = te.compute((256,), lambda i: x[i] * 2.0, "y")
    s = te.create_schedule(y.op)
    bo, ti = s[y].split(y.op.axis[0], factor=64)
    s[y].bind(bo, te.thread_axis("blockIdx.x"))
    s[y].bind(ti, te.thread_axis("threadIdx.x"))
    f = lower_gpu(s, [x, y], SM80)
    assert not collect(f.body, is_barrier)
    m = compiler.build(s, [x, y], target="cuda")
    a = np.arange(256, dtype=np.float32)
    out = np.zeros(256, np.float32)
    m.emulate(a, out)
    np.testing.assert_array_equal(out, 2 * a)


def test_thread_extent_above_the_block_limit_names_stage_and_axis():
    x = te.placeholder((4096,), "float32", "x")
    y = te.compute((4096,), lambda i: x[i] + 1.0, "y")
    s = te.create_schedule(y.op)
    bo, ti = s[y].split(y.op.axis[0], factor=2048)
    s[y].bind(bo, te.thread_axis("blockIdx.x"))
    s[y].bind(ti, te.thread_axis("threadIdx.x"))
    with pytest.raises(
        ScheduleError, match=r"stage 'y' axis 'i.inner' bound to threadIdx.x .*2048"
    ):
        compiler.build(s, [x, y], target="cuda")


def test_shared_memory_over_the_limit_names_the_stages(gemm_schedule):
    s, args = gemm_schedule(1024, 1024, 1024, tile=(16, 8), tile_k=64)  # 2 x 128x64 floats
    with pytest.raises(LoweringError, match=r"65536 bytes of shared memory.*'A.shared'.*49152"):
        compiler.build(s, args, target="cuda -arch=sm_90")


def test_unbound_root_stage_is_an_error():
    x = te.placeholder((64,), "float32", "x")
    y = te.compute((64,), lambda i: x[i] + 1.0, "y")
    s = te.create_schedule(y.op)
    with pytest.raises(LoweringError, match="stage 'y' has no loop bound to blockIdx/threadIdx"):
        compiler.build(s, [x, y], target="cuda")


def test_unknown_arch_is_refused(gemm_schedule):
    s, args = gemm_schedule(64, 64, 64)
    with pytest.raises(CodegenError, match="unknown GPU architecture 'sm_99'"):
        compiler.build(s, args, target="cuda -arch=sm_99")


class _DropBarriers(Mutator):
    def visit_SeqStmt(self, s):
        s = self.generic(s)
        return S.seq(*(x for x in s.seq if not is_barrier(x)))


def _module_without_barriers(s, args):
    m = compiler.build(s, args, target="cuda")
    m.kernels[0].body = _DropBarriers().visit(m.kernels[0].body)
    return m


def test_emulator_detects_the_race_a_missing_barrier_leaves(gemm_schedule):
    s, args = gemm_schedule(64, 64, 32)
    m = _module_without_barriers(s, args)
    a, b = np.ones((64, 32), np.float32), np.ones((32, 64), np.float32)
    with pytest.raises(RaceError, match="shared 'A.shared'.*barrier"):
        m.emulate(a, b, np.zeros((64, 64), np.float32))


def test_emulator_detects_blocks_writing_one_element():
    x = te.placeholder((64,), "float32", "x")
    y = te.compute((1,), lambda i: x[i], "y")
    s = te.create_schedule(y.op)
    i = y.op.axis[0]
    s[y].bind(i, te.thread_axis("threadIdx.x"))
    m = compiler.build(s, [x, y], target="cuda")
    m.kernels[0].grid = (4, 1, 1)  # the same store by four blocks
    with pytest.raises(RaceError, match="global 'y'.*blocks"):
        m.emulate(np.ones(64, np.float32), np.zeros(1, np.float32))


def test_emulator_reports_out_of_bounds_reads():
    x = te.placeholder((64,), "float32", "x")
    y = te.compute((64,), lambda i: x[i], "y")
    s = te.create_schedule(y.op)
    bo, ti = s[y].split(y.op.axis[0], factor=32)
    s[y].bind(bo, te.thread_axis("blockIdx.x"))
    s[y].bind(ti, te.thread_axis("threadIdx.x"))
    m = compiler.build(s, [x, y], target="cuda")
    m.kernels[0].grid = (3, 1, 1)  # one block too many
    with pytest.raises(EmulatorError, match="out of bounds"):
        m.emulate(np.ones(64, np.float32), np.zeros(64, np.float32))


def test_emulator_runs_a_vectorized_fetch_whose_vectors_cross_rows():
    # the shared tile is [4, 4, 3] of a [4, 4, 6] tensor: a 2-wide vector of the fused copy
    # spans two rows, so its shared and global indices are vectors that are not ramps
    a = te.placeholder((4, 4, 6), "float32", "A")
    b = te.compute((4, 4, 3), lambda i, j, k: a[i, j, k] * 2.0, "B")
    s = te.create_schedule(b.op)
    aa = s.cache_read(a, "shared", [b])
    bx, tx = s[b].split(s[b].fuse(*s[b].op.axis), factor=24)
    s[b].bind(bx, te.thread_axis("blockIdx.x"))
    s[b].bind(tx, te.thread_axis("threadIdx.x"))
    s[aa].compute_at(s[b], bx)
    rest, vec = s[aa].split(s[aa].fuse(*s[aa].op.axis), factor=2)
    _, t = s[aa].split(rest, factor=12)
    s[aa].bind(t, te.thread_axis("threadIdx.x"))
    s[aa].vectorize(vec)
    m = compiler.build(s, [a, b], target="cuda")
    x, y = np.random.default_rng(0).random((4, 4, 6), np.float32), np.zeros((4, 4, 3), np.float32)
    m.emulate(x, y)
    np.testing.assert_array_equal(y, 2 * x[:, :, :3])


def test_emulator_runs_loops_nested_deeper_than_python_blocks():
    # 24 nested loops that run once each (Python compiles at most 20 nested blocks)
    shape = (1,) * 24 + (32,)
    x = te.placeholder(shape, "float32", "x")
    y = te.compute(shape, lambda *i: x(*i) + 1.0, "y")
    s = te.create_schedule(y.op)
    s[y].bind(y.op.axis[-1], te.thread_axis("threadIdx.x"))
    s[y].reorder(y.op.axis[-1], *y.op.axis[:-1])
    m = compiler.build(s, [x, y], target="cuda")
    out = np.zeros(shape, np.float32)
    m.emulate(np.ones(shape, np.float32), out)
    assert (out == 2).all()


def test_vthread_fetch_runs_once_and_result_is_right():
    a = te.placeholder((64, 32), "float32", "A")
    b = te.placeholder((32, 64), "float32", "B")
    c = cuda.matmul(a, b)
    s = cuda.schedule_matmul(c, (2, 2, 8, 2), (2, 2, 8, 2), 8)
    f = lower_gpu(s, [a, b, c], SM80)
    stores = collect(f.body, lambda n: isinstance(n, S.BufferStore) and n.buffer.name == "A.shared")
    assert len(stores) == 1  # not replicated per virtual thread
    m = compiler.build(s, [a, b, c], target="cuda")
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((64, 32), np.float32), rng.standard_normal((32, 64), np.float32)
    out = np.zeros((64, 64), np.float32)
    m.emulate(x, w, out)
    np.testing.assert_allclose(out, x @ w, rtol=1e-4, atol=1e-4)
