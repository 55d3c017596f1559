"""Reading a Program file safely: size limits from the headers before any data is read, and a
schema check of the manifest (docs/robustness.md, "Limits on Program files").

A Program file is a `.npz` (a zip archive) with exactly the members `insns.npy`, `dram.npy`
(1-D uint8 arrays) and `manifest.npy` (a 0-d unicode string holding JSON). Each member's
uncompressed size comes from the zip directory and its array's size from its `.npy` header; both
must agree and stay under the limits below, so neither a decompression bomb nor a header
claiming a huge array allocates anything.
"""

from __future__ import annotations

import inspect
import io
import json
import math
import re
import struct
import zipfile
import zlib
from pathlib import Path
from typing import IO

import numpy as np

from .config import VTAConfig
from .errors import ConfigError, ProgramError

FORMAT_VERSION = 1
ROLES = ("input", "weight", "output", "scratch", "uop")
DTYPES = (
    "bool",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float16",
    "float32",
    "float64",
)
MEMBERS = ("insns", "dram", "manifest")
# Uncompressed sizes of the members' data. 2**21 instructions decode and validate in about
# 2 GB and 20 s; the DRAM image is copied by each run.
LIMITS = {"insns": 32 << 20, "dram": 256 << 20, "manifest": 16 << 20}
MAX_HEADER_BYTES = 1 << 16  # an .npy header
MAX_BUFFERS = 4096
MAX_BUFFER_NAME = 256
MAX_NDIM = 32
MAX_JSON_DEPTH = 8  # the schema needs 4 levels: manifest > buffers > buffer > shape
MANIFEST_KEYS = ("version", "config", "buffers")
BUFFER_KEYS = ("name", "offset", "shape", "dtype", "role")


def read_program_file(path: str | Path) -> tuple[np.ndarray, np.ndarray, str]:
    """(insns, dram, manifest text) of a Program file, or a ProgramError saying what is wrong."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            if not head.startswith(b"PK"):
                raise ProgramError(f"{path}: not a Program file (.npz): {_describe(head)}")
            fh.seek(0)
            with zipfile.ZipFile(fh) as archive:
                infos = _members(archive, path)
                arrays = {key: _read_member(archive, infos[key], key, path) for key in MEMBERS}
    except ProgramError:
        raise
    except (OSError, zipfile.BadZipFile, zlib.error, EOFError, ValueError) as err:
        raise ProgramError(f"{path}: cannot read Program file ({_short(err)})") from None
    except (NotImplementedError, RuntimeError) as err:  # unsupported compression, encryption
        raise ProgramError(f"{path}: unsupported zip member ({_short(err)})") from None
    manifest = arrays["manifest"]
    return arrays["insns"], arrays["dram"], str(manifest[()])


def read_arrays(path: str | Path, limit: int = 1 << 30, what: str = "arrays") -> dict:
    """The numeric arrays of an .npz file by name (inputs, calibration data), each member's size
    checked from the zip directory and its .npy header before it is read (at most `limit` bytes
    in all); a ProgramError saying what is wrong otherwise (`what` names the file's role)."""
    arrays, total = {}, 0
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            if not head.startswith(b"PK"):
                raise ProgramError(f"{what} {path}: not an .npz file: {_describe(head)}")
            fh.seek(0)
            with zipfile.ZipFile(fh) as archive:
                for info in archive.infolist():
                    name = info.filename.removesuffix(".npy")
                    where = f"{what} {path}: member {info.filename[:64]!r}"
                    total += info.file_size
                    if total > limit + MAX_HEADER_BYTES * len(arrays):
                        raise ProgramError(f"{what} {path} unpacks to more than {limit:,} bytes")
                    with archive.open(info) as member:
                        shape, fortran, dtype = _read_header(member, where)
                        if dtype.kind not in "biuf":
                            raise ProgramError(f"{where} has dtype {dtype.str}; numbers only")
                        arrays[name] = _read_data(member, where, shape, fortran, dtype, limit)
    except ProgramError:
        raise
    except (OSError, zipfile.BadZipFile, zlib.error, EOFError, ValueError) as err:
        raise ProgramError(f"{what} {path}: cannot read .npz file ({_short(err)})") from None
    except (NotImplementedError, RuntimeError) as err:
        raise ProgramError(f"{what} {path}: unsupported zip member ({_short(err)})") from None
    return arrays


def read_raw_stream(path: str | Path) -> np.ndarray:
    """A bare instruction stream file as uint8, at most the `insns` limit (never read whole)."""
    limit = LIMITS["insns"]
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as err:
        raise ProgramError(f"{path}: cannot read instruction stream ({_short(err)})") from None
    if len(data) > limit:
        raise ProgramError(f"{path}: instruction stream larger than the limit of {limit:,} bytes")
    return np.frombuffer(data, dtype=np.uint8)


def _describe(head: bytes) -> str:
    if head.startswith(b"\x93NUMPY"):
        return "a single .npy array, not a .npz archive"
    if not head:
        return "the file is empty"
    return f"not a zip archive (starts with bytes {head!r})"


def _members(archive: zipfile.ZipFile, path: str | Path) -> dict[str, zipfile.ZipInfo]:
    infos: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        key = info.filename.removesuffix(".npy")
        if key not in MEMBERS or info.filename != f"{key}.npy":
            raise ProgramError(
                f"{path}: not a Program file (.npz): unexpected member {info.filename[:64]!r} "
                f"(a Program file holds {', '.join(m + '.npy' for m in MEMBERS)})"
            )
        if key in infos:
            raise ProgramError(f"{path}: member {info.filename!r} appears twice")
        infos[key] = info
    missing = [m for m in MEMBERS if m not in infos]
    if missing:
        raise ProgramError(f"{path}: not a Program file (.npz): missing {missing}")
    for key, info in infos.items():
        limit = LIMITS[key]
        if info.file_size > limit + MAX_HEADER_BYTES:
            raise ProgramError(
                f"{path}: member {info.filename!r} unpacks to {info.file_size:,} bytes; the limit "
                f"is {limit:,} (stored as {info.compress_size:,} bytes)"
            )
    return infos


def _read_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, key: str, path: str | Path
) -> np.ndarray:
    """One member's array, checking its sizes against the limits before reading the data."""
    limit = LIMITS[key]
    where = f"{path}: member {info.filename!r}"
    with archive.open(info) as fh:
        shape, fortran, dtype = _read_header(fh, where)
        if key == "manifest":
            ok = dtype.kind == "U" and shape == ()
            want = "a unicode string (0-d)"
        else:
            ok = dtype == np.uint8 and len(shape) == 1
            want = "uint8, 1-D"
        if not ok:
            raise ProgramError(f"{where} must be {want}, found {dtype.str} with shape {shape}")
        if fortran and len(shape) > 1:
            raise ProgramError(f"{where} is Fortran-ordered; expected C order")
        return _read_data(fh, where, shape, fortran, dtype, limit)


def _read_data(
    fh: IO[bytes], where: str, shape: tuple[int, ...], fortran: bool, dtype: np.dtype, limit: int
) -> np.ndarray:
    """The array after an .npy header, its size checked against `limit` before it is read."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > limit:
        raise ProgramError(f"{where}: its header claims {nbytes:,} bytes (limit {limit:,})")
    data = fh.read(nbytes + 1)
    if len(data) != nbytes:
        raise ProgramError(
            f"{where}: its header claims {nbytes:,} bytes of data, the member holds {len(data):,}"
        )
    order = "F" if fortran else "C"
    return np.frombuffer(data, dtype=dtype).reshape(shape, order=order).copy()


def _read_header(fh: IO[bytes], where: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """An .npy member's (shape, Fortran order, dtype), its header's size checked before numpy
    parses it (numpy before 1.24, a PYNQ image's, parses a header of any size)."""
    try:
        version = np.lib.format.read_magic(fh)
        if version not in _HEADER_READERS:
            raise ProgramError(f"{where}: .npy format version {version} (valid: 1.0, 2.0)")
        size_format, read = _HEADER_READERS[version]
        size = fh.read(struct.calcsize(size_format))
        (length,) = struct.unpack(size_format, size)
        if length > MAX_HEADER_BYTES:
            raise ProgramError(f"{where}: .npy header of {length} bytes (at most "
                               f"{MAX_HEADER_BYTES})")  # fmt: skip
        return read(io.BytesIO(size + fh.read(length)), **_HEADER_LIMIT)
    except (ValueError, SyntaxError, TypeError, EOFError, struct.error) as err:
        raise ProgramError(f"{where} is not a valid .npy array ({_short(err)})") from None


# the .npy header's length field and reader, by format version
_HEADER_READERS = {
    (1, 0): ("<H", np.lib.format.read_array_header_1_0),
    (2, 0): ("<I", np.lib.format.read_array_header_2_0),
}
# numpy 1.24 and later refuse headers over max_header_size (default 10000 bytes)
_HEADER_LIMIT = (
    {"max_header_size": MAX_HEADER_BYTES}
    if "max_header_size" in inspect.signature(np.lib.format.read_array_header_1_0).parameters
    else {}
)


# ------------------------------------------------------------------------------- manifest
def parse_manifest(
    text: str, path: str | Path
) -> tuple[VTAConfig, list[tuple[str, int, tuple[int, ...], str, str]]]:
    """The configuration and (name, offset, shape, dtype, role) of each buffer of a manifest,
    checked against the schema; a ProgramError names the field and what is valid."""
    if _nesting(text) > MAX_JSON_DEPTH:
        raise ProgramError(f"{path}: manifest nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        manifest = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as err:
        raise ProgramError(f"{path}: malformed manifest, not JSON ({_short(err)})") from None
    _object(manifest, MANIFEST_KEYS, "manifest", path)
    version = manifest["version"]
    if not _is_int(version) or version != FORMAT_VERSION:
        raise ProgramError(
            f"{path}: manifest version {_show(version)} (a {_json_type(version)}); "
            f"this toolkit reads version {FORMAT_VERSION} (a number)"
        )
    name = manifest["config"]
    if not isinstance(name, str):
        raise ProgramError(
            f"{path}: manifest field 'config' = {_show(name)} ({_json_type(name)}); valid: "
            "the name of a preset or a configuration string"
        )
    try:
        config = VTAConfig.load_named(name)
    except ConfigError as err:
        raise ProgramError(f"{path}: manifest field 'config': {err}") from None
    buffers = manifest["buffers"]
    if not isinstance(buffers, list) or len(buffers) > MAX_BUFFERS:
        raise ProgramError(
            f"{path}: manifest field 'buffers' must be a list of at most {MAX_BUFFERS} objects, "
            f"got {_json_type(buffers)}"
        )
    specs = []
    for i, b in enumerate(buffers):
        where = f"manifest buffers[{i}]"
        _object(b, BUFFER_KEYS, where, path)
        for key, want in (("name", str), ("dtype", str), ("role", str), ("offset", int)):
            if not isinstance(b[key], want) or (want is int and not _is_int(b[key])):
                raise ProgramError(
                    f"{path}: {where} field {key!r} = {_show(b[key])} ({_json_type(b[key])}); "
                    f"valid: {'an integer' if want is int else 'a string'}"
                )
        shape = b["shape"]
        if not isinstance(shape, list) or not all(_is_int(n) for n in shape):
            raise ProgramError(
                f"{path}: {where} field 'shape' = {_show(shape)}; valid: a list of integers >= 0"
            )
        specs.append((b["name"], b["offset"], tuple(shape), b["dtype"], b["role"]))
    return config, specs


def _object(value: object, keys: tuple[str, ...], where: str, path: str | Path) -> None:
    if not isinstance(value, dict):
        raise ProgramError(f"{path}: {where} must be a JSON object, got {_json_type(value)}")
    missing = [k for k in keys if k not in value]
    extra = sorted(str(k)[:32] for k in value if k not in keys)
    if missing or extra:
        raise ProgramError(
            f"{path}: {where} has "
            + "; ".join(
                part
                for part in (
                    f"missing field(s) {missing}" if missing else "",
                    f"unknown field(s) {extra[:8]}" if extra else "",
                )
                if part
            )
            + f" (fields: {', '.join(keys)})"
        )


_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _nesting(text: str) -> int:
    """The deepest bracket nesting of a JSON text (strings skipped), without recursion."""
    depth = deepest = 0
    for token in _BRACKETS.finditer(text):
        t = token.group()
        if t in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif t in "]}":
            depth -= 1
    return deepest


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _json_type(value: object) -> str:
    names = {bool: "boolean", int: "number", float: "number", str: "string", list: "array"}
    if value is None:
        return "null"
    return names.get(type(value), "object" if isinstance(value, dict) else type(value).__name__)


def _show(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, (dict, list)) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _short(err: Exception) -> str:
    text = str(err) or type(err).__name__
    return text if len(text) <= 160 else text[:157] + "..."
