"""Tuner component study (benchmarks.study): best-so-far curves of xgb-rank, xgb-reg, random
and genetic search on ResNet-18 layers, on the CPU (wall time) and the accelerator (simulator
cycles); trials each needs to reach 95% of the best any found (the median over --seeds); transfer
from other layers' records; program-feature throughput; with --peers, the tuned CPU matmul 1024^3
against numpy and conv2d layers against onnxruntime (benchmarks.tuned). Tables on stdout;
--json PATH writes the same figures, with the PNG curves beside it.

Each part (one tuning run: target, layer, tuner, seed) writes its curve and records under PARTS
when it finishes; a rerun skips finished parts and resumes an interrupted one, and the report is
rewritten after every part.

    ./scripts/bench tuner --quick --json /tmp/bt/quick.json   # < 10 min
    ./scripts/bench tuner --json /tmp/bench_tuner/full.json    # the study
    ./scripts/bench tuner --json /tmp/bench_tuner/full.json --seeds 0,1,2 \
        --tuners xgb-rank,random --transfer ''                # + seeds 1, 2
    ./scripts/bench tuner --json /tmp/bench_tuner/full.json --report-only
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import _bench_path  # noqa: F401 - the repository root on sys.path, for benchmarks/

from benchmarks.study import STUDY_LAYERS, TRANSFER_TARGETS, TUNERS, Plan, run_study
from benchmarks.study_report import print_report
from benchmarks.tuned import peers, print_peers


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one layer, few trials (< 10 min)")
    p.add_argument("--json", help="write the figures as JSON to this file (PNGs beside it)")
    p.add_argument("--parts", help="folder of finished parts (default: PARTS beside --json)")
    p.add_argument("--seeds", default="0", help="comma-separated seeds, one run of each part each")
    p.add_argument("--targets", default="llvm,vta")
    p.add_argument("--layers", default=",".join(STUDY_LAYERS))
    p.add_argument("--tuners", default=",".join(TUNERS))
    p.add_argument("--trials", type=int, default=400)
    p.add_argument("--batch", type=int, default=8, help="study batch size (tuners' default: 64)")
    p.add_argument("--transfer", default="vta,llvm", help="targets of the transfer parts")
    p.add_argument("--transfer-layers", default=",".join(TRANSFER_TARGETS))
    p.add_argument("--skip-sources", type=int, default=0, help="drop the first N source layers")
    p.add_argument(
        "--vta-model-free-trials",
        type=int,
        help="trials of random and ga (and transfer sources) on the accelerator (default: "
        "--trials); fewer shorten the study, as random configs are its slowest builds",
    )
    p.add_argument("--peers", action="store_true", help="also run bench_tuned's peer comparison")
    p.add_argument("--report-only", action="store_true", help="report the finished parts")
    args = p.parse_args()
    plan = Plan(
        targets=tuple(args.targets.split(",")),
        layers=tuple(args.layers.split(",")),
        tuners=tuple(args.tuners.split(",")),
        transfer=tuple(args.transfer.split(",")) if args.transfer else (),
        transfer_layers=tuple(args.transfer_layers.split(",")),
        seeds=tuple(int(x) for x in args.seeds.split(",")),
        trials=args.trials,
        vta_model_free_trials=args.vta_model_free_trials,
        batch=args.batch,
        skip_sources=args.skip_sources,
        quick=args.quick,
    )
    out = Path(args.json).parent if args.json else Path(tempfile.mkdtemp(prefix="bench_tuner_"))
    parts_dir = Path(args.parts) if args.parts else out / "parts"
    parts_dir.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    json_path = Path(args.json) if args.json else None
    rep = run_study(plan, out, parts_dir, json_path, report_only=args.report_only)
    if args.peers:
        seed = plan.seeds[0]
        rep["peers"] = peers(32, ["C9"], 32, seed) if args.quick else peers(200, ["C9"], 100, seed)
    if json_path:
        json_path.write_text(json.dumps(rep))
    print_report(rep)
    if "peers" in rep:
        print()
        print_peers(rep["peers"])
    print(f"curves in {out}, parts in {parts_dir}")


if __name__ == "__main__":
    main()
