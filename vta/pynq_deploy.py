"""`vta deploy` and `vta worker`: put work on PYNQ boards.

`vta deploy ARTIFACT... --host USER@BOARD` copies Programs (.npz) or compiled models (from
`vta compile`) and an overlay (vta.bit + vta.hwh) to a board with scp and runs each there with
the same CLI (`vta sim PROGRAM --device pynq`, `vta run MODEL --device pynq`), printing the
board's report. `vta worker SCHEDULER --resources pynq=1` joins a Dask cluster from a board, so
`vta tune --device pynq --scheduler SCHEDULER` measures there. Board setup: docs/pynq.md.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import subprocess
from pathlib import Path, PurePosixPath

from .errors import DeviceError

OVERLAY_FILES = ("vta.bit", "vta.hwh")
DEFAULT_REMOTE_DIR = "vta-deploy"


def remote_commands(
    artifacts: list[Path], remote_dir: str, remote_vta: str, with_overlay: bool, device: str
) -> list[str]:
    """The shell commands run on the board: one `vta` run per artifact, in `remote_dir`."""
    env = ""
    if with_overlay:
        env = f"VTA_BITSTREAM={shlex.quote(str(PurePosixPath(remote_dir) / 'vta.bit'))} "
    out = []
    for artifact in artifacts:
        command = "sim" if artifact.suffix == ".npz" else "run"
        out.append(
            f"cd {shlex.quote(remote_dir)} && {env}{remote_vta} {command} "
            f"{shlex.quote(artifact.name)} --device {shlex.quote(device)}"
        )
    return out


def deploy(args: argparse.Namespace) -> int:
    artifacts = [Path(a) for a in args.artifact]
    missing = [str(a) for a in artifacts if not a.exists()]
    if missing:
        raise DeviceError(f"vta deploy: no such artifact {', '.join(missing)}")
    overlay = []
    if args.bitstream:
        overlay = [Path(args.bitstream) / name for name in OVERLAY_FILES]
        absent = [str(p) for p in overlay if not p.is_file()]
        if absent:
            raise DeviceError(
                f"vta deploy: the overlay needs {', '.join(absent)} (scripts/build_bitstream)"
            )
    ssh, scp = shlex.split(args.ssh), shlex.split(args.scp)
    steps = [[*ssh, args.host, f"mkdir -p {shlex.quote(args.dir)}"]]
    copies = [*map(str, artifacts), *map(str, overlay)]
    steps.append([*scp, "-r", *copies, f"{args.host}:{args.dir}/"])
    commands = remote_commands(artifacts, args.dir, args.remote_vta, bool(overlay), args.device)
    steps += [[*ssh, args.host, command] for command in commands]
    for step in steps:
        print("+ " + shlex.join(step), flush=True)
        if args.dry_run:
            continue
        run = subprocess.run(step)
        if run.returncode != 0:
            raise DeviceError(f"vta deploy: {step[0]} exited with {run.returncode}")
    return 0


def parse_resources(text: str) -> dict[str, float]:
    """'pynq=1,gpu=2' -> {'pynq': 1.0, 'gpu': 2.0}."""
    out = {}
    for item in filter(None, text.split(",")):
        name, sep, amount = item.partition("=")
        try:
            out[name.strip()] = float(amount)
        except ValueError:
            raise DeviceError(f"resource {item!r}: write NAME=AMOUNT, e.g. pynq=1") from None
        if not sep or not name.strip() or out[name.strip()] <= 0:
            raise DeviceError(f"resource {item!r}: write NAME=AMOUNT with AMOUNT > 0")
    return out


def worker(args: argparse.Namespace) -> int:
    resources = parse_resources(args.resources)
    try:
        from distributed import Worker  # the optional 'dist' extra, loaded only to serve
    except ImportError as err:
        raise DeviceError(
            "vta worker needs the 'dist' extra: pip install 'vta-codesign[dist]'"
        ) from err

    async def serve() -> None:
        async with Worker(
            args.scheduler, resources=resources, nthreads=args.nthreads, name=args.name
        ) as w:
            print(f"vta worker {w.name} at {w.address} with {resources}", flush=True)
            await w.finished()

    asyncio.run(serve())
    return 0


def register_deploy(subparsers: argparse._SubParsersAction) -> None:
    """Add `deploy` to the vta command (entry point group `vta.commands`)."""
    p = subparsers.add_parser("deploy", help="copy Programs/models and an overlay to a board, run")
    p.add_argument("artifact", nargs="+", help="Program (.npz) or compiled model to run there")
    p.add_argument("--host", required=True, help="the board, as ssh knows it (xilinx@pynq)")
    p.add_argument("--dir", default=DEFAULT_REMOTE_DIR, help="directory on the board")
    p.add_argument("--bitstream", help="local directory with vta.bit and vta.hwh to copy")
    p.add_argument("--device", default="pynq", help="device to run on there (default: pynq)")
    p.add_argument("--remote-vta", default="vta", help="the vta command on the board")
    p.add_argument("--ssh", default="ssh", help="remote shell command (default: ssh)")
    p.add_argument("--scp", default="scp", help="copy command (default: scp)")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    p.set_defaults(func=deploy)


def register_worker(subparsers: argparse._SubParsersAction) -> None:
    """Add `worker` to the vta command (entry point group `vta.commands`)."""
    p = subparsers.add_parser("worker", help="join a Dask cluster to measure on this machine")
    p.add_argument("scheduler", help="Dask scheduler address (tcp://HOST:8786)")
    p.add_argument("--resources", default="pynq=1", help="NAME=AMOUNT,... (default: pynq=1)")
    p.add_argument("--nthreads", type=int, default=1, help="jobs at once (default: 1)")
    p.add_argument("--name", help="worker name (default: Dask's)")
    p.set_defaults(func=worker)
