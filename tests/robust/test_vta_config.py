"""Regression tests: configurations with wrong types, absurd values or garbage bytes are refused
with one ConfigError naming the field and what is valid."""

import json

import pytest

from vta.config import VTAConfig, load_config
from vta.errors import ConfigError


def _file(tmp_path, text: str | bytes):
    path = tmp_path / "c.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


@pytest.mark.parametrize(
    "field, value, valid",
    [
        ("clock_mhz", None, "a finite number"),
        ("clock_mhz", True, "a finite number"),  # was 1 MHz
        ("dram_latency", False, "an integer"),
        ("alu_mul", 1, "true or false"),
        ("name", None, "a string"),
        ("log_uop_buff_size", 10**30, r"\[0, 30\]"),  # was OverflowError
        ("log_block", 10**30, r"\[1, 6\]"),
        ("log_block_out", 10**30, r"\[1, 6\]"),
        ("log_block_out", "8", "an integer"),
        ("clock_mhz", 1e308, r"\[1, 2000\]"),
        ("clock_mhz", 10**400, r"\[1, 2000\]"),  # was OverflowError converting to float
        ("dram_latency", 10**12, r"\[1, 65536\]"),
        ("token_queue_depth", 1 << 40, r"\[1, 65536\]"),
        ("gemm_pipeline_depth", 10**6, r"\[1, 64\]"),
        ("max_burst_beats", 1 << 20, r"\[1, 256\]"),
        ("name", "../../etc/passwd", "no path separators"),
        ("name", "a/b", "no path separators"),
        ("name", "", "no path separators"),
        ("description", "x" * 5000, "at most 1024 characters"),
    ],
)
def test_wrong_types_and_ranges_name_the_field(field, value, valid):
    with pytest.raises(ConfigError, match=f"'{field}'.*{valid}") as err:
        VTAConfig.from_dict({field: value})
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match=field):
        load_config().replace(**{field: value})


@pytest.mark.parametrize("text", ['{"clock_mhz": Infinity}', '{"clock_mhz": NaN}'])
def test_infinite_clock(tmp_path, text):
    with pytest.raises(ConfigError, match="Infinity|NaN"):
        VTAConfig.load(_file(tmp_path, text))


def test_overflowing_float_is_not_infinite(tmp_path):
    with pytest.raises(ConfigError, match="clock_mhz"):
        VTAConfig.load(_file(tmp_path, '{"clock_mhz": 1e999}'))


@pytest.mark.parametrize(
    "content, what",
    [
        (bytes(range(256)), "not JSON text"),  # was UnicodeDecodeError
        ("[" * 100_000, "not JSON"),  # was RecursionError
        ("[1, 2]", "a JSON object"),
        ("null", "a JSON object"),
        ("1" * 100_000, "not JSON"),  # more digits than int() reads
    ],
)
def test_garbage_files(tmp_path, content, what):
    with pytest.raises(ConfigError, match=what):
        VTAConfig.load(_file(tmp_path, content))


def test_huge_file_is_not_read_whole(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (2 << 20) + b"{}")
    with pytest.raises(ConfigError, match="larger than"):
        VTAConfig.load(path)


def test_one_command_queue_entry_is_refused():
    """The RTL's command FIFO needs at least two entries (its pointers are LOG_DEPTH bits wide;
    Verilator refuses the model for one), where the simulator ran with one: the two would
    disagree, so the configuration is refused."""
    with pytest.raises(ConfigError, match=r"'cmd_queue_depth' = 1 must be in \[2, 65536\]"):
        load_config().replace(cmd_queue_depth=1)


def test_names_are_not_paths(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"name": "mine"}))
    with pytest.raises(ConfigError, match="not a preset name"):
        VTAConfig.load_named(str(path))
    with pytest.raises(ConfigError, match="not a preset name"):
        VTAConfig.load("../configs/pynq")
    with pytest.raises(ConfigError, match="name or a path"):
        VTAConfig.load(12)


def test_replace_with_an_unknown_field():
    with pytest.raises(ConfigError, match=r"unknown config field\(s\) \['clock'\]"):
        load_config().replace(clock=100)  # was a TypeError from dataclasses.replace
