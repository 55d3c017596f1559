"""Hiding AVX-512 by CPUID: LLVM, OpenBLAS and child processes see an AVX2-only CPU; real
faults still kill; a script's --hide-avx512 re-executes it or fails in one line."""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import hostisa

needs_shim = pytest.mark.skipif(
    not hostisa.cpuid_faulting() or shutil.which(os.environ.get("CC", "cc")) is None,
    reason="needs CPUID faulting ('cpuid_fault' in /proc/cpuinfo) and a C compiler",
)

PROBE = """
import json, subprocess, sys
import llvmlite.binding as llvm
import numpy as np
from compiler.codegen.target import cpu_facts, current_target
try:
    from threadpoolctl import threadpool_info
    blas = [i["architecture"] for i in threadpool_info() if i.get("user_api") == "blas"]
except ImportError:
    blas = []
child = subprocess.run([sys.executable, "-c",
    "import llvmlite.binding as l; print(l.get_host_cpu_features().get('avx512f', False))"],
    capture_output=True, text=True, check=True).stdout.strip()
a = np.arange(64, dtype=np.float32).reshape(8, 8)
print(json.dumps({"avx512f": llvm.get_host_cpu_features().get("avx512f", False),
                  "avx2": llvm.get_host_cpu_features().get("avx2", False),
                  "isa": cpu_facts(current_target()).isa, "blas": blas, "child": child,
                  "matmul_ok": bool(np.allclose(a @ a, np.einsum("ij,jk->ik", a, a)))}))
"""


def probe(env: dict[str, str]) -> dict:
    env = {k: v for k, v in env.items() if not k.startswith("OPENBLAS_")}  # OpenBLAS detects
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


@needs_shim
def test_every_library_and_child_process_sees_no_avx512():
    plain, hidden = probe(dict(os.environ)), probe(hostisa.preload_env())
    assert hidden["avx512f"] is False and hidden["child"] == "False"
    assert hidden["avx2"] == plain["avx2"] and hidden["matmul_ok"]
    if plain["avx2"]:
        assert hidden["isa"] == "avx2"
    if plain["avx512f"]:  # an AVX-512 host: OpenBLAS picks another kernel, ours another ISA
        assert plain["isa"] == "avx512"
        if plain["blas"] and hidden["blas"]:
            assert hidden["blas"] != plain["blas"]


@needs_shim
def test_a_real_segfault_still_kills_and_faulthandler_is_chained():
    code = (
        "import llvmlite.binding as l; print(l.get_host_cpu_features().get('avx512f'), flush=True);"
        "import ctypes; ctypes.string_at(0)"
    )
    env = hostisa.preload_env()
    for opts in ([], ["-X", "faulthandler"]):  # faulthandler's handler set after the shim's
        done = subprocess.run([sys.executable, *opts, "-c", code], env=env, capture_output=True)
        assert done.stdout.split() == [b"False"]  # CPUID still answered by the shim
        assert done.returncode == -signal.SIGSEGV, done.stderr
    assert b"Segmentation fault" in done.stderr  # faulthandler's report of the real fault


@needs_shim
def test_the_option_reexecutes_the_program_without_avx512():
    code = (
        "import argparse; from benchmarks import hostisa; ap = argparse.ArgumentParser();"
        "hostisa.add_option(ap); hostisa.apply_option(ap, ap.parse_args(['--hide-avx512']));"
        "import llvmlite.binding as l; print(l.get_host_cpu_features().get('avx512f'), "
        "hostisa.hidden())"
    )
    root = Path(__file__).resolve().parents[2]  # benchmarks/ is not installed
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False", "True"]
    assert "AVX-512 hidden by CPUID" in done.stderr


def test_the_option_fails_in_one_line_without_cpuid_faulting(monkeypatch, capsys):
    monkeypatch.delenv(hostisa.MARK, raising=False)
    monkeypatch.setattr(hostisa, "cpuid_faulting", lambda: False)
    ap = argparse.ArgumentParser()
    hostisa.add_option(ap)
    with pytest.raises(SystemExit) as exit_:
        hostisa.apply_option(ap, ap.parse_args(["--hide-avx512"]))
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no CPUID faulting" in err
    hostisa.apply_option(ap, ap.parse_args([]))  # without the option: nothing happens
    assert not hostisa.hidden()
