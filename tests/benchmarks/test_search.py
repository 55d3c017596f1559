"""The search-quality benchmark's comparison, on the deterministic analytic cost."""

from tune_templates import AnalyticMeasure

from benchmarks.search import RandomScoreTuner, proposal_medians
from compiler.tune import create_task


def test_the_model_proposes_better_configs_than_random_search_and_random_scores():
    task = create_task("tiled_matmul", (256, 256, 256), "analytic")
    option = AnalyticMeasure()
    xgb, rand = proposal_medians(task, option, n_trial=48, skip=24)
    control, _ = proposal_medians(task, option, n_trial=48, skip=24, random_scores=True)
    assert xgb > rand > 0 and xgb > control > 0


def test_random_scores_still_propose_new_valid_configs():
    task = create_task("tiled_matmul", (64, 64, 64), "analytic")
    tuner = RandomScoreTuner(task, feature_type="knob", sa_iters=20)
    tuner.tune(32, AnalyticMeasure(), batch_size=8)
    assert len(set(tuner.history.configs)) == 32
    assert all(task.config_space.is_valid(i) for i in tuner.history.configs)
