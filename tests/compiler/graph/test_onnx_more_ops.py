"""OneHot, Einsum, GatherND, ScatterElements, ScatterND and TopK: seeded one-node models on the
reference executor and compiled for the CPU, both against onnxruntime (every attribute and
reduction, negative indices, duplicates where a reduction combines them, implicit and explicit
Einsum outputs, ellipses, broadcasting, diagonals, 0-d results); an index out of range is a
one-line error on both."""

import numpy as np
import pytest

from compiler.errors import OperatorError, OutOfBoundsError
from compiler.graph import reference
from compiler.graph.build_onnx import compile_model
from compiler.graph.onnx_import import import_onnx

ort = pytest.importorskip("onnxruntime")

from testkit.onnx_models import check, one_node  # noqa: E402

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("axis", [None, 0, 1, -1, -3])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float32])
def test_one_hot(tmp_path, axis, dtype):
    """Indices from -6 to 6 in a depth of 5: negative ones count from the end, those outside
    [-5, 5) make rows of off values."""
    indices = np.array([[0, 4, -1], [-5, 5, -6]]).astype(dtype)
    attrs = {} if axis is None else {"axis": axis}
    consts = {"depth": np.array(5.7, np.float32), "values": np.array([-2, 3], np.float32)}
    check(tmp_path, one_node("OneHot", {"i": indices}, attrs, consts), {"i": indices})


def test_one_hot_of_int64_values(tmp_path):
    indices = np.array([2, 0, 1], np.int64)
    consts = {"depth": np.array([3], np.int64), "values": np.array([0, 7], np.int64)}
    check(tmp_path, one_node("OneHot", {"i": indices}, {}, consts, out=np.int64), {"i": indices})


EINSUMS = {
    "matmul": ("ij,jk->ik", [(3, 4), (4, 5)]),
    "batch_matmul": ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    "implicit": ("ij,jk", [(3, 4), (4, 5)]),
    "transpose": ("ij->ji", [(3, 4)]),
    "sum": ("ij->i", [(3, 4)]),
    "inner_0d": ("i,i", [(5,), (5,)]),
    "outer": ("i,j->ij", [(3,), (4,)]),
    "diagonal": ("ii->i", [(4, 4)]),
    "batch_diagonal": ("...ii->...i", [(2, 3, 4, 4)]),
    "ellipsis_broadcast": ("...ij,...jk->...ik", [(2, 1, 3, 4), (2, 5, 4, 2)]),
    "three": ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    "bilinear": ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    "trace": ("ii", [(3, 3)]),
    "spaces": (" ij , jk -> ik ", [(3, 4), (4, 2)]),
}


@pytest.mark.parametrize("case", list(EINSUMS))
def test_einsum(tmp_path, case):
    equation, shapes = EINSUMS[case]
    feeds = {f"x{k}": RNG.normal(size=s).astype(np.float32) for k, s in enumerate(shapes)}
    check(tmp_path, one_node("Einsum", feeds, {"equation": equation}), feeds)


def test_einsum_of_integers(tmp_path):
    feeds = {"a": np.arange(12, dtype=np.int64).reshape(3, 4) - 5, "b": np.arange(4) - 1}
    model = one_node("Einsum", feeds, {"equation": "ij,j->i"}, out=np.int64)
    check(tmp_path, model, feeds)


@pytest.mark.parametrize(
    "equation, shapes, message",
    [("ij,jk->ik", [(3, 4)], "2 terms for 1 inputs"),
     ("ijk->i", [(3, 4)], "does not fit an input of shape"),
     ("ij,jk->ik", [(3, 4), (5, 2)], "subscript 'j' has extents 4 and 5"),
     ("ij->ix", [(3, 4)], "the output's subscripts"),
     ("i1->i", [(3, 4)], "subscripts are letters")],
)  # fmt: skip
def test_einsum_refuses_what_does_not_fit(equation, shapes, message):
    feeds = {f"x{k}": np.zeros(s, np.float32) for k, s in enumerate(shapes)}
    with pytest.raises(OperatorError, match=message) as e:
        import_onnx(one_node("Einsum", feeds, {"equation": equation}))
    assert "\n" not in str(e.value)


DATA = RNG.normal(size=(3, 4, 5)).astype(np.float32)


@pytest.mark.parametrize(
    "indices, batch_dims",
    [(np.array([[0, 1], [2, -1]]), 0),
     (np.array([[[2], [0]], [[1], [-3]]]), 0),
     (np.array([[0, 1, 4], [2, 3, -5]]), 0),
     (np.array([[1], [3], [0]]), 1),
     (np.array([[[1, 4], [0, 0]], [[3, 2], [2, 1]], [[0, 3], [1, -1]]]), 1)],
)  # fmt: skip
def test_gather_nd(tmp_path, indices, batch_dims):
    feeds = {"x": DATA, "i": indices.astype(np.int64)}
    check(tmp_path, one_node("GatherND", feeds, {"batch_dims": batch_dims}), feeds)


REDUCTIONS = ["none", "add", "mul", "max", "min"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements(tmp_path, reduction, axis):
    """Indices smaller than the data on the other axes; duplicates only where a reduction
    combines them (with none the order is undefined)."""
    n = DATA.shape[axis]
    shape = [2, 3, 4]
    shape[axis] = 2 if reduction == "none" else 4
    if reduction == "none":  # distinct indices along the axis
        idx = np.moveaxis(np.broadcast_to(np.array([n - 1, -n]).reshape(-1, 1, 1),
                                          [2, *np.delete(shape, axis)]), 0, axis)  # fmt: skip
    else:
        idx = RNG.integers(-n, n, shape)
    feeds = {"x": DATA, "i": np.ascontiguousarray(idx, np.int64),
             "u": RNG.normal(size=shape).astype(np.float32)}  # fmt: skip
    model = one_node("ScatterElements", feeds, {"axis": axis, "reduction": reduction})
    check(tmp_path, model, feeds)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "indices",
    [np.array([[0], [2]]), np.array([[1, -1], [0, 2], [2, 0]]),
     np.array([[[0, 1, 2]], [[2, 3, 4]]])],
)  # fmt: skip
def test_scatter_nd(tmp_path, reduction, indices):
    if reduction != "none":  # a duplicate index, combined
        indices = np.concatenate([indices, indices[:1]])
    k = indices.shape[-1]
    updates = RNG.normal(size=(*indices.shape[:-1], *DATA.shape[k:])).astype(np.float32)
    feeds = {"x": DATA, "i": indices.astype(np.int64), "u": updates}
    check(tmp_path, one_node("ScatterND", feeds, {"reduction": reduction}), feeds)


@pytest.mark.parametrize(
    "op, feeds, attrs",
    [("GatherND", {"i": np.array([[0, 4]])}, {}),
     ("ScatterElements", {"i": np.array([[[0]], [[3]]]), "u": np.ones((2, 1, 1), np.float32)},
      {"axis": 0}),
     ("ScatterND", {"i": np.array([[1, -5]]), "u": np.ones((1, 5), np.float32)}, {})],
)  # fmt: skip
def test_an_index_out_of_range_is_a_one_line_error(tmp_path, op, feeds, attrs):
    feeds = {"x": DATA, **{k: v.astype(np.int64) if k == "i" else v for k, v in feeds.items()}}
    model = one_node(op, feeds, attrs)
    with pytest.raises(OperatorError, match="is out of range for axis"):
        reference.run(import_onnx(model), feeds)
    (tmp_path / "m.onnx").write_bytes(model)
    with pytest.raises(OutOfBoundsError) as e:
        compile_model(tmp_path / "m.onnx").run(feeds)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize("axis, k", [(-1, 3), (0, 2), (1, 4), (2, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_top_k(tmp_path, largest, axis, k, dtype):
    """Values with ties (a tie goes to the lower index first), both outputs."""
    x = RNG.integers(-3, 4, size=(3, 4, 5)).astype(dtype)
    attrs, consts = {"axis": axis, "largest": largest}, {"k": np.array([k], np.int64)}
    model = one_node("TopK", {"x": x}, attrs, consts, outputs=("v", "i"), out=(dtype, np.int64))
    check(tmp_path, model, {"x": x})


IMAGE = RNG.normal(size=(1, 2, 5, 6)).astype(np.float32)


@pytest.mark.parametrize(
    "attrs, scales, sizes",
    [({"mode": "cubic"}, [1, 1, 2, 1.5], None),
     ({"mode": "cubic", "cubic_coeff_a": -0.5, "coordinate_transformation_mode": "asymmetric"},
      [1, 1, 0.6, 1.3], None),
     ({"mode": "cubic", "exclude_outside": 1}, [1, 1, 0.8, 2], None),
     ({"mode": "cubic", "coordinate_transformation_mode": "align_corners"}, None, [1, 2, 7, 4]),
     ({"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
      [1, 1, 1.7, 0.7], None),
     ({"mode": "nearest", "keep_aspect_ratio_policy": "not_larger", "axes": [2, 3]}, None,
      [8, 20]),
     ({"mode": "linear", "keep_aspect_ratio_policy": "not_smaller", "axes": [2, 3]}, None,
      [8, 7])],
)  # fmt: skip
def test_resize_modes(tmp_path, attrs, scales, sizes):
    consts = {"roi": None, "scales": None if scales is None else np.array(scales, np.float32)}
    if sizes is not None:
        consts["sizes"] = np.array(sizes, np.int64)
    model = one_node("Resize", {"x": IMAGE}, attrs, consts, opset=19)
    check(tmp_path, model, {"x": IMAGE})
