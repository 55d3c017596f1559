"""Run untrusted inputs through the toolkit's entry points in a separate process.

`Worker` keeps one child process (`python -m testkit.fuzzworker`, the repository root put on its
`PYTHONPATH`: `testkit/` is not installed) that takes JSON requests on stdin and answers one JSON
line each, so a fuzzing harness tries thousands of inputs without a process start per input and
still sees a signal, a hang (no answer within the timeout) or a blow-up of memory (an
address-space limit turns it into MemoryError) as a failure of that input.

Requests: {"op": "program", "path", "validate"} loads a Program file (validating it unless
"validate" is false) and, if it loads, runs it on `fsim` and `sim` with small budgets;
{"op": "config", "path"} loads a configuration file; {"op": "cli", "argv"} runs
`vta.cli.main(argv)` capturing its output; {"op": "parse", "argv"} only parses the arguments
(for subcommands that would build hardware or reach a board); {"op": "call", "fn":
"testkit.compiler_fuzz:te_case", "kwargs"} calls a case of `testkit.compiler_fuzz` or
`testkit.onnx_conformance` (the only modules it may call). Answers: {"outcome": "ok" |
"error" | "bug", "type", "message"} ("error": one of the toolkit's exceptions; "bug": anything
else), and for "cli" and "parse" the "exit" status, "stdout" and "stderr".
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import select
import subprocess
import sys
import traceback
from pathlib import Path

MEMORY_LIMIT = 4 << 30  # the child's address space
RUN_BUDGET = 1_000_000  # cycles (sim) and steps (fsim) of each fuzzed run
# the modules whose `*_case` functions "call" may run
CASES = ("testkit.compiler_fuzz", "testkit.onnx_conformance")
# the child runs in a scratch cwd: it finds `testkit` (not installed) through PYTHONPATH
REPO_ROOT = str(Path(__file__).resolve().parents[1])


class WorkerDied(RuntimeError):
    """The child process died (a signal) or did not answer in time (a hang)."""


class Worker:
    """A child process serving requests one at a time; restarted after it dies."""

    def __init__(
        self, timeout: float = 60.0, memory_limit: int = MEMORY_LIMIT, cwd: str | None = None
    ):
        self.timeout = timeout
        self.memory_limit = memory_limit
        self.cwd = cwd  # where relative paths of fuzzed arguments land
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            path = [REPO_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
            env = dict(os.environ, PYTHONFAULTHANDLER="1", PYTHONPATH=os.pathsep.join(path))
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "testkit.fuzzworker", str(self.memory_limit)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                env=env,
                cwd=self.cwd,
            )
        return self.proc

    def request(self, **request) -> dict:
        """The child's answer to one request; WorkerDied if it died or timed out."""
        proc = self._start()
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], self.timeout)
        line = proc.stdout.readline() if ready else ""
        if not line:
            self.close()
            why = f"no answer within {self.timeout} s" if not ready else "the process died"
            code = proc.returncode
            raise WorkerDied(f"{why} (exit status {code}) on request {request}")
        return json.loads(line)

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None


# ----------------------------------------------------------------------------- the child
def _serve_program(path: str, validate: bool) -> None:
    from vta.device import get_device
    from vta.program import Program

    program = Program.load(path, validate=validate)
    get_device("fsim", max_steps=RUN_BUDGET).execute(program, program.dram)
    get_device("sim", max_cycles=RUN_BUDGET).execute(program, program.dram)


def _serve_config(path: str) -> None:
    from vta.config import VTAConfig

    VTAConfig.load(path)


def _serve_cli(argv: list[str]) -> dict:
    from vta.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
            if not isinstance(exit_.code, int) and exit_.code is not None:
                print(exit_.code, file=sys.stderr)
    return {"exit": code, "stdout": out.getvalue()[-2000:], "stderr": err.getvalue()[-4000:]}


def _serve_parse(argv: list[str]) -> dict:
    from vta.cli import build_parser

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            build_parser(argv).parse_args(argv)
            code = 0
        except SystemExit as exit_:
            code = exit_.code
    return {"exit": code, "stdout": "", "stderr": err.getvalue()[-4000:]}


def _serve_call(fn: str, kwargs: dict) -> str:
    module, _, name = fn.partition(":")
    if module not in CASES or not name.endswith("_case"):
        raise KeyError(f"not a fuzzing case: {fn!r}")
    import importlib

    return getattr(importlib.import_module(module), name)(**kwargs)


def _answer(request: dict) -> dict:
    from vta.errors import VTAError

    op = request.get("op")
    try:
        if op == "program":
            _serve_program(request["path"], request.get("validate", True))
        elif op == "config":
            _serve_config(request["path"])
        elif op == "cli":
            return {"outcome": "ok", **_serve_cli(request["argv"])}
        elif op == "parse":
            return {"outcome": "ok", **_serve_parse(request["argv"])}
        elif op == "call":
            return {"outcome": "ok", "result": _serve_call(request["fn"], request["kwargs"])}
        else:
            raise KeyError(f"unknown op {op!r}")
    except VTAError as err:
        return {"outcome": "error", "type": type(err).__name__, "message": str(err)}
    except Exception as err:  # noqa: BLE001 - reported to the harness as a bug
        return {"outcome": "bug", "type": type(err).__name__, "message": traceback.format_exc()}
    return {"outcome": "ok"}


def serve(memory_limit: int) -> None:
    """The child's loop: one JSON request per stdin line, one JSON answer per stdout line."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    answers = sys.stdout
    for line in sys.stdin:
        answer = _answer(json.loads(line))
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve(int(sys.argv[1]) if len(sys.argv) > 1 else MEMORY_LIMIT)
