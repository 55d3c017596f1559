"""Package attributes imported on first use (PEP 562): importing a package, or a module inside
it, does not import every module the package exports, so the board runtime
(`compiler.graph.runtime`) imports the compiler's packages without LLVM or the IR."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A package's module `__getattr__`: `exports` maps each exported name to the submodule
    (relative: ".nn") that defines it, or that is it; the first use imports it. No exported
    function may share its name with a submodule: importing the submodule sets the package's
    attribute of that name to the module."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(exports[name], package)
        value = module if exports[name] == f".{name}" else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
