"""Real CPU templates: features from the lowered loop IR, builds that cross process boundaries,
and the model-based tuner against random search on measured wall time."""

import pickle

import numpy as np
import pytest

import compiler.tune.templates  # noqa: F401 - registers the llvm templates
from compiler.tune import (
    CPURunner,
    Featurizer,
    LocalBuilder,
    RandomTuner,
    XGBTuner,
    create_task,
    measure_option,
)
from compiler.tune.measure import LibraryKernel, compiler_build, random_arrays
from compiler.tune.tir_features import loop_nest, lower_for_features


def test_loop_nest_of_a_lowered_matmul():
    task = create_task("matmul", (64, 32, 16), "llvm")
    cfg = task.config_space.from_json(
        {
            "tile_i": [8, 8],
            "tile_j": [2, 16],
            "tile_k": [4, 4],
            "order": [0, 1, 2, 3],
            "ann_outer": ["parallel"],
            "ann_rows": ["unroll"],
            "ann_cols": ["vec"],
        }
    )
    nest = loop_nest(lower_for_features(*task.instantiate(cfg)))
    assert [(lp.name, lp.extent, lp.annotation) for lp in nest.loops] == [
        ("i.outer", 8, "parallel"),
        ("j.outer", 2, "none"),
        ("k.outer", 4, "none"),
        ("k.inner", 4, "none"),
        ("i", 8, "unroll"),
        ("j", 16, "vec"),
    ]
    # A[i, k] (row 16), B[k, j] (row 32), the 8 x 16 accumulator tile C.local
    assert nest.strides == {
        "C.local": [0, 0, 0, 0, 16, 1],
        "A": [128, 0, 4, 1, 16, 0],
        "B": [0, 16, 128, 32, 0, 1],
    }


@pytest.mark.parametrize(
    "op, args", [("matmul", (128, 128, 128)), ("conv2d_nchw", (32, 14, 14, 32, 3, 3))]
)
def test_structure_cache_reproduces_lowering_exactly(op, args):
    task = create_task(op, args, "llvm")
    featurize = Featurizer(task)
    index = task.config_space.sample(np.random.default_rng(0), 600)
    fast = featurize(index)
    cache = featurize._structures
    lowered = featurize._lowered_rows(index[::20])
    np.testing.assert_array_equal(fast[::20], lowered)
    assert len(cache._recipes) <= 2  # one recipe serves every loop order and annotation
    assert all(entry is not None for entry in cache._classes.values())
    assert len({tuple(r) for r in fast.tolist()}) > 500, "configs are told apart"


def test_built_kernel_survives_pickling_and_matches_numpy():
    task = create_task("conv2d_nchw", (8, 10, 10, 16, 3, 3), "llvm")
    cfg = task.config_space.get(int(task.config_space.sample(np.random.default_rng(2), 1)[0]))
    kernel = pickle.loads(pickle.dumps(compiler_build(task, task.instantiate(cfg))))
    assert isinstance(kernel, LibraryKernel) and kernel.n_outputs == 1
    data, weight = random_arrays(kernel.arg_specs[:2])
    out = np.zeros((16, 10, 10), np.float32)
    kernel(data, weight, out)
    np.testing.assert_allclose(out, task.reference([data, weight])[0], rtol=1e-4, atol=1e-4)


def _best_after(tuner_cls, task, option, n_trial, seed, **kwargs):
    tuner = tuner_cls(task, seed=seed, **kwargs)
    return tuner.tune(n_trial, option, batch_size=8).best_throughput


def _model_vs_random(shape, n_trial, seeds):
    """Mean best GFLOPS after n_trial measured trials, over seeds, for xgb-rank and random."""
    task = create_task("matmul", shape, "llvm")
    option = measure_option(LocalBuilder(n_parallel=2), CPURunner(repeat=3, min_repeat_ms=5))
    try:
        xgb = [_best_after(XGBTuner, task, option, n_trial, s, sa_iters=100) for s in seeds]
        rand = [_best_after(RandomTuner, task, option, n_trial, s) for s in seeds]
    finally:
        option.close()
    return np.mean(xgb) / 1e9, np.mean(rand) / 1e9


# Margin: a measured cost is the mean of 3 repeats of >= 5 ms; on this shared 2-core
# machine one config's throughput varies by up to ~20 % between runs, while the space spans
# ~0.15-110 GFLOPS. Requiring 1.3x on the mean over seeds cannot be met by timing noise alone.
MARGIN = 1.3


def test_model_beats_random_on_a_small_real_matmul():
    xgb, rand = _model_vs_random((128, 128, 128), n_trial=40, seeds=(0, 1))
    print(f"best after 40 trials: xgb-rank {xgb:.1f} GFLOPS, random {rand:.1f} GFLOPS")
    assert xgb >= MARGIN * rand


@pytest.mark.slow
def test_model_beats_random_on_a_real_matmul():
    xgb, rand = _model_vs_random((256, 256, 256), n_trial=96, seeds=(0, 1, 2))
    print(f"best after 96 trials: xgb-rank {xgb:.1f} GFLOPS, random {rand:.1f} GFLOPS")
    assert xgb >= MARGIN * rand
