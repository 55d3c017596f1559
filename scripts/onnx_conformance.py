#!/usr/bin/env python
"""The onnx package's own test models through the CPU path (testkit.onnx_conformance).

Each model is compiled as `vta run` compiles it and run on its data sets in a child process;
the counts of models matched, refused in one line, disagreeing and crashing (an exception
that is not the toolkit's, a signal, a hang), among the models whose operators are all in
scope and the others, then the cases that disagreed or crashed and the in-scope refusals by
reason. Exit status 1 if any case disagreed or crashed.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import sys
import time
from collections import Counter

import _bench_path  # noqa: F401 - the repository root on sys.path, for testkit/

from testkit import onnx_conformance as conf


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("patterns", nargs="*", help="case names or shell patterns (default: all)")
    ap.add_argument("--timeout", type=float, default=conf.TIMEOUT, help="seconds per case")
    ap.add_argument("--verbose", action="store_true", help="print each case's outcome")
    ap.add_argument("--json", action="store_true", help="print every case's outcome as JSON")
    args = ap.parse_args()
    names = [n for n in conf.cases()
             if not args.patterns or any(fnmatch.fnmatch(n, p) for p in args.patterns)]  # fmt: skip

    def show(r: conf.Result) -> None:
        print(f"{r.outcome:9} {r.name}: {r.message[:200]}", flush=True)

    start = time.perf_counter()
    results = conf.sweep(names, args.timeout, show if args.verbose else None)
    seconds = time.perf_counter() - start
    table = conf.counts(results)
    if args.json:
        cases = [vars(r) for r in results]
        print(json.dumps({"seconds": round(seconds, 1), "counts": table, "cases": cases}, indent=1))
    else:
        print(f"{len(results)} models in {seconds:.0f} s")
        print(f"{'':10}" + "".join(f"{o:>10}" for o in conf.OUTCOMES))
        for scope, row in table.items():
            print(f"{scope:10}" + "".join(f"{row[o]:>10}" for o in conf.OUTCOMES))
        for r in results:
            if r.outcome in ("disagreed", "crashed"):
                print(f"{r.outcome}: {r.name}: {r.message.strip().splitlines()[-1][:300]}")
        reasons = Counter(_reason(r.message) for r in results
                          if r.in_scope and r.outcome == "refused")  # fmt: skip
        for reason, n in reasons.most_common():
            print(f"in scope, refused {n:4}: {reason}")
    return int(any(r.outcome in ("disagreed", "crashed") for r in results))


def _reason(message: str) -> str:
    """A refusal's message without the model's path and value names, to group refusals."""
    message = re.sub(r"^/\S+: ", "", message)
    message = re.sub(r"node \S+ \(", "node (", message)
    message = re.sub(r"input \d+ \(\S+\)", "input", message)
    message = re.sub(r"input \S+ (?=has|is)", "input ", message)
    message = re.sub(r"inputs? [\w, ]+: ", "", message)
    return re.sub(r", \S+ is computed", "", message)[:160]


if __name__ == "__main__":
    sys.exit(main())
