"""The default configuration synthesizes (yosys synth_xilinx), fits the Zynq-7020 with >= 20%
LUT headroom, and its estimated critical path (hw.timing) allows >= 120 MHz: a 20% margin over
the configured 100 MHz."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

VTA = Path(sys.executable).parent / "vta"  # the command of this environment


@pytest.mark.slow
@pytest.mark.rtl
@pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys missing (apt-get install yosys)")
def test_default_config_fits_the_xc7z020():
    run = subprocess.run(
        [str(VTA), "synth-report", "--config", "pynq", "--json"],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    report = json.loads(run.stdout)
    print(json.dumps(report["used"]))
    used, capacity = report["used"], report["capacity"]
    assert used["LUT"] > 1000 and used["FF"] > 1000 and used["BRAM36"] > 0  # a real netlist
    for resource, limit in capacity.items():
        assert used[resource] <= limit, f"{resource}: {used[resource]} > {limit}"
    assert report["fits"] and run.returncode == 0
    assert report["lut_headroom"] >= 0.20, report["lut_headroom"]
    path = report["critical_path"]
    print(json.dumps(path))
    assert path["fmax_mhz"] >= 1.2 * path["clock_mhz"], path


def test_report_without_yosys(monkeypatch, capsys):
    """`synthesis_report` takes plain arguments and returns the report; `vta synth-report`
    prints it (here over a made-up synthesis, so no yosys is needed)."""
    from hw import synth
    from hw.timing import CriticalPath
    from vta.cli import main

    path = CriticalPath(8.0, 5, [("LUT6", "a"), ("FDRE", "b")], ["core/x", "core/y"])
    slow = [CriticalPath(9.0, 6, [], ["core/p", "core/q"])]
    totals = {"LUT": 26_600.0, "FF": 1000.0, "BRAM36": 10.0, "DSP": 300.0}
    monkeypatch.setattr(synth, "synthesize", lambda cfg, log: (totals, {"LUT6": 7}, path, slow))
    report = synth.synthesis_report("pynq")
    assert report["lut_headroom"] == 0.5 and not report["fits"]  # 300 DSPs of 220
    assert report["critical_path"]["fmax_mhz"] == 125.0
    assert report["critical_path"]["slow_signals"][0]["from"] == "core/p"
    assert main(["synth-report", "--config", "pynq"]) == 1
    out = capsys.readouterr().out
    assert "DOES NOT FIT; LUT headroom 50%" in out and "Fmax 125 MHz (+25% against 100 MHz)" in out
    assert "    9.00 ns   6 cells  core/p -> core/q" in out
    assert main(["synth-report", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["used"] == totals


def test_missing_yosys_is_a_one_line_error_that_installs_nothing(monkeypatch, capsys):
    """Without yosys the report says what to install, as a one-line DeviceError (the CLI: one
    stderr line, exit 1), and never runs a package manager or any other process."""
    from hw import synth
    from vta.cli import main
    from vta.errors import DeviceError

    which = shutil.which
    monkeypatch.setattr(
        shutil, "which", lambda cmd, *a, **k: None if cmd == "yosys" else which(cmd, *a, **k)
    )

    def no_process(*args, **kwargs):
        pytest.fail(f"a process was started: {args} {kwargs}")

    monkeypatch.setattr(subprocess, "run", no_process)
    monkeypatch.setattr(subprocess, "Popen", no_process)
    with pytest.raises(DeviceError) as err:
        synth.synthesis_report("pynq")
    message = str(err.value)
    assert "\n" not in message and "yosys" in message and "apt-get install yosys" in message
    assert main(["synth-report", "--config", "pynq"]) == 1
    out, stderr = capsys.readouterr()
    assert out == "" and stderr.strip().splitlines() == [f"vta synth-report: error: {message}"]
