"""OneHot and Einsum: seeded one-node models on the reference executor and compiled for the
CPU, both against onnxruntime (every attribute, negative and out-of-range indices, implicit
and explicit outputs, ellipses, broadcasting, diagonals, 0-d results)."""

import numpy as np
import pytest

from compiler.errors import OperatorError
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
