"""Pareto fronts and hypervolume (pareto.py), energy from counted events (energy.py) and the
SQLite store of evaluated points (store.py)."""

import itertools

import numpy as np
import pytest

from compiler.codesign.energy import MAC_PJ, energy, sram_bits, sram_pj_per_bit
from compiler.codesign.evaluate import Evaluation
from compiler.codesign.pareto import front, hypervolume
from compiler.codesign.space import Point
from compiler.codesign.store import Store, study_key
from compiler.errors import CompilerError
from vta.config import VTAConfig
from vta.isa import MemType
from vta.stats import Stats


def _dominated(p, q) -> bool:
    return q[0] <= p[0] and q[1] <= p[1] and q != p


def test_front_is_the_non_dominated_points(rng):
    for _ in range(50):
        pts = [tuple(map(float, rng.integers(0, 8, 2))) for _ in range(12)]
        kept = {pts[i] for i in front(pts)}
        expected = {p for p in pts if not any(_dominated(p, q) for q in pts)}
        assert kept == expected


def test_hypervolume_matches_a_grid_count(rng):
    for _ in range(20):
        pts = [tuple(map(float, rng.integers(0, 10, 2))) for _ in range(6)]
        ref = (10.0, 10.0)
        cells = sum(
            any(p[0] <= x and p[1] <= y for p in pts)
            for x, y in itertools.product(np.arange(0.5, 10), repeat=2)
        )
        assert hypervolume(pts, ref) == pytest.approx(cells)
    assert hypervolume([(11.0, 1.0)], (10.0, 10.0)) == 0.0


def test_energy_counts_each_event_once():
    cfg = VTAConfig.load("pynq")
    st = Stats("sim", cfg.clock_mhz, cfg.macs_per_cycle, cycles=100)
    st.gemm_uops, st.macs, st.bytes_loaded, st.bytes_stored = 10, 10 * 256, {"inp": 160}, 64
    bits = sram_bits(st, cfg)
    assert bits[MemType.INP] == 10 * 128 + 8 * 160
    assert bits[MemType.WGT] == 10 * 16 * 16 * 8
    e = energy(st, cfg)
    assert e.mac == pytest.approx(10 * 256 * MAC_PJ * 1e-9)
    assert e.dram > 0 and e.total == pytest.approx(e.mac + e.sram + e.dram)
    # bigger SRAMs cost more per bit, within the table's range
    assert sram_pj_per_bit(8 << 10) < sram_pj_per_bit(64 << 10) < sram_pj_per_bit(1 << 20)


def _evaluation(block: int, cycles: int) -> Evaluation:
    cfg = VTAConfig.load("pynq")
    return Evaluation(Point(block=block), cfg.to_dict(), True, 1000, 2000, 10, 20, {"LUT": 0.1},
                      150.0, 150.0, cycles, {"conv": cycles}, 0.5, 99)  # fmt: skip


def test_store_keeps_and_resumes_evaluations(tmp_path):
    path = tmp_path / "cd.db"
    store = Store(path)
    a, b = _evaluation(8, 300), _evaluation(16, 100)
    store.put("s1", a)
    store.put("s1", b)
    store.put("s1", b, "preset:pynq")
    store.close()
    again = Store(path)
    assert again.get("s1", b.point.label).cycles == 100
    assert [ev.point.block for ev in again.all("s1")] == [8, 16]  # presets apart
    assert again.get("s2", a.point.label) is None
    assert again.get("s1", "preset:pynq").latency_ms == pytest.approx(100 / 150e3)


def test_a_damaged_store_is_one_line(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a database at all" * 100)
    with pytest.raises(CompilerError, match="co-design database"):
        Store(bad)


def test_study_key_names_model_part_and_settings(tmp_path):
    model = tmp_path / "m.onnx"
    model.write_bytes(b"x")
    k = study_key(model, None, "xc7z020", 8, None)
    assert k == study_key(model, None, "xc7z020", 8, None)
    assert k != study_key(model, None, "xczu3eg", 8, None)
    assert k != study_key(model, None, "xc7z020", 4, None)
