"""One generic walker and rebuilder for all IR nodes (dispatch on `visit_<ClassName>`)."""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import partial
from typing import Any

from .expr import Expr, Node, Var


class Mutator:
    """Rebuilds a tree bottom-up; override `visit_X` for node class X, call `generic` inside."""

    _dispatch: dict[type, Callable | None] = {}  # node class -> visit_X (per Mutator class)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._dispatch = {}

    def visit(self, node: Any) -> Any:
        if node is None:
            return None
        kind = type(node)
        try:
            fn = self._dispatch[kind]
        except KeyError:
            fn = self._dispatch[kind] = getattr(type(self), "visit_" + kind.__name__, None)
        return fn(self, node) if fn else self.generic(node)

    def generic(self, node: Node) -> Node:
        changes = {}
        for f in node._fields:
            old = getattr(node, f)
            if isinstance(old, tuple):
                new = tuple(self.visit(x) for x in old)
                if any(a is not b for a, b in zip(new, old, strict=False)):
                    changes[f] = new
            else:
                new = self.visit(old)
                if new is not old:
                    changes[f] = new
        return node.replace(**changes) if changes else node


def children(node: Node) -> list[Node]:
    out: list[Node] = []
    for f in node._fields:
        v = getattr(node, f)
        if isinstance(v, tuple):
            out.extend(x for x in v if x is not None)
        elif v is not None:
            out.append(v)
    return out


def post_order_visit(node: Node, fn: Callable[[Node], None]) -> None:
    """Call fn on every node below and including `node`, children first."""
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        n, done = stack.pop()
        if done:
            fn(n)
            continue
        stack.append((n, True))
        stack.extend((c, False) for c in reversed(children(n)))


def collect(node: Node, pred: Callable[[Node], bool]) -> list[Node]:
    out: list[Node] = []
    post_order_visit(node, lambda n: out.append(n) if pred(n) else None)
    return out


def free_vars(node: Node) -> set[Var]:
    found: set[Var] = set()
    post_order_visit(node, lambda n: found.add(n) if isinstance(n, Var) else None)
    return found


def contains(node: Node, match: Callable[[Node], bool]) -> bool:
    """Whether some node below or at `node` matches (stops at the first)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if match(n):
            return True
        stack.extend(children(n))
    return False


def uses_var(node: Node, var: Var) -> bool:
    """Whether `var` occurs in `node` (stops at the first occurrence)."""
    return contains(node, partial(operator.is_, var))


class _Substitute(Mutator):
    def __init__(self, vmap: dict[Var, Expr]):
        self.vmap = vmap

    def visit_Var(self, v: Var) -> Expr:
        return self.vmap.get(v, v)


def substitute(node: Any, vmap: dict[Var, Expr]) -> Any:
    """Replace variables by expressions everywhere in `node`."""
    return _Substitute(vmap).visit(node) if vmap else node
