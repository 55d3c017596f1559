"""The pynq-backed devices need the pynq package, which needs numpy < 2: ./scripts/test runs
this folder in .venv-pynq. Elsewhere these tests skip."""

import pytest

pytest.importorskip(
    "pynq", reason="the pynq package is not installed here (./scripts/test runs it in .venv-pynq)"
)
