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
from collections.abc import Sequence
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


def deploy(
    artifacts: Sequence[str | Path],
    host: str,
    remote_dir: str = DEFAULT_REMOTE_DIR,
    bitstream: str | Path | None = None,
    device: str = "pynq",
    remote_vta: str = "vta",
    ssh: str = "ssh",
    scp: str = "scp",
    dry_run: bool = False,
) -> int:
    """Copy the artifacts (and the overlay in the folder `bitstream`) to `remote_dir` on `host`
    and run each there, printing every command first (`dry_run`: only printing them)."""
    paths = [Path(a) for a in artifacts]
    missing = [str(a) for a in paths if not a.exists()]
    if missing:
        raise DeviceError(f"vta deploy: no such artifact {', '.join(missing)}")
    overlay = []
    if bitstream:
        overlay = [Path(bitstream) / name for name in OVERLAY_FILES]
        absent = [str(p) for p in overlay if not p.is_file()]
        if absent:
            raise DeviceError(
                f"vta deploy: the overlay needs {', '.join(absent)} (scripts/build_bitstream)"
            )
    ssh_cmd, scp_cmd = shlex.split(ssh), shlex.split(scp)
    steps = [[*ssh_cmd, host, f"mkdir -p {shlex.quote(remote_dir)}"]]
    copies = [*map(str, paths), *map(str, overlay)]
    steps.append([*scp_cmd, "-r", *copies, f"{host}:{remote_dir}/"])
    commands = remote_commands(paths, remote_dir, remote_vta, bool(overlay), device)
    steps += [[*ssh_cmd, host, command] for command in commands]
    for step in steps:
        print("+ " + shlex.join(step), flush=True)
        if dry_run:
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


def worker(
    scheduler: str, resources: str = "pynq=1", nthreads: int = 1, name: str | None = None
) -> int:
    """Serve as a Dask worker of `scheduler` with `resources` (NAME=AMOUNT,...) until the
    cluster ends it."""
    amounts = parse_resources(resources)
    try:
        from distributed import Worker  # the optional 'dist' extra, loaded only to serve
    except ImportError as err:
        raise DeviceError(
            "vta worker needs the 'dist' extra: pip install 'vta-codesign[dist]'"
        ) from err

    async def serve() -> None:
        async with Worker(scheduler, resources=amounts, nthreads=nthreads, name=name) as w:
            print(f"vta worker {w.name} at {w.address} with {amounts}", flush=True)
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
    p.set_defaults(func=_cmd_deploy)


def register_worker(subparsers: argparse._SubParsersAction) -> None:
    """Add `worker` to the vta command (entry point group `vta.commands`)."""
    p = subparsers.add_parser("worker", help="join a Dask cluster to measure on this machine")
    p.add_argument("scheduler", help="Dask scheduler address (tcp://HOST:8786)")
    p.add_argument("--resources", default="pynq=1", help="NAME=AMOUNT,... (default: pynq=1)")
    p.add_argument("--nthreads", type=int, default=1, help="jobs at once (default: 1)")
    p.add_argument("--name", help="worker name (default: Dask's)")
    p.set_defaults(func=_cmd_worker)


def _cmd_deploy(a: argparse.Namespace) -> int:
    return deploy(
        a.artifact, a.host, a.dir, a.bitstream, a.device, a.remote_vta, a.ssh, a.scp, a.dry_run
    )


def _cmd_worker(a: argparse.Namespace) -> int:
    return worker(a.scheduler, a.resources, a.nthreads, a.name)
