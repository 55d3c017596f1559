"""Workloads the auto-scheduler tunes: compute definitions registered by name.

A workload is `(name, args)`; `WORKLOADS[name](*args)` returns the tensors of the compute
definition (inputs first, then outputs) and `REFERENCES[name](inputs, *args)` the numpy
outputs that measured programs are checked against. Tasks travel to measurement workers by
name, so the worker rebuilds the same definition (tensor expressions hold closures that do
not pickle).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import te
from ..errors import TuningError
from ..te.tensor import Tensor
from ..topi import nn, testing
from ..tune.task import check_workload_args, parameter_names

ComputeFunc = Callable[..., list[Tensor]]
WORKLOADS: dict[str, ComputeFunc] = {}
REFERENCES: dict[str, Callable[..., list[np.ndarray]]] = {}
EXTENTS: dict[str, tuple[str, ...]] = {}  # a workload's parameters that are sizes


def register_workload(
    name: str,
    reference: Callable[..., list[np.ndarray]] | None = None,
    extents: Sequence[str] = (),
) -> Callable[[ComputeFunc], ComputeFunc]:
    """Register `fn(*args) -> [inputs..., outputs...]` as the compute definition `name`, with
    an optional numpy `reference(inputs, *args) -> outputs`; `extents` names its parameters
    that are sizes (extents, strides: each >= 1, `tune.task.check_workload_args`)."""

    def register(fn: ComputeFunc) -> ComputeFunc:
        WORKLOADS[name] = fn
        EXTENTS[name] = tuple(extents)
        if reference is not None:
            REFERENCES[name] = reference
        return fn

    return register


def workload_module(name: str) -> str | None:
    """The module that registers the workload `name` (imported by a worker before it rebuilds
    the definition), or None for an unregistered one."""
    fn = WORKLOADS.get(name)
    return getattr(fn, "__module__", None) if fn is not None else None


def import_workload(name: str, module: str | None) -> None:
    """Register the workload `name` by importing `module` (a task's registering module, sent
    with it to a worker) unless it is registered already."""
    if name not in WORKLOADS and module:
        importlib.import_module(module)


def workload_tensors(name: str, args: Sequence[Any]) -> list[Tensor]:
    """The tensors of a registered workload (inputs, then outputs)."""
    if name not in WORKLOADS:
        raise TuningError(f"unknown auto-scheduler workload {name!r}; known: {sorted(WORKLOADS)}")
    fn = WORKLOADS[name]
    check_workload_args(name, args, parameter_names(fn), EXTENTS.get(name, ()))
    try:
        return list(WORKLOADS[name](*args))
    except TypeError as err:
        raise TuningError(f"workload {name}{tuple(args)}: {err}") from None


# ------------------------------------------------------------------------------ built-ins
def _matmul_ref(inputs, n, m, k):
    a, b = inputs
    return [a @ b]


@register_workload("matmul", _matmul_ref, extents=("n", "m", "k"))
def matmul(n: int, m: int, k: int) -> list[Tensor]:
    """C[n, m] = A[n, k] @ B[k, m] (float32); the same arguments as the template `matmul`."""
    a = te.placeholder((n, k), "float32", "A")
    b = te.placeholder((k, m), "float32", "B")
    r = te.reduce_axis((0, k), "k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), "C")
    return [a, b, c]


def _matmul_relu_ref(inputs, n, m, k):
    a, b = inputs
    return [np.maximum(a @ b, 0)]


@register_workload("matmul_relu", _matmul_relu_ref, extents=("n", "m", "k"))
def matmul_relu(n: int, m: int, k: int) -> list[Tensor]:
    """relu(A @ B): a reduction with an elementwise consumer to fuse."""
    a, b, c = matmul(n, m, k)
    d = te.compute(c.shape, lambda i, j: te.max(c[i, j], te.const(0.0, "float32")), "D")
    return [a, b, d]


def _conv2d_nchw_ref(inputs, c, h, w, f, kh, kw, stride=1, pad=None):
    data, weight = inputs
    pad = kh // 2 if pad is None else pad
    out = testing.conv2d_nchw_python(
        data.astype(np.float64), weight.astype(np.float64), stride, pad
    )
    return [out.astype(np.float32)]


@register_workload(
    "conv2d_nchw", _conv2d_nchw_ref, extents=("c", "h", "w", "f", "kh", "kw", "stride")
)
def conv2d_nchw(
    c: int, h: int, w: int, f: int, kh: int, kw: int, stride: int = 1, pad: int | None = None
):
    """Batch-1 float32 conv2d NCHW with padding `pad` (default kh // 2); the arguments of the
    GPU template `conv2d_nchw` (and of `vta tune C1..C12 --target cuda`)."""
    data = te.placeholder((1, c, h, w), "float32", "data")
    weight = te.placeholder((f, c, kh, kw), "float32", "weight")
    pad = kh // 2 if pad is None else pad
    return [data, weight, nn.conv2d_nchw(data, weight, stride, pad)]


def _conv2d_NCHWc_ref(inputs, c, h, w, f, kh, kw, stride=1, ic_bn=16, oc_bn=16):
    data, kernel = inputs
    weight = kernel.transpose(0, 5, 1, 4, 2, 3).reshape(f, c, kh, kw)
    out = testing.conv2d_nchw_python(
        testing.nchwc_unpack(data).astype(np.float64), weight.astype(np.float64), stride, kh // 2
    )
    return [testing.nchw_pack(out, oc_bn).astype(np.float32)]


@register_workload(
    "conv2d_NCHWc", _conv2d_NCHWc_ref, extents=("c", "h", "w", "f", "kh", "kw", "stride")
)
def conv2d_NCHWc(
    c: int,
    h: int,
    w: int,
    f: int,
    kh: int,
    kw: int,
    stride: int = 1,
    ic_bn: int = 16,
    oc_bn: int = 16,
) -> list[Tensor]:
    """Batch-1 float32 conv2d on packed NCHW[ic_bn]c data and OIHW[ic_bn]i[oc_bn]o weights,
    padding kh // 2; the arguments of the template `conv2d_NCHWc` (and of a network's tasks)."""
    ic_bn, oc_bn = ic_bn or 16, oc_bn or 16
    if c % ic_bn or f % oc_bn:
        raise TuningError(f"conv2d_NCHWc: channel blocks {ic_bn}/{oc_bn} do not divide {c}/{f}")
    data = te.placeholder((1, c // ic_bn, h, w, ic_bn), "float32", "data")
    kernel = te.placeholder((f // oc_bn, c // ic_bn, kh, kw, ic_bn, oc_bn), "float32", "kernel")
    return [data, kernel, nn.conv2d_NCHWc(data, kernel, stride, kh // 2)]


def _depthwise_ref(inputs, c, h, w, k, stride=1):
    data, weight = inputs
    out = testing.depthwise_conv2d_python_nchw(
        data.astype(np.float64), weight.astype(np.float64), stride, k // 2
    )
    return [out.astype(np.float32)]


@register_workload("depthwise_conv2d_nchw", _depthwise_ref, extents=("c", "h", "w", "k", "stride"))
def depthwise_conv2d_nchw(c: int, h: int, w: int, k: int, stride: int = 1) -> list[Tensor]:
    """Batch-1 float32 depthwise conv2d NCHW (multiplier 1), padding k // 2."""
    data = te.placeholder((1, c, h, w), "float32", "data")
    weight = te.placeholder((c, 1, k, k), "float32", "weight")
    return [data, weight, nn.depthwise_conv2d_nchw(data, weight, stride, k // 2)]


def _softmax_ref(inputs, n, m):
    return [testing.softmax_python(inputs[0].astype(np.float64), -1).astype(np.float32)]


@register_workload("softmax", _softmax_ref, extents=("n", "m"))
def softmax(n: int, m: int) -> list[Tensor]:
    """Row-wise softmax of an [n, m] float32 matrix."""
    x = te.placeholder((n, m), "float32", "x")
    return [x, nn.softmax(x, -1)]


def _rownorm_ref(inputs, n, m):
    return [np.sqrt((inputs[0].astype(np.float64) ** 2).sum(axis=1)).astype(np.float32)]


@register_workload("row_norm", _rownorm_ref, extents=("n", "m"))
def row_norm(n: int, m: int) -> list[Tensor]:
    """The 2-norm of each row of an [n, m] matrix: little space, much reduction."""
    x = te.placeholder((n, m), "float32", "x")
    r = te.reduce_axis((0, m), "k")
    sq = te.compute((n,), lambda i: te.sum(x[i, r] * x[i, r], axis=r), "sumsq")
    return [x, te.compute((n,), lambda i: te.sqrt(sq[i]), "norm")]
