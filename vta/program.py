"""`Program`: a self-contained accelerator executable and its open file format.

A Program file is an uncompressed `.npz` readable with numpy alone (`vta.program_file` reads it
within size limits and checks the manifest's schema):
  insns     uint8, 16 bytes per instruction in the reference layout
  dram      uint8, the initial DRAM image; every `dram_base` indexes into it in elements of its
            memory type (address 0 = the image's first byte); micro-ops live in it too
  manifest  JSON string {"version": 1, "config": NAME, "buffers": [{name, offset, shape, dtype,
            role}, ...]}
"""

from __future__ import annotations

import dataclasses
import json
import math
from functools import cached_property
from pathlib import Path

import numpy as np

from .config import VTAConfig
from .errors import ISAError, ProgramError
from .isa import INSN_BYTES, Insn, decode_stream
from .program_file import (
    DTYPES,
    FORMAT_VERSION,
    MAX_BUFFER_NAME,
    MAX_NDIM,
    ROLES,
    parse_manifest,
    read_program_file,
)
from .validate import validate_program


@dataclasses.dataclass(frozen=True)
class BufferSpec:
    """A named region of the DRAM image with a numpy shape and dtype."""

    name: str
    offset: int
    shape: tuple[int, ...]
    dtype: str
    role: str

    def __post_init__(self) -> None:
        def bad(field: str, valid: str) -> ProgramError:
            shown = repr(getattr(self, field))
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            return ProgramError(f"buffer {str(self.name)[:64]!r}: {field} = {shown} ({valid})")

        if not isinstance(self.name, str) or not 0 < len(self.name) <= MAX_BUFFER_NAME:
            raise bad("name", f"valid: a string of 1..{MAX_BUFFER_NAME} characters")
        if not _is_int(self.offset) or self.offset < 0:
            raise bad("offset", "valid: an integer >= 0")
        if not isinstance(self.shape, tuple) or len(self.shape) > MAX_NDIM:
            raise bad("shape", f"valid: a tuple of at most {MAX_NDIM} integers >= 0")
        if not all(_is_int(n) and n >= 0 for n in self.shape):
            raise bad("shape", "valid: integers >= 0")
        if self.dtype not in DTYPES:
            raise bad("dtype", f"valid: {', '.join(DTYPES)}")
        if self.role not in ROLES:
            raise bad("role", f"valid: {', '.join(ROLES)}")

    @property
    def nbytes(self) -> int:
        return math.prod(int(n) for n in self.shape) * np.dtype(self.dtype).itemsize

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
        if not isinstance(self.config, VTAConfig):
            raise ProgramError(f"config must be a VTAConfig, got {type(self.config).__name__}")
        self.insns = _byte_array(self.insns, "instruction stream")
        self.dram = _byte_array(self.dram, "DRAM image")
        if not all(isinstance(spec, BufferSpec) for spec in self.buffers):
            raise ProgramError("buffers must be a list of BufferSpec")
        if self.insns.size % INSN_BYTES:
            raise ProgramError(
                f"instruction stream of {self.insns.size} bytes is not a multiple of {INSN_BYTES}"
            )
        names = set()
        for spec in self.buffers:
            if spec.name in names:
                raise ProgramError(f"buffer {spec.name!r} is declared twice in the manifest")
            names.add(spec.name)
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
        """Read a Program file; anything but a well-formed one raises `ProgramError`, before
        allocating more than the limits of `vta.program_file` allow."""
        insns, dram, manifest = read_program_file(path)
        config, specs = parse_manifest(manifest, path)
        try:
            program = cls(config, insns, dram, [BufferSpec(*spec) for spec in specs])
        except ProgramError as err:
            raise ProgramError(f"{path}: {err}") from None
        if validate:
            try:
                validate_program(program)
            except ISAError as err:
                raise ProgramError(f"{path}: {err}") from err
        return program


def _byte_array(value: object, what: str) -> np.ndarray:
    """`value` as a flat contiguous uint8 array; values that are not integers in 0..255 are a
    ProgramError, not a silent cast."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as err:
        raise ProgramError(f"{what}: not an array of bytes ({err})") from None
    if arr.dtype == np.uint8:
        return np.ascontiguousarray(arr).reshape(-1)
    if arr.dtype.kind not in "biuf":
        raise ProgramError(f"{what} must be bytes (values 0..255), got {arr.dtype}")
    with np.errstate(invalid="ignore"):
        as_bytes = arr.astype(np.uint8)
    if not np.array_equal(as_bytes, arr):
        raise ProgramError(f"{what} must be bytes: its {arr.dtype} values are not all in 0..255")
    return np.ascontiguousarray(as_bytes).reshape(-1)


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
