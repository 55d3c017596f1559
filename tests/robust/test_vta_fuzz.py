"""Property-based fuzzing of Program files and configuration files in a child process
(`testkit.fuzzworker`): every input either works or raises one of the toolkit's exceptions with a
short message; a signal, a hang, a memory blow-up or any other exception fails the test.

The default suite tries a few thousand inputs; `./scripts/test --slow` ten times as many. Each
test prints how many inputs it tried."""

import dataclasses
import io
import json
import os
import signal
import threading
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testkit.examples import all_examples
from testkit.fuzzworker import Worker, WorkerDied
from testkit.program_fuzz import random_program
from vta.config import CONFIG_DIR, preset_names
from vta.program import Program

SIZES = [pytest.param(1, id="default"), pytest.param(10, id="slow", marks=pytest.mark.slow)]
PROGRAM_INPUTS = 3000
CONFIG_INPUTS = 1500
MAX_MESSAGE_LINES = 12  # a summary line and a short list


@dataclasses.dataclass
class Tally:
    """Inputs tried per outcome."""

    ok: int = 0
    error: int = 0

    def report(self, capsys, what: str) -> None:
        with capsys.disabled():
            print(f"\n[fuzz] {what}: {self.ok + self.error} inputs tried "
                  f"({self.ok} accepted, {self.error} refused with a toolkit error)")  # fmt: skip


def check(answer: dict, tally: Tally, what: str) -> None:
    """An input must work or be refused by a toolkit exception with a short message."""
    assert answer["outcome"] != "bug", f"{what}: {answer['type']}\n{answer['message']}"
    if answer["outcome"] == "error":
        message = answer["message"]
        assert message.strip() and "Traceback" not in message, f"{what}: {message!r}"
        assert len(message.splitlines()) <= MAX_MESSAGE_LINES, f"{what}: {message}"
        tally.error += 1
    else:
        tally.ok += 1


@pytest.fixture(scope="module")
def worker():
    with Worker(timeout=60) as w:
        yield w


def _file_bytes(program: Program) -> bytes:
    return _npz(insns=program.insns, dram=program.dram, manifest=_manifest(program.manifest()))


def _manifest(value) -> np.ndarray:
    return np.array(json.dumps(value))


def _npz(compressed: bool = False, **arrays) -> bytes:
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()


BASES = [e.program for e in all_examples("tiny")[:3]] + [
    random_program(seed, "tiny") for seed in range(3)
]
BASE_FILES = [_file_bytes(p) for p in BASES]

# ------------------------------------------------------------------------------ strategies
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([0, 1, -1, 2**31, 2**62, 2**63, 2**64, 10**400, -(10**400)])
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(
        ["pynq", "tiny", "1x16_i8w8a32_15_15_18_17", "/etc/passwd", "../configs/pynq", "int8",
         "uint32", "object", "O", "V8", "float64", "input", "output", "uop", "1"]
    )
)  # fmt: skip
JSON_VALUES = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=8,
)


@st.composite
def mutated_manifest(draw) -> bytes:
    base = draw(st.sampled_from(BASES))
    manifest = base.manifest()
    target = manifest
    if manifest["buffers"] and draw(st.booleans()):
        target = manifest["buffers"][draw(st.integers(0, len(manifest["buffers"]) - 1))]
    key = draw(st.sampled_from([*target, "extra"]))
    action = draw(st.sampled_from(["set", "set", "set", "delete"]))
    if action == "delete":
        target.pop(key, None)
    else:
        target[key] = draw(JSON_VALUES)
    if draw(st.booleans()) and target is not manifest and isinstance(target.get("shape"), list):
        target["shape"] = draw(st.lists(st.integers(-(2**64), 2**64), max_size=40))
    return _npz(insns=base.insns, dram=base.dram, manifest=_manifest(manifest))


ARRAYS = st.builds(
    lambda dtype, shape: np.zeros(shape, dtype=dtype),
    st.sampled_from(["uint8", "int8", "int16", "float32", "<U4", "bool", "V3"]),
    st.lists(st.integers(0, 40), max_size=3).map(tuple),
)


@st.composite
def mutated_arrays(draw) -> bytes:
    base = draw(st.sampled_from(BASES))
    arrays = {"insns": base.insns, "dram": base.dram, "manifest": _manifest(base.manifest())}
    key = draw(st.sampled_from(sorted(arrays)))
    action = draw(st.sampled_from(["replace", "drop", "extra", "compress", "bytes"]))
    if action == "replace":
        arrays[key] = draw(ARRAYS)
    elif action == "drop":
        del arrays[key]
    elif action == "extra":
        arrays[draw(st.text(min_size=1, max_size=8))] = draw(ARRAYS)
    elif action == "bytes":
        arrays[key] = np.frombuffer(draw(st.binary(max_size=256)), dtype=np.uint8)
    return _npz(compressed=action == "compress", **arrays)


@st.composite
def flipped(draw, files: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(files)))
    for _ in range(draw(st.integers(1, 8))):
        bit = draw(st.integers(0, len(data) * 8 - 1))
        data[bit // 8] ^= 1 << (bit % 8)
    if draw(st.integers(0, 9)) == 0:
        data = data[: draw(st.integers(0, len(data)))]
    return bytes(data)


@st.composite
def flipped_contents(draw) -> bytes:
    """Bit flips inside the instruction stream or DRAM image of a well-formed file (flips of the
    file itself mostly meet the zip CRC)."""
    base = draw(st.sampled_from(BASES))
    arrays = {"insns": base.insns.copy(), "dram": base.dram.copy()}
    target = arrays[draw(st.sampled_from(["insns", "insns", "dram"]))]
    for _ in range(draw(st.integers(1, 4))):
        bit = draw(st.integers(0, target.size * 8 - 1))
        target[bit // 8] ^= np.uint8(1 << (bit % 8))
    return _npz(**arrays, manifest=_manifest(base.manifest()))


RANDOM_BYTES = st.tuples(
    st.sampled_from([b"", b"PK\x03\x04", b"\x93NUMPY\x01\x00", b"{"]), st.binary(max_size=2048)
).map(b"".join)
PROGRAM_FILES = st.one_of(RANDOM_BYTES, flipped(BASE_FILES), mutated_manifest(), mutated_arrays())


def _fuzz(strategy, examples: int, body) -> None:
    run = settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )(given(strategy)(body))
    run()


@pytest.mark.parametrize("scale", SIZES)
def test_program_files(worker, tmp_path, capsys, scale):
    tally, path = Tally(), tmp_path / "fuzzed.npz"

    def body(case: tuple[bytes, bool]) -> None:
        content, validate = case
        path.write_bytes(content)
        answer = worker.request(op="program", path=str(path), validate=validate)
        check(answer, tally, f"Program file {content[:64]!r} (validate={validate})")

    # One in four loads skips validation: the devices must refuse what the validator would.
    cases = st.tuples(PROGRAM_FILES, st.sampled_from([True, True, True, False]))
    _fuzz(cases, PROGRAM_INPUTS * scale, body)
    tally.report(capsys, "Program.load + fsim + sim (Program files)")


# ------------------------------------------------------------------------------ configurations
PRESETS = {name: (CONFIG_DIR / f"{name}.json").read_text() for name in preset_names()}


@st.composite
def mutated_config(draw) -> bytes:
    data = json.loads(PRESETS[draw(st.sampled_from(sorted(PRESETS)))])
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from([*data, "cmd_queue_depth", "dram_latency", "bogus"]))
        if draw(st.integers(0, 4)) == 0:
            data.pop(key, None)
        else:
            data[key] = draw(JSON_VALUES)
    return json.dumps(data).encode()


CONFIG_FILES = st.one_of(
    RANDOM_BYTES,
    mutated_config(),
    flipped([text.encode() for text in PRESETS.values()]),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
)


@pytest.mark.parametrize("scale", SIZES)
def test_configuration_files(worker, tmp_path, capsys, scale):
    tally, path = Tally(), tmp_path / "fuzzed.json"

    def body(content: bytes) -> None:
        path.write_bytes(content)
        check(worker.request(op="config", path=str(path)), tally, f"config {content[:80]!r}")

    _fuzz(CONFIG_FILES, CONFIG_INPUTS * scale, body)
    tally.report(capsys, "VTAConfig.load (configuration files)")


def test_a_valid_program_file_runs(worker, tmp_path):
    """The harness itself: a well-formed Program file is accepted (the fuzzing proves nothing
    if every input were refused)."""
    path = tmp_path / "ok.npz"
    path.write_bytes(BASE_FILES[0])
    assert worker.request(op="program", path=str(path)) == {"outcome": "ok"}
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == ["dram.npy", "insns.npy", "manifest.npy"]


def test_the_harness_reports_a_signal_and_a_hang(tmp_path):
    """A child that dies by a signal or stops answering fails the input it was given; the next
    input gets a fresh child."""
    path = tmp_path / "ok.npz"
    path.write_bytes(BASE_FILES[0])
    with Worker(timeout=2) as w:
        assert w.request(op="program", path=str(path))["outcome"] == "ok"
        os.kill(w.proc.pid, signal.SIGSTOP)  # cannot answer: a hang
        with pytest.raises(WorkerDied, match="no answer within 2 s"):
            w.request(op="program", path=str(path))
        assert w.request(op="program", path=str(path))["outcome"] == "ok"
        pid = w.proc.pid
        os.kill(pid, signal.SIGSTOP)
        threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()  # dies while asked
        with pytest.raises(WorkerDied, match="died .exit status -9"):
            w.request(op="program", path=str(path))
