"""The peers: numpy's matmul in an interpreter of its own, a one-node onnxruntime Conv."""

import numpy as np
import pytest

from benchmarks.peers import NumpyMatmul, conv_model, numpy_matmul, ort_session


def test_numpy_matmul_runs_in_a_subprocess_with_its_own_blas_environment():
    r = numpy_matmul(64, threads=1, unset=True, reps=3, cols=32)
    assert r["best_ms"] <= r["median_ms"] and r["gflops_best"] >= r["gflops_median"] > 0
    assert r["gflops_best"] == pytest.approx(2 * 64 * 64 * 32 / (r["best_ms"] / 1e3) / 1e9)
    assert r["blas_threads"] in (1, None)  # None: threadpoolctl (the bench extra) is absent


def test_numpy_matmul_peer_stays_open_between_measurements():
    with NumpyMatmul(64, threads=1, unset=True, reps=2, cols=32) as peer:
        first, second = peer(), peer()
        pid = peer.proc.pid
        assert peer.proc.poll() is None  # the same interpreter answers every call
    assert len(first) == len(second) == 2 and all(t > 0 for t in first + second)
    assert peer.proc.returncode == 0 and pid > 0
    assert peer.info() == {"kernel": peer.kernel, "blas_threads": peer.blas_threads}


def test_onnxruntime_conv_matches_a_numpy_convolution():
    pytest.importorskip("onnx", reason="the peers need the 'bench' extra (onnx, onnxruntime)")
    pytest.importorskip("onnxruntime", reason="the peers need the 'bench' extra")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 6, 6)).astype(np.float32)
    w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
    (y,) = ort_session(conv_model(4, 8, 6, 3, 1, w), threads=1).run(None, {"x": x})
    xp = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
    want = np.zeros((8, 6, 6), np.float32)
    for r in range(3):
        for s in range(3):
            want += np.einsum("oc,chw->ohw", w[:, :, r, s], xp[:, r : r + 6, s : s + 6])
    np.testing.assert_allclose(y[0], want, rtol=1e-4, atol=1e-4)
