"""Graph passes over the IR (`compiler.graph.ir`), each taking the graph and returning it
(changed in place): shape and dtype inference, constant folding, batch-norm folding,
simplification, attention recognised as one node, fusion by pattern kind; task extraction
lists the fused graph's distinct kernels. `run_passes(..., print_passes=True)` prints the IR
after every pass."""

from __future__ import annotations

from collections.abc import Callable

from ..ir import Graph
from .attention import fuse_attention
from .fold import fold_batch_norm, fold_constants
from .fuse import Task, extract_tasks, format_tasks, fuse
from .infer import infer_shapes
from .simplify import simplify

PASSES: list[tuple[str, Callable[[Graph], Graph]]] = [
    ("infer_shapes", infer_shapes),
    ("fold_constants", fold_constants),
    ("fold_batch_norm", fold_batch_norm),
    ("simplify", simplify),
    ("fuse_attention", fuse_attention),
    ("fuse", fuse),
]


def run_passes(
    graph: Graph,
    print_passes: bool = False,
    out: Callable[[str], None] = print,
) -> tuple[Graph, list[Task]]:
    """The graph after every pass, fused, and its tasks; with `print_passes`, `out` gets the
    imported graph, the graph after each pass and the task list."""
    if print_passes:
        out(f"== import ==\n{graph}")
    for name, fn in PASSES:
        graph = fn(graph)
        if print_passes:
            out(f"== {name} ==\n{graph}")
    tasks = extract_tasks(graph)
    if print_passes:
        out(f"== extract_tasks ==\n{format_tasks(graph, tasks)}")
    return graph, tasks


__all__ = [
    "PASSES",
    "Task",
    "extract_tasks",
    "fold_batch_norm",
    "fold_constants",
    "fuse_attention",
    "format_tasks",
    "fuse",
    "infer_shapes",
    "run_passes",
    "simplify",
]
