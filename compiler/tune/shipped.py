"""Tuning records shipped with the toolkit, so a new user gets tuned speed without tuning.

`records/<arch>-<isa>.jsonl` holds the best record of each task of the common networks'
convolutions (ResNet-18, MobileNet-v1, the DQN network) as tuned on a host of that instruction
set (`cpu_facts(target).isa`: avx512, avx2; the AVX2 records were tuned on an AVX-512 host
running AVX2 code, VTA_LLVM_TARGET="llvm -mcpu=haswell -mattr=+avx2,+fma,-avx512f", except
ResNet-18's 7x7 stem, tuned on an AVX2-only host (an AMD EPYC). A/Bs on that host kept only
records faster than the default schedules: the two stems' and ResNet-18's first stride-2 3x3;
ResNet-18's other tasks had no record that clearly beat the defaults; MobileNet-v1's 1x1
layers of 256 input channels and more have no AVX2 record: the default conv2d_1x1_NCHWc kernel
beat their direct records by 8-19%, and its default tile of 6 positions was the fastest of 3-6
or within 4% of it on all five). A model compiled for the CPU uses them only when its target
has that instruction set, and only for tasks the user's own records (`--db`) do not cover; the
compile log says how many kernels came from them. `VTA_SHIPPED_RECORDS=0` turns them
off (the default schedules then serve every untuned task). Their lines (schema 2) do not say
the thread count they were measured with, and neither does their history, so they read as
unknown (`record.legacy_threads`): a build prefers a record measured with its own thread count
to them, and the compile log names each kernel a shipped record serves.

`ship(db, target)` rewrites the target's file from a records database (the best record per
task), which is how the files were made: `scripts/ship_records RECORDS.db`.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..codegen.target import Target, cpu_facts, current_target
from .database import Database

RECORDS_DIR = Path(__file__).parent / "records"


def shipped_name(target: Target | None = None) -> str:
    """The shipped records' name for `target` (default: the current target): arch-isa."""
    target = target or current_target()
    return f"{target.triple.split('-')[0]}-{cpu_facts(target).isa}"


def shipped_records(target: Target | None = None) -> Database | None:
    """An in-memory database of the records shipped for `target`'s instruction set, or None
    (none shipped for it, or VTA_SHIPPED_RECORDS=0)."""
    if os.environ.get("VTA_SHIPPED_RECORDS", "1") == "0":
        return None
    path = RECORDS_DIR / f"{shipped_name(target)}.jsonl"
    if not path.is_file():
        return None
    db = Database()
    db.import_jsonl(path)
    return db


def ship(db: Database, target: Target | None = None) -> tuple[Path, int]:
    """Write the best valid record of every task in `db` as `target`'s shipped records; returns
    (the file, how many records)."""
    best = [r for r in (db.best(w, "llvm") for w in db.workloads("llvm")) if r is not None]
    path = RECORDS_DIR / f"{shipped_name(target)}.jsonl"
    RECORDS_DIR.mkdir(exist_ok=True)
    path.write_text("".join(r.to_json() + "\n" for r in best))
    return path, len(best)
