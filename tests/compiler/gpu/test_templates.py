"""Every GPU template's default config (the config nearest the template's target that ptxas
accepts for sm_80): PTX that ptxas assembles for sm_80 and sm_90 without spills, and emulated
output equal to numpy. The default suite runs moderate shapes; the slow suite the full set
(matmul 1024^3 and a non-divisible one, ResNet-18's conv layers, MobileNet depthwise layers,
softmax)."""

import numpy as np
import pytest

import compiler
from compiler.tune import create_task
from compiler.tune.measure import random_arrays
from compiler.tune.templates.cuda import default_build
from compiler.tune.templates.resnet18 import LAYERS, resnet18_task_args

QUICK = [
    ("matmul", (256, 256, 256)),
    ("matmul", (100, 75, 50)),
    ("conv2d_nchw", (32, 28, 28, 32, 3, 3, 1, 1)),
    ("conv2d_nchw", (16, 30, 30, 32, 3, 3, 2, 1)),
    ("depthwise_conv2d_nchw", (32, 56, 56, 3, 1, 1)),
    ("softmax", (256, 1000)),
]
FULL = [
    ("matmul", (1024, 1024, 1024)),
    ("matmul", (1000, 999, 777)),
    *[resnet18_task_args(name, "cuda") for name in LAYERS],
    ("depthwise_conv2d_nchw", (32, 112, 112, 3, 1, 1)),
    ("depthwise_conv2d_nchw", (512, 14, 14, 3, 1, 1)),
    ("depthwise_conv2d_nchw", (256, 28, 28, 3, 2, 1)),
    ("softmax", (4096, 1000)),
]


def check(op, args):
    task = create_task(op, args, "cuda")
    cfg, module = default_build(task)
    schedule, tensors = task.instantiate(cfg)
    assert module.problems() == []
    for kernel in module.kernels:
        assert module.stats[kernel.name].spills == 0
    sm90 = compiler.build(schedule, tensors, target="cuda -arch=sm_90")
    assert ".target sm_90" in sm90.ptx and sm90.problems() == []
    specs = [(tuple(t.shape), t.dtype) for t in tensors]
    inputs = random_arrays(specs[:-1], seed=3)
    out = np.zeros(*specs[-1])
    module.emulate(*inputs, out)
    np.testing.assert_allclose(out, task.reference(inputs)[0], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("op,args", QUICK, ids=[f"{o}{list(a)}" for o, a in QUICK])
def test_default_config_assembles_and_emulates_equal_to_numpy(op, args):
    check(op, args)


@pytest.mark.slow
@pytest.mark.parametrize("op,args", FULL, ids=[f"{o}{list(a)}" for o, a in FULL])
def test_full_workloads_assemble_and_emulate_equal_to_numpy(op, args):
    check(op, args)
