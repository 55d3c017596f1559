"""The co-design search against grid and random baselines (benchmarks.codesign).

Per part, the reduced space's grid (ResNet-18 compiled and timed at every fitting point; kept
as JSON in benchmarks/data/, rerun with --fresh) is the ground truth: the learned and random
searches replay on it over --seeds seeds (evaluations to 95% of its hypervolume); the best
point against the part's preset; the resource model's held-out errors against yosys.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import _bench_path  # noqa: F401 - the repository root on sys.path, for benchmarks/

from benchmarks.codesign import bench_codesign, grid_file, print_codesign
from compiler import zoo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18", choices=sorted(zoo.NETWORKS))
    parser.add_argument("--parts", nargs="+", default=["xczu3eg", "xc7z020"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--scheduler", help="Dask scheduler ADDRESS for the grid's points")
    parser.add_argument("--fresh", action="store_true", help="evaluate the grids again")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{args.model}.onnx"
        path.write_bytes(zoo.NETWORKS[args.model]())
        if args.fresh:
            for part in args.parts:
                grid_file(args.model, part).unlink(missing_ok=True)
        fig = bench_codesign(args.model, str(path), args.parts, args.seeds, args.scheduler)
    if args.json:
        print(json.dumps(fig))
    else:
        print_codesign(fig)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
