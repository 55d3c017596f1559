"""Phase 5, hazards: no GEMM writes one ACC row with two consecutive micro-ops (the GEMM
pipeline has no hazard check), and no SRAM buffer shared between modules is written by one and
read by the other without a dependence token ordering the two (a race)."""

from __future__ import annotations

import numpy as np

from ..isa import SHARED_BUFFERS, Module
from .accesses import Access
from .stream import Findings, Stream
from .tokens import Order


def gemm_hazard(access: Access) -> str | None:
    """Where two consecutive micro-ops of a GEMM write the same ACC row (None if nowhere)."""
    dst = access.dst_sequence
    io, ii, dfo, dfi = access.loops
    first, last = int(dst[0]), int(dst[-1])
    same = np.flatnonzero(dst[1:] == dst[:-1])
    if same.size:
        k = access.uop_bgn + int(same[0])
        return f"micro-ops {k} and {k + 1} both write ACC row {int(dst[same[0]])}"
    if ii > 1 and last == first + dfi:
        return f"consecutive iter_in iterations write ACC row {last} back to back"
    if io > 1 and last + (ii - 1) * dfi == first + dfo:
        return f"consecutive iter_out iterations write ACC row {first + dfo} back to back"
    return None


def check_gemm_hazards(s: Stream, accesses: list[Access | None]) -> Findings:
    """The same-row hazard, once per distinct GEMM instruction (at its first occurrence)."""
    out = Findings(s)
    for i, access in enumerate(accesses):
        if access is None or access.first != i or access.dst_sequence is None:
            continue
        where = gemm_hazard(access)
        if where:
            out.capped(
                "hazard",
                f"instruction {i} (GEMM): {where} (the GEMM pipeline has no hazard check; "
                "consecutive micro-ops must write different rows)",
            )
    return out


def check_races(s: Stream, accesses: list[Access | None], order: Order) -> Findings:
    """Every read of a shared buffer must come after (in happens-before) the last write by its
    writer module, and every write after the last read by its reader module."""
    out = Findings(s)
    depth = s.config.depth
    writer = {t: np.full(depth[t], -1, dtype=np.int64) for t in SHARED_BUFFERS}
    reader = {t: np.full(depth[t], -1, dtype=np.int64) for t in SHARED_BUFFERS}
    for i, access in enumerate(accesses):
        if access is None:
            continue
        pos, clock = order.pos[i], order.clock[i]
        for mem, _, rows in access.reads:
            if mem in SHARED_BUFFERS:
                _order(
                    s,
                    out,
                    order,
                    i,
                    writer[mem][rows],
                    SHARED_BUFFERS[mem][0],
                    clock,
                    f"reads {mem.name} entries that instruction {{j}} ({{name}}) writes",
                )
        for mem, rows in access.writes:
            if mem in SHARED_BUFFERS:
                _order(
                    s,
                    out,
                    order,
                    i,
                    reader[mem][rows],
                    SHARED_BUFFERS[mem][1],
                    clock,
                    f"overwrites {mem.name} entries that instruction {{j}} ({{name}}) reads",
                )
        for mem, _, rows in access.reads:
            if mem in SHARED_BUFFERS:
                reader[mem][rows] = pos
        for mem, rows in access.writes:
            if mem in SHARED_BUFFERS:
                writer[mem][rows] = pos
    return out


def _order(s, out, order, i, last_positions, other: Module, clock, what: str) -> None:
    """Report a race if the latest access by module `other` is not before instruction i."""
    if not last_positions.size:
        return
    last = int(last_positions.max())
    if last > clock[other]:
        j = order.order[other][last]
        out.capped(
            "hazard",
            f"instruction {i} ({s.name(i)}): {what.format(j=j, name=s.name(j))}, but no "
            f"dependence token orders the two (race: the {s.module_name(i)} module must pop a "
            f"token the {s.module_name(j)} module pushes at or after instruction {j})",
        )
