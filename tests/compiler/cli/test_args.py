"""The argument types and options several compiler commands share (compiler/cli/args.py)."""

import argparse

import pytest

from compiler.cli import args as A
from compiler.errors import CompilerError, TuningError


def test_shapes_by_name():
    assert A.parse_shapes(["data=1,3,224,224", "m=2"]) == {"data": (1, 3, 224, 224), "m": (2,)}
    assert A.parse_shapes(None) == {}
    for bad in ("x=", "=1", "x=a", "x"):
        with pytest.raises(CompilerError, match="expected NAME=D1,D2"):
            A.parse_shapes([bad])


def test_models_and_workloads_apart():
    assert A.split_models(["C2", "m.onnx", "matmul:8,8,8"]) == (["m.onnx"], ["C2", "matmul:8,8,8"])


def test_arch_only_with_cuda():
    assert A.cuda_target("cuda", None) == "cuda"
    assert A.cuda_target("cuda", "sm_80") == "cuda -arch=sm_80"
    with pytest.raises(TuningError, match="--arch applies to --target cuda"):
        A.cuda_target("llvm", "sm_80")


def test_option_types_refuse_with_usage_errors():
    with pytest.raises(argparse.ArgumentTypeError, match="below the minimum 1"):
        A.int_at_least(1)("0")
    with pytest.raises(argparse.ArgumentTypeError, match="not a positive"):
        A.positive_seconds("inf")
    with pytest.raises(argparse.ArgumentTypeError, match="the target is empty"):
        A.target_name(" ")
    assert A.is_vta("vta") and not A.is_vta("llvm -mcpu=haswell")
