"""Elementwise unary operators."""

from __future__ import annotations

from collections.abc import Callable

from .. import te
from ..te.tensor import Tensor
from ..tir import expr as E
from . import tag


def _unary(name: str, fop: Callable[[E.Expr], E.Expr]) -> Callable[[Tensor], Tensor]:
    def op(x: Tensor) -> Tensor:
        return te.compute(x.shape, lambda *i: fop(x(*i)), name=name, tag=tag.ELEMWISE)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name}."
    return op


exp = _unary("exp", te.exp)
log = _unary("log", te.log)
sqrt = _unary("sqrt", te.sqrt)
tanh = _unary("tanh", te.tanh)
sigmoid = _unary("sigmoid", te.sigmoid)
negative = _unary("negative", lambda x: -x)
