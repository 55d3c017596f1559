"""`vta deploy` and `vta worker`: put work on PYNQ boards.

`vta deploy ARTIFACT... --host USER@BOARD` copies Programs (.npz) or compiled models (from
`vta compile`) and an overlay (vta.bit + vta.hwh) to a board with scp and runs each there with
the same CLI (`vta sim PROGRAM --device pynq`, `vta run MODEL --device pynq --inputs IN.npz`),
printing the board's report; a model's outputs come back with scp (`--output OUT.npz`).
`vta worker SCHEDULER --resources pynq=1` joins a Dask cluster from a board, so
`vta tune --device pynq --scheduler SCHEDULER` measures there. Board setup: docs/pynq.md.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .errors import DeviceError

OVERLAY_FILES = ("vta.bit", "vta.hwh")
DEFAULT_REMOTE_DIR = "vta-deploy"


@dataclass(frozen=True)
class ModelRun:
    """What a compiled model's `vta run` on the board is given: the local inputs file (copied
    beside the model), whether its outputs come back (`output`), `repeat`, `json`, and
    whether each offloaded layer is checked against numpy there (`check`)."""

    inputs: Path | None = None
    output: bool = False
    repeat: int = 0
    json: bool = False
    check: bool = True

    def arguments(self, artifact: Path) -> str:
        """`vta run`'s options after the model's name, as the board's shell reads them."""
        words = ["--inputs", self.inputs.name] if self.inputs else []
        words += ["--output", outputs_name(artifact)] if self.output else []
        words += ["--repeat", str(self.repeat)] if self.repeat else []
        words += ["--json"] if self.json else []
        words += [] if self.check else ["--no-check"]
        return "".join(f" {shlex.quote(w)}" for w in words)


def is_program(artifact: Path) -> bool:
    """A Program file (run by `vta sim`), else a compiled model folder (`vta run`)."""
    return artifact.suffix == ".npz"


def outputs_name(artifact: Path) -> str:
    """The file a model's outputs are written to on the board, in the remote directory."""
    return f"{artifact.name}.outputs.npz"


def remote_commands(
    artifacts: list[Path],
    remote_dir: str,
    remote_vta: str,
    with_overlay: bool,
    device: str,
    model_run: ModelRun = ModelRun(),
) -> list[str]:
    """The shell commands run on the board: one `vta` run per artifact, in `remote_dir`."""
    env = ""
    if with_overlay:
        env = f"VTA_BITSTREAM={shlex.quote(str(PurePosixPath(remote_dir) / 'vta.bit'))} "
    out = []
    for artifact in artifacts:
        command = "sim" if is_program(artifact) else "run"
        options = "" if is_program(artifact) else model_run.arguments(artifact)
        out.append(
            f"cd {shlex.quote(remote_dir)} && {env}{remote_vta} {command} "
            f"{shlex.quote(artifact.name)} --device {shlex.quote(device)}{options}"
        )
    return out


def _check_model_run(
    paths: list[Path], inputs: str | Path | None, output: str | Path | None, repeat: int
) -> None:
    """DeviceError unless every model has inputs, `output` names one model's outputs and
    `repeat` is a count."""
    if repeat < 0:
        raise DeviceError(f"vta deploy: --repeat {repeat}: give a count of runs >= 1")
    models = [p for p in paths if not is_program(p)]
    if models and not inputs:
        raise DeviceError(f"vta deploy: {models[0]} is a compiled model: give --inputs IN.npz")
    if inputs and not Path(inputs).is_file():
        raise DeviceError(f"vta deploy: no such inputs file {inputs}")
    if output and len(models) != 1:
        raise DeviceError(f"vta deploy: --output takes one model's outputs, not {len(models)}")


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
    inputs: str | Path | None = None,
    output: str | Path | None = None,
    repeat: int = 0,
    json: bool = False,
    check: bool = True,
) -> int:
    """Copy the artifacts (and the overlay in the folder `bitstream`, the `inputs` file the
    models run on) to `remote_dir` on `host` and run each there (a model with `repeat`, `json`
    and, unless `check`, `--no-check` as `vta run` takes them), then copy the model's outputs
    back to `output`, printing every command first to stderr (`dry_run`: only printing them)."""
    paths = [Path(a) for a in artifacts]
    missing = [str(a) for a in paths if not a.exists()]
    if missing:
        raise DeviceError(f"vta deploy: no such artifact {', '.join(missing)}")
    _check_model_run(paths, inputs, output, repeat)
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
    copies = [*map(str, paths), *map(str, overlay), *([str(inputs)] if inputs else [])]
    steps.append([*scp_cmd, "-r", *copies, f"{host}:{remote_dir}/"])
    model_run = ModelRun(Path(inputs) if inputs else None, bool(output), repeat, json, check)
    commands = remote_commands(paths, remote_dir, remote_vta, bool(overlay), device, model_run)
    steps += [[*ssh_cmd, host, command] for command in commands]
    if output:
        (model,) = [p for p in paths if not is_program(p)]
        remote = PurePosixPath(remote_dir) / outputs_name(model)
        steps.append([*scp_cmd, f"{host}:{remote}", str(output)])
    for step in steps:
        print("+ " + shlex.join(step), file=sys.stderr, flush=True)
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
    p.add_argument("--inputs", help="a model's inputs (.npz by name), copied to the board")
    p.add_argument("--output", help="copy the model's outputs (.npz) from the board to here")
    p.add_argument("--repeat", type=int, default=0, help="vta run --repeat N there")
    p.add_argument("--json", action="store_true", help="vta run --json there")
    p.add_argument("--no-check", action="store_true", help="vta run --no-check there")
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
        a.artifact, a.host, a.dir, a.bitstream, a.device, a.remote_vta, a.ssh, a.scp, a.dry_run,
        a.inputs, a.output, a.repeat, a.json, not a.no_check,
    )  # fmt: skip


def _cmd_worker(a: argparse.Namespace) -> int:
    return worker(a.scheduler, a.resources, a.nthreads, a.name)
