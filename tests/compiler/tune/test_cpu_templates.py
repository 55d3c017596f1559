"""Real CPU templates: features from the lowered loop IR and builds that cross process
boundaries (the model-based tuner against random search on them: test_search_quality.py)."""

import pickle

import numpy as np
import pytest

import compiler.tune.templates  # noqa: F401 - registers the llvm templates
from compiler import te
from compiler.tune import Featurizer, create_task
from compiler.tune.measure import LibraryKernel, check_outputs, compiler_build, random_arrays
from compiler.tune.tir_features import _Refined, loop_nest, lower_for_features


def test_loop_nest_of_a_lowered_matmul():
    task = create_task("matmul", (64, 32, 16), "llvm")
    cfg = task.config_space.from_json(
        {
            "tile_y": [8, 8],
            "tile_x": [2, 16],
            "tile_k": [4, 4],
            "unroll_k": False,
            "order": [0, 1],
            "ann_outer": ["parallel"],
        }
    )
    nest = loop_nest(lower_for_features(*task.instantiate(cfg)))
    assert [(lp.name, lp.extent, lp.annotation) for lp in nest.loops] == [
        ("j.outer.i.outer.fused", 16, "parallel"),
        ("k.outer", 4, "none"),
        ("k.inner", 4, "none"),
        ("i", 8, "unroll"),
        ("j", 16, "vec"),
    ]
    # the 8 x 16 register tile, A[i, k] (row 16), packed B [32 / 16, 16, 16]; the fused loop
    # moves A and B through div/mod (coefficient 1: touched, stride unknown)
    assert nest.strides == {
        "T_matmul_pack.local": [0, 0, 0, 16, 1],
        "A": [1, 4, 1, 16, 0],
        "T_packed_B": [1, 64, 16, 0, 1],
    }


AVX2 = "llvm -mcpu=haswell -mattr=+avx2,+fma,-avx512f"
AVX512 = "llvm -mcpu=skylake-avx512"


def _served(cache, digits) -> float:
    """The share of configs a structure cache's recipes serve (the rest are lowered)."""
    rows = [len(r) for r, arrays in cache.arrays(digits) if arrays is not None]
    return sum(rows) / len(digits)


MATMUL, CONV = ("matmul", (128, 128, 128), 600), ("conv2d_NCHWc", (32, 14, 14, 32, 3, 3), 300)


@pytest.mark.parametrize(
    "op, args, n, target",
    [
        (*MATMUL, AVX2),
        (*MATMUL, AVX512),
        (*CONV, AVX512),
        # about 2 minutes; the next test checks a C6 sample on AVX2 in the default suite
        pytest.param(*CONV, AVX2, marks=pytest.mark.slow),
    ],
)
def test_structure_cache_reproduces_lowering_exactly(op, args, n, target):
    from compiler.codegen.target import target_scope

    task = create_task(op, args, target)
    featurize = Featurizer(task)
    index = task.config_space.sample(np.random.default_rng(0), n)
    with target_scope(target):  # the templates' schedules as on that instruction set
        fast = featurize(index)
        lowered = featurize._lowered_rows(index[::10])
    cache = featurize._structures
    np.testing.assert_array_equal(fast[::10], lowered)
    # one recipe serves many classes (every annotation, unroll and split factor > 1); on
    # 16-register targets the conv's refined classes fit a recipe per residue of the block
    assert len(cache._recipes) <= len(cache._classes) / (4 if op == "matmul" else 2)
    # every config is served, on 16-register targets too, where the conv template's K steps
    # per iteration (the largest divisor of the channel block up to 4) make extents monomial
    # only within a residue of the block: those classes are refined by it
    assert _served(cache, task.config_space.digits(index)) == 1.0
    # configs are told apart (some differ only in a loop of extent 1: the same program)
    assert len({tuple(r) for r in fast.tolist()}) > 0.4 * len(set(index.tolist()))


def test_structure_cache_serves_an_avx2_resnet_conv_exactly():
    """ResNet-18's C6 on AVX2: the classes that mix 2-channel blocks (K steps of 2) with
    blocks of 4 and more (steps of 4) are refined by the block's residue, found from their
    probes; recipes then serve every config, with the features of lowering each one."""
    from compiler.codegen.target import target_scope

    task = create_task("conv2d_NCHWc", (128, 28, 28, 128, 3, 3, 1), AVX2)
    featurize = Featurizer(task)
    space = task.config_space
    index = space.sample(np.random.default_rng(1), 200)
    with target_scope(AVX2):
        fast = featurize(index)
        lowered = featurize._lowered_rows(index[::5])
    cache = featurize._structures
    refined = {e.knob for e in cache._classes.values() if isinstance(e, _Refined)}
    assert list(space.knobs).index("tile_ic") in refined
    assert _served(cache, space.digits(index)) == 1.0
    np.testing.assert_array_equal(fast[::5], lowered)


def test_built_kernel_survives_pickling_and_matches_numpy():
    task = create_task("conv2d_NCHWc", (8, 10, 10, 16, 3, 3, 2), "llvm")
    cfg = task.config_space.from_json(
        {
            "tile_ic": [2, 4],
            "tile_oc": [2, 8],
            "tile_ow": [1, 5],
            "tile_oh": [5, 1],
            "unroll_kw": True,
            "parallel": "oc_rows",
            "pad": "inline",
        }
    )
    kernel = pickle.loads(pickle.dumps(compiler_build(task, task.instantiate(cfg))))
    assert isinstance(kernel, LibraryKernel) and kernel.n_outputs == 1
    data, weight = random_arrays(kernel.arg_specs[:2])
    assert data.shape == (1, 2, 10, 10, 4) and weight.shape == (2, 2, 3, 3, 4, 8)
    out = np.zeros((1, 2, 5, 5, 8), np.float32)
    kernel(data, weight, out)
    # the numpy reference, written out: unpack, convolve, pack the output by oc_bn = 8
    x = np.pad(data.transpose(0, 1, 4, 2, 3).reshape(8, 10, 10), ((0, 0), (1, 1), (1, 1)))
    w = weight.transpose(0, 5, 1, 4, 2, 3).reshape(16, 8, 3, 3)
    want = np.zeros((16, 5, 5))
    for ry in range(3):
        for rx in range(3):
            want += np.einsum(
                "chw,fc->fhw", x[:, ry : ry + 10 : 2, rx : rx + 10 : 2], w[..., ry, rx]
            )
    want = want.reshape(2, 8, 5, 5).transpose(0, 2, 3, 1)[None]
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(task.reference([data, weight])[0], want, rtol=1e-5, atol=1e-5)


def _conv_knobs(ic_bn, oc_bn, ow, oh, parallel, pad, unroll_kw=True, c=16, f=32, size=12):
    return {
        "tile_ic": [c // ic_bn, ic_bn],
        "tile_oc": [f // oc_bn, oc_bn],
        "tile_ow": [size // ow, ow],
        "tile_oh": [size // oh, oh],
        "unroll_kw": unroll_kw,
        "parallel": parallel,
        "pad": pad,
    }


@pytest.mark.parametrize(
    "args, knobs",
    [
        # C1's shape class: 3 input channels, 7x7 stride 2, zeros read in the kernel
        ((3, 12, 12, 32, 7, 7, 2), _conv_knobs(3, 16, 3, 2, "rows", "inline", c=3, size=6)),
        ((3, 12, 12, 32, 7, 7, 2), _conv_knobs(1, 8, 6, 3, "oc", "root", False, c=3, size=6)),
        # 1x1 stride 2 (C5, C8, C11): no padding, strided reads
        ((16, 12, 12, 32, 1, 1, 2), _conv_knobs(16, 16, 3, 2, "oc", "none", size=6)),
        ((16, 12, 12, 32, 1, 1, 2), _conv_knobs(8, 32, 6, 1, "rows_oc", "none", size=6)),
        # 3x3 stride 1 with a two-row register tile, padded per task or at root
        ((16, 12, 12, 32, 3, 3, 1), _conv_knobs(16, 16, 6, 2, "oc_rows", "task")),
        ((16, 12, 12, 32, 3, 3, 1), _conv_knobs(4, 32, 4, 3, "rows", "root")),
        # explicit padding (the DQN network's unpadded 4x4 stride 2; a 3x3 padded by 2)
        ((16, 12, 12, 32, 4, 4, 2, 0, 0, 0), _conv_knobs(16, 16, 5, 1, "oc", "none", size=5)),
        ((16, 12, 12, 32, 3, 3, 1, 16, 16, 2), _conv_knobs(16, 16, 7, 2, "rows", "task", size=14)),
    ],
)
def test_conv2d_NCHWc_schedules_match_the_reference(args, knobs):
    task = create_task("conv2d_NCHWc", args, "llvm")
    kernel = compiler_build(task, task.instantiate(task.config_space.from_json(knobs)))
    inputs = random_arrays(kernel.arg_specs[:2])
    out = np.zeros(*kernel.arg_specs[2])
    kernel(*inputs, out)
    check_outputs(task, inputs, [out], rtol=1e-4)


@pytest.mark.parametrize(
    "rows, tile_k, unroll_k, order, parallel",
    [
        (3, 8, True, [1, 0], "none"),
        (8, 5, False, [0, 1], "parallel"),
        (1, 10, True, [0, 1], "none"),
        (5, 4, True, [0, 1], "parallel"),  # 24 rows: the last tile of 5 partial
    ],
)
def test_matmul_on_packed_weights_matches_the_reference(rows, tile_k, unroll_k, order, parallel):
    """With the panel width given (a network's dense layer), B arrives packed [m / bn, k, bn]."""
    task = create_task("matmul", (24, 64, 40, 16), "llvm")
    knobs = {
        "tile_y": [-(-24 // rows), rows],
        "tile_x": [4, 16],
        "tile_k": [40 // tile_k, tile_k],
        "unroll_k": unroll_k,
        "order": order,
        "ann_outer": [parallel],
    }
    kernel = compiler_build(task, task.instantiate(task.config_space.from_json(knobs)))
    assert kernel.arg_specs[1][0] == (4, 40, 16)
    inputs = random_arrays(kernel.arg_specs[:2])
    out = np.zeros(*kernel.arg_specs[2])
    kernel(*inputs, out)
    check_outputs(task, inputs, [out], rtol=1e-4)


@pytest.mark.parametrize("bn", [16, 24])  # 24: AVX2's 3-vector panel, a 4-row register tile
@pytest.mark.parametrize(
    "target", ["llvm -mcpu=haswell -mattr=+avx2,+fma,-avx512f", "llvm -mcpu=skylake-avx512"]
)
def test_a_dense_tasks_default_config_is_the_default_schedule(target, bn):
    """`vta tune MODEL.onnx` measures it first: the search starts from the build's default."""
    from compiler.codegen.target import target_scope
    from compiler.driver import lower
    from compiler.graph.tasks import TemplateTask, default_config
    from compiler.topi import x86

    n = 3 * bn
    dense = TemplateTask("matmul", (20, n, 36), (bn,), None)  # 20 rows: a partial row tile
    task = create_task("matmul", dense.task_args(), target)
    with target_scope(target):
        s, args = task.instantiate(task.config_space.from_json(default_config(dense)))
        a, b = (
            te.placeholder((20, 36), "float32", "A"),
            te.placeholder((3, 36, bn), "float32", "B_packed"),
        )
        c = x86.matmul_packed(a, b, n, streams=1)
        assert str(lower(s, args, "f")) == str(lower(x86.schedule_dense_pack(c), [a, b, c], "f"))


@pytest.mark.parametrize("tile_p", [1, 5, 12])
def test_conv2d_1x1_NCHWc_schedules_match_the_reference(tile_p):
    # 7x7 = 49 positions: tiles of 5 and 12 leave a partial last tile
    task = create_task("conv2d_1x1_NCHWc", (160, 7, 7, 32, 16, 16), "llvm")
    knobs = {"tile_ic": [10, 16], "tile_oc": [2, 16], "tile_p": [-(-49 // tile_p), tile_p]}
    kernel = compiler_build(task, task.instantiate(task.config_space.from_json(knobs)))
    inputs = random_arrays(kernel.arg_specs[:2])
    out = np.zeros(*kernel.arg_specs[2])
    kernel(*inputs, out)
    check_outputs(task, inputs, [out], rtol=1e-4)


def _attention_knobs(rows, score_vectors, context_vectors, unroll, parallel, tq=12):
    return {
        "tile_q": [tq // rows, rows],
        "score_vectors": score_vectors,
        "context_vectors": context_vectors,
        "unroll": unroll,
        "parallel": parallel,
    }


@pytest.mark.parametrize(
    "args, knobs",
    [
        # 20 keys and 6 value columns: vectors narrower than the knob's, partial partial sums
        ((2, 12, 20, 8, 6, 1), _attention_knobs(3, 4, 1, 8, "heads")),
        ((2, 12, 20, 8, 6, 1), _attention_knobs(12, 1, 4, 2, "none")),
        ((3, 12, 32, 16, 16, 0), _attention_knobs(1, 2, 2, 1, "blocks")),
        ((1, 12, 64, 5, 32, 1), _attention_knobs(6, 4, 4, 4, "blocks")),
    ],
)
def test_attention_schedules_match_the_reference(args, knobs):
    task = create_task("attention", args, "llvm")
    kernel = compiler_build(task, task.instantiate(task.config_space.from_json(knobs)))
    n_in = 3 + args[-1]
    inputs = random_arrays(kernel.arg_specs[:n_in])
    out = np.zeros(*kernel.arg_specs[n_in])
    kernel(*inputs, out)
    check_outputs(task, inputs, [out], rtol=1e-4)


@pytest.mark.parametrize(
    "target", ["llvm -mcpu=haswell -mattr=+avx2,+fma,-avx512f", "llvm -mcpu=skylake-avx512"]
)
@pytest.mark.parametrize("args", [(4, 128, 128, 64, 64, 1), (2, 12, 20, 8, 6, 0)])
def test_an_attention_tasks_default_config_is_the_default_schedule(target, args):
    """`vta tune MODEL.onnx` measures it first: the search starts from the build's default."""
    from compiler.codegen.target import target_scope
    from compiler.driver import lower
    from compiler.graph.tasks import TemplateTask, default_config
    from compiler.topi import x86

    attention = TemplateTask("attention", args, (), None)
    task = create_task("attention", attention.task_args(), target)
    with target_scope(target):
        knobs = default_config(attention)
        s, tensors = task.instantiate(task.config_space.from_json(knobs))
        default = x86.schedule_attention(tensors[-1])
        assert str(lower(s, tensors, "f")) == str(lower(default, tensors, "f"))
        # the block's rows: the largest divisor of the query rows up to what the target's
        # registers leave room for (6 on AVX2, 14 on AVX-512)
        room = 6 if "haswell" in target else 14
        assert knobs["tile_q"][1] == {128: {6: 4, 14: 8}, 12: {6: 6, 14: 12}}[args[1]][room]


def test_bad_attention_knobs_are_refused():
    from compiler.errors import ScheduleError, TuningError
    from compiler.topi import nn, x86

    q, k, v = (te.placeholder(s, "float32", n) for n, s in
               (("q", (2, 12, 8)), ("k", (2, 8, 16)), ("v", (2, 16, 8))))  # fmt: skip
    out = nn.attention(q, k, v, None, 0.5)
    good = {"rows": 4, "score_vectors": 2, "context_vectors": 2, "unroll": 4, "parallel": "heads"}
    x86.schedule_attention_knobs(out, **good)
    for bad, message in [
        ({"rows": 5}, "5 rows a block do not divide 12"),
        ({"rows": 0}, "0 rows a block"),
        ({"score_vectors": 0}, "must be positive"),
        ({"unroll": -1}, "must be positive"),
        ({"parallel": "threads"}, "parallel 'threads' is not one of"),
    ]:
        with pytest.raises(ScheduleError, match=message):
            x86.schedule_attention_knobs(out, **{**good, **bad})
    task = create_task("attention", (2, 12, 16, 8, 8, 1), "llvm")
    with pytest.raises(TuningError):  # 5 rows: not a divisor, so not in the space
        task.config_space.from_json(_attention_knobs(5, 2, 2, 4, "blocks"))
    with pytest.raises(TuningError, match="masked is 0 or 1, not 2"):
        len(create_task("attention", (2, 12, 16, 8, 8, 2), "llvm").config_space)


@pytest.mark.parametrize(
    "target", ["llvm -mcpu=haswell -mattr=+avx2,+fma,-avx512f", "llvm -mcpu=skylake-avx512"]
)
def test_a_task_schedules_for_its_target_not_the_host(target):
    """Templates call the x86 schedules, which read the CPU facts of the codegen's scope: a task
    for another CPU than the host's must get that CPU's (one of the two targets is not this
    host's, whichever host runs the test)."""
    from compiler.codegen.target import target_scope
    from compiler.driver import lower

    task = create_task("conv2d_NCHWc", (32, 14, 14, 32, 3, 3, 1), target)
    space = task.config_space
    config = next(c for c in map(space.get, range(len(space))) if c["tile_ic"].size[1] == 8)
    s, args = task.instantiate(config)
    with target_scope(target):
        scoped, scoped_args = task.instantiate(config)
    assert str(lower(s, args, "f")) == str(lower(scoped, scoped_args, "f"))
