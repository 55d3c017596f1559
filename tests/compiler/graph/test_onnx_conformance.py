"""The onnx package's own test models (testkit.onnx_conformance): each one compiled for the CPU
matches its reference outputs or is refused in one line; none disagrees, crashes or hangs."""

import pytest

pytest.importorskip("onnx")

from testkit import onnx_conformance as conf  # noqa: E402

# models that run today, one per kind: an opset 6 export, an expanded function (with Size),
# int64 indices, a normalization (with its statistics outputs), a 1-d concat, an opset 20
# operator; uint8 and float16 tensors, axes given as an input (compiled for its value), a
# reduction of an empty input, a 0-d output, Einsum, OneHot, a scatter, GatherND, TopK, a 3-d
# pool, LpPool, cubic Resize, 1-d ConvTranspose, SpaceToDepth's mode; empty axes given as an
# input, empty outputs, an empty intermediate value, training-mode BatchNormalization and
# (seeded) Dropout, Dropout's mask, MaxPool's Indices, an opset-6 PRelu slope per channel, 3-d
# ConvTranspose, an output_shape past its full output, NonZero, tf_crop_and_resize, antialias
RUNS = ("test_operator_basic", "test_layer_normalization_4d_axis0_expanded", "test_gather_0",
        "test_gather_elements_negative_indices", "test_layer_normalization_4d_axis0",
        "test_instancenorm_example", "test_concat_1d_axis_0", "test_gelu_tanh_1",
        "test_add_uint8", "test_cast_FLOAT_to_FLOAT16", "test_reduce_sum_keepdims_example",
        "test_reduce_max_empty_set", "test_einsum_inner_prod", "test_einsum_batch_matmul",
        "test_onehot_with_axis", "test_scatter_elements_with_reduction_max",
        "test_gathernd_example_int32", "test_top_k", "test_maxpool_3d_default",
        "test_lppool_2d_default", "test_resize_upsample_scales_cubic", "test_convtranspose_1d",
        "test_spacetodepth_crd_mode_example", "test_reduce_sum_default_axes_keepdims_example",
        "test_split_zero_size_splits_opset18", "test_rotary_embedding_expanded",
        "test_batchnorm_example_training_mode", "test_training_dropout_mask",
        "test_dropout_default_mask", "test_maxpool_with_argmax_2d_precomputed_strides",
        "test_PReLU_2d_multiparam", "test_convtranspose_3d", "test_convtranspose_output_shape",
        "test_nonzero_example", "test_resize_tf_crop_and_resize",
        "test_resize_downsample_scales_linear_antialias")  # fmt: skip


def _check(results: list[conf.Result]) -> None:
    bad = [f"{r.outcome} {r.name}: {r.message}" for r in results
           if r.outcome in ("disagreed", "crashed")]  # fmt: skip
    assert not bad, "\n".join(bad)
    for r in results:
        assert r.outcome == "matched" or "\n" not in r.message.strip(), r.name


def test_a_sample_of_the_models_matches_or_is_refused_in_one_line():
    names = sorted(conf.cases())
    sample = sorted(set(names[::15]) | set(RUNS))
    results = conf.sweep(sample)
    _check(results)
    outcome = {r.name: r.outcome for r in results}
    assert [n for n in RUNS if outcome[n] != "matched"] == []
    assert sum(r.outcome == "matched" for r in results) > len(sample) // 4


@pytest.mark.slow
def test_every_model_matches_or_is_refused_in_one_line():
    results = conf.sweep()
    _check(results)
    counts = conf.counts(results)["all"]
    assert counts["matched"] + counts["refused"] == len(conf.cases())


def test_outcomes_are_classified_from_the_workers_answers():
    assert conf._classify({"outcome": "ok", "result": "x: 1 data set(s) matched"})[0] == "matched"
    assert conf._classify({"outcome": "error", "message": "no Foo"}) == ("refused", "no Foo")
    assert conf._classify({"outcome": "error", "message": "a\nb"})[0] == "crashed"
    wrong = {"outcome": "bug", "type": "AssertionError", "message": "Traceback\nNot equal"}
    assert conf._classify(wrong) == ("disagreed", "Not equal")
    assert conf._classify({"outcome": "bug", "type": "KeyError", "message": "0"})[0] == "crashed"
