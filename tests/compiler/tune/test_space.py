"""ConfigSpace, knobs, ConfigEntity indexing and the template registry."""

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.errors import TuningError
from compiler.tune import ConfigSpace, Database, apply_history_best, create_task, get_config
from compiler.tune.space import SplitKnob, divisors
from compiler.tune.task import register_template


def make_space():
    s = ConfigSpace()
    s.define_split("tile_x", 12, num_outputs=3)
    s.define_split("tile_y", 10, num_outputs=2, policy="power2")
    s.define_reorder("order", 3)
    s.define_annotate("ann", 2, "try_unroll_vec")
    s.define_knob("unroll", [0, 16, 64])
    return s


def test_split_factors_cover_extent_exactly():
    knob = SplitKnob("x", 12, 3)
    assert all(math.prod(size) == 12 for size in knob.candidates)
    # ordered factorizations of 12 = 2^2 * 3 into 3 parts: C(4,2) * C(3,2) = 18
    assert len(knob) == 18
    assert knob.candidates[0] == (12, 1, 1)


def test_split_power2_filter_and_max_factor():
    knob = SplitKnob("y", 10, 2, policy="power2", max_factor=4)
    assert [c[1] for c in knob.candidates] == [1, 2, 4]
    assert all(c[0] * c[1] >= 10 for c in knob.candidates)  # tails allowed
    filtered = SplitKnob("z", 16, 2, filter=lambda e: e.size[1] >= 4)
    assert [c[1] for c in filtered.candidates] == [4, 8, 16]
    with pytest.raises(TuningError, match="no candidates"):
        SplitKnob("w", 7, 2, filter=lambda e: e.size[1] == 2)


def test_split_any_sizes_up_to_max_factor():
    knob = SplitKnob("rows", 7, 2, policy="any", max_factor=4)
    assert knob.candidates == [(7, 1), (4, 2), (3, 3), (2, 4)]  # partial last tiles allowed
    with pytest.raises(TuningError, match="needs a max_factor"):
        SplitKnob("rows", 7, 2, policy="any")


def test_space_sizes_and_first_knob_least_significant():
    s = make_space()
    assert list(s.dims) == [18, 5, 6, 9, 3]
    assert s.range_length == 18 * 5 * 6 * 9 * 3
    assert list(s.digits(np.array([1]))[0]) == [1, 0, 0, 0, 0]
    assert list(s.digits(np.array([18]))[0]) == [0, 1, 0, 0, 0]
    e = s.get(18 * 5 * 6 * 2)
    assert e["ann"].anns == ("none", "vec") and e["unroll"].val == 0


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=18 * 5 * 6 * 9 * 3 - 1))
def test_index_digits_round_trip(index):
    s = make_space()
    digits = s.digits(np.array([index]))
    assert s.indices(digits)[0] == index
    assert list(s.get(index).digits) == list(digits[0])
    assert s.from_json(s.get(index).to_json()).index == index


def test_huge_space_is_never_enumerated():
    s = ConfigSpace()
    for k in range(8):
        s.define_split(f"t{k}", 1024, num_outputs=3)  # 66 candidates each: 66^8 ~ 3.6e14
    assert s.range_length > 10**14
    picks = s.sample(np.random.default_rng(0), 500)
    assert len(set(picks.tolist())) == 500
    walked = s.random_walk(np.random.default_rng(1), s.digits(picks))
    assert ((walked != s.digits(picks)).sum(axis=1) == 1).all()


def test_multi_filter_is_respected_by_sampling():
    s = make_space()
    s.multi_filter(lambda e: e["tile_x"].size[2] * e["tile_y"].size[1] <= 8)
    picks = s.sample(np.random.default_rng(0), 300)
    for i in picks:
        e = s.get(int(i))
        assert e["tile_x"].size[2] * e["tile_y"].size[1] <= 8
    bad = s.get(0).to_json() | {"tile_x": [1, 1, 12], "tile_y": [1, 16]}
    assert not s.is_valid(s.from_json(bad).index)


def test_knob_features_gather_per_knob_tables():
    s = make_space()
    feats = s.knob_features(s.digits(np.arange(50)))
    # split 3 + split 2 + reorder 3 + annotate 2 axes * 4 kinds + other 1
    assert feats.shape == (50, 3 + 2 + 3 + 8 + 1)
    assert np.allclose(feats[1, :3], np.log2([6, 1, 2]))


def test_bad_record_values_name_the_knob():
    s = make_space()
    cfg = s.get(5).to_json()
    cfg["unroll"] = 3
    with pytest.raises(TuningError, match="unroll"):
        s.from_json(cfg)


@register_template("space_test_op", "llvm")
def _template(cfg, n):
    cfg.define_split("tile", n, num_outputs=2)
    cfg.add_flop(n)
    return cfg["tile"].size


def test_registry_task_and_fallback_warning():
    task = create_task("space_test_op", (8,), "llvm -mcpu=znver5")
    assert task.flop == 8 and task.instantiate(0) == (8, 1)
    assert task.workload_key == '["space_test_op",[8]]'
    with pytest.raises(TuningError, match="no template"):
        create_task("space_test_op", (8,), "cuda")
    with pytest.warns(UserWarning, match="fallback"):
        assert get_config(task).index == 0
    db = Database()
    from compiler.tune import Record

    db.add_batch(
        [
            Record(task.workload_key, task.target, task.config_space.get(i).to_json(), i, [c])
            for i, c in ((1, 2.0), (2, 0.5), (3, 1.0))
        ]
    )
    with apply_history_best(db), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert get_config(task).index == 2


@settings(deadline=None)  # the reference loops to n (1e6): over 200 ms on a loaded machine
@given(st.integers(1, 10**6))
def test_divisors_are_every_divisor_in_order(n):
    assert divisors(n) == [d for d in range(1, n + 1) if n % d == 0]


def test_split_of_a_large_prime_extent_is_immediate():
    # trial division up to the extent took minutes for 2**31 - 1; up to its square root it does not
    knob = SplitKnob("y", 2**31 - 1, 3)
    p = 2**31 - 1
    assert sorted(knob.candidates) == [(1, 1, p), (1, p, 1), (p, 1, 1)]


@pytest.mark.parametrize(
    "n,expected",
    [
        (2**62 - 57, [1, 2**62 - 57]),  # the largest prime below 2**62
        (2147483629 * 2147483647, [1, 2147483629, 2147483647, 2147483629 * 2147483647]),
        (2**61, [2**k for k in range(62)]),
    ],
)
def test_divisors_of_extents_near_the_tensor_limit_come_from_the_factors(n, expected):
    # trial division up to sqrt(n) takes 2**31 steps here: minutes; Pollard's rho: milliseconds
    assert divisors(n) == expected


def test_a_factors_split_keeps_products_order_but_visits_only_dividing_prefixes():
    knob = SplitKnob("x", 2**40, 4)
    assert len(knob.candidates) == 12341  # C(43, 3): the ordered 4-factorizations of 2**40
    old = [
        (2**40 // math.prod(t), *t)
        for t in itertools.product([2**k for k in range(41)], repeat=3)
        if math.prod(t) <= 2**40
    ]
    assert knob.candidates == old


def test_a_dispatch_context_answers_from_its_first_source_with_a_record():
    """Named sources are searched in order (the user's records, then the shipped ones): the
    first with a record answers, with its name; programs of registered kinds the same way."""
    from compiler.tune import Record
    from compiler.tune.dispatch import ApplyHistoryBest, register_program_kind

    task = create_task("space_test_op", (8,), "llvm")

    def records(*pairs):
        db = Database()
        db.add_batch(
            [
                Record(task.workload_key, "llvm", task.config_space.get(i).to_json(), i, [c])
                for i, c in pairs
            ]
        )
        return db

    mine, shipped = records((1, 2.0), (3, 1.0)), records((2, 0.5))
    with ApplyHistoryBest([("records", mine), ("shipped", shipped)]) as ctx:
        found = ctx.query([task])
        assert (found.config.index, found.cost, found.source) == (3, 1.0, "records")
        assert ctx.query([task], lambda cfg: cfg.index == 2).source == "shipped"
        assert ctx.query([task], lambda cfg: cfg.index == 0) is None
        assert get_config(task).index == 3  # get_config asks the context of the `with`
        register_program_kind("test_kind", lambda op, args, target, config: (op, config))
        assert ctx.program("test_kind", "space_test_op", (8,), "llvm") is None
        key = '["test_kind:space_test_op",[8]]'
        shipped.add_batch([Record(key, "llvm", {"kind": "test_kind"}, 0, [0.1])])
        found = ctx.program("test_kind", "space_test_op", (8,), "llvm")
        assert (found.config, found.source) == (("space_test_op", {"kind": "test_kind"}), "shipped")
    assert mine.best(task.workload_key, "llvm").cost == 1.0  # a given Database stays open
    mine.close()
    shipped.close()
