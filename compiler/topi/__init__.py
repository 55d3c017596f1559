"""CPU operators (TVM's topi): tensor-expression computes in `nn` and the top level, default
x86 schedules in `x86`, numpy references in `testing`. Accelerator operators go in `vta`."""

from . import nn, tag, testing, x86
from .broadcast import (
    add,
    broadcast_to,
    divide,
    maximum,
    minimum,
    multiply,
    power,
    prelu,
    subtract,
)
from .math import exp, log, negative, sigmoid, sqrt, tanh

__all__ = [
    "add",
    "broadcast_to",
    "divide",
    "exp",
    "log",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "nn",
    "power",
    "prelu",
    "sigmoid",
    "sqrt",
    "subtract",
    "tag",
    "tanh",
    "testing",
    "x86",
]
