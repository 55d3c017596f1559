"""`vta deploy` (copy + run over ssh/scp, here through local stand-ins for ssh and scp that run
and copy on this machine) and `vta worker` (a Dask worker with board resources)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sim.cycle import schedule
from testkit.examples import all_examples
from vta.cli import main
from vta.device import get_device
from vta.pynq_deploy import ModelRun, parse_resources, remote_commands

VTA = str(Path(sys.executable).with_name("vta"))


def stand_ins(tmp_path: Path) -> tuple[str, str]:
    """An `ssh HOST COMMAND` that runs COMMAND here, an `scp -r FILES HOST:DIR/` that copies."""
    ssh, scp = tmp_path / "fake_ssh", tmp_path / "fake_scp"
    ssh.write_text('#!/bin/sh\nshift\nexec sh -c "$*"\n')
    scp.write_text(
        '#!/bin/sh\n[ "$1" = -r ] && shift\nfor last; do :; done\n'
        'dest="${last#*:}"\nwhile [ "$#" -gt 1 ]; do cp -r "$1" "$dest"; shift; done\n'
    )
    for path in (ssh, scp):
        path.chmod(0o755)
    return str(ssh), str(scp)


def test_deploy_copies_and_runs_with_the_same_cli(tmp_path, capfd):
    program = all_examples("tiny")[0].program
    artifact = tmp_path / "save_load.npz"
    program.save(artifact)
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    for name in ("vta.bit", "vta.hwh"):
        (overlay / name).write_bytes(b"overlay " + name.encode())
    board = tmp_path / "board"
    ssh, scp = stand_ins(tmp_path)
    args = ["deploy", str(artifact), "--host", "xilinx@pynq", "--dir", str(board)]
    args += ["--bitstream", str(overlay), "--device", "sim", "--remote-vta", VTA]
    assert main([*args, "--ssh", ssh, "--scp", scp]) == 0
    out, err = capfd.readouterr()
    assert (board / "save_load.npz").is_file() and (board / "vta.bit").is_file()
    assert (board / "vta.hwh").read_bytes() == b"overlay vta.hwh"
    _, stats = get_device("sim").execute(program, program.dram)
    assert f"cycles          {stats.cycles:,}" in out and "VTA_BITSTREAM=" in err


def test_deploy_runs_compiled_models_with_vta_run():
    artifacts = [Path("resnet18.vtam"), Path("gemm.npz")]
    model_run = ModelRun(Path("/here/in.npz"), output=True, repeat=20, json=True)
    commands = remote_commands(artifacts, "d", "vta", True, "pynq", model_run)
    assert commands[0] == (
        "cd d && VTA_BITSTREAM=d/vta.bit vta run resnet18.vtam --device pynq --inputs in.npz "
        "--output resnet18.vtam.outputs.npz --repeat 20 --json"
    )
    assert commands[1].endswith("vta sim gemm.npz --device pynq")
    unchecked = ModelRun(Path("/here/in.npz"), check=False)
    (command,) = remote_commands(artifacts[:1], "d", "vta", False, "pynq", unchecked)
    assert command == "cd d && vta run resnet18.vtam --device pynq --inputs in.npz --no-check"


def test_deploy_errors_are_one_line(tmp_path, capsys):
    assert main(["deploy", str(tmp_path / "nothing.npz"), "--host", "b"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no such artifact" in err
    artifact = tmp_path / "p.npz"
    all_examples("tiny")[0].program.save(artifact)
    assert main(["deploy", str(artifact), "--host", "b", "--bitstream", str(tmp_path)]) == 1
    assert "vta.bit" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["pynq", "pynq=0", "=1", "pynq=x"])
def test_resources_are_checked(text):
    from vta.errors import DeviceError

    with pytest.raises(DeviceError, match="NAME=AMOUNT"):
        parse_resources(text)


def test_worker_with_board_resources_takes_board_jobs():
    distributed = pytest.importorskip("distributed")
    from compiler.tune.pool import DaskPool

    with distributed.LocalCluster(
        n_workers=0, protocol="tcp", host="127.0.0.1", scheduler_port=0, dashboard_address=None
    ) as cluster:
        worker = subprocess.Popen(
            [VTA, "worker", cluster.scheduler_address, "--resources", "pynq=1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            client = distributed.Client(cluster)
            deadline = time.monotonic() + 60
            while not client.scheduler_info()["workers"] and time.monotonic() < deadline:
                time.sleep(0.2)
            info = list(client.scheduler_info()["workers"].values())
            assert info and info[0]["resources"] == {"pynq": 1.0}
            program = all_examples("tiny")[0].program
            pool = DaskPool(client, resources={"pynq": 1})
            timed, where = pool.map(schedule, [(program,)], 60) + pool.map(os.getpid, [()], 60)
            assert timed.value.cycles == get_device("sim").execute(program, program.dram)[1].cycles
            assert where.value == worker.pid  # the board worker ran the jobs
            client.close()
        finally:
            worker.terminate()
            worker.wait(timeout=30)


def test_pynq_device_without_the_pynq_package_says_how_to_get_it(tmp_path, capsys):
    try:
        import pynq  # noqa: F401

        pytest.skip("pynq is installed here (the message is for environments without it)")
    except ImportError:
        pass
    path = tmp_path / "p.npz"
    all_examples("tiny")[0].program.save(path)
    assert main(["sim", str(path), "--device", "pynq-rtl"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "numpy < 2" in err and ".venv-pynq" in err
