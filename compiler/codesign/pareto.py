"""Pareto fronts and hypervolume of two objectives, both minimized."""

from __future__ import annotations

from collections.abc import Sequence

Objectives = tuple[float, float]


def front(points: Sequence[Objectives]) -> list[int]:
    """Indices of the non-dominated points, by the first objective ascending (of equal points,
    the first)."""
    order = sorted(range(len(points)), key=lambda i: (points[i], i))
    kept, best_second = [], float("inf")
    for i in order:
        if points[i][1] < best_second:
            kept.append(i)
            best_second = points[i][1]
    return kept


def hypervolume(points: Sequence[Objectives], reference: Objectives) -> float:
    """The area dominated by `points` and bounded by `reference` (points beyond it count
    nothing)."""
    inside = [p for p in points if p[0] < reference[0] and p[1] < reference[1]]
    area, ceiling = 0.0, reference[1]
    for i in front(inside):
        x, y = inside[i]
        if y < ceiling:
            area += (reference[0] - x) * (ceiling - y)
            ceiling = y
    return area
