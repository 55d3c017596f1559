"""The host a CPU measurement ran on, as records store it and the cost models read it.

A CPU record's cost depends on the machine as much as on the config: the vector width decides
which register tiles fit, the data caches which panels stay. Records say the host they were
measured on (`Record.host`: the target's instruction set, CPU and float32 vector lanes, the L1d,
L2 and L3 bytes per core), and every cost-model row ends with HOST_FEATURES columns of the
record's host and thread count (`host_row`), so records of hosts of one kind train one model
and those of another kind are told apart instead of mistaken for this host's.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ..codegen.target import Target, cpu_facts

# log2 threads, float32 lanes, log2 L1d, log2 L2, log2 L3 per core (NaN: unknown, which
# XGBoost treats as missing)
HOST_FEATURES = 5
_CACHE_ROOT = Path("/sys/devices/system/cpu/cpu0/cache")


def _size(text: str) -> int:
    text = text.strip()
    scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
    return int(text.rstrip("KM")) * scale


def _cpus(listing: str) -> int:
    """How many CPUs a sysfs CPU list ("0-3,8") names."""
    count = 0
    for part in filter(None, listing.strip().split(",")):
        lo, _, hi = part.partition("-")
        count += int(hi or lo) - int(lo) + 1
    return count


@cache
def l3_per_core(root: Path = _CACHE_ROOT) -> int | None:
    """Bytes of the host's L3 per core: its size over the CPUs sharing it (None: no L3)."""
    for index in sorted(root.glob("index*")):
        try:
            if int((index / "level").read_text()) != 3:
                continue
            size = _size((index / "size").read_text())
            sharing = _cpus((index / "shared_cpu_list").read_text()) or 1
        except (OSError, ValueError):
            continue
        return size // sharing
    return None


def host_of(target: str) -> dict[str, Any] | None:
    """What a record measured on `target` says of its host (None for other than llvm
    targets): the vector facts are the target's (AVX2 code on an AVX-512 host is an AVX2
    host's), the caches the machine's."""
    if target.split()[:1] != ["llvm"]:
        return None
    t = Target.parse(target)
    facts = cpu_facts(t)
    l3 = l3_per_core() if t.is_host else None
    return {
        "isa": facts.isa,
        "cpu": t.cpu,
        "lanes": facts.lanes("float32"),
        "l1d": facts.l1d_bytes,
        "l2": facts.l2_bytes,
        "l3": l3,
    }


def _log2(value: Any) -> float:
    return math.log2(value) if isinstance(value, int | float) and value > 0 else math.nan


def host_row(host: dict[str, Any] | None, threads: int | None) -> np.ndarray:
    """The HOST_FEATURES columns of a record measured on `host` with `threads` threads."""
    host = host or {}
    lanes = host.get("lanes")
    return np.array(
        [
            _log2(threads),
            float(lanes) if isinstance(lanes, int) else math.nan,
            _log2(host.get("l1d")),
            _log2(host.get("l2")),
            _log2(host.get("l3")),
        ],
        np.float32,
    )


def with_host(rows: np.ndarray, hosts: np.ndarray) -> np.ndarray:
    """`rows` with host columns appended: `hosts` one row for all (HOST_FEATURES,) or one per
    row (n, HOST_FEATURES)."""
    rows = np.asarray(rows, np.float32)
    hosts = np.broadcast_to(np.asarray(hosts, np.float32), (len(rows), HOST_FEATURES))
    return np.concatenate([rows, hosts], axis=1)
