"""Tensor expressions (TVM's te): describe what to compute; schedules say how."""

from ..schedule.schedule import Schedule, Stage, create_schedule
from ..tir.expr import Var, const
from ..tir.op import (
    abs,
    all,
    any,
    call_extern,
    cast,
    ceil,
    cos,
    erf,
    exp,
    exp2,
    floor,
    if_then_else,
    log,
    log2,
    log10,
    max_value,
    min_value,
    power,
    round,
    select,
    sigmoid,
    sin,
    sqrt,
    tan,
    tanh,
    trunc,
)
from .reduce import CommReducer, comm_reducer, max, min, sum
from .tensor import (
    ComputeOp,
    IterVar,
    PlaceholderOp,
    Range,
    Tensor,
    compute,
    placeholder,
    reduce_axis,
    thread_axis,
)


def var(name: str = "v", dtype: str = "int32") -> Var:
    """A symbolic scalar (e.g. a stride of a tensor intrinsic's buffer)."""
    return Var(name, dtype)


def __getattr__(name: str):
    # tensorize helpers live with the schedule package; import lazily to keep te light
    if name in ("decl_tensor_intrin", "decl_buffer", "TensorIntrin"):
        from ..schedule import tensorize

        return getattr(tensorize, name)
    raise AttributeError(name)


__all__ = [
    "CommReducer",
    "ComputeOp",
    "IterVar",
    "PlaceholderOp",
    "Range",
    "Schedule",
    "Stage",
    "Tensor",
    "Var",
    "abs",
    "all",
    "any",
    "call_extern",
    "cast",
    "ceil",
    "comm_reducer",
    "compute",
    "const",
    "cos",
    "create_schedule",
    "erf",
    "exp",
    "exp2",
    "floor",
    "if_then_else",
    "log",
    "log2",
    "log10",
    "max",
    "max_value",
    "min",
    "min_value",
    "placeholder",
    "power",
    "reduce_axis",
    "round",
    "select",
    "sigmoid",
    "sin",
    "sqrt",
    "sum",
    "tan",
    "tanh",
    "thread_axis",
    "trunc",
    "var",
]
