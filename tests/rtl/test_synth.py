"""The default configuration synthesizes (yosys synth_xilinx) and fits the Zynq-7020."""

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
