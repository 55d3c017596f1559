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
@pytest.mark.skipif(
    shutil.which("yosys") is None, reason="yosys missing (scripts/synth_report installs it)"
)
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
