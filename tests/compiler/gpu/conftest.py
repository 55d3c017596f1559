"""Shared GPU-test fixture: a tiled matmul schedule on the GPU (compiler.topi.cuda)."""

import pytest

from compiler import te
from compiler.topi import cuda


def _gemm_schedule(n, m, k, tile=(16, 4), tile_k=8, vector=1):
    a = te.placeholder((n, k), "float32", "A")
    b = te.placeholder((k, m), "float32", "B")
    c = cuda.matmul(a, b)
    t = tile[0]
    ty = (-(-n // (t * tile[1])), 1, t, tile[1])
    tx = (-(-m // (t * tile[1])), 1, t, tile[1])
    return cuda.schedule_matmul(c, ty, tx, tile_k, vector), [a, b, c]


@pytest.fixture
def gemm_schedule():
    """gemm_schedule(n, m, k, tile=(threads, per-thread), tile_k, vector) -> (schedule, args)."""
    return _gemm_schedule
