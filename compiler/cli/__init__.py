"""The compiler's `vta` subcommands, one module per command (`tune`, `build`, `run`, `compile`),
each a thin layer: parse the arguments (the types and options several commands share are in
`args.py`), call a library function with plain arguments, print. `vta` finds a command's
`register(subparsers)` by the `vta.commands` entry point named after it and imports only the
one invoked; a module imports the library it calls only when its command runs, so `--help`
stays quick. Library code never imports this package."""
