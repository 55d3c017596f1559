"""Puts the repository root on `sys.path`: the benchmarks' logic (`benchmarks/`) and the Programs
they run (`testkit/`) are not installed, so `scripts/bench_*.py` import this first and run from a
checkout as `python scripts/bench_x.py`."""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
