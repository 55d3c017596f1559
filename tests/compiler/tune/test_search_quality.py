"""The model-based tuner against random search on measured CPU wall time.

Made fair to noise on a shared machine: kernels run on one thread (a foreign process busy on
one core then leaves them alone) and a config costs its fastest timing; the two tuners measure
batch by batch in turn, so a burst of foreign load hits both alike; and the figure compared is
the median throughput of the configs each tuner proposed once its model had data, not one
lucky best.
"""

import numpy as np
import pytest

import compiler.tune.templates  # noqa: F401 - registers the llvm templates
from compiler.tune import (
    CPURunner,
    LocalBuilder,
    RandomTuner,
    XGBCostModel,
    XGBTuner,
    create_task,
    measure_option,
)

BATCH = 8
N_TRIAL = 64
# xgb's first two batches are random (the model fits from 16 samples) and its third comes from
# a model of 16 samples: compare what each tuner proposed after that
SKIP = 3 * BATCH


def proposal_medians(seed: int = 0) -> tuple[float, float]:
    """Median GFLOPS of the configs xgb-rank and random proposed after SKIP trials, tuned in
    turn on AutoTVM's basic matmul space (128^3: loop orders, tiles, vectorization, 49,152
    points, most of them poor). Knob features: program features of this space's ~14,000 loop
    structures would cost ~1 min of probe lowering."""
    task = create_task("matmul_basic", (128, 128, 128), "llvm")
    option = measure_option(
        LocalBuilder(n_parallel=2), CPURunner(repeat=5, min_repeat_ms=1, threads=1)
    )
    xgb = XGBTuner(task, feature_type="knob", seed=seed, sa_iters=100)
    rand = RandomTuner(task, seed=seed + 1)
    try:
        for done in range(BATCH, N_TRIAL + 1, BATCH):
            for tuner in (xgb, rand):
                tuner.tune(done, option, batch_size=BATCH)
    finally:
        option.close()
    xgb_median, rand_median = (np.median(t.history.throughputs[SKIP:]) / 1e9 for t in (xgb, rand))
    return float(xgb_median), float(rand_median)


# Seeds 0-7 gave xgb/random ratios of 11.5, 8.5, 10.2, 5.5, 11.7, 10.0, 7.2 and 8.0 (AMD EPYC,
# quiet); the same runs with the model early-stopped on a held-out split of 3-6 rows (the rule
# before small fits used every row) gave 1.2, 8.4, 7.6, 6.6, 8.4, 4.3, 4.8 and 1.5. With random
# scores in place of the model's: 0.9, 0.9, 1.1, 0.8, 1.2 and 0.5 (seeds 0-5, Intel).
MARGIN = 2.0


def test_model_beats_random_on_the_basic_matmul_space():
    xgb, rand = proposal_medians()
    print(f"median of proposals after {SKIP}: xgb-rank {xgb:.2f} GFLOPS, random {rand:.2f}")
    assert xgb >= MARGIN * rand


@pytest.mark.slow
def test_the_margin_needs_the_model(monkeypatch):
    """Negative control: with random scores in place of the model's, the same comparison fails."""
    rng = np.random.default_rng(0)
    monkeypatch.setattr(XGBCostModel, "predict", lambda self, x: rng.random(len(x)))
    xgb, rand = proposal_medians()
    print(f"random scores: median of proposals {xgb:.2f} GFLOPS, random {rand:.2f}")
    assert xgb < MARGIN * rand
