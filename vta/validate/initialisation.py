"""Phase 3, memory initialisation: nothing reads SRAM that no earlier instruction wrote (SRAM
contents at the start of a run are undefined). STORE reads OUT, which only GEMM and ALU write,
so data loaded into ACC needs an ALU op (a shift by 0 at least) before it can be stored."""

from __future__ import annotations

import numpy as np

from .accesses import Access
from .stream import Findings, Stream


def check_initialisation(s: Stream, accesses: list[Access | None]) -> Findings:
    """One finding per instruction that reads entries never written before it."""
    out = Findings(s)
    written = {t: np.zeros(s.config.depth[t], dtype=bool) for t in s.config.depth}
    done: set[int] = set()  # accesses whose reads were all written and whose writes are done
    for i, access in enumerate(accesses):
        if access is None or id(access) in done:
            continue
        clean = True
        for mem, field, rows in access.reads:
            fresh = ~written[mem][rows]
            if not fresh.any():
                continue
            clean = False
            entries = np.arange(s.config.depth[mem])[rows][fresh]
            if field == "data":  # a STORE
                out.capped(
                    "initialisation",
                    f"instruction {i} ({s.name(i)}): reads {mem.name} entries [{rows.start}, "
                    f"{rows.stop}) of which {entries.size} (first: {int(entries[0])}) no earlier "
                    "GEMM/ALU wrote (OUT holds only GEMM/ALU results; put an ALU copy after a "
                    "LOAD ACC)",
                )
            else:
                out.capped(
                    "initialisation",
                    f"instruction {i} ({s.name(i)}): micro-op {field} reads {mem.name} entries "
                    f"never written before (first: {int(entries[0])}, {entries.size} in all)",
                )
        for mem, rows in access.writes:
            written[mem][rows] = True
        if clean:  # entries stay written: later instances of this access need no check
            done.add(id(access))
    return out
