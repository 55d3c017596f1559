"""A Dask pool started without a scheduler listens on the loopback interface only."""

from __future__ import annotations

import pytest

pytest.importorskip("distributed")

from compiler.tune.pool import DaskPool  # noqa: E402


def test_local_cluster_listens_on_loopback_only():
    pool = DaskPool(None)
    try:
        cluster = pool._cluster
        addresses = [cluster.scheduler_address, *(w.address for w in cluster.workers.values())]
        assert all(a.startswith("tcp://127.0.0.1:") for a in addresses), addresses
        assert all(s.address == "127.0.0.1" for s in cluster.scheduler.services.values())
        assert pool.map(pow, [(2, 10)], timeout=60)[0].value == 1024
    finally:
        pool.close()
