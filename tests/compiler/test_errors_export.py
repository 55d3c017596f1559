"""Clear schedule errors, virtual threads, library export and cross-compilation."""

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.errors import CodegenError, OperatorError, ScheduleError


def matmul(n=16):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis(n, "k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def test_reorder_across_fused_axis_names_stage_and_axis():
    A, B, C = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].fuse(i, j)
    with pytest.raises(
        ScheduleError,
        match=r"reorder: stage 'C': axis 'j' is not a leaf: it was fused into 'i.j.fused'",
    ):
        s[C].reorder(j, i)


def test_compute_at_into_a_loop_that_is_not_an_ancestor():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((8,), lambda i: B[i] * 2.0, name="C")
    D = te.compute((8,), lambda i: A[i] - 1.0, name="D")
    s = te.create_schedule([C.op, D.op])
    with pytest.raises(
        ScheduleError, match=r"compute_at: stage 'B': loop 'D.i' is not an ancestor"
    ):
        s[B].compute_at(s[D], D.op.axis[0])


def test_vectorizing_a_reduction_axis():
    A, B, C = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"vectorize: stage 'C': axis 'k' is a reduction axis"):
        s[C].vectorize(C.op.reduce_axis[0])


def test_other_misuse_messages():
    A, B, C = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    with pytest.raises(ScheduleError, match="not adjacent"):
        s[C].fuse(j, i)
    with pytest.raises(ScheduleError, match="cannot fuse reduction and data-parallel"):
        s[C].fuse(j, C.op.reduce_axis[0])
    with pytest.raises(ScheduleError, match="a reduction cannot be inlined"):
        s[C].compute_inline()
    with pytest.raises(ScheduleError, match="unknown scope"):
        s[C].set_scope("local.nope")
    s[C].split(i, 4)
    with pytest.raises(ScheduleError, match="it was split into 'i.outer' and 'i.inner'"):
        s[C].parallel(i)


@pytest.mark.parametrize("dtype", ["float32", "bool"])
def test_a_tensor_index_must_be_an_integer(dtype):
    # a gathered float read as an index reached the code generator, which failed on it
    A = te.placeholder((4,), "float32", "A")
    C = te.placeholder((4,), dtype, "C")
    with pytest.raises(OperatorError, match=f"tensor A: the index of axis 0 is {dtype}"):
        te.compute((4,), lambda i: A[C[i]], name="B")
    idx = te.placeholder((4,), "int8", "I")
    B = te.compute((4,), lambda i: A[idx[i]], name="B")  # any integer type indexes
    f = compiler.build(te.create_schedule(B.op), [A, idx, B])
    a, out = np.arange(4, dtype="float32") + 10, np.zeros(4, "float32")
    f(a, np.array([3, 0, 2, 1], "int8"), out)
    np.testing.assert_array_equal(out, [13, 10, 12, 11])


def test_bind_to_gpu_thread_is_rejected_by_cpu_codegen():
    A = te.placeholder((8,), name="A")
    C = te.compute((8,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.x"))
    with pytest.raises(CodegenError, match="bound to 'threadIdx.x'"):
        compiler.build(s, [A, C])


def test_vthread_lowers_to_interleaved_serial_code(rng):
    n = 16
    A, B, C = matmul(n)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    i, j = C.op.axis
    jo, ji = s[C].split(j, nparts=2)
    s[C].bind(jo, te.thread_axis("vthread"))
    s[C].reorder(jo, i, ji)
    s[CC].compute_at(s[C], jo)
    passes = compiler.lower_passes(s, [A, B, C])
    assert "vthread" in str(passes["schedule_ops"])
    text = str(passes["inject_virtual_thread"])
    assert "vthread" not in text and "j.outer" not in text
    a, b = rng.random((2, n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    compiler.build(s, [A, B, C])(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_export_library_and_load_back(tmp_path, rng):
    A = te.placeholder((64,), name="A")
    C = te.compute((64,), lambda i: A[i] * A[i], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], 16)
    s[C].parallel(xo)
    s[C].vectorize(xi)
    mod = compiler.build(s, [A, C], name="square")
    path = str(tmp_path / "square.so")
    mod.export_library(path)
    loaded = compiler.load_module(path, "square")
    a = rng.random(64, dtype=np.float32)
    c = np.zeros_like(a)
    loaded(a, c)
    np.testing.assert_allclose(c, a * a)
    with pytest.raises(ValueError, match="'C' has shape"):
        loaded(a, np.zeros(3, np.float32))


@pytest.mark.parametrize(
    "triple, machine, elf_class",
    [("aarch64-linux-gnu", 183, 2), ("armv7a-linux-gnueabihf", 40, 1)],
)
def test_cross_compile_object_elf_header(tmp_path, triple, machine, elf_class):
    A, B, C = matmul(32)
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[1], 4)
    s[C].vectorize(xi)
    mod = compiler.build(s, [A, B, C], target=f"llvm -mtriple={triple}")
    path = tmp_path / "mm.o"
    mod.save(str(path))
    head = path.read_bytes()[:20]
    assert head[:4] == b"\x7fELF"
    assert head[4] == elf_class  # 1: 32-bit, 2: 64-bit
    assert int.from_bytes(head[18:20], "little") == machine  # EM_AARCH64 / EM_ARM
    assert head[16] == 1  # ET_REL
    with pytest.raises(CodegenError, match="cannot run on this host"):
        mod(
            np.zeros((32, 32), np.float32),
            np.zeros((32, 32), np.float32),
            np.zeros((32, 32), np.float32),
        )


def test_compiler_errors_share_the_toolkit_root():
    from compiler import errors
    from vta.errors import VTAError

    for name in ("OperatorError", "ScheduleError", "LoweringError", "CodegenError", "TuningError"):
        cls = getattr(errors, name)
        assert issubclass(cls, errors.CompilerError) and issubclass(cls, VTAError), name
    assert issubclass(errors.OperatorError, ValueError)
