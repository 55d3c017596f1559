"""Every package of the compiler imports first in a fresh interpreter: a cycle between two
packages' import-time statements (te and schedule import each other) breaks only the order in
which the cycle is entered, so the suite, which imports many modules, would not notice it."""

import subprocess
import sys
from pathlib import Path

import pytest

import compiler

PACKAGES = sorted(
    f"compiler.{p.parent.name}" for p in Path(compiler.__file__).parent.glob("*/__init__.py")
)


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_first(package: str) -> None:
    run = subprocess.run([sys.executable, "-c", f"import {package}"], capture_output=True,
                         text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr.strip().splitlines()[-1]
