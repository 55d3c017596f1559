"""The loop IR: expressions, statements, buffers, printer and passes."""

from . import expr, stmt
from .expr import Expr, Var
from .printer import astext
from .stmt import Buffer, PrimFunc, Stmt

__all__ = ["Buffer", "Expr", "PrimFunc", "Stmt", "Var", "astext", "expr", "stmt"]
