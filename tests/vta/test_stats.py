"""The Stats report: derived figures and the per-module table."""

from vta.stats import Stats


def test_derived_figures_and_module_table():
    s = Stats(device="sim", clock_mhz=100.0, macs_per_cycle=256, cycles=1000, macs=128_000)
    s.modules["compute"].busy = 600
    assert s.utilization == 0.5
    assert abs(s.gops - 2 * 128_000 / 1e-5 / 1e9) < 1e-9
    report = s.report()
    assert "utilization     0.500" in report and "stall:token" in report


def test_device_without_module_counters_says_so():
    s = Stats(device="rtl", clock_mhz=100.0, macs_per_cycle=256, cycles=1000, macs=1)
    report = s.report()
    assert "not measured by this device" in report and "stall:token" not in report


def test_device_without_a_clock_has_no_cycle_figures():
    s = Stats(device="fsim", clock_mhz=100.0, macs_per_cycle=256, macs=5)
    assert s.utilization is None and s.gops is None
    assert "n/a" in s.report()
