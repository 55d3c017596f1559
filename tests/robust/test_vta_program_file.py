"""Regression tests: Program files that crashed, blew up memory, gave tracebacks or were silently
accepted are refused with one ProgramError naming the field and what is valid."""

import io
import json
import struct
import zipfile
import zlib

import numpy as np
import pytest

from testkit.examples import all_examples
from testkit.fuzzworker import Worker
from vta.errors import ProgramError
from vta.program import Program

MIB = 1 << 20


@pytest.fixture(scope="module")
def program() -> Program:
    return all_examples("tiny")[0].program


def _npz(path, **arrays) -> None:
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def _with_manifest(path, program: Program, manifest) -> None:
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    _npz(path, insns=program.insns, dram=program.dram, manifest=np.array(text))


def _buffer_field(program: Program, field: str, value) -> dict:
    manifest = program.manifest()
    manifest["buffers"][0][field] = value
    return manifest


@pytest.mark.parametrize(
    "field, value",
    [
        ("offset", "16"),
        ("offset", -16),
        ("offset", 1.5),
        ("offset", None),
        ("shape", [-1]),
        ("shape", [1.5]),
        ("shape", [2**62, 4]),  # its byte size wrapped to 0 in int64: accepted
        ("shape", "8"),
        ("shape", [True]),
        ("dtype", None),  # became float64
        ("dtype", "object"),  # became object
        ("dtype", "O"),
        ("dtype", "int8,int8"),
        ("dtype", 7),
        ("name", None),
        ("role", ["input"]),
    ],
)
def test_bad_buffer_fields_are_refused(program, tmp_path, field, value):
    path = tmp_path / "p.npz"
    _with_manifest(path, program, _buffer_field(program, field, value))
    with pytest.raises(ProgramError, match=f"{field}|lies outside") as err:
        Program.load(path)
    assert "\n" not in str(err.value)


def test_null_config_is_not_the_default_preset(program, tmp_path):
    path = tmp_path / "p.npz"
    _with_manifest(path, program, dict(program.manifest(), config=None))
    with pytest.raises(ProgramError, match="'config' = null"):
        Program.load(path)


def test_config_name_cannot_be_a_path(program, tmp_path):
    elsewhere = tmp_path / "any.json"
    elsewhere.write_text(json.dumps(program.config.to_dict()))
    path = tmp_path / "p.npz"
    for name in (str(elsewhere), "../configs/tiny", "tiny/../tiny"):
        _with_manifest(path, program, dict(program.manifest(), config=name))
        with pytest.raises(ProgramError, match="not a preset name"):
            Program.load(path)


def test_deeply_nested_manifest(program, tmp_path):
    path = tmp_path / "p.npz"
    _with_manifest(path, program, '{"version": 1, "buffers": ' + "[" * 100_000 + "]" * 100_000)
    with pytest.raises(ProgramError, match="nests deeper"):
        Program.load(path)


def test_version_types_are_shown(program, tmp_path):
    path = tmp_path / "p.npz"
    _with_manifest(path, program, dict(program.manifest(), version="1"))
    with pytest.raises(ProgramError, match='version "1" \\(a string\\); .* 1 \\(a number\\)'):
        Program.load(path)


def test_unknown_manifest_fields(program, tmp_path):
    path = tmp_path / "p.npz"
    _with_manifest(path, program, dict(program.manifest(), extra=1))
    with pytest.raises(ProgramError, match="unknown field"):
        Program.load(path)


@pytest.mark.parametrize(
    "content, what",
    [
        (bytes(range(256)) * 8, "not a zip archive"),
        (b"", "empty"),
        (b"\x93NUMPY\x01\x00" + bytes(100), "single .npy array"),
    ],
)
def test_a_random_file_says_what_it_is_not(tmp_path, content, what):
    path = tmp_path / "p.npz"
    path.write_bytes(content)
    with pytest.raises(ProgramError, match="not a Program file \\(.npz\\)") as err:
        Program.load(path)
    assert what in str(err.value) and "pickle" not in str(err.value)


def test_a_program_of_wrong_array_shapes(program, tmp_path):
    path = tmp_path / "p.npz"
    manifest = np.array(json.dumps(program.manifest()))
    _npz(path, insns=program.insns.reshape(-1, 16), dram=program.dram, manifest=manifest)
    with pytest.raises(ProgramError, match="insns.npy' must be uint8, 1-D"):
        Program.load(path)
    _npz(path, insns=program.insns, dram=program.dram, manifest=np.array([1, 2]))
    with pytest.raises(ProgramError, match="manifest.npy' must be a unicode string"):
        Program.load(path)


# ------------------------------------------------------------------ size limits (subprocess)
Member = tuple[str, bytes, int, int, int]  # name, stored bytes, method, uncompressed size, CRC


def _zip(members: list[Member]) -> bytes:
    """A zip archive of members given as they are stored (a bomb's CRC need not be right: the
    limits refuse it before its data is read)."""
    out, central = io.BytesIO(), io.BytesIO()
    for name, data, method, size, crc in members:
        offset, raw = out.tell(), name.encode()
        common = (method, 0, 0, crc, len(data), size, len(raw), 0)  # method .. extra length
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, *common) + raw + data)
        entry = (0x02014B50, 20, 20, 0, *common, 0, 0, 0, 0, offset)
        central.write(struct.pack("<IHHHHHHIIIHHHHHII", *entry) + raw)
    start, cd = out.tell(), central.getvalue()
    n = len(members)
    out.write(cd + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(cd), start, 0))
    return out.getvalue()


def _npy_header(shape: tuple[int, ...], dtype=np.uint8) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": shape}
    )
    return buf.getvalue()


def _stored(name: str, data: bytes) -> Member:
    return name, data, zipfile.ZIP_STORED, len(data), zlib.crc32(data)


def _small_members(program: Program) -> list[Member]:
    manifest = np.array(json.dumps(program.manifest()))
    text = manifest.tobytes()
    return [
        _stored("insns.npy", _npy_header(program.insns.shape) + program.insns.tobytes()),
        _stored("manifest.npy", _npy_header((), manifest.dtype) + text),
    ]


def _zip_bomb(gib: int) -> Member:
    """dram.npy: `gib` GiB of zeros deflated to a few MB (1 MiB blocks repeated after a full
    flush, which makes each copy independent)."""
    size = gib << 30
    header = _npy_header((size,))
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(header) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(bytes(MIB)) + c.flush(zlib.Z_FULL_FLUSH)
    data = head + block * (size // MIB) + c.flush(zlib.Z_FINISH)
    return "dram.npy", data, zipfile.ZIP_DEFLATED, len(header) + size, 0


def _load_in_child(path, memory_limit: int) -> dict:
    with Worker(timeout=120, memory_limit=memory_limit) as worker:
        return worker.request(op="program", path=str(path))


def test_decompression_bomb_is_refused_from_the_headers(program, tmp_path):
    path = tmp_path / "bomb.npz"
    path.write_bytes(_zip(_small_members(program) + [_zip_bomb(3)]))
    assert path.stat().st_size < 8 * MIB
    answer = _load_in_child(path, memory_limit=2 << 30)
    assert answer["outcome"] == "error", answer
    assert "dram.npy' unpacks to 3,221,225,600 bytes; the limit is 268,435,456" in answer["message"]


def test_npy_header_claiming_a_tebibyte_is_not_allocated(program, tmp_path):
    path = tmp_path / "huge.npz"
    dram = _npy_header((1 << 40,)) + bytes(64)
    path.write_bytes(_zip(_small_members(program) + [_stored("dram.npy", dram)]))
    answer = _load_in_child(path, memory_limit=2 << 30)
    assert answer["outcome"] == "error", answer
    assert "header claims 1,099,511,627,776 bytes (limit" in answer["message"]


@pytest.mark.parametrize(
    "insns, dram, message",
    [
        ([1, 2, 300] + [0] * 13, [0], "instruction stream must be bytes"),  # was wrapped to 44
        ([0] * 16, np.array([-1]), "DRAM image must be bytes"),
        ([0] * 16, np.array([1.5]), "DRAM image must be bytes"),
        ("abcdefghijklmnop", [0], "instruction stream must be bytes"),
        ([[0] * 16, [0]], [0], "not an array of bytes"),
    ],
)
def test_program_api_refuses_what_is_not_bytes(insns, dram, message):
    from vta.config import load_config

    with pytest.raises(ProgramError, match=message):
        Program(load_config("tiny"), insns, dram)


def test_an_instruction_stream_past_the_limit_is_refused(program, tmp_path):
    """2**22 instructions (64 MiB, 64 KiB deflated) took minutes and gigabytes to decode."""
    path = tmp_path / "long.npz"
    insns = np.zeros(64 << 20, dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez_compressed(fh, insns=insns, dram=program.dram, manifest=np.array("{}"))
    with pytest.raises(ProgramError, match="'insns.npy' unpacks to 67,108,992 bytes; the limit"):
        Program.load(path)


def test_numpy_integer_shapes_do_not_wrap():
    from vta.program import BufferSpec

    spec = BufferSpec("x", 0, (np.int64(2**62), np.int64(4)), "int8", "input")
    assert spec.nbytes == 2**64  # int64 arithmetic made it 0
