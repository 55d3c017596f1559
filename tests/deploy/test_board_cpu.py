"""A model's CPU half compiled for its board's CPU (a PYNQ's 32-bit Cortex-A9, an Ultra96's
Cortex-A53): ELF shared libraries of the board's machine that run under qemu-user, through a C
harness cross-compiled for the board, with the outputs of this machine's build to 1e-5 of
max|output|."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import compiler
from compiler import te, zoo
from compiler.codegen.target import Target
from compiler.errors import CodegenError
from compiler.graph.accel_api import board_target
from compiler.graph.build_onnx import compile_model
from compiler.graph.executor import Step, compile_graph
from compiler.graph.graph_module import BoardGraph, GraphModule, Slot, TensorSpec
from compiler.graph.objects import cross_linker
from testkit.emulate import ELF_MACHINE, elf_kind, missing, run_emulated
from vta.cli import main

BOARD_FAMILY = {"pynq": "arm", "ultra96": "aarch64"}


@pytest.fixture(scope="module")
def dqn(tmp_path_factory) -> tuple[Path, dict[str, np.ndarray]]:
    """The seeded DQN network (compiler/zoo.py) and an input for it."""
    folder = tmp_path_factory.mktemp("dqn")
    path = folder / "dqn.onnx"
    path.write_bytes(zoo.dqn(seed=0))
    return path, zoo.random_inputs("dqn")


def _board(config: str) -> str:
    """The board's CPU target; skips the test without a cross linker or an emulator for it."""
    target = board_target(config, None)
    triple = Target.parse(target).triple
    try:
        cross_linker(triple)
    except CodegenError as e:
        pytest.skip(str(e))
    reason = missing(triple)
    if reason:
        pytest.skip(reason)
    return target


def _close(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> float:
    """The largest output error relative to the output's largest magnitude."""
    assert got.keys() == want.keys()
    return max(float(np.abs(got[k] - want[k]).max() / np.abs(want[k]).max()) for k in want)


def test_the_board_cpu_is_the_default_only_for_a_board_configuration_given():
    assert board_target(None, None) == "llvm"  # the default configuration runs here
    assert board_target("tiny", None) == "llvm"  # a simulator's configuration
    assert board_target("pynq", "native") == "llvm"
    assert "-mtriple=armv7a-linux-gnueabihf -mcpu=cortex-a9" in board_target("pynq", None)
    assert "-mtriple=aarch64-linux-gnu -mcpu=cortex-a53" in board_target("ultra96", None)
    assert board_target("pynq", "llvm -mcpu=haswell") == "llvm -mcpu=haswell"


@pytest.mark.parametrize("config", ["pynq", "ultra96"])
def test_seeded_dqn_for_the_board_cpu_matches_this_machine_under_emulation(dqn, tmp_path, config):
    path, inputs = dqn
    board = compile_model(path, target=_board(config))
    assert isinstance(board, BoardGraph)
    with pytest.raises(CodegenError, match="save it and run it there"):
        board.run(inputs)
    board.save(tmp_path / "graph")
    assert elf_kind(tmp_path / "graph" / "graph.so") == ELF_MACHINE[BOARD_FAMILY[config]]
    with pytest.raises(CodegenError, match="not this x86_64 machine"):
        GraphModule.load(tmp_path / "graph")
    here = compile_model(path).run(inputs)
    assert _close(run_emulated(tmp_path / "graph", inputs, threads=2), here) <= 1e-5


def test_vta_compile_for_pynq_puts_arm_cpu_layers_beside_the_programs(dqn, tmp_path, capsys):
    target = _board("pynq")
    path, inputs = dqn
    np.savez(tmp_path / "in.npz", **inputs)
    board, native = tmp_path / "board", tmp_path / "native"
    args = ["compile", str(path), "--target", "vta", "--config", "pynq", "-o"]
    assert main([*args, str(board)]) == 0 and repr(target) in capsys.readouterr().err
    assert main([*args, str(native), "--host-target", "native"]) == 0
    assert "'llvm'" in capsys.readouterr().err
    segments = sorted(p.parent.name for p in board.glob("cpu*/graph.so"))
    assert segments and all(elf_kind(board / s / "graph.so") == (32, 40) for s in segments)
    assert main(["run", str(board), "--inputs", str(tmp_path / "in.npz")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "armv7a-unknown-linux-gnueabihf" in err
    rng = np.random.default_rng(0)
    for segment in segments:
        specs = json.loads((board / segment / "graph.json").read_text())["inputs"]
        feeds = {s["name"]: rng.standard_normal(s["shape"]).astype(s["dtype"]) for s in specs}
        here = GraphModule.load(native / segment).run(feeds)
        assert _close(run_emulated(board / segment, feeds), here) <= 1e-5


def test_host_target_is_for_the_accelerator_target(dqn, tmp_path, capsys):
    args = ["compile", str(dqn[0]), "-o", str(tmp_path / "c"), "--host-target", "native"]
    assert main(args) == 1
    assert "--host-target applies to --target vta" in capsys.readouterr().err


@pytest.mark.parametrize("config", ["pynq", "ultra96"])
def test_a_heap_buffer_is_allocated_with_the_board_size_t(tmp_path, config):
    """An intermediate buffer above the stack limit comes from aligned_alloc, whose size_t is
    32 bits on the Cortex-A9: 64-bit arguments there asked for nothing and the kernel wrote
    past it."""
    _check_twice_plus_one(_board(config), tmp_path)


def test_zig_cc_links_for_the_board_where_there_is_no_cross_gcc(tmp_path, monkeypatch):
    pytest.importorskip("ziglang", reason="the ziglang package is not installed")
    target, which = _board("pynq"), shutil.which
    monkeypatch.setattr(shutil, "which", lambda cmd: None if cmd.endswith("-gcc") else which(cmd))
    assert cross_linker("armv7a-unknown-linux-gnueabihf")[1:3] == ["-m", "ziglang"]
    _check_twice_plus_one(target, tmp_path)


def _check_twice_plus_one(target: str, folder: Path) -> None:
    """c = a * 2 + 1 through a 1.4 MB intermediate (on the heap), built for `target` and run
    under emulation."""
    a = te.placeholder((600, 600), name="a")
    b = te.compute((600, 600), lambda i, j: a[i, j] * 2, name="b")
    c = te.compute((600, 600), lambda i, j: b[i, j] + 1, name="c")
    func = compiler.lower(te.create_schedule(c.op), [a, c], "twice_plus_one")
    spec = [TensorSpec("a", (600, 600))], [TensorSpec("c", (600, 600))]
    step = Step(func, [Slot("input", 0), Slot("output", 0)])
    compile_graph([step], *spec, [], 0, target).save(folder / "graph")
    x = np.random.default_rng(0).standard_normal((600, 600)).astype(np.float32)
    assert np.array_equal(run_emulated(folder / "graph", {"a": x})["c"], x * 2 + 1)


@pytest.mark.slow
def test_seeded_resnet18_for_the_cortex_a9_matches_this_machine_under_emulation(tmp_path):
    target = _board("pynq")
    path = tmp_path / "resnet18.onnx"
    path.write_bytes(zoo.resnet18(seed=0))
    inputs = zoo.random_inputs("resnet18")
    compile_model(path, target=target).save(tmp_path / "graph")
    here = compile_model(path).run(inputs)
    assert _close(run_emulated(tmp_path / "graph", inputs, threads=2), here) <= 1e-5
