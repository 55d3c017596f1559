"""On-chip buffer allocation: first fit over each scope's rows, checked against capacity."""

from __future__ import annotations

from ..errors import LoweringError
from .environment import Environment


class SramAllocator:
    """Live allocations per scope as (first row, rows, name); rows are scope elements."""

    def __init__(self, env: Environment):
        self.env = env
        self.live: dict[str, list[tuple[int, int, str]]] = {}
        self.high_water: dict[str, int] = {}

    def alloc(self, scope: str, rows: int, name: str) -> int:
        """The first row of `rows` free rows of `scope`; an error names what does not fit."""
        depth = self.env.capacity(scope) // self.env.elem_bytes(scope)
        live = sorted(self.live.setdefault(scope, []))
        start = 0
        for first, n, _ in live:
            if start + rows <= first:
                break
            start = max(start, first + n)
        if start + rows > depth:
            elem = self.env.elem_bytes(scope)
            used = sum(n for _, n, _ in live)
            held = ", ".join(f"{nm} ({n * elem} B)" for _, n, nm in live) or "nothing"
            raise LoweringError(
                f"scope {scope}: buffer '{name}' needs {rows * elem} bytes but only "
                f"{(depth - used) * elem} of {depth * elem} bytes are available (live: {held}); "
                "choose smaller tiles or fewer virtual threads"
            )
        self.live[scope].append((start, rows, name))
        self.high_water[scope] = max(self.high_water.get(scope, 0), start + rows)
        return start

    def free(self, scope: str, first: int) -> None:
        self.live[scope] = [a for a in self.live[scope] if a[0] != first]
