"""`compiler.build` dispatches on the target: the accelerator goes through compiler.vta."""

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.errors import CodegenError
from compiler.topi.vta import DenseKnobs, dense_packed, schedule_dense_packed
from compiler.topi.vta.reference import dense_packed_ref


def _dense():
    data = te.placeholder((1, 2, 1, 16), "int8", "data")
    weight = te.placeholder((2, 2, 16, 16), "int8", "weight")
    out = dense_packed(data, weight, shift=6, relu=True)
    return schedule_dense_packed(out, DenseKnobs()), [data, weight, out]


def test_build_target_vta_runs_on_the_named_device():
    s, args = _dense()
    mod = compiler.build(s, args, target="vta", device="fsim")
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (1, 2, 1, 16), dtype=np.int8)
    w = rng.integers(-128, 128, (2, 2, 16, 16), dtype=np.int8)
    (res,), stats = mod(a, w)
    np.testing.assert_array_equal(res, dense_packed_ref(a, w, shift=6, relu=True))
    assert stats.device == "fsim"


def test_llvm_target_rejects_accelerator_options():
    A = te.placeholder((8,), "float32", "A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(CodegenError, match="takes only the option bounds_check"):
        compiler.build(te.create_schedule(B.op), [A, B], target="llvm", device="fsim")
