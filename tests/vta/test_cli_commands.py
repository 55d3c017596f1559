"""The `vta` dispatcher loads the entry point of the subcommand invoked and no other: the
built-in commands (`sim`, `disasm`, `hw-config`) import nothing outside `vta`, `vta --help`
lists the plugged-in commands by name, and one that fails to load is a bug (exit 3)."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest

from vta import cli

PACKAGES = ("compiler", "sim", "hw")  # the project's packages besides vta
PLUGGED_IN = {"tune", "build", "run", "compile", "synth-report", "deploy", "worker"}


def _loaded_by(argv: list[str]) -> list[str]:
    """The modules of the other packages loaded by `vta ARGV` in a fresh interpreter."""
    code = (
        "import sys\n"
        "from vta.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {PACKAGES!r}))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return eval(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [["sim", "--help"], ["--help"], ["nope"], ["hw-config", "-h"]])
def test_builtin_commands_and_help_load_no_other_package(argv):
    assert _loaded_by(argv) == []


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for name in ("sim", "disasm", "hw-config", *PLUGGED_IN):
        assert f"    {name} " in out, name


@pytest.mark.parametrize("command", sorted(PLUGGED_IN))
def test_each_plugged_in_command_has_its_own_entry_point(command, capsys):
    assert command in cli.plugged_in_commands()
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: vta {command} ")


def test_the_command_is_the_first_positional():
    assert cli.command_name(["--debug", "tune", "x.onnx"]) == "tune"
    assert cli.command_name(["--", "run"]) == "run"
    assert cli.command_name(["--debug"]) is None


def test_a_command_that_does_not_load_is_a_bug(monkeypatch, capsys):
    broken = EntryPoint("tune", "compiler.no_such_module:register", cli.COMMAND_GROUP)
    monkeypatch.setattr(cli, "plugged_in_commands", lambda: {"tune": broken})
    assert cli.main(["tune", "--help"]) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.startswith("vta tune: internal error") and "ModuleNotFoundError" in err
    assert cli.main(["hw-config", "--out", "/dev/null"]) == 0  # the others still run
