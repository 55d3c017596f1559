"""Build the VTA overlay (bitstream + .hwh) for a PYNQ board with Vivado (hw/fpga/*.tcl), or
dry-run the build under plain tclsh and check the Vivado commands it would issue.

`BOARDS` is the one table of board facts (part, processing system, the PS ports the block
design uses, the register block's address); the parts' resources and memory-port width are
hw/parts.py's. The TCL receives all of it as arguments. The dry
run (`dry_run`, `check_build`) needs only tclsh: it records every Vivado command and checks
the part, the IP packaging, the clock, reset, control and memory connections, the addresses,
the constraints and the exported outputs (tests/fpga/).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from vta.config import VTAConfig
from vta.errors import DeviceError
from vta.hwconfig import generate_header
from vta.regmap import IP_NAME

from .build import TOP, rtl_sources
from .parts import part_for

FPGA_DIR = Path(__file__).resolve().parent / "fpga"
BUILD_SCRIPT = FPGA_DIR / "build.tcl"
DRY_RUN_SCRIPT = FPGA_DIR / "dryrun.tcl"
MEMORY_MASTERS = ("m_axi_fetch", "m_axi_load", "m_axi_compute", "m_axi_store")
CONTROL_SLAVE = "s_axi_control"
PS_CLOCK = {"ps7": "ps/FCLK_CLK0", "psu": "ps/pl_clk0"}  # the PS's first fabric clock
# The setting of the memory port's width (a Zynq-7000's ACP has none: it is always as wide as
# the part's memory port, hw/parts.py).
PORT_WIDTH_SETTING = {"psu": "CONFIG.PSU__SAXIGP0__DATA_WIDTH"}
CLOCKED_PINS = (f"{IP_NAME}/clk", "mem_sc/aclk", "ctrl_ic/ACLK", "rst/slowest_sync_clk")


@dataclasses.dataclass(frozen=True)
class Board:
    """A board the block design targets."""

    name: str
    part: str
    board_part: str  # Vivado board file (DDR and MIO presets of the PS)
    ps: str  # "ps7" (Zynq-7000) or "psu" (Zynq UltraScale+)
    preset: str  # the VTAConfig preset built for it
    control_port: str  # PS master port reaching the register block
    control_address: int
    memory_port: str  # PS slave port the accelerator's masters share (cache-coherent)
    clock_setting: str  # the PS configuration key of the first fabric clock in MHz


BOARDS = {
    "pynq-z1": Board(
        "pynq-z1",
        "xc7z020clg400-1",
        "www.digilentinc.com:pynq-z1:part0:1.0",
        "ps7",
        "pynq",
        "M_AXI_GP0",
        0x4000_0000,
        "S_AXI_ACP",
        "CONFIG.PCW_FPGA0_PERIPHERAL_FREQMHZ",
    ),
    "pynq-z2": Board(
        "pynq-z2",
        "xc7z020clg400-1",
        "tul.com.tw:pynq-z2:part0:1.0",
        "ps7",
        "pynq",
        "M_AXI_GP0",
        0x4000_0000,
        "S_AXI_ACP",
        "CONFIG.PCW_FPGA0_PERIPHERAL_FREQMHZ",
    ),
    "ultra96": Board(
        "ultra96",
        "xczu3eg-sbva484-1-e",
        "avnet.com:ultra96v2:part0:1.2",
        "psu",
        "ultra96",
        "M_AXI_HPM0_FPD",
        0xA000_0000,
        "S_AXI_HPC0_FPD",
        "CONFIG.PSU__CRL_APB__PL0_REF_CTRL__FREQMHZ",
    ),
}
DEFAULT_BOARD = {"pynq": "pynq-z1", "ultra96": "ultra96"}  # per VTAConfig.target


def board_for(cfg: VTAConfig, name: str | None = None) -> Board:
    """The named board, or the default one for the config's target."""
    name = name or DEFAULT_BOARD.get(cfg.target)
    if name not in BOARDS:
        raise DeviceError(
            f"no board {name!r} for config {cfg.name!r} (target {cfg.target!r}); "
            f"boards: {', '.join(BOARDS)}"
        )
    return BOARDS[name]


def board_cpu_target(cfg: VTAConfig) -> str | None:
    """The LLVM target of the CPU beside the accelerator on the config's board (its part's
    processing system, hw/parts.py), None for a configuration of no board (the simulators')."""
    if cfg.target not in DEFAULT_BOARD:
        return None
    return part_for(cfg.fpga_part).cpu_target


def tcl_arguments(board: Board, cfg: VTAConfig, header_dir: Path, out_dir: Path, jobs: int):
    """The key=value arguments of hw/fpga/build.tcl."""
    values = {
        "part": board.part,
        "board_part": board.board_part,
        "ps": board.ps,
        "fclk_mhz": f"{cfg.clock_mhz:g}",
        "control_address": f"0x{board.control_address:08X}",
        "control_port": board.control_port,
        "memory_port": board.memory_port,
        "memory_width": str(cfg.bus_width),
        "ip_name": IP_NAME,
        "top": TOP,
        "rtl_dir": str(rtl_sources()[0].parent),
        "header_dir": str(header_dir),
        "out_dir": str(out_dir),
        "jobs": str(jobs),
    }
    return [f"{key}={value}" for key, value in values.items()]


def dry_run(board: Board, cfg: VTAConfig) -> list[list[str]]:
    """Run hw/fpga/build.tcl under tclsh, recording the Vivado commands it would issue."""
    tclsh = shutil.which("tclsh")
    if tclsh is None:
        raise DeviceError("the dry run needs tclsh: apt-get install tcl")
    with tempfile.TemporaryDirectory(prefix="vta-dryrun-") as tmp:
        log = Path(tmp) / "commands.jsonl"
        args = tcl_arguments(board, cfg, Path(tmp) / "header", Path(tmp) / "out", 2)
        run = subprocess.run(
            [tclsh, str(DRY_RUN_SCRIPT), str(BUILD_SCRIPT), *args],
            env={**os.environ, "VTA_DRYRUN_LOG": str(log)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        if run.returncode != 0:
            raise DeviceError(f"the TCL dry run failed:\n{(run.stderr or run.stdout)[-2000:]}")
        calls = [json.loads(line) for line in log.read_text().splitlines()]
    return [[word.replace(tmp, "$TMP") for word in call] for call in calls]


def _has(calls: list[list[str]], *words: str) -> bool:
    """Some call holds all `words` (each equal to one of its arguments)."""
    return any(all(w in call for w in words) for call in calls)


def _settings(calls: list[list[str]]) -> dict[str, str]:
    """Every CONFIG.* value set with set_property -dict."""
    out = {}
    for call in calls:
        if call[:2] == ["set_property", "-dict"]:
            words = call[2].split()
            out.update(zip(words[0::2], words[1::2], strict=False))
    return out


def check_build(calls: list[list[str]], board: Board, cfg: VTAConfig) -> list[tuple[str, bool]]:
    """(check, passed) for every property of the build the dry run can show."""
    settings = _settings(calls)
    ps_ip = "processing_system7" if board.ps == "ps7" else "zynq_ultra_ps_e"
    clock_net = next((c for c in calls if c[0] == "connect_bd_net" and f"{IP_NAME}/clk" in c), [])
    sources = next((c for c in calls if c[:2] == ["add_files", "-norecurse"] and ".v " in c[2]), [])
    enabled = {"ps7": ["CONFIG.PCW_USE_S_AXI_ACP", "CONFIG.PCW_USE_DEFAULT_ACP_USER_VAL"]}.get(
        board.ps, ["CONFIG.PSU__USE__S_AXI_GP0"]
    )
    checks = [
        (f"project for part {board.part}", _has(calls, "create_project", "-part", board.part)),
        (f"board preset {board.board_part}", _has(calls, "set_property", board.board_part)),
        (
            "IP packaged from every RTL source",
            bool(sources) and all(str(p) in sources[2].split() for p in rtl_sources()),
        ),
        ("generated header is a global include", _has(calls, "is_global_include", "true")),
        (
            "AXI interfaces inferred and clocked by clk",
            _has(calls, "ipx::infer_bus_interfaces", "xilinx.com:interface:aximm_rtl:1.0")
            and all(
                _has(calls, "ipx::associate_bus_interfaces", "-busif", bus, "-clock", "clk")
                for bus in (CONTROL_SLAVE, *MEMORY_MASTERS)
            ),
        ),
        ("reset active high", _has(calls, "set_property", "value", "ACTIVE_HIGH")),
        (f"PS is {ps_ip}", any(c[0] == "create_bd_cell" and ps_ip in " ".join(c) for c in calls)),
        (
            f"fabric clock {cfg.clock_mhz:g} MHz",
            settings.get(board.clock_setting) == f"{cfg.clock_mhz:g}",
        ),
        (
            "the PS's fabric clock drives the accelerator, interconnects and PS ports",
            all(pin in clock_net for pin in (PS_CLOCK[board.ps], *CLOCKED_PINS)),
        ),
        (
            f"{board.memory_port} enabled",
            all(settings.get(key) == "1" for key in enabled),
        ),
        (
            f"{board.memory_port} as wide as the {cfg.bus_width}-bit bus",
            str(cfg.bus_width)
            == settings.get(
                PORT_WIDTH_SETTING.get(board.ps, ""), str(part_for(board.part).bus_bits)
            ),
        ),
        (
            f"memory masters through the SmartConnect to {board.memory_port}",
            all(
                _has(calls, "connect_bd_intf_net", f"{IP_NAME}/{m}", f"mem_sc/S{i:02d}_AXI")
                for i, m in enumerate(MEMORY_MASTERS)
            )
            and _has(calls, "connect_bd_intf_net", "mem_sc/M00_AXI", f"ps/{board.memory_port}"),
        ),
        (
            f"{board.control_port} to the control slave",
            _has(calls, "connect_bd_intf_net", f"ps/{board.control_port}", "ctrl_ic/S00_AXI")
            and _has(calls, "connect_bd_intf_net", "ctrl_ic/M00_AXI", f"{IP_NAME}/{CONTROL_SLAVE}"),
        ),
        (
            f"registers at 0x{board.control_address:08X}",
            _has(
                calls,
                "assign_bd_address",
                f"0x{board.control_address:08X}",
                f"{IP_NAME}/{CONTROL_SLAVE}/reg0",
            ),
        ),
        (
            "every master addresses DDR",
            all(_has(calls, "assign_bd_address", f"{IP_NAME}/{m}") for m in MEMORY_MASTERS),
        ),
        (
            "reset from the PS through proc_sys_reset",
            _has(calls, "connect_bd_net", "rst/peripheral_reset", f"{IP_NAME}/rst"),
        ),
        ("interrupt to the PS", _has(calls, "connect_bd_net", f"{IP_NAME}/irq")),
        ("constraints added", any(c[:3] == ["add_files", "-fileset", "constrs_1"] for c in calls)),
        (
            "bitstream written and timing checked",
            _has(calls, "launch_runs", "impl_1", "-to_step", "write_bitstream")
            and _has(calls, "get_property", "SLACK"),
        ),
        (
            "overlay exported as vta.bit + vta.hwh",
            any(c[:2] == ["file", "copy"] and c[-1].endswith("vta.bit") for c in calls)
            and any(c[:2] == ["file", "copy"] and c[-1].endswith("vta.hwh") for c in calls),
        ),
    ]
    return checks


def build(board: Board, cfg: VTAConfig, out_dir: Path, jobs: int) -> Path:
    """Run Vivado (on PATH) on hw/fpga/build.tcl; return the directory with vta.bit/vta.hwh."""
    vivado = shutil.which("vivado")
    if vivado is None:
        raise DeviceError(
            "building a bitstream needs Vivado (2022.2 or later) on PATH, which is not here; "
            "--dry-run checks the TCL with tclsh instead"
        )
    header_dir = out_dir / "header"
    header_dir.mkdir(parents=True, exist_ok=True)
    (header_dir / "vta_config.vh").write_text(generate_header(cfg))
    args = tcl_arguments(board, cfg, header_dir, out_dir, jobs)
    cmd = [vivado, "-mode", "batch", "-nojournal", "-source", str(BUILD_SCRIPT), "-tclargs", *args]
    run = subprocess.run(cmd, cwd=out_dir)
    if run.returncode != 0:
        raise DeviceError(f"Vivado failed (exit {run.returncode}); see {out_dir}/vivado.log")
    return out_dir


def main(argv: list[str] | None = None) -> int:
    """`build_bitstream CONFIG [--board B] [--out DIR] [--jobs N] [--dry-run]`."""
    parser = argparse.ArgumentParser(prog="build_bitstream", description=__doc__.splitlines()[0])
    parser.add_argument("config", help="configuration preset (pynq, ultra96) or file")
    parser.add_argument("--board", choices=sorted(BOARDS), help="default: the config's target")
    parser.add_argument("--out", type=Path, help="output directory (default: build/<config>)")
    parser.add_argument("--jobs", type=int, default=2, help="Vivado jobs")
    parser.add_argument(
        "--dry-run", action="store_true", help="check the TCL under tclsh, without Vivado"
    )
    args = parser.parse_args(argv)
    try:
        cfg = VTAConfig.load(args.config)
        board = board_for(cfg, args.board)
        if args.dry_run:
            checks = check_build(dry_run(board, cfg), board, cfg)
            for name, ok in checks:
                print(f"{'ok  ' if ok else 'FAIL'} {name}")
            return 0 if all(ok for _, ok in checks) else 1
        out = build(board, cfg, (args.out or Path("build") / cfg.name).resolve(), args.jobs)
        print(f"overlay for {board.name} ({cfg.name}): {out / 'vta.bit'}, {out / 'vta.hwh'}")
        return 0
    except DeviceError as err:
        print(f"build_bitstream: error: {err}", file=sys.stderr)
        return 2
