"""The attention kernel and the layer normalization over rows against numpy, on shapes whose
query rows, keys and widths leave partial register tiles and partial sums."""

import numpy as np
import pytest

from compiler import te, topi
from compiler.codegen.target import target_scope
from compiler.driver import lower
from compiler.topi import x86


def attention_ref(q, k, v, mask, scale):
    s = np.einsum("...td,...ds->...ts", q.astype(np.float64), k) * scale
    s = s + (0 if mask is None else mask)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize(
    "batch, tq, tk, d, dv, masked",
    [((1, 4), 128, 128, 64, 64, True), ((2, 3), 10, 24, 8, 12, True), ((1, 1), 3, 7, 5, 5, False),
     ((2,), 6, 100, 16, 40, True), ((1,), 1, 1, 1, 1, False)],
)  # fmt: skip
def test_attention_against_numpy(run, rng, batch, tq, tk, d, dv, masked):
    q = rng.standard_normal((*batch, tq, d)).astype(np.float32)
    k = rng.standard_normal((*batch, d, tk)).astype(np.float32)
    v = rng.standard_normal((*batch, tk, dv)).astype(np.float32)
    mask = np.where(rng.random((*batch[:-1], 1, tq, tk)) < 0.2, -1e4, 0).astype(np.float32)
    Q, K, V = (te.placeholder(a.shape, name=n) for a, n in ((q, "q"), (k, "k"), (v, "v")))
    M = te.placeholder(mask.shape, name="m") if masked else None
    out = topi.nn.attention(Q, K, V, M, 0.3)
    args = [Q, K, V, *([M] if masked else [])]
    got = run(x86.schedule_attention(out), args, out, q, k, v, *([mask] if masked else []))
    want = attention_ref(q, k, v, mask if masked else None, 0.3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_attention_tiles_follow_the_target():
    """Blocks of 4 query rows on AVX2 (16 registers), 8 on AVX-512 (32)."""
    shapes = {"q": (1, 2, 16, 8), "k": (1, 2, 8, 32), "v": (1, 2, 32, 8)}
    for spec, blocks in (("llvm -mcpu=haswell", 2 * 16 // 4), ("llvm -mcpu=skylake-avx512", 4)):
        with target_scope(spec):
            Q, K, V = (te.placeholder(s, name=n) for n, s in shapes.items())
            out = topi.nn.attention(Q, K, V, None, 1.0)
            text = str(lower(x86.schedule_attention(out), [Q, K, V, out]))
        assert f"in range({blocks}) parallel" in text, spec


@pytest.mark.parametrize("shape", [(128, 256), (2, 5, 24), (3, 7)])
def test_layer_norm_against_numpy(run, rng, shape):
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    X = te.placeholder(shape, name="x")
    out = topi.nn.layer_norm(X, 1e-5)
    got = run(x86.schedule_normalize(out), [X], out, x)
    mean = x.astype(np.float64).mean(-1, keepdims=True)
    want = (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
