"""The accelerator benchmark on one layer: checked outputs, virtual threads, the table."""

import numpy as np

from benchmarks import vta


def test_a_layer_runs_with_and_without_virtual_threads(tmp_path, capsys):
    row = vta.bench_layer("C12", 1, np.random.default_rng(0))  # outputs checked bit-exactly
    assert row["layer"] == "C12" and row["config"] == "pynq"
    assert row["knobs"]["oc_nthread"] * row["knobs"]["h_nthread"] > 1
    assert row["cycles"] < row["cycles_no_vthread"]
    assert 0 < row["utilization"] <= row["utilization_ceiling"] <= 1
    assert row["dram_bytes"] > 0 and row["intensity"] > 0
    raised, bound = vta.verdicts([row])
    assert raised and bound == []  # C12's epilogue caps it at 0.99
    vta.print_table([row])
    assert capsys.readouterr().out.splitlines()[1].startswith("C12")
    vta.roofline([row], tmp_path / "roofline.png", vta.get_env().config)
    assert (tmp_path / "roofline.png").stat().st_size > 0
