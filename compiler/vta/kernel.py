"""Micro-op kernels: a nest of affine loops becomes one GEMM/ALU instruction per iteration of
its outer ("host") loops, whose micro-ops enumerate the inner loops and whose iter_out/iter_in
fold up to two more.

The plan (which loops stay on the host, which fold) depends only on the loops' extents and
factors, so it is made once per nest; each instance only adds its base rows.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from vta.isa import LOOP_ITER_WIDTH

from ..errors import LoweringError

UopLoop = tuple[int, list[int]]  # (extent, factor per micro-op column)


def _fold_ok(loop: UopLoop, widths: list[int]) -> bool:
    ext, factors = loop
    return ext < (1 << LOOP_ITER_WIDTH) and all(
        0 <= f < (1 << w) for f, w in zip(factors, widths, strict=True)
    )


def _hazard(uops: np.ndarray, folded: list[UopLoop]) -> bool:
    """Would two consecutive GEMM micro-ops of the instruction write the same ACC row?"""
    dst = uops[:, 0]
    for ext, factors in reversed(folded):
        dst = (dst[None, :] + factors[0] * np.arange(ext)[:, None]).reshape(-1)
    return bool((dst[1:] == dst[:-1]).any())


def _uops(loops: list[UopLoop], host: int, fold: tuple[int, ...], width: int) -> np.ndarray:
    """Micro-ops (from base 0) enumerating the loops that neither stay on the host nor fold."""
    inner = [loops[k] for k in range(host, len(loops)) if k not in fold]
    uops = np.zeros((1, width), dtype=np.int64)
    for ext, factors in inner:
        step = np.arange(ext)[:, None] * np.array(factors)[None, :]
        uops = (uops[:, None, :] + step[None, :, :]).reshape(-1, width)
    return uops


def plan_kernel(
    loops: list[UopLoop], widths: list[int], cap: int, gemm: bool
) -> tuple[int, tuple[int, ...]]:
    """(host loops, folded loop indices) with the smallest kernel that fits `cap` micro-ops."""
    for host in range(len(loops) + 1):
        rest = list(range(host, len(loops)))
        options = [c for n in (2, 1, 0) for c in itertools.combinations(rest, n)]
        options = [c for c in options if all(_fold_ok(loops[k], widths) for k in c)]
        options.sort(key=lambda c: math.prod(loops[k][0] for k in rest if k not in c))
        for fold in options:
            size = math.prod(loops[k][0] for k in rest if k not in fold)
            if size > cap:
                break
            if gemm and _hazard(_uops(loops, host, fold, len(widths)), [loops[k] for k in fold]):
                continue
            return host, fold
    raise LoweringError(
        f"no micro-op kernel of at most {cap} entries without a GEMM write hazard for loops "
        f"{[ext for ext, _ in loops]}; reorder the loops or choose other tiles"
    )


@dataclasses.dataclass
class Kernel:
    """A planned nest: micro-ops from base 0, the folded loops as (extent, *factors), and the
    host loops each of which gives one instruction per iteration."""

    uops: np.ndarray
    folded: tuple[tuple[int, ...], ...]
    host: list[UopLoop]

    @classmethod
    def plan(cls, loops: list[UopLoop], widths: list[int], cap: int, gemm: bool) -> Kernel:
        loops = [lp for lp in loops if lp[0] > 1]
        host, fold = plan_kernel(loops, widths, cap, gemm)
        folded = tuple((loops[k][0], *loops[k][1]) for k in fold)
        return cls(_uops(loops, host, fold, len(widths)), folded, loops[:host])

    def instances(self, base: list[int]) -> list[np.ndarray]:
        """The micro-ops of each instruction for operands starting at rows `base`."""
        offsets = np.array(base, dtype=np.int64)[None, :]
        for ext, factors in self.host:  # outer loops first: row-major over the host loops
            step = np.arange(ext, dtype=np.int64)[:, None] * np.array(factors, dtype=np.int64)
            offsets = (offsets[:, None, :] + step[None, :, :]).reshape(-1, len(base))
        return list(self.uops[None, :, :] + offsets[:, None, :])

    def describe(self) -> str:
        host = "".join(f" host x{ext}" for ext, _ in self.host)
        folded = "".join(f" x{loop[0]}({','.join(map(str, loop[1:]))})" for loop in self.folded)
        return f"{len(self.uops)} uop(s){folded}{host}"
