"""The `vta sim` and `vta hw-config` subcommands and the CLI's error handling."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from testkit.examples import blocked_gemm
from vta.cli import main


@pytest.fixture(scope="module")
def gemm_file(tmp_path_factory):
    example = blocked_gemm("pynq", batch=4, in_channels=64, out_channels=64, threads=2)
    path = tmp_path_factory.mktemp("prog") / "gemm.npz"
    example.program.save(path)
    return example, path


@pytest.mark.parametrize("device", ["sim", "fsim"])
def test_sim_json_and_dump_dram(gemm_file, tmp_path, capsys, device):
    example, path = gemm_file
    dump = tmp_path / "dram.bin"
    assert main(["sim", str(path), "--device", device, "--json", "--dump-dram", str(dump)]) == 0
    stats = json.loads(capsys.readouterr().out)
    for key in ("cycles", "instructions", "utilization", "gops", "modules"):
        assert key in stats
    assert stats["instructions"] == len(example.program)
    assert (stats["cycles"] is None) == (device == "fsim")
    if device == "sim":
        assert stats["cycles"] > 0 and 0 < stats["utilization"] <= 1
        assert set(stats["modules"]) == {"fetch", "load", "compute", "store"}
    final = np.frombuffer(dump.read_bytes(), dtype=np.uint8)
    assert final.size == example.program.dram.size
    np.testing.assert_array_equal(example.program.view("c", final), example.expected["c"])


def test_sim_report_and_trace(gemm_file, tmp_path, capsys):
    _, path = gemm_file
    trace = tmp_path / "trace.json"
    assert main(["sim", str(path), "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "cycles" in out and "utilization" in out and "compute" in out
    assert json.loads(trace.read_text())


def test_trace_needs_cycle_device(gemm_file, capsys):
    _, path = gemm_file
    assert main(["sim", str(path), "--device", "fsim", "--trace", "t.json"]) == 1
    assert "--trace" in capsys.readouterr().err


def test_bad_program_file_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file")
    assert main(["sim", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "bad.npz" in err and "error" in err


def test_unknown_device_and_config(gemm_file, capsys):
    _, path = gemm_file
    assert main(["sim", str(path), "--device", "nope"]) == 1
    assert "unknown device 'nope'" in capsys.readouterr().err
    assert main(["hw-config", "--config", "nope"]) == 1
    assert "unknown configuration 'nope'" in capsys.readouterr().err


def test_hw_config_writes_header(tmp_path):
    out = tmp_path / "vta_config.vh"
    assert main(["hw-config", "--config", "tiny", "--out", str(out)]) == 0
    text = out.read_text()
    assert re.search(r"VTA_BLOCK_IN\b\D*\b4\b", text)  # the tiny preset's 1x4 core
    assert "1x4_i8w8a32_12_11_12_12" in text
