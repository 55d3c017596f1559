"""Argument types and options shared by the compiler's commands: integers and seconds with
bounds, targets, plot files, workloads (OP:ARGS or a ResNet-18 layer name) and models,
`--shape NAME=DIMS`, the target/arch/config/device/db options and the tuner names.

A value an argparse type refuses is a usage error (exit 2); what only the library can judge
(a workload's sizes, a shape against the model) raises the toolkit's errors (exit 1)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import CompilerError, TuningError


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer >= low."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is below the minimum {low}")
        return value

    return parse


def int_in_range(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer from low to high."""

    def parse(text: str) -> int:
        value = int_at_least(low)(text)
        if value > high:
            raise argparse.ArgumentTypeError(f"{value} is above the maximum {high}")
        return value

    return parse


def thread_count(text: str) -> int:
    """An argparse type: a kernel thread count, 1 to `tune.measure.MAX_THREADS`."""
    from ..tune.measure import MAX_THREADS

    return int_in_range(1, MAX_THREADS)(text)


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def target_name(text: str) -> str:
    """An argparse type: a non-empty target string ('llvm', 'llvm -mcpu=...', 'cuda', 'vta')."""
    if not text.split():
        raise argparse.ArgumentTypeError("the target is empty; give llvm, cuda or vta")
    return text


def plot_path(text: str) -> str:
    """An argparse type: an image path whose extension matplotlib writes (checked before any
    work, not after it)."""
    from matplotlib.figure import Figure

    kinds = Figure().canvas.get_supported_filetypes()
    ext = Path(text).suffix.lower().lstrip(".")
    if ext not in kinds:
        raise argparse.ArgumentTypeError(
            f"{text!r}: the extension must be one of {', '.join(sorted(kinds))}"
        )
    return text


def is_vta(target: str) -> bool:
    """Whether `target` (non-empty: `target_name`) is the accelerator."""
    return target.split()[0] == "vta"


def cuda_target(target: str, arch: str | None) -> str:
    """'cuda' with --arch sm_90 -> 'cuda -arch=sm_90' (checked); other targets unchanged."""
    if arch is None:
        return target
    from ..codegen.nvptx_arch import get_arch, is_cuda_target

    if not is_cuda_target(target):
        raise TuningError(f"--arch applies to --target cuda, not {target!r}")
    return f"cuda -arch={get_arch(arch).name}"


def parse_workload(text: str, target: str) -> tuple[str, tuple]:
    """'matmul:64,64,64' -> ('matmul', (64, 64, 64)); 'C9' -> the ResNet-18 layer on `target`."""
    if ":" not in text:
        from ..tune.templates.resnet18 import resnet18_task_args

        return resnet18_task_args(text, target)
    op, _, args = text.partition(":")
    try:
        return op, tuple(int(a) for a in args.split(",") if a)
    except ValueError:
        raise TuningError(f"workload {text!r}: arguments must be integers (OP:1,2,3)") from None


def split_models(workloads: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the .onnx models, the other workload names) among `vta tune`'s positionals."""
    models = [w for w in workloads if w.endswith(".onnx")]
    return models, [w for w in workloads if not w.endswith(".onnx")]


def parse_shapes(items: Sequence[str] | None) -> dict[str, tuple[int, ...]]:
    """--shape values ['data=1,3,224,224'] -> {'data': (1, 3, 224, 224)}."""
    shapes = {}
    for item in items or []:
        name, sep, dims = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            shapes[name] = tuple(int(d) for d in dims.split(","))
        except ValueError:
            raise CompilerError(f"--shape {item!r}: expected NAME=D1,D2,... (integers)") from None
    return shapes


def read_npz(path: str, option: str) -> dict:
    """The arrays of the .npz file an option names, read within the toolkit's limits."""
    from vta.program_file import read_arrays

    return read_arrays(path, what=option)


def tuner_names() -> tuple[str, ...]:
    """--tuner's choices: the template tuners' registry (`compiler.tune.TUNERS`) and the
    auto-scheduler, 'ansor'."""
    from ..tune import TUNERS

    return (*TUNERS, "ansor")


# options several commands share


def add_target(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("--target", type=target_name, default="llvm", help=help)


def add_arch(p: argparse.ArgumentParser) -> None:
    p.add_argument("--arch", help="GPU architecture for --target cuda (sm_80, sm_90)")


def add_db(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("--db", help=help)


def add_shape(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shape", action="append", metavar="NAME=DIMS", help="a symbolic input's shape")


def add_tuning(p: argparse.ArgumentParser) -> None:
    """--n-trial, --tuner, --build-timeout, --batch-size, --early-stopping, --seed."""
    p.add_argument("--n-trial", type=int_at_least(1), default=200, help="measurements per workload")
    p.add_argument("--tuner", choices=tuner_names(), default="xgb")
    p.add_argument("--build-timeout", type=positive_seconds, default=30.0, help="seconds per build")
    p.add_argument(
        "--batch-size",
        type=int_at_least(1),
        default=64,
        help="configs proposed and measured per batch",
    )
    p.add_argument(
        "--early-stopping",
        type=int_at_least(1),
        metavar="N",
        help="stop a workload after N trials without a better config",
    )
    p.add_argument("--seed", type=int_at_least(0), default=0)


def add_accelerator(p: argparse.ArgumentParser, run: bool) -> None:
    """The options of `vta run` (`run`) or `vta compile` that apply to --target vta."""
    if run:
        p.add_argument("--device", default="sim", help="--target vta: sim, fsim or rtl")
        p.add_argument(
            "--plot", type=plot_path, metavar="PNG", help="--target vta: the layers' roofline plot"
        )
    p.add_argument("--config", default=None, help="--target vta: pynq, ultra96, tiny or a file")
    p.add_argument("--calibration", help="--target vta: .npz of calibration inputs by name")
    p.add_argument(
        "--candidates",
        type=int_at_least(1),
        default=8,
        help="--target vta: knob settings timed per layer at most (the estimate's first 4, "
        "the rest where those disagree by more than 1%%)",
    )


def add_model(p: argparse.ArgumentParser) -> None:
    """--target, --db and --shape of `vta run` and `vta compile`."""
    add_target(p, "llvm (this CPU) or vta (the accelerator)")
    add_db(p, "tuning records to apply (untuned tasks use default schedules)")
    add_shape(p)
