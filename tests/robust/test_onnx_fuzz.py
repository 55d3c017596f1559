"""Property-based fuzzing of ONNX import and CPU compilation in a child process
(`testkit.fuzzworker` calling `testkit.compiler_fuzz:onnx_case`): one-node models of the supported
operators with random input shapes (empty dimensions included), weights that may not fit, and
random attribute values (negative, zero, out of range, unknown modes); and convolutions and
pools that fit their input with random windows, half of them followed by a second node the
CPU's fusion and layout passes take with them; residual blocks (conv, relu, conv, the
block's input added, relu); and convolutions with a dense head (flatten, dense layers). Every
model must end in one of the toolkit's errors or compile and match the reference executor: a
signal, a hang, a foreign exception or a wrong result fails. The same convolutions and pools,
with a second node the accelerator's importer reads, are quantized, compiled for the
accelerator and run on `fsim`, and must give the quantized numpy reference's tensors."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testkit.compiler_fuzz import onnx_case
from testkit.fuzzworker import Worker

SIZES = [pytest.param(150, id="default"), pytest.param(1500, id="slow", marks=pytest.mark.slow)]
ACCEL_SIZES = [pytest.param(40, id="default"), pytest.param(400, id="slow", marks=pytest.mark.slow)]

small = st.integers(-2, 6)
ints = st.lists(small, min_size=1, max_size=5)
int_values = st.lists(small, max_size=5)
dims = st.lists(st.integers(0, 5), min_size=1, max_size=4)
image = st.lists(st.integers(0, 7), min_size=4, max_size=4).map(lambda d: [1, *d[1:]])
modes = st.sampled_from(
    ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "constant", "reflect", "edge", "nearest",
     "linear", "cubic", "half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
     "tf_crop_and_resize",
     "round_prefer_floor", "floor", "bogus", ""]
)  # fmt: skip
data = st.builds(lambda s: {"shape": s}, dims)
picture = st.builds(lambda s: {"shape": s}, image)
weight = st.builds(lambda s: {"weight": s}, dims)
int_input = st.builds(lambda v: {"ints": v}, int_values)
ids = st.builds(lambda s: {"ids": s}, dims)
mask = st.builds(lambda s: {"mask": s}, dims)

WINDOW = {
    "kernel_shape": ints, "strides": ints, "pads": ints, "dilations": ints, "auto_pad": modes,
}  # fmt: skip
# per operator: its inputs (each a strategy) and the attributes it may get
OPERATORS = {
    "Conv": ([picture, weight, weight], {**WINDOW, "group": small}),
    "ConvTranspose": (
        [picture, weight],
        {**WINDOW, "group": small, "output_padding": ints, "output_shape": ints},
    ),
    "MaxPool": (
        [picture],
        {**WINDOW, "ceil_mode": small, "storage_order": small},
    ),
    "AveragePool": (
        [picture],
        {**WINDOW, "ceil_mode": small, "count_include_pad": small},
    ),
    "LRN": ([data], {"size": small, "alpha": st.floats(-1, 1), "beta": st.floats(-1, 1)}),
    "Gemm": (
        [data, weight, weight],
        {"transA": small, "transB": small, "alpha": st.floats(-2, 2), "beta": st.floats(-2, 2)},
    ),
    "MatMul": ([data, weight], {}),
    "Add": ([data, weight], {}),
    "Mul": ([data, data], {}),
    "BatchNormalization": (
        [data, weight, weight, weight, weight],
        {"epsilon": st.floats(0, 1), "training_mode": small, "momentum": st.floats(-1, 2)},
    ),
    "Dropout": (
        [
            data,
            st.builds(lambda r: {"floats": r}, st.floats(-0.5, 1.5)),
            st.builds(lambda t: {"bools": t}, st.booleans()),
        ],
        {"seed": small},
    ),
    "Reshape": ([data, int_input], {"allowzero": small}),
    "Transpose": ([data], {"perm": ints}),
    "Concat": ([data, data], {"axis": small}),
    "Split": ([data, int_input], {"axis": small}),
    "Slice": ([data, int_input, int_input, int_input, int_input], {}),
    "Squeeze": ([data, int_input], {}),
    "Unsqueeze": ([data, int_input], {}),
    "Pad": ([data, int_input], {"mode": modes}),
    "Softmax": ([data], {"axis": small}),
    "LogSoftmax": ([data], {"axis": small}),
    "ReduceMean": ([data], {"axes": ints, "keepdims": small}),
    "ReduceMax": ([data], {"axes": ints, "keepdims": small}),
    "ReduceSum": ([data, int_input], {"keepdims": small, "noop_with_empty_axes": small}),
    "Flatten": ([data], {"axis": small}),
    "Clip": ([data], {}),
    "HardSigmoid": ([data], {"alpha": st.floats(-2, 2), "beta": st.floats(-2, 2)}),
    "GlobalAveragePool": ([data], {}),
    **dict.fromkeys(
        (
            "Abs Neg Exp Log Sqrt Reciprocal Erf Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh "
            "Acosh Atanh Floor Ceil Round Sign Softplus Softsign Mish"
        ).split(),
        ([data], {}),
    ),
    **dict.fromkeys(("Elu", "Celu", "ThresholdedRelu"), ([data], {"alpha": st.floats(-2, 2)})),
    "Selu": ([data], {"alpha": st.floats(-2, 2), "gamma": st.floats(-2, 2)}),
    "PRelu": ([data, weight], {}),
    **dict.fromkeys(("Max", "Min", "Sum", "Mean"), ([data, data, weight], {})),
    **dict.fromkeys(
        (
            "ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceSumSquare ReduceLogSum ReduceLogSumExp"
        ).split(),
        ([data], {"axes": ints, "keepdims": small}),
    ),
    "LayerNormalization": ([data, weight, weight], {"axis": small, "epsilon": st.floats(0, 1)}),
    "InstanceNormalization": ([data, weight, weight], {"epsilon": st.floats(0, 1)}),
    "CumSum": ([data, int_input], {"exclusive": small, "reverse": small}),
    "Expand": ([data, int_input], {}),
    "Tile": ([data, int_input], {}),
    "DepthToSpace": ([data], {"blocksize": small, "mode": st.sampled_from(["DCR", "CRD", "x"])}),
    "SpaceToDepth": ([data], {"blocksize": small}),
    **dict.fromkeys(("Equal", "Less", "GreaterOrEqual"), ([data, data], {})),
    "Greater": ([ids, ids], {}),
    "Gather": ([weight, ids], {"axis": small}),
    "GatherElements": ([data, ids], {"axis": small}),
    "OneHot": ([ids, int_input, weight], {"axis": small}),
    "GatherND": ([data, ids], {"batch_dims": small}),
    "TopK": ([data, int_input], {"axis": small, "largest": small, "sorted": small}),
    "NonZero": ([data], {}),
    **dict.fromkeys(
        ("ScatterElements", "ScatterND"),
        (
            [data, ids, data],
            {
                "axis": small,
                "reduction": st.sampled_from(["none", "add", "mul", "max", "min", "bogus"]),
            },
        ),
    ),
    "Einsum": (
        [data, data, weight],
        {
            "equation": st.sampled_from(
                [
                    "ij,jk->ik",
                    "ij,jk",
                    "i,i",
                    "ii->i",
                    "...ij->...ji",
                    "bij,bjk->bik",
                    "ij->",
                    "i,j",
                    "ij,jk,kl->il",
                    "ab,ba",
                    "ij->iij",
                    "ij->k",
                    "",
                    "i..j",
                ]
            )
        },
    ),
    "Where": ([mask, data, weight], {}),
    **dict.fromkeys(("And", "Xor"), ([mask, mask], {})),
    "Not": ([mask], {}),
    "Cast": ([data], {"to": st.sampled_from([1, 6, 7, 9, 10, 11])}),  # float ... float16, double
    **dict.fromkeys(("IsNaN", "IsInf"), ([data], {})),
    **dict.fromkeys(
        ("ArgMax", "ArgMin"),
        ([data], {"axis": small, "keepdims": small, "select_last_index": small}),
    ),
    "Resize": (
        [
            data,
            st.builds(lambda v: {"floats": v}, st.lists(st.floats(-1, 2), max_size=8)),
            st.builds(lambda v: {"floats": v}, st.lists(st.floats(-1, 3), max_size=5)),
            int_input,
        ],
        {
            "mode": modes,
            "coordinate_transformation_mode": modes,
            "nearest_mode": modes,
            "extrapolation_value": st.floats(-2, 2),
            "antialias": small,
        },
    ),
}


@st.composite
def windows(draw):
    """Conv, ConvTranspose (output_shape too) and pools (LpPool too) whose weights fit their
    input, with random windows of 2 or 3 spatial axes."""
    op = draw(st.sampled_from(["Conv", "Conv", "ConvTranspose", "MaxPool", "AveragePool",
                               "LpPool"]))  # fmt: skip
    r = draw(st.sampled_from([2, 2, 3]))
    group = draw(st.integers(1, 3))
    c, size = group * draw(st.integers(1, 3)), draw(st.lists(st.integers(1, 9 - 3 * (r - 2)),
                                                             min_size=r, max_size=r))  # fmt: skip
    kernel = draw(st.lists(st.integers(1, 3), min_size=r, max_size=r))
    m = group * draw(st.integers(1, 3))
    attrs = {
        "strides": draw(st.lists(st.integers(1, 3), min_size=r, max_size=r)),
        "dilations": draw(st.lists(st.integers(1, 2), min_size=r, max_size=r)),
        "pads": draw(st.lists(st.integers(0, 3), min_size=2 * r, max_size=2 * r)),
    }
    if draw(st.booleans()):
        attrs["auto_pad"] = draw(st.sampled_from(["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]))
        if attrs["auto_pad"] != "NOTSET":
            del attrs["pads"]
    x = {"shape": [1, c, *size]}
    if op == "Conv":
        inputs = [x, {"weight": [m, c // group, *kernel]}, {"weight": [m]}]
        attrs["group"] = group
    elif op == "ConvTranspose":
        inputs = [x, {"weight": [c, m // group, *kernel]}]
        attrs["group"] = group
        attrs["output_padding"] = draw(st.lists(st.integers(0, 2), min_size=r, max_size=r))
        if draw(st.booleans()):  # past the full output too: zeros at the end
            attrs["output_shape"] = draw(st.lists(st.integers(1, 12), min_size=r, max_size=r))
    else:
        inputs = [x]
        attrs["kernel_shape"] = kernel
        attrs["ceil_mode"] = draw(st.integers(0, 1))
        if op == "AveragePool":
            attrs["count_include_pad"] = draw(st.integers(0, 1))
            del attrs["dilations"]
        if op == "LpPool":
            attrs["p"] = draw(st.integers(1, 3))
        m = c
    return op, inputs, attrs, m


FOLLOWERS = (
    "Add", "Mul", "Sub", "Div", "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSwish", "Conv",
    "MaxPool", "GlobalAveragePool", "Flatten", "Transpose", "Softmax", "ReduceMean", "Concat",
    "Pad", "Resize", "BatchNormalization", "PRelu", "Max", "Erf", "Softplus", "Elu",
)  # fmt: skip
ACCEL_FOLLOWERS = ("Relu", "Clip", "Conv", "MaxPool", "GlobalAveragePool", "Flatten", "Add")


@st.composite
def followers(draw, channels: int, ops: tuple[str, ...] = FOLLOWERS):
    """A second node on a 4-d output of `channels` channels, one of `ops`: what the CPU's
    fusion and layout passes take together with a convolution or pool (elementwise with a
    broadcast operand, activations, another convolution, pools, reshapes, reductions)."""
    operand = st.sampled_from(
        [[channels, 1, 1], [1, channels, 1, 1], [1], [channels], [1, 1, 1, 1], [2, 1, 1]]
    )
    op = draw(st.sampled_from(ops))
    if op in ("Add", "Mul", "Sub", "Div", "PRelu", "Max"):
        return {"op": op, "inputs": [{"weight": draw(operand)}], "attrs": {}}
    if op == "Clip":
        lo, hi = draw(st.lists(st.floats(-2, 2), min_size=2, max_size=2))
        return {"op": op, "inputs": [{"floats": lo}, {"floats": hi}], "attrs": {}}
    if op == "Conv":
        k = draw(st.integers(1, 3))
        group = draw(st.sampled_from([1, channels]))
        weight = [draw(st.integers(1, 4)) * group, channels // group, k, k]
        attrs = {"group": group, "pads": [k // 2] * 4}
        return {"op": op, "inputs": [{"weight": weight}, {"weight": [weight[0]]}], "attrs": attrs}
    if op == "MaxPool":
        attrs = {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": draw(st.integers(0, 1))}
        return {"op": op, "inputs": [], "attrs": attrs}
    if op == "Transpose":
        return {"op": op, "inputs": [], "attrs": {"perm": draw(st.permutations(range(4)))}}
    if op in ("Softmax", "Flatten"):
        return {"op": op, "inputs": [], "attrs": {"axis": draw(st.integers(-4, 3))}}
    if op == "ReduceMean":
        axes = draw(st.lists(st.integers(-4, 3), min_size=1, max_size=2, unique=True))
        return {"op": op, "inputs": [], "attrs": {"axes": axes, "keepdims": draw(small)}}
    if op == "Concat":
        return {"op": op, "inputs": [{"weight": [1, channels, 1, 1]}], "attrs": {"axis": 1}}
    if op == "Pad":
        pads = draw(st.lists(st.integers(0, 2), min_size=8, max_size=8))
        return {"op": op, "inputs": [{"ints": pads}], "attrs": {"mode": draw(modes)}}
    if op == "Resize":
        scales = [1, 1, draw(st.sampled_from([0.5, 1, 2])), draw(st.sampled_from([0.5, 1, 2]))]
        return {"op": op, "inputs": [{"floats": []}, {"floats": scales}],
                "attrs": {"mode": draw(st.sampled_from(["nearest", "linear"]))}}  # fmt: skip
    if op == "BatchNormalization":
        var = draw(st.lists(st.floats(0.1, 4), min_size=channels, max_size=channels))
        return {"op": op, "inputs": [{"weight": [channels]}] * 3 + [{"floats": var}], "attrs": {}}
    return {"op": op, "inputs": [], "attrs": {"alpha": 0.1} if op == "LeakyRelu" else {}}


@st.composite
def blocks(draw):
    """(op, inputs, attrs, then): a residual block, conv -> [relu] -> [conv] -> add the block's
    input -> [relu], its convolutions keeping the shape (groups 1 or depthwise, 1x1 or 3x3) or,
    now and then, not (stride 2: the input no longer adds to the output but on 1x1 images)."""
    c, h, w = draw(st.integers(1, 20)), draw(st.integers(1, 9)), draw(st.integers(1, 9))

    def conv():
        k, group = draw(st.sampled_from([1, 3])), draw(st.sampled_from([1, c]))
        stride = draw(st.sampled_from([1, 1, 1, 2]))
        attrs = {"pads": [k // 2] * 4, "group": group, "strides": [stride, stride]}
        return {"weight": [c, c // group, k, k]}, {"weight": [c]}, attrs

    weight, bias, attrs = conv()
    chain = [{"op": "Relu", "inputs": [], "attrs": {}}] if draw(st.booleans()) else []
    if draw(st.booleans()):
        w2, b2, a2 = conv()
        chain.append({"op": "Conv", "inputs": [w2, b2], "attrs": a2})
    chain.append({"op": "Add", "inputs": [{"input": 0}], "attrs": {}})
    if draw(st.booleans()):
        chain.append({"op": "Relu", "inputs": [], "attrs": {}})
    return "Conv", [{"shape": [1, c, h, w]}, weight, bias], attrs, chain


@st.composite
def wide_1x1(draw):
    """(op, inputs, attrs, then): a 1x1 convolution of 129-640 input channels (over 8 blocks:
    the graph may compute it in partial sums over chunks of them), maybe followed by a node."""
    c = draw(st.one_of(st.integers(129, 640), st.integers(9, 40).map(lambda b: 16 * b)))
    m, h, w = draw(st.integers(1, 40)), draw(st.integers(1, 9)), draw(st.integers(1, 9))
    inputs = [{"shape": [1, c, h, w]}, {"weight": [m, c, 1, 1]}]
    if draw(st.booleans()):
        inputs.append({"weight": [m]})
    then = draw(followers(m)) if draw(st.booleans()) else None
    return "Conv", inputs, {}, then


@st.composite
def dense_heads(draw):
    """(op, inputs, attrs, then): a convolution keeping its input's size, maybe a relu, a
    flatten (or a reshape to [1, -1]) and one or two dense layers (Gemm or MatMul): where only
    dense layers read the flatten, it views the packed tensor and their weights are permuted."""
    c, m = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    h, w, k = draw(st.integers(1, 9)), draw(st.integers(1, 9)), draw(st.sampled_from([1, 3]))
    relu = {"op": "Relu", "inputs": [], "attrs": {}}
    chain = [relu] if draw(st.booleans()) else []
    if draw(st.booleans()):
        chain.append({"op": "Flatten", "inputs": [], "attrs": {"axis": 1}})
    else:
        chain.append({"op": "Reshape", "inputs": [{"ints": [1, -1]}], "attrs": {}})
    units, size = draw(st.integers(1, 20)), m * h * w
    if draw(st.booleans()):
        gemm = [{"weight": [units, size]}, {"weight": [units]}]
        chain.append({"op": "Gemm", "inputs": gemm, "attrs": {"transB": 1}})
    else:
        chain.append({"op": "MatMul", "inputs": [{"weight": [size, units]}], "attrs": {}})
    if draw(st.booleans()):
        head = {"op": "Gemm", "inputs": [{"weight": [units, draw(st.integers(1, 9))]}], "attrs": {}}
        chain += [relu, head]
    return (
        "Conv",
        [{"shape": [1, c, h, w]}, {"weight": [m, c, k, k]}],
        {"pads": [k // 2] * 4},
        chain,
    )


DTYPES = ("float16", "float64", "int8", "int16", "int32", "uint8", "uint16", "uint32", "uint64")
TYPED = ("Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Less", "Greater", "Abs", "Neg",
         "Clip", "Exp", "Softmax", "ReduceSum", "Where", "Cast")  # fmt: skip


@st.composite
def typed(draw):
    """(op, inputs, attrs, then): an operator on runtime tensors of one dtype other than
    float32 (not every operator takes every dtype: those refuse in one line)."""
    op, dtype = draw(st.sampled_from(TYPED)), draw(st.sampled_from(DTYPES))
    shapes = draw(st.lists(dims, min_size=2, max_size=2))
    inputs = [{"shape": s, "dtype": dtype} for s in shapes]
    attrs = {}
    if op == "Where":
        inputs = [{"mask": shapes[0]}, *inputs]
    elif op in ("Abs", "Neg", "Exp", "Softmax", "ReduceSum", "Clip", "Cast"):
        inputs = inputs[:1]
    if op == "Cast":
        attrs["to"] = draw(st.sampled_from([1, 2, 3, 5, 6, 7, 9, 10, 11, 12, 13]))
    return op, inputs, attrs, None


@st.composite
def models(draw):
    """(op, inputs, attrs, then): a residual block (a quarter of the time); a wide 1x1
    convolution (an eighth); a convolution with a dense head (an eighth); an operator on
    tensors of another dtype than float32 (an eighth); a convolution or pool that fits its
    input, maybe followed by a second node; or any supported operator with random inputs and
    attributes."""
    kind = draw(st.integers(0, 7))
    if kind < 2:
        return draw(blocks())
    if kind == 2:
        return draw(wide_1x1())
    if kind == 3:
        return draw(dense_heads())
    if kind == 4:
        return draw(typed())
    if draw(st.booleans()):
        op, inputs, attrs, channels = draw(windows())
        then = draw(followers(channels)) if draw(st.booleans()) else None
        return op, inputs, attrs, then
    op = draw(st.sampled_from(sorted(OPERATORS)))
    roles, attrs = OPERATORS[op]
    count = draw(st.integers(1, len(roles)))
    inputs = [draw(role) for role in roles[:count]]
    names = draw(st.lists(st.sampled_from(sorted(attrs)), unique=True, max_size=4)) if attrs else []
    return op, inputs, {name: draw(attrs[name]) for name in names}, None


def test_ceil_mode_drops_the_window_in_the_padding():
    """Found by the fuzzer: the reference pools computed the window ceil_mode drops (the
    other models it found are import errors, in tests/compiler/graph/test_import.py)."""
    attrs = {"pads": [0, 0, 0, 1], "kernel_shape": [1, 1], "ceil_mode": 1}
    assert (
        onnx_case("MaxPool", [{"shape": [1, 1, 1, 1]}], attrs, seed=0) == "MaxPool -> [1, 1, 1, 1]"
    )


@st.composite
def accel_models(draw):
    """(op, inputs, attrs, then): a residual block (a third of the time), or a convolution or
    pool that fits its input, maybe followed by a node of the accelerator's importer."""
    if draw(st.integers(0, 2)) == 0:
        return draw(blocks())
    op, inputs, attrs, channels = draw(windows())
    then = draw(followers(channels, ACCEL_FOLLOWERS)) if draw(st.booleans()) else None
    return op, inputs, attrs, then


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    with Worker(timeout=120, cwd=str(tmp_path_factory.mktemp("cwd"))) as w:
        yield w


def fuzz(worker, capsys, strategy, fn: str, examples: int, what: str, derandomize: bool) -> None:
    """`examples` models of `strategy` (the fixed sequence when `derandomize`) through
    `testkit.compiler_fuzz:<fn>` in the worker: each must run or end in one of the toolkit's
    errors."""
    tried = []

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=derandomize,
        suppress_health_check=list(HealthCheck),
    )
    @given(model=strategy, seed=st.integers(0, 3))
    def case(model, seed):
        op, inputs, attrs, then = model
        kwargs = dict(op=op, inputs=inputs, attrs=attrs, seed=seed, then=then)
        answer = worker.request(op="call", fn=f"testkit.compiler_fuzz:{fn}", kwargs=kwargs)
        tried.append(answer["outcome"])
        assert answer["outcome"] in ("ok", "error"), f"{kwargs}: {answer.get('message')}"

    case()
    with capsys.disabled():
        print(f"\n[fuzz] {what}: {len(tried)} inputs, {tried.count('ok')} ran")


@pytest.mark.parametrize("examples", SIZES)
def test_onnx_models(worker, examples, derandomize, capsys):
    fuzz(worker, capsys, models(), "onnx_case", examples, "ONNX models", derandomize)


@pytest.mark.parametrize("examples", ACCEL_SIZES)
def test_models_the_cpu_runs_run_on_the_accelerator_target(worker, examples, derandomize, capsys):
    what = "ONNX models on the CPU and the accelerator target"
    fuzz(worker, capsys, models(), "both_case", examples, what, derandomize)


@pytest.mark.parametrize("examples", ACCEL_SIZES)
def test_onnx_models_on_the_accelerator(worker, examples, derandomize, capsys):
    fuzz(worker, capsys, accel_models(), "accel_case", examples, "ONNX models on fsim", derandomize)
