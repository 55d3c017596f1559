"""The tuner study's plan and bookkeeping: which parts run in which order, trials to a mark,
medians over seeds, the report's figures."""

import json
from pathlib import Path

import pytest
from tune_templates import analytic_option

from benchmarks import study_report
from benchmarks.study import Part, Plan, Study
from compiler.tune import Database
from compiler.tune.transfer import MIN_RECORDS


def run(tuner: str, seed: int, curve: list[float]) -> dict:
    return {
        "target": "vta",
        "layer": "C9",
        "tuner": tuner,
        "seed": seed,
        "curve": curve,
        "n_trial": len(curve),
        "batch": 2,
        "sources": [],
        "commit": "abc",
        "foreign_cores": 0.1 * seed,
        "seconds": 1.0,
        "measured": len(curve),
        "reused": 0,
        "errors": 0,
    }


def test_trials_to_reach_counts_from_one_and_says_never():
    assert study_report.trials_to_reach([1.0, 0.0, 5.0, 3.0], 4.0) == 3
    assert study_report.trials_to_reach([1.0, 2.0], 1.0) == 1
    assert study_report.trials_to_reach([1.0, 2.0], 2.5) is None


def test_median_trials_takes_an_observed_run_and_ranks_never_last():
    runs = [run("random", s, c) for s, c in enumerate(([9, 10], [1, 1], [10, 1]))]
    assert study_report.median_trials(runs, 10) == (2, [2, None, 1])
    runs = [run("random", s, c) for s, c in enumerate(([1, 1], [1, 1], [10, 1]))]
    assert study_report.median_trials(runs, 10) == (None, [None, None, 1])
    assert study_report.median_trials(runs[1:], 10) == (None, [None, 1])  # even: the upper


def test_report_pools_seeds_against_the_best_any_run_found(tmp_path):
    parts = [
        run("xgb-rank", 0, [50.0, 96.0, 100.0]),
        run("xgb-rank", 1, [40.0, 60.0, 99.0]),
        run("random", 0, [10.0, 20.0, 96.0]),
        run("random", 1, [97.0, 20.0, 30.0]),
    ]
    (study,) = study_report.report(parts, tmp_path)["studies"]
    xgb, rand = study["tuners"]["xgb-rank"], study["tuners"]["random"]
    assert study["best_any"] == 100.0
    assert xgb["seeds"] == [0, 1] and xgb["trials_to_95_per_seed"] == [2, 3]
    assert (xgb["trials_to_95"], xgb["trials_to_99"], xgb["trials_to_best"]) == (3, 3, None)
    assert rand["trials_to_95_per_seed"] == [3, 1] and rand["trials_to_95"] == 3
    assert rand["measured"] == 6 and rand["foreign_cores"] == pytest.approx(0.1)
    assert study["random_within"] == {"90": 2, "95": 2, "99": 0, "of": 6}
    assert Path(study["png"]).stat().st_size > 0
    # batches of 2: the model fits at 16 samples, so xgb-rank's own picks start at trial 17
    assert study["goal"] == {
        "ratio": 1.0,
        "met": False,
        "first_guided_trial": 17,
        "in_reach": False,
    }
    study_report.print_report({"studies": [study]})


def test_the_goal_is_in_reach_only_where_random_needs_3x_the_first_guided_trial():
    def tuner(trials_to_95, batch=8, n_trial=400):
        return {"trials_to_95": trials_to_95, "batch": batch, "n_trial": n_trial}

    verdict = study_report.goal_verdict
    assert verdict(tuner(29), tuner(185)) == {
        "ratio": 185 / 29,
        "met": True,
        "first_guided_trial": 17,
        "in_reach": True,
    }
    assert not verdict(tuner(16), tuner(16))["in_reach"]  # random's own first batches
    assert verdict(tuner(50), tuner(None))["ratio"] == 401 / 50  # random never: a lower bound
    assert verdict(tuner(None), tuner(100))["ratio"] is None
    assert not verdict(tuner(None), tuner(100))["met"]
    assert study_report.first_guided_trial(64) == 65


def test_the_report_says_when_a_transfer_part_had_no_global_model(tmp_path, capsys):
    warm = run(study_report.TRANSFER, 0, [50.0, 100.0]) | {"sources": ["C6"], "transferred": False}
    parts = [run("xgb-rank", 0, [50.0, 100.0]), warm]
    study_report.print_report(study_report.report(parts, tmp_path))
    out = capsys.readouterr().out
    assert "transfer from C6" in out and "(not applied: too few source records)" in out
    assert "goal xgb-rank/transfer >= 2 to 95%: 1.0, not met" in out
    warm["transferred"] = True
    study_report.print_report(study_report.report(parts, tmp_path))
    assert "not applied" not in capsys.readouterr().out
    assert MIN_RECORDS == 64


def test_run_to_run_compares_configs_measured_in_several_runs():
    a = run("xgb-rank", 0, [100.0, 50.0, 0.0]) | {"configs": [7, 8, 9]}
    b = run("random", 0, [90.0, 0.0, 60.0, 10.0]) | {"configs": [7, 9, 8, 3]}
    c = run("random", 1, [80.0]) | {"configs": [7]}
    # config 7: 100/80; config 8: 60/50; config 9 failed in one run and is left out
    assert study_report.run_to_run([a, b, c]) == {
        "configs": 2,
        "median": pytest.approx(1.225),
        "p90": pytest.approx(1.245),
        "max": 1.25,
    }
    assert study_report.run_to_run([a, run("random", 1, [1.0])]) is None  # no configs: old parts


def test_the_transfer_goal_needs_a_global_model_and_half_the_trials():
    def tuner(trials_to_95, transferred=True, n_trial=400):
        return {"trials_to_95": trials_to_95, "transferred": transferred, "n_trial": n_trial}

    verdict = study_report.transfer_verdict
    assert verdict(tuner(7), tuner(1)) == {"ratio": 7.0, "met": True}
    assert verdict(tuner(7), tuner(4)) == {"ratio": 1.75, "met": False}
    assert verdict(tuner(None), tuner(100))["ratio"] == 4.01  # never without: a lower bound
    assert verdict(tuner(7), tuner(None)) == {"ratio": None, "met": False}
    assert not verdict(tuner(7), tuner(1, transferred=False))["met"]


def test_the_plan_orders_parts_by_priority_and_runs_a_shared_baseline_once():
    plan = Plan(layers=("C9",), transfer_layers=("C9",), trials=100, vta_model_free_trials=40)
    parts = plan.parts()
    names = [p.name for p in parts]
    assert names == [
        "llvm_C9_xgb-rank",
        "llvm_C9_random",
        "vta_C9_xgb-rank",
        "vta_C9_random",
        "llvm_C9_xgb-reg",
        "llvm_C9_ga",
        "vta_C9_xgb-reg",
        "vta_C9_xgb-rank+transfer",  # its xgb-rank baseline already ran
        "vta_C9_ga",
        "llvm_C9_xgb-rank+transfer",
    ]
    trials = {p.name: p.n_trial for p in parts}
    assert trials["vta_C9_random"] == trials["vta_C9_ga"] == 40 and trials["vta_C9_xgb-rank"] == 100
    warm = parts[7]
    assert warm.sources == ("C2", "C3", "C4", "C5", "C6") and warm.folder == "seed0"
    assert plan.source_trials() == {"vta": 40, "llvm": 100}
    skipped = Plan(targets=("vta",), tuners=("random",), transfer=("vta",), skip_sources=3)
    assert [p.sources for p in skipped.parts() if p.sources] == [("C5", "C6")] * 3


def test_quick_plan_tunes_one_layer_briefly_with_one_transfer_source():
    plan = Plan(seeds=(0, 1), trials=400, quick=True)
    assert (plan.trials, plan.vta_model_free_trials, plan.batch) == (32, 32, 8)
    parts = plan.parts()
    assert {p.layer for p in parts} == {"C9"} and {p.seed for p in parts} == {0, 1}
    warm = [p for p in parts if p.sources]
    assert [(p.target, p.sources) for p in warm] == [("vta", ("C6",))] * 2
    assert Part("vta", "C9", "random", 32, 8, 1) in parts


# two "layers" of an analytic blocked matmul, measured in this process by a deterministic runner
SHAPES = {"small": (16,), "other": (32,)}


def analytic_study(parts_dir: Path) -> Study:
    return Study(
        parts_dir,
        {"analytic": 64},
        task_args=lambda layer, target: ("blocked_matmul", SHAPES[layer]),
        make_option=lambda target: analytic_option(),
    )


def test_study_parts_run_resume_and_share_deterministic_measurements(tmp_path, capsys):
    study = analytic_study(tmp_path)
    rand = study.run(Part("analytic", "small", "random", 16, 8))
    assert (rand["measured"], rand["reused"], len(rand["curve"])) == (16, 0, 16)
    assert "seed0/analytic_small_random: best" in capsys.readouterr().out
    assert json.loads((tmp_path / "seed0" / "analytic_small_random.json").read_text()) == rand
    with Database(tmp_path / "seed0" / "analytic_small_random.db") as db:
        assert [r.config_index for r in db.records()] == rand["configs"]
    # xgb-rank's first two batches are random search's own configs: measured once, for both
    model = study.run(Part("analytic", "small", "xgb-rank", 24, 8))
    assert model["configs"][:16] == rand["configs"]
    assert (model["measured"], model["reused"]) == (8, 16)
    assert study.run(Part("analytic", "small", "random", 16, 8)) == rand  # finished: not rerun
    study.close()
    # a new study (another process) remembers what the earlier parts' records hold
    again = analytic_study(tmp_path)
    reg = again.run(Part("analytic", "small", "xgb-reg", 16, 8))
    assert (reg["measured"], reg["reused"]) == (0, 16) and reg["curve"] == rand["curve"]
    # transfer: the source layer's random part runs first, its records seed the part's database
    warm = again.run(Part("analytic", "small", study_report.TRANSFER, 16, 8, 0, ("other",)))
    source = json.loads((tmp_path / "seed0" / "analytic_other_random.json").read_text())
    assert source["n_trial"] == MIN_RECORDS and warm["transferred"] and warm["sources"] == ["other"]
    again.close()
