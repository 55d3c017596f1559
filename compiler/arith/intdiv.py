"""Integer division's one defined behaviour, shared by the constant folder and generated code.

For every integer dtype: `x // 0 == 0` and `x % 0 == x` (so `x == (x // y) * y + x % y` always
holds), and the one quotient that overflows, `INT_MIN // -1`, wraps to `INT_MIN` (with
`INT_MIN % -1 == 0`). Floor division (`//`, `%`: `FloorDiv`, `FloorMod`) rounds toward minus
infinity; `Div` on integers rounds toward zero. No division traps (SIGFPE), at compile time or
at run time.
"""

from __future__ import annotations

from ..tir import dtype as dt


def wrap(value: int, dtype: str) -> int:
    """`value` reduced to `dtype`'s two's-complement range."""
    d = dt.parse(dtype)
    bits = d.bits
    value &= (1 << bits) - 1
    if d.code == "int" and value >> (bits - 1):
        value -= 1 << bits
    return value


def floordiv(x: int, y: int, dtype: str) -> int:
    return 0 if y == 0 else wrap(x // y, dtype)


def floormod(x: int, y: int, dtype: str) -> int:
    return x if y == 0 else wrap(x % y, dtype)


def truncdiv(x: int, y: int, dtype: str) -> int:
    if y == 0:
        return 0
    q = abs(x) // abs(y)
    return wrap(q if (x < 0) == (y < 0) else -q, dtype)
