"""Property tests: random legal schedules of matmul and conv2d must match numpy."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import compiler
from compiler import te, topi

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KINDS = st.sampled_from(["serial", "vectorize", "unroll", "parallel"])


def annotate(stage, axis, kind):
    if kind != "serial":
        getattr(stage, kind)(axis)


@SETTINGS
@given(
    fi=st.integers(1, 13),
    fj=st.integers(1, 13),
    fk=st.integers(1, 9),
    perm=st.permutations(range(4)),
    inner=KINDS,
    outer=KINDS,
    cache=st.booleans(),
    at=st.integers(0, 3),
)
def test_random_matmul_schedules(fi, fj, fk, perm, inner, outer, cache, at):
    n, m, k = 19, 23, 17
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    C = topi.nn.matmul(A, B)
    s = te.create_schedule(C.op)
    if cache:
        CC = s.cache_write(C, "local")
        io, jo, ii, ji = s[C].tile(*C.op.axis, fi, fj)
        annotate(s[C], ji, inner)
        annotate(s[C], io, outer if outer != "vectorize" else "serial")
        s[CC].compute_at(s[C], [io, jo, ii, ji][at])
        ci, cj = s[CC].op.axis
        ko, ki = s[CC].split(s[CC].op.reduce_axis[0], fk)
        s[CC].reorder(ko, ci, ki, cj)
        annotate(s[CC], cj, inner if inner != "parallel" else "serial")
    else:
        io, ii = s[C].split(C.op.axis[0], fi)
        jo, ji = s[C].split(C.op.axis[1], fj)
        ko, ki = s[C].split(C.op.reduce_axis[0], fk)
        spatial = [io, ii, jo, ji]
        order = [spatial[p] for p in perm]
        s[C].reorder(*order[:2], ko, *order[2:], ki)
        annotate(s[C], order[0], outer)
        annotate(s[C], order[3], inner if inner != "vectorize" else "unroll")
    rng = np.random.default_rng(fi * 100 + fj)
    a = rng.random((n, k), dtype=np.float32)
    b = rng.random((k, m), dtype=np.float32)
    c = np.zeros((n, m), np.float32)
    compiler.build(s, [A, B, C])(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def conv2d(ci, co, h, w, kh, pad):
    X = te.placeholder((ci, h, w), name="X")
    W = te.placeholder((co, ci, kh, kh), name="W")
    ph, pw = h + 2 * pad, w + 2 * pad
    P = te.compute(
        (ci, ph, pw),
        lambda c, y, x: te.if_then_else(
            te.all(y >= pad, y < h + pad, x >= pad, x < w + pad), X[c, y - pad, x - pad], 0.0
        ),
        name="P",
    )
    oh, ow = ph - kh + 1, pw - kh + 1
    rc, ry, rx = te.reduce_axis(ci, "rc"), te.reduce_axis(kh, "ry"), te.reduce_axis(kh, "rx")
    Y = te.compute(
        (co, oh, ow),
        lambda f, y, x: te.sum(P[rc, y + ry, x + rx] * W[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="Y",
    )
    return X, W, P, Y


def conv_ref(x, w, pad):
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    co, ci, kh, _ = w.shape
    oh, ow = xp.shape[1] - kh + 1, xp.shape[2] - kh + 1
    out = np.zeros((co, oh, ow), np.float32)
    for dy in range(kh):
        for dx in range(kh):
            out += np.einsum("fc,cyx->fyx", w[:, :, dy, dx], xp[:, dy : dy + oh, dx : dx + ow])
    return out


@SETTINGS
@given(
    fy=st.integers(1, 6),
    fx=st.integers(1, 7),
    ff=st.integers(1, 5),
    pad_mode=st.sampled_from(["inline", "root", "at"]),
    at=st.integers(0, 3),
    inner=KINDS,
    swap=st.booleans(),
)
def test_random_conv2d_schedules(fy, fx, ff, pad_mode, at, inner, swap):
    ci, co, h, w, kh, pad = 3, 5, 9, 10, 3, 1
    X, W, P, Y = conv2d(ci, co, h, w, kh, pad)
    s = te.create_schedule(Y.op)
    f, y, x = Y.op.axis
    fo, fi = s[Y].split(f, ff)
    yo, yi = s[Y].split(y, fy)
    xo, xi = s[Y].split(x, fx)
    rc, ry, rx = Y.op.reduce_axis
    if swap:
        s[Y].reorder(yo, fo, xo, rc, ry, fi, yi, rx, xi)
    else:
        s[Y].reorder(fo, yo, xo, fi, yi, rc, ry, rx, xi)
    annotate(s[Y], xi, inner if inner != "parallel" else "serial")
    annotate(s[Y], s[Y].leaf_iter_vars[0], "parallel" if inner == "parallel" else "serial")
    if pad_mode == "inline":
        s[P].compute_inline()
    elif pad_mode == "at":
        s[P].compute_at(s[Y], s[Y].leaf_iter_vars[at])
    rng = np.random.default_rng(fy * 10 + fx)
    x_np = rng.random((ci, h, w), dtype=np.float32)
    w_np = rng.random((co, ci, kh, kh), dtype=np.float32)
    out = np.zeros((co, h, w), np.float32)
    compiler.build(s, [X, W, Y])(x_np, w_np, out)
    np.testing.assert_allclose(out, conv_ref(x_np, w_np, pad), rtol=1e-5, atol=1e-5)
