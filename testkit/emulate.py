"""A graph library compiled for a board's CPU (`vta compile --target vta --config pynq` writes
one per CPU segment, `cpu<k>/graph.so`) run on this machine under qemu-user: a C harness
(`board_harness.c`), cross-compiled for the board, loads it and runs its entry once on inputs
and parameters from files, as the executor would on the board."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from compiler.codegen.abi import arch_family
from compiler.graph.objects import CROSS_PREFIX

HARNESS = Path(__file__).with_name("board_harness.c")
# an architecture family -> its user-mode emulator
QEMU = {"arm": "qemu-arm", "aarch64": "qemu-aarch64"}
ELF_MACHINE = {"arm": (32, 40), "aarch64": (64, 183)}  # (EI_CLASS bits, e_machine): EM_ARM...


def sysroot(triple: str) -> Path:
    """The board's libraries as Debian's cross packages install them (qemu's -L)."""
    return Path("/usr") / CROSS_PREFIX[arch_family(triple)]


def missing(triple: str) -> str | None:
    """Why a library for `triple` cannot be run here (one line), None when it can."""
    family = arch_family(triple)
    if family not in QEMU:
        return f"no emulator known for {triple}"
    if not shutil.which(QEMU[family]):
        return f"{QEMU[family]} is not installed (apt-get install qemu-user)"
    prefix = CROSS_PREFIX[family]
    if not shutil.which(f"{prefix}-gcc") or not (sysroot(triple) / "lib").is_dir():
        return f"no cross compiler for {prefix} (apt-get install gcc-{prefix})"
    return None


def elf_kind(path: str | Path) -> tuple[int, int]:
    """An ELF file's (word size in bits, e_machine): (32, 40) for EM_ARM, (64, 183) for
    EM_AARCH64, (64, 62) for x86-64."""
    head = Path(path).read_bytes()[:20]
    if head[:4] != b"\x7fELF":
        raise ValueError(f"{path} is not an ELF file")
    return 32 * head[4], int.from_bytes(head[18:20], "little")


def harness(triple: str, folder: Path) -> Path:
    """`board_harness.c` compiled for `triple` into `folder`."""
    out = folder / "harness"
    gcc = f"{CROSS_PREFIX[arch_family(triple)]}-gcc"
    subprocess.run([gcc, "-O2", "-o", str(out), str(HARNESS), "-ldl"], check=True)
    return out


def run_emulated(
    graph: str | Path, inputs: dict[str, np.ndarray], threads: int = 2
) -> dict[str, np.ndarray]:
    """The outputs of the compiled graph folder `graph` (graph.json, graph.so, params.npz)
    on `inputs`, run under qemu-user with `threads` threads."""
    graph = Path(graph)
    manifest = json.loads((graph / "graph.json").read_text())
    triple = manifest["triple"]
    with tempfile.TemporaryDirectory(prefix="vta-emulate-") as tmp:
        folder = Path(tmp)
        slots = [f"z:{manifest['arena_bytes']}"]
        for spec in manifest["inputs"]:
            path = folder / f"in_{len(slots)}.bin"
            np.ascontiguousarray(inputs[spec["name"]], spec["dtype"]).tofile(path)
            slots.append(f"r:{path}")
        outs = []
        for spec in manifest["outputs"]:
            path = folder / f"out_{len(slots)}.bin"
            nbytes = int(np.prod(spec["shape"])) * np.dtype(spec["dtype"]).itemsize
            slots.append(f"w:{path}:{nbytes}")
            outs.append((spec, path))
        with np.load(graph / "params.npz") as z:
            for k in range(len(manifest["params"])):
                path = folder / f"param_{k}.bin"
                np.ascontiguousarray(z[f"arr_{k}"]).tofile(path)
                slots.append(f"r:{path}")
        qemu = [QEMU[arch_family(triple)], "-L", str(sysroot(triple))]
        command = [*qemu, str(harness(triple, folder)), str(graph / "graph.so"), str(threads)]
        subprocess.run([*command, *slots], check=True, capture_output=True)
        return {
            spec["name"]: np.fromfile(path, spec["dtype"]).reshape(spec["shape"])
            for spec, path in outs
        }
