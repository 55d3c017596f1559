"""The board build (hw/fpga/*.tcl): tclint-clean, and a tclsh dry run issues the Vivado
commands a working overlay needs for every board; the RTL top has every AXI signal the block
design connects; without Vivado the build says so in one line."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hw.bitstream import (
    BOARDS,
    CONTROL_SLAVE,
    FPGA_DIR,
    MEMORY_MASTERS,
    board_for,
    check_build,
    dry_run,
    main,
)
from hw.build import RTL_DIR
from vta.config import VTAConfig

needs_tclsh = pytest.mark.skipif(shutil.which("tclsh") is None, reason="tclsh missing (Debian tcl)")

READ = "arid araddr arlen arsize arburst arlock arcache arprot arqos arvalid arready".split()
READ += "rid rdata rresp rlast rvalid rready".split()
WRITE = "awid awaddr awlen awsize awburst awlock awcache awprot awqos awvalid awready".split()
WRITE += "wdata wstrb wlast wvalid wready bid bresp bvalid bready".split()
LITE = "awaddr awprot awvalid awready wdata wstrb wvalid wready bresp bvalid bready".split()
LITE += "araddr arprot arvalid arready rdata rresp rvalid rready".split()


def test_tcl_is_tclint_clean():
    tclint = shutil.which("tclint", path=str(Path(sys.executable).parent))
    if tclint is None:
        pytest.skip("tclint (PyPI) missing")
    files = sorted(str(p) for p in FPGA_DIR.iterdir() if p.suffix in (".tcl", ".xdc"))
    run = subprocess.run([tclint, *files], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


@needs_tclsh
@pytest.mark.parametrize("board", sorted(BOARDS))
def test_dry_run_issues_a_complete_build(board):
    spec = BOARDS[board]
    cfg = VTAConfig.load(spec.preset)
    checks = check_build(dry_run(spec, cfg), spec, cfg)
    assert len(checks) >= 20
    failed = [name for name, ok in checks if not ok]
    assert not failed, failed


@needs_tclsh
def test_the_checks_catch_a_wrong_build():
    spec = BOARDS["pynq-z1"]
    cfg = VTAConfig.load("pynq")
    calls = dry_run(spec, cfg)
    moved = [[w.replace("0x40000000", "0x43C00000") for w in call] for call in calls]
    failed = {name for name, ok in check_build(moved, spec, cfg) if not ok}
    assert failed == {"registers at 0x40000000"}
    faster = cfg.replace(clock_mhz=150, log_bus_width=7)
    failed = {n for n, ok in check_build(calls, spec, faster) if not ok}
    assert failed == {"fabric clock 150 MHz", "S_AXI_ACP as wide as the 128-bit bus"}
    unwired = [c for c in calls if "m_axi_store" not in " ".join(c)]
    assert not dict(check_build(unwired, spec, cfg))[
        "memory masters through the SmartConnect to S_AXI_ACP"
    ]


def test_rtl_top_has_every_axi_signal_the_block_design_connects():
    text = (RTL_DIR / "vta_top.v").read_text()
    ports = set(
        re.findall(r"^\s*(?:input|output)\s+(?:wire|reg)\s*(?:\[[^\]]*\])?\s*(\w+)", text, re.M)
    )
    for master in MEMORY_MASTERS:
        names = WRITE if master.endswith("store") else READ
        assert {f"{master}_{n}" for n in names} <= ports, master
    assert {f"{CONTROL_SLAVE}_{n}" for n in LITE} <= ports
    assert {"clk", "rst", "irq"} <= ports


def test_boards_follow_their_presets():
    assert board_for(VTAConfig.load("pynq")).name == "pynq-z1"
    assert board_for(VTAConfig.load("ultra96")).memory_port == "S_AXI_HPC0_FPD"
    for board in BOARDS.values():
        assert VTAConfig.load(board.preset).fpga_part == board.part, board.name


def test_without_vivado_the_build_says_so(capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["pynq"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "needs Vivado" in err
