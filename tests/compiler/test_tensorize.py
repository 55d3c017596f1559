"""tensorize with a CPU micro-kernel written in LLVM IR and attached with pragma import_llvm."""

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.errors import ScheduleError
from compiler.tir.stmt import Evaluate, seq

GEMV_LL = """
define void @gemv_update(ptr %c, ptr %a, ptr %b, i32 %m, i32 %l, i32 %stride) {
entry:
  br label %iloop
iloop:
  %i = phi i32 [0, %entry], [%i1, %iend]
  %ci = getelementptr float, ptr %c, i32 %i
  %acc0 = load float, ptr %ci
  %row = mul i32 %i, %stride
  br label %kloop
kloop:
  %k = phi i32 [0, %iloop], [%k1, %kloop]
  %acc = phi float [%acc0, %iloop], [%acc1, %kloop]
  %ak = getelementptr float, ptr %a, i32 %k
  %a.v = load float, ptr %ak
  %bi = add i32 %row, %k
  %bk = getelementptr float, ptr %b, i32 %bi
  %b.v = load float, ptr %bk
  %p = fmul float %a.v, %b.v
  %acc1 = fadd float %acc, %p
  %k1 = add i32 %k, 1
  %kc = icmp slt i32 %k1, %l
  br i1 %kc, label %kloop, label %iend
iend:
  store float %acc1, ptr %ci
  %i1 = add i32 %i, 1
  %ic = icmp slt i32 %i1, %m
  br i1 %ic, label %iloop, label %done
done:
  ret void
}

define void @gemv_reset(ptr %c, i32 %m) {
entry:
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %loop]
  %ci = getelementptr float, ptr %c, i32 %i
  store float 0.0, ptr %ci
  %i1 = add i32 %i, 1
  %ic = icmp slt i32 %i1, %m
  br i1 %ic, label %loop, label %done
done:
  ret void
}
"""


def gemv_intrin(m, length, reducer=te.sum):
    a = te.placeholder((length,), name="a")
    b = te.placeholder((m, length), name="b")
    k = te.reduce_axis(length, "k")
    c = te.compute((m,), lambda i: reducer(a[k] * b[i, k], axis=k), name="c")
    bb = te.decl_buffer(b.shape, b.dtype, "b", strides=[te.var("s1"), 1])

    def fcompute(ins, outs):
        aa, bb_ = ins
        cc = outs[0]
        reset = te.call_extern("void", "gemv_reset", cc.access_ptr("w"), m)
        update = te.call_extern(
            "void",
            "gemv_update",
            cc.access_ptr("w"),
            aa.access_ptr("r"),
            bb_.access_ptr("r"),
            m,
            length,
            bb_.strides[0],
        )
        return seq(Evaluate(reset), Evaluate(update)), Evaluate(reset), Evaluate(update)

    return te.decl_tensor_intrin(c.op, fcompute, name="gemv", binds={b: bb})


def workload(n=8, m=32, length=64):
    A = te.placeholder((n, length), name="A")
    B = te.placeholder((m, length), name="B")
    k = te.reduce_axis(length, "k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    return A, B, C


@pytest.mark.parametrize("k_factor", [16, 64])
def test_tensorize_gemv_micro_kernel(rng, k_factor):
    A, B, C = workload()
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    (k,) = C.op.reduce_axis
    yo, yi = s[C].split(y, factor=16)
    ko, ki = s[C].split(k, factor=k_factor)
    s[C].reorder(x, yo, ko, yi, ki)
    s[C].tensorize(yi, gemv_intrin(16, k_factor))
    s[C].pragma(x, "import_llvm", GEMV_LL)
    text = str(compiler.lower(s, [A, B, C]))
    assert "gemv_update(" in text
    assert "gemv_reset(" in text
    a = rng.random((8, 64), dtype=np.float32)
    b = rng.random((32, 64), dtype=np.float32)
    c = np.zeros((8, 32), np.float32)
    compiler.build(s, [A, B, C])(a, b, c)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-5)


def test_tensorize_mismatches_name_the_intrinsic_and_part():
    A, B, C = workload()
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    yo, yi = s[C].split(y, factor=8)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=16)
    s[C].reorder(x, yo, ko, yi, ki)
    s[C].tensorize(yi, gemv_intrin(16, 16))
    with pytest.raises(
        ScheduleError, match=r"intrinsic 'gemv': axis 'j' has extent 8 .* 'i' has 16"
    ):
        compiler.lower(s, [A, B, C])

    s = te.create_schedule(C.op)
    x, y = C.op.axis
    yo, yi = s[C].split(y, factor=16)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=16)
    s[C].reorder(x, yo, ko, yi, ki)
    s[C].tensorize(yi, gemv_intrin(16, 16, reducer=te.max))
    with pytest.raises(
        ScheduleError, match=r"'gemv': reducer differs: intrinsic uses max, stage uses sum"
    ):
        compiler.lower(s, [A, B, C])
