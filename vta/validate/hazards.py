"""Phase 5, hazards: no GEMM writes one ACC row with two consecutive micro-ops (the GEMM
pipeline has no hazard check), and no SRAM buffer shared between modules is written by one and
read by the other without a dependence token ordering the two (a race)."""

from __future__ import annotations

import numpy as np

from ..isa import SHARED_BUFFERS
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
    plans: dict[int, tuple[list, list]] = {}
    for i, access in enumerate(accesses):
        if access is None:
            continue
        plan = plans.get(id(access))
        if plan is None:
            plan = plans[id(access)] = _plan(access, writer, reader)
        checks, updates = plan
        clock = order.clock[i]
        for last, rows, other, what in checks:
            latest = int(last[rows].max())
            if latest > clock[other]:
                _report(s, out, order, i, order.order[other][latest], what)
        pos = order.pos[i]
        for last, rows in updates:
            last[rows] = pos
    return out


def _plan(access: Access, writer: dict, reader: dict) -> tuple[list, list]:
    """The checks (last-access array, rows, other module, message) and updates one access
    makes on the shared buffers."""
    checks, updates = [], []
    for mem, _, rows in access.reads:
        if mem in SHARED_BUFFERS and _size(rows):
            what = f"reads {mem.name} entries that instruction {{j}} ({{name}}) writes"
            checks.append((writer[mem], rows, SHARED_BUFFERS[mem][0], what))
            updates.append((reader[mem], rows))
    for mem, rows in access.writes:
        if mem in SHARED_BUFFERS and _size(rows):
            what = f"overwrites {mem.name} entries that instruction {{j}} ({{name}}) reads"
            checks.append((reader[mem], rows, SHARED_BUFFERS[mem][1], what))
            updates.append((writer[mem], rows))
    return checks, updates


def _size(rows) -> int:
    return rows.stop - rows.start if isinstance(rows, slice) else rows.size


def _report(s: Stream, out: Findings, order: Order, i: int, j: int, what: str) -> None:
    out.capped(
        "hazard",
        f"instruction {i} ({s.name(i)}): {what.format(j=j, name=s.name(j))}, but no dependence "
        f"token orders the two (race: the {s.module_name(i)} module must pop a token the "
        f"{s.module_name(j)} module pushes at or after instruction {j})",
    )
