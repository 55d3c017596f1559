"""Data types as strings ("float32", "int8", "float32x16", "bool", "handle") and their parts."""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

import numpy as np

from ..errors import OperatorError


class DType(NamedTuple):
    """A parsed dtype: code is one of int, uint, float, bool, handle, void."""

    code: str
    bits: int
    lanes: int

    def __str__(self) -> str:
        base = self.code if self.code in ("bool", "handle", "void") else f"{self.code}{self.bits}"
        return base if self.lanes == 1 else f"{base}x{self.lanes}"


@cache
def parse(dtype: str) -> DType:
    """Parse a dtype string; raise OperatorError naming the string when it is not one."""
    if not isinstance(dtype, str):
        raise OperatorError(f"dtype {dtype!r} is not a string such as 'float32' or 'int8'")
    base, _, lanes = dtype.partition("x")
    n = int(lanes) if lanes else 1
    if base == "bool":
        return DType("bool", 1, n)
    if base == "handle":
        return DType("handle", 64, n)
    if base == "void":  # the result of calls made for their effect
        return DType("void", 0, n)
    for code in ("uint", "int", "float"):
        if base.startswith(code) and base[len(code) :].isdigit():
            bits = int(base[len(code) :])
            if (code == "float" and bits in (16, 32, 64)) or (
                code != "float" and bits in (8, 16, 32, 64)
            ):
                return DType(code, bits, n)
    raise OperatorError(
        f"unknown dtype {dtype!r}; expected e.g. int8/16/32/64, uint8, float16/32/64, bool"
    )


@cache
def with_lanes(dtype: str, lanes: int) -> str:
    return str(parse(dtype)._replace(lanes=lanes))


def element_of(dtype: str) -> str:
    return with_lanes(dtype, 1)


def lanes(dtype: str) -> int:
    return parse(dtype).lanes


def is_float(dtype: str) -> bool:
    return parse(dtype).code == "float"


def is_int(dtype: str) -> bool:
    """Signed or unsigned integer (not bool)."""
    return parse(dtype).code in ("int", "uint")


def is_uint(dtype: str) -> bool:
    return parse(dtype).code == "uint"


def is_bool(dtype: str) -> bool:
    return parse(dtype).code == "bool"


def itemsize(dtype: str) -> int:
    """Bytes per element in memory (bool is stored as one byte, like numpy)."""
    t = parse(dtype)
    return max(t.bits // 8, 1) * t.lanes


def to_numpy(dtype: str) -> np.dtype:
    t = parse(dtype)
    return np.dtype("bool" if t.code == "bool" else f"{t.code}{t.bits}")


def promote(a: str, b: str) -> str:
    """The dtype of a binary op on a and b: float beats int, wider beats narrower."""
    if a == b:
        return a
    ta, tb = parse(a), parse(b)
    rank = {"bool": 0, "uint": 1, "int": 2, "float": 3}
    code = max(ta.code, tb.code, key=rank.__getitem__)
    bits = max(t.bits for t in (ta, tb) if t.code == code)
    return str(DType(code, bits, max(ta.lanes, tb.lanes)))
