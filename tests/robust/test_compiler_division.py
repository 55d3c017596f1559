"""Integer division has one defined behaviour (compiler/arith/intdiv.py) in the constant folder
and in generated code, scalar and vectorized: x // 0 == 0, x % 0 == x, INT_MIN // -1 wraps.
Before, a zero or -1 divisor at run time killed the process with SIGFPE."""

from __future__ import annotations

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.arith import intdiv
from compiler.arith.simplify import Analyzer
from compiler.tir import expr as E

N = 16
RULES = {"fd": intdiv.floordiv, "fm": intdiv.floormod, "td": intdiv.truncdiv}


def _operands(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dtype)
    if info.min == 0:
        a = [7, 0, info.max, 5, 200, 1, 9, 3, 7, 0, info.max, 5, 200, 1, 9, 3]
        b = [0, 0, 0, 3, 7, 1, 2, info.max, 0, 0, 0, 3, 7, 1, 2, info.max]
    else:
        a = [7, -7, 7, -7, info.min, info.min, 0, info.max, 5, -5, 3, info.min, -1, 9, -9, 4]
        b = [0, 0, -1, 2, -1, 0, 0, -1, 3, 3, -2, 1, -1, -4, 4, info.min]
    return np.array(a, dtype), np.array(b, dtype)


def _build(dtype: str, vectorize: bool, const_divisor: int | None = None):
    a = te.placeholder((N,), dtype, "A")
    b = te.placeholder((N,), dtype, "B")

    def divisor(i):
        return E.const(const_divisor, dtype) if const_divisor is not None else b[i]

    outs = [
        te.compute((N,), lambda i: a[i] // divisor(i), name="fd"),
        te.compute((N,), lambda i: a[i] % divisor(i), name="fm"),
        te.compute((N,), lambda i: E.Div(a[i], divisor(i)), name="td"),
    ]
    s = te.create_schedule([o.op for o in outs])
    if vectorize:
        for o in outs:
            _, inner = s[o].split(o.op.axis[0], 8)
            s[o].vectorize(inner)
    return compiler.build(s, [a, b, *outs], target="llvm")


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32"])
@pytest.mark.parametrize("vectorize", [False, True])
def test_data_dependent_divisors(dtype, vectorize):
    mod = _build(dtype, vectorize)
    a, b = _operands(dtype)
    outs = [np.zeros(N, dtype) for _ in RULES]
    mod(a, b, *outs)
    for out, (name, rule) in zip(outs, RULES.items(), strict=True):
        expected = [rule(int(x), int(y), dtype) for x, y in zip(a, b, strict=True)]
        assert list(map(int, out)) == expected, name


@pytest.mark.parametrize("divisor", [0, -1])
def test_constant_divisors(divisor):
    mod = _build("int32", False, divisor)
    a, b = _operands("int32")
    outs = [np.zeros(N, "int32") for _ in RULES]
    mod(a, b, *outs)
    for out, rule in zip(outs, RULES.values(), strict=True):
        assert list(map(int, out)) == [rule(int(x), divisor, "int32") for x in a]


@pytest.mark.parametrize(
    "op, x, y, folded",
    [
        (E.FloorDiv, 7, 0, 0),
        (E.FloorMod, 7, 0, 7),
        (E.FloorMod, -7, 0, -7),
        (E.FloorDiv, -(2**31), -1, -(2**31)),
        (E.FloorMod, -(2**31), -1, 0),
        (E.Div, -(2**31), -1, -(2**31)),
        (E.Div, 7, 0, 0),
        (E.Div, -7, 2, -3),
        (E.FloorDiv, -7, 2, -4),
    ],
)
def test_constant_folder_follows_the_same_rule(op, x, y, folded):
    e = Analyzer().simplify(op(E.const(x, "int32"), E.const(y, "int32")))
    assert isinstance(e, E.IntImm) and e.value == folded
