"""The loop IR: expressions, statements, buffers (each prints as text) and passes."""

from . import expr, stmt
from .expr import Expr, Var
from .stmt import Buffer, PrimFunc, Stmt, astext

__all__ = ["Buffer", "Expr", "PrimFunc", "Stmt", "Var", "astext", "expr", "stmt"]
