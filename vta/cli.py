"""The `vta` command: thin subcommands over the Python API.

`sim`, `disasm` and `hw-config` live here. The others (tune, run, ... in `compiler/cli/`,
synth-report in `hw/`, deploy and worker) are `register(subparsers)` functions under the
`vta.commands` entry-point group, named after their command; only the entry point of the
command invoked is loaded, so `vta` never imports the compiler for a command of its own.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

from .config import VTAConfig
from .errors import VTAError
from .isa import decode_stream

COMMAND_GROUP = "vta.commands"
EXIT_INPUT = 1  # the input is wrong (argparse's usage errors exit 2)
EXIT_INTERNAL = 3  # a bug of ours
MAX_DETAIL_LINES = 8


def _cmd_sim(args: argparse.Namespace) -> int:
    from .device import get_device
    from .program import Program

    program = Program.load(args.program)
    if args.config:
        config = VTAConfig.load(args.config)
        program = Program(config, program.insns, program.dram, program.buffers)
    options = {}
    if args.trace:
        if args.device != "sim":
            raise VTAError(f"--trace needs the cycle-level device 'sim', not {args.device!r}")
        options["trace"] = args.trace
    if args.max_cycles is not None:
        options["max_cycles"] = args.max_cycles
    if args.max_steps is not None:
        options["max_steps"] = args.max_steps
    device = get_device(args.device, **options)
    if args.timing_only:
        if args.dump_dram:
            raise VTAError("--dump-dram needs the data: leave out --timing-only")
        stats = device.time(program)
    else:
        final, stats = device.execute(program, program.dram.copy())
        if args.dump_dram:
            Path(args.dump_dram).write_bytes(final.tobytes())
    if args.json:
        print(stats.to_json())
    else:
        print(
            f"program         {args.program} ({len(program)} instructions, "
            f"config {program.config.name})"
        )
        print(stats.report())
    return 0


def _cmd_disasm(args: argparse.Namespace) -> int:
    from .disasm import disassemble, insn_json
    from .program import Program
    from .program_file import read_raw_stream

    if args.raw:
        config = VTAConfig.load(args.config)
        insns = decode_stream(read_raw_stream(args.file), config)
        source = insns
    else:
        program = Program.load(args.file, validate=False)
        config = VTAConfig.load(args.config) if args.config else program.config
        insns = decode_stream(program.insns, config)
        source = program
    if args.json:
        for index, insn in enumerate(insns):
            print(json.dumps(insn_json(insn, index)))
    else:
        print(disassemble(source, config))
    return 0


def _cmd_hw_config(args: argparse.Namespace) -> int:
    from .hwconfig import generate_header

    text = generate_header(VTAConfig.load(args.config))
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv` (default: this process's arguments): the built-in subcommands, the
    plugged-in one `argv` names (its entry point loaded) and the other plugged-in ones by name
    only, so `vta --help` lists them and an unknown name is a usage error."""
    parser = argparse.ArgumentParser(prog="vta", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an error (for bug reports)"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("sim", help="run a Program file on a device and report")
    p.add_argument("program", help="Program file (.npz)")
    p.add_argument("--device", default="sim", help="sim (cycle-level, default), fsim, rtl, ...")
    p.add_argument("--config", help="interpret the Program with this configuration")
    p.add_argument("--trace", help="write a Chrome/Perfetto timeline (device sim)")
    p.add_argument("--dump-dram", help="write the final DRAM image as raw bytes")
    p.add_argument(
        "--timing-only",
        action="store_true",
        help="cycles and counters without computing data (fast on sim)",
    )
    p.add_argument("--json", action="store_true", help="print the Stats as JSON")
    p.add_argument(
        "--max-cycles",
        type=int,
        help="cycle budget of sim, rtl and pynq-rtl (a longer run is an error; default: the "
        "device's, see docs/robustness.md)",
    )
    p.add_argument("--max-steps", type=int, help="step budget of fsim: instructions plus micro-ops")
    p.set_defaults(func=_cmd_sim)

    p = sub.add_parser("disasm", help="disassemble a Program file or a raw instruction stream")
    p.add_argument("file")
    p.add_argument("--raw", action="store_true", help="FILE is a bare instruction stream")
    p.add_argument("--config", help="configuration (default: the Program's, or pynq for --raw)")
    p.add_argument("--json", action="store_true", help="one JSON object per instruction")
    p.set_defaults(func=_cmd_disasm)

    p = sub.add_parser("hw-config", help="generate the RTL's Verilog configuration header")
    p.add_argument("--config", help="configuration (default: pynq)")
    p.add_argument("--out", help="output file (default: stdout)")
    p.set_defaults(func=_cmd_hw_config)

    chosen = command_name(sys.argv[1:] if argv is None else argv)
    for name, ep in plugged_in_commands().items():
        if name == chosen:
            ep.load()(sub)
        elif name not in sub.choices:  # listed; its parser is built only when it runs
            sub.add_parser(name, help=f"(from {ep.module}; vta {name} --help)", add_help=False)
    return parser


def plugged_in_commands() -> dict[str, EntryPoint]:
    """The `vta.commands` entry points by command name (the first of a name wins)."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=COMMAND_GROUP):
        found.setdefault(ep.name, ep)
    return found


def command_name(argv: Sequence[str]) -> str | None:
    """The subcommand `argv` names: its first token that is not an option (`vta` itself takes
    only flags); None when there is none."""
    return next((token for token in argv if not token.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; the exit status is 0 on success, `EXIT_INPUT` when the input is wrong
    (one summary line on stderr, then at most `MAX_DETAIL_LINES` more), 2 for a usage error
    (argparse) and `EXIT_INTERNAL` for a bug of ours (a plugged-in command that fails to load
    included). `--debug` shows tracebacks."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(argv)
    except Exception as err:  # noqa: BLE001 - a command's module that does not import is a bug
        if "--debug" in argv:
            raise
        print(
            f"vta {command_name(argv)}: internal error (a bug, please report it): cannot load "
            f"the command: {type(err).__name__}: {_summary(str(err), 1)}",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (VTAError, OSError) as err:
        if args.debug:
            raise
        print(_summary(f"vta {args.command}: error: {err}"), file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print(f"vta {args.command}: interrupted", file=sys.stderr)
        return 130
    except MemoryError as err:  # the input asks for more memory than this machine has
        if args.debug:
            raise
        print(_summary(f"vta {args.command}: error: out of memory: {err}"), file=sys.stderr)
        return EXIT_INPUT
    except Exception as err:  # noqa: BLE001 - every other exception is a bug of ours
        if args.debug:
            raise
        print(
            f"vta {args.command}: internal error (a bug, please report it): "
            f"{type(err).__name__}: {_summary(str(err), 1)} (--debug shows the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _summary(text: str, lines: int = 1 + MAX_DETAIL_LINES) -> str:
    """At most `lines` lines of `text`, saying how many more there were."""
    parts = text.splitlines() or [""]
    if len(parts) > lines:
        parts = parts[:lines] + [f"  ... and {len(parts) - lines} more"]
    return "\n".join(part if len(part) <= 300 else part[:297] + "..." for part in parts)


if __name__ == "__main__":
    raise SystemExit(main())
