"""`Program`: a self-contained accelerator executable and its open file format.

A Program file is an uncompressed `.npz` readable with numpy alone:
  insns     uint8, 16 bytes per instruction in the reference layout
  dram      uint8, the initial DRAM image; every `dram_base` indexes into it in elements of its
            memory type (address 0 = the image's first byte); micro-ops live in it too
  manifest  JSON string {"version": 1, "config": NAME, "buffers": [{name, offset, shape, dtype,
            role}, ...]}
"""

from __future__ import annotations

import dataclasses
import json
import zipfile
from functools import cached_property
from pathlib import Path

import numpy as np

from .config import VTAConfig
from .errors import ConfigError, ISAError, ProgramError
from .isa import INSN_BYTES, Insn, decode_stream
from .validate import validate_program

FORMAT_VERSION = 1
ROLES = ("input", "weight", "output", "scratch", "uop")


@dataclasses.dataclass(frozen=True)
class BufferSpec:
    """A named region of the DRAM image with a numpy shape and dtype."""

    name: str
    offset: int
    shape: tuple[int, ...]
    dtype: str
    role: str

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "offset": self.offset,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "role": self.role,
        }


@dataclasses.dataclass
class Program:
    """Instruction stream + initial DRAM image + buffer manifest, for one configuration."""

    config: VTAConfig
    insns: np.ndarray
    dram: np.ndarray
    buffers: list[BufferSpec] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        self.insns = np.ascontiguousarray(self.insns, dtype=np.uint8).reshape(-1)
        self.dram = np.ascontiguousarray(self.dram, dtype=np.uint8).reshape(-1)
        if self.insns.size % INSN_BYTES:
            raise ProgramError(
                f"instruction stream of {self.insns.size} bytes is not a multiple of {INSN_BYTES}"
            )
        names = set()
        for spec in self.buffers:
            if spec.name in names:
                raise ProgramError(f"buffer {spec.name!r} is declared twice in the manifest")
            names.add(spec.name)
            if spec.role not in ROLES:
                raise ProgramError(f"buffer {spec.name!r}: role {spec.role!r} not in {ROLES}")
            if spec.offset < 0 or spec.offset + spec.nbytes > self.dram.size:
                raise ProgramError(
                    f"buffer {spec.name!r} [{spec.offset}, {spec.offset + spec.nbytes}) lies "
                    f"outside the {self.dram.size}-byte DRAM image"
                )

    # ------------------------------------------------------------------------- contents
    @cached_property
    def instructions(self) -> list[Insn]:
        """The decoded instruction stream."""
        return decode_stream(self.insns, self.config)

    def __len__(self) -> int:
        return self.insns.size // INSN_BYTES

    def buffer(self, name: str) -> BufferSpec:
        for spec in self.buffers:
            if spec.name == name:
                return spec
        raise ProgramError(
            f"program has no buffer {name!r} (has: {', '.join(b.name for b in self.buffers)})"
        )

    def view(self, name: str, dram: np.ndarray | None = None) -> np.ndarray:
        """A writable numpy view of buffer `name` inside `dram` (the initial image by default)."""
        spec = self.buffer(name)
        image = self.dram if dram is None else dram
        raw = image[spec.offset : spec.offset + spec.nbytes]
        return raw.view(np.dtype(spec.dtype)).reshape(spec.shape)

    def dram_with(self, inputs: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """A copy of the initial DRAM image with some buffers replaced (shape/dtype checked)."""
        image = self.dram.copy()
        for name, value in (inputs or {}).items():
            spec = self.buffer(name)
            arr = np.asarray(value)
            if arr.shape != spec.shape or arr.dtype != np.dtype(spec.dtype):
                raise ProgramError(
                    f"buffer {name!r} expects shape {spec.shape} dtype {spec.dtype}, "
                    f"got shape {arr.shape} dtype {arr.dtype}"
                )
            self.view(name, image)[...] = arr
        return image

    def outputs(self, dram: np.ndarray) -> dict[str, np.ndarray]:
        """Copies of every output buffer read from a final DRAM image."""
        return {b.name: self.view(b.name, dram).copy() for b in self.buffers if b.role == "output"}

    # ------------------------------------------------------------------------- file format
    def manifest(self) -> dict:
        return {
            "version": FORMAT_VERSION,
            "config": self.config.name,
            "buffers": [b.to_dict() for b in self.buffers],
        }

    def save(self, path: str | Path) -> None:
        """Write the open `.npz` format (uncompressed)."""
        manifest = np.array(json.dumps(self.manifest()))
        with open(path, "wb") as fh:
            np.savez(fh, insns=self.insns, dram=self.dram, manifest=manifest)

    @classmethod
    def load(cls, path: str | Path, validate: bool = True) -> Program:
        """Read a Program file; a truncated or corrupted file raises `ProgramError`."""
        try:
            with np.load(path, allow_pickle=False) as npz:
                missing = {"insns", "dram", "manifest"} - set(npz.files)
                if missing:
                    raise ProgramError(f"{path}: not a Program file, missing {sorted(missing)}")
                insns, dram, manifest_text = npz["insns"], npz["dram"], str(npz["manifest"])
        except ProgramError:
            raise
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as err:
            raise ProgramError(f"{path}: cannot read Program file ({err})") from err
        for key, arr in (("insns", insns), ("dram", dram)):
            if arr.dtype != np.uint8:
                raise ProgramError(f"{path}: array {key!r} must be uint8, found {arr.dtype}")
        try:
            manifest = json.loads(manifest_text)
            version = manifest["version"]
            config = VTAConfig.load(manifest["config"])
            buffers = [
                BufferSpec(b["name"], int(b["offset"]), tuple(b["shape"]), b["dtype"], b["role"])
                for b in manifest["buffers"]
            ]
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise ProgramError(f"{path}: malformed manifest ({err!r})") from err
        except ConfigError as err:
            raise ProgramError(f"{path}: {err}") from err
        if version != FORMAT_VERSION:
            raise ProgramError(f"{path}: manifest version {version}, this toolkit reads 1")
        program = cls(config, insns, dram, buffers)
        if validate:
            try:
                validate_program(program)
            except ISAError as err:
                raise ProgramError(f"{path}: {err}") from err
        return program
