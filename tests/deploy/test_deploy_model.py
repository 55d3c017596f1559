"""`vta deploy DIR --inputs IN.npz --output OUT.npz` end to end: the model and its inputs
copied to a 'board', run there with `vta run` on the board's device, the outputs and the report
brought back, through `ssh` and `scp` stand-ins on PATH that run the board's commands on this
machine in a scratch folder (so the model's CPU half is compiled for this machine, as for a
board: another triple than the host's, the thread pool linked in; the boards' Arm builds are
tests/deploy/test_board_cpu.py's)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from testkit.board import board_style_dqn
from vta.cli import main
from vta.config import VTAConfig

VENV_BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
# the board's `vta`: pynq 4 on this machine's Python, or a PYNQ v3 image's (Python 3.10, numpy
# 1.21, pynq 3, no LLVM); ./scripts/test makes both
BOARD_VTA = {
    "pynq 4": ROOT / ".venv-pynq" / "bin" / "vta",
    "PYNQ v3 image": ROOT / ".venv-board" / "bin" / "vta",
}

SSH = """#!/bin/sh
# ssh HOST COMMAND: COMMAND run by the shell in the board's home folder
shift
cd {home} && exec sh -c "$*"
"""
SCP = """#!{python}
# scp [-r] SOURCE... DEST: HOST:PATH is PATH in the board's home folder
import os, shutil, sys
home = {home!r}
paths = [os.path.join(home, a.split(":", 1)[1]) if ":" in a else a
         for a in sys.argv[1:] if a != "-r"]
*sources, dest = paths
for source in sources:
    target = os.path.join(dest, os.path.basename(source)) if os.path.isdir(dest) else dest
    if os.path.isdir(source):
        shutil.copytree(source, target, dirs_exist_ok=True)
    else:
        shutil.copyfile(source, target)
"""


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> tuple[Path, Path]:
    """The seeded DQN network compiled for the accelerator (CPU layers for this machine, built
    as for a board) and an inputs file."""
    return board_style_dqn(tmp_path_factory.mktemp("model"))


@pytest.fixture
def board(tmp_path, monkeypatch) -> Path:
    """The board's home folder; `ssh`, `scp` and `vta` on PATH act on it."""
    home, bin_dir = tmp_path / "board", tmp_path / "bin"
    home.mkdir()
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(SSH.format(home=home))
    (bin_dir / "scp").write_text(SCP.format(python=sys.executable, home=str(home)))
    for name in ("ssh", "scp"):
        (bin_dir / name).chmod(0o755)
    (bin_dir / "vta").symlink_to(VENV_BIN / "vta")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return home


def _deploy(model: tuple[Path, Path], back: Path, device: str, *extra: str) -> int:
    compiled, inputs = model
    args = ["deploy", str(compiled), "--host", "xilinx@pynq", "--inputs", str(inputs)]
    return main([*args, "--output", str(back), "--device", device, "--json", *extra])


@pytest.mark.parametrize("device", ["fsim", "sim"])
def test_deploy_runs_the_model_on_its_inputs_and_brings_the_outputs_back(
    model, board, tmp_path, capfd, device
):
    compiled, inputs = model
    here = tmp_path / "here.npz"
    run = ["run", str(compiled), "--inputs", str(inputs), "--output", str(here), "--json"]
    assert main([*run, "--device", device]) == 0
    local = json.loads(capfd.readouterr().out.strip().splitlines()[-1])
    back = tmp_path / "back.npz"
    assert _deploy(model, back, device) == 0
    report = json.loads(capfd.readouterr().out.strip().splitlines()[-1])
    assert (board / "vta-deploy" / compiled.name / "model.json").is_file()
    assert (board / "vta-deploy" / inputs.name).is_file()
    with np.load(here) as want, np.load(back) as got:
        assert want.files == got.files
        assert all(np.array_equal(want[k], got[k]) for k in want.files)
    assert report["device"] == device and report["bit_exact"]
    assert report["cycles"] == local["cycles"]
    if device == "fsim":  # no cycles, no latency
        assert report["latency_ms"] is None
    else:  # the accelerator's cycles at the config's 100 MHz, then the CPU parts
        accelerator_ms = report["cycles"] / (VTAConfig.load("pynq").clock_mhz * 1e3)
        want = accelerator_ms + report["cpu_seconds"] * 1e3
        assert report["latency_ms"] == pytest.approx(want)


@pytest.mark.parametrize("image", list(BOARD_VTA))
def test_deploy_on_the_pynq_driver_over_the_verilated_rtl(model, board, tmp_path, capfd, image):
    """The board's `vta` is .venv-pynq's (pynq 4 needs numpy < 2) or .venv-board's (a PYNQ v3
    image's Python): the `pynq` driver's code on the `pynq-rtl` stand-in board."""
    remote = BOARD_VTA[image]
    if not remote.is_file():
        pytest.skip(f"{remote.parents[1].name} is not set up (./scripts/test makes it)")
    check = subprocess.run([str(remote.with_name("python")), "-c", "import pynq"])
    if check.returncode:
        pytest.skip(f"{remote.parents[1].name} has no pynq")
    compiled, inputs = model
    here = tmp_path / "here.npz"
    assert main(["run", str(compiled), "--inputs", str(inputs), "--output", str(here)]) == 0
    back = tmp_path / "back.npz"
    assert _deploy(model, back, "pynq-rtl", "--remote-vta", str(remote)) == 0
    report = json.loads(capfd.readouterr().out.strip().splitlines()[-1])
    with np.load(here) as want, np.load(back) as got:
        assert all(np.array_equal(want[k], got[k]) for k in want.files)
    assert report["device"] == "pynq-rtl" and report["bit_exact"] and report["cycles"] > 0


def test_deploy_of_a_model_needs_its_inputs(model, tmp_path, capsys):
    compiled, inputs = model
    assert main(["deploy", str(compiled), "--host", "b"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "give --inputs IN.npz" in err
    args = ["deploy", str(compiled), str(compiled), "--host", "b", "--inputs", str(inputs)]
    assert main([*args, "--output", str(tmp_path / "o.npz")]) == 1
    assert "--output takes one model's outputs, not 2" in capsys.readouterr().err
    assert main(["deploy", str(compiled), "--host", "b", "--inputs", str(tmp_path / "x")]) == 1
    assert "no such inputs file" in capsys.readouterr().err
