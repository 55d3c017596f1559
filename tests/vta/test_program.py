"""Program: the open .npz format, round trips, and clear errors for bad files."""

import json
import zipfile

import numpy as np
import pytest

from testkit.examples import save_load_out
from vta.errors import ProgramError, ValidationError
from vta.program import Program


@pytest.fixture(scope="module")
def program() -> Program:
    return save_load_out("pynq", rows=8).program


def test_save_load_round_trip(program, tmp_path):
    path = tmp_path / "p.npz"
    program.save(path)
    loaded = Program.load(path)
    np.testing.assert_array_equal(loaded.insns, program.insns)
    np.testing.assert_array_equal(loaded.dram, program.dram)
    assert loaded.buffers == program.buffers
    assert loaded.config == program.config
    assert loaded.instructions == program.instructions


def test_file_is_plain_uncompressed_npz(program, tmp_path):
    path = tmp_path / "p.npz"
    program.save(path)
    with zipfile.ZipFile(path) as zf:
        assert all(info.compress_type == zipfile.ZIP_STORED for info in zf.infolist())
    with np.load(path, allow_pickle=False) as npz:
        assert set(npz.files) == {"insns", "dram", "manifest"}
        manifest = json.loads(str(npz["manifest"]))
    assert manifest["version"] == 1 and manifest["config"] == "pynq"
    assert {b["name"] for b in manifest["buffers"]} >= {"a", "out", "uops"}


def test_buffer_views(program):
    a = program.view("a")
    assert a.dtype == np.int32 and a.shape == (8, 1, 16)
    image = program.dram_with({"a": np.ones_like(a)})
    assert (program.view("a", image) == 1).all()
    assert set(program.outputs(image)) == {"out"}
    with pytest.raises(ProgramError, match="expects shape"):
        program.dram_with({"a": np.ones((2, 2), np.int32)})
    with pytest.raises(ProgramError, match="no buffer 'nope'"):
        program.buffer("nope")


def test_truncated_file(program, tmp_path):
    path = tmp_path / "p.npz"
    program.save(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ProgramError, match="cannot read Program file"):
        Program.load(path)


def test_corrupted_file(tmp_path):
    path = tmp_path / "p.npz"
    path.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 4)
    with pytest.raises(ProgramError):
        Program.load(path)


def _write(path, **arrays):
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def test_missing_array_and_bad_manifest(program, tmp_path):
    path = tmp_path / "p.npz"
    _write(path, insns=program.insns, dram=program.dram)
    with pytest.raises(ProgramError, match="missing \\['manifest'\\]"):
        Program.load(path)
    _write(path, insns=program.insns, dram=program.dram, manifest=np.array("{oops"))
    with pytest.raises(ProgramError, match="malformed manifest"):
        Program.load(path)
    manifest = dict(program.manifest(), version=2)
    _write(path, insns=program.insns, dram=program.dram, manifest=np.array(json.dumps(manifest)))
    with pytest.raises(ProgramError, match="version 2"):
        Program.load(path)


def test_torn_instruction_stream(program, tmp_path):
    path = tmp_path / "p.npz"
    manifest = np.array(json.dumps(program.manifest()))
    _write(path, insns=program.insns[:-3], dram=program.dram, manifest=manifest)
    with pytest.raises(ProgramError, match="not a multiple of 16"):
        Program.load(path)
    _write(path, insns=program.insns.astype(np.int16), dram=program.dram, manifest=manifest)
    with pytest.raises(ProgramError, match="must be uint8"):
        Program.load(path)


def test_buffer_outside_the_image(program, tmp_path):
    manifest = program.manifest()
    manifest["buffers"][0]["offset"] = program.dram.size
    path = tmp_path / "p.npz"
    _write(path, insns=program.insns, dram=program.dram, manifest=np.array(json.dumps(manifest)))
    with pytest.raises(ProgramError, match="outside the"):
        Program.load(path)


def test_loading_validates(program, tmp_path):
    path = tmp_path / "p.npz"
    bad = Program(program.config, program.insns[:-16], program.dram, program.buffers)  # no FINISH
    bad.save(path)
    with pytest.raises(ValidationError, match="FINISH"):
        Program.load(path)
    assert len(Program.load(path, validate=False)) == len(program) - 1
