"""For the deploy tests: the seeded DQN network compiled for the accelerator with its CPU
layers built as for a board (another x86-64 triple: the thread pool linked in, no LLVM needed
to run it), which runs here."""

from pathlib import Path

import numpy as np
import pytest

from compiler import zoo
from compiler.errors import CodegenError
from compiler.graph.objects import cross_linker
from vta.cli import main

BOARD_STYLE = "llvm -mtriple=x86_64-pc-linux-gnu"


def board_style_dqn(folder: Path) -> tuple[Path, Path]:
    """The compiled folder and an inputs file in `folder` (skips where no linker is)."""
    try:
        cross_linker("x86_64-pc-linux-gnu")
    except CodegenError as err:
        pytest.skip(str(err))
    (folder / "dqn.onnx").write_bytes(zoo.dqn(seed=0))
    np.savez(folder / "in.npz", **zoo.random_inputs("dqn"))
    compiled = folder / "dqn.vta"
    args = ["compile", str(folder / "dqn.onnx"), "--target", "vta", "--host-target", BOARD_STYLE]
    assert main([*args, "-o", str(compiled)]) == 0
    return compiled, folder / "in.npz"
