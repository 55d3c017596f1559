"""Transfer learning: a global cost model trained on the records of other workloads.

Other workloads' records are re-featurized through their own tasks (rebuilt from the workload
key and the template registry); only those whose feature rows have the length of the current
task's are used. Each row ends with its record's host columns (`host.host_row`: the thread
count and the host's vector lanes and caches), and each (workload, target, host, threads) is
one ranking group with labels normalized within it, so records of another kind of host inform
the model without being taken for this host's (ranked together, one host's faster timings
would teach the model the host, not the configs)."""

from __future__ import annotations

import json

import numpy as np

from ..errors import TuningError
from .cost_model import XGBCostModel
from .database import Database
from .featurizer import Featurizer
from .host import HOST_FEATURES, host_row, with_host
from .task import Task, target_kind

MIN_RECORDS = 64  # fewer usable records of other workloads train no global model


def history_dataset(
    db: Database, task: Task, kind: str, max_per_workload: int = 2000
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features (with their hosts' columns), throughputs and group ids of other workloads'
    records on the same target kind."""
    length = Featurizer(task, kind).length
    xs, ys, gs = [], [], []
    group_of: dict[tuple, int] = {}
    for workload in db.workloads():
        if workload == task.workload_key:
            continue
        records = [
            r for r in db.records(workload) if target_kind(r.target) == target_kind(task.target)
        ][-max_per_workload:]
        if not records:
            continue
        op, args = json.loads(workload)
        try:
            other = Task(op, tuple(args), records[0].target)
            featurize = Featurizer(other, kind)
            if featurize.length != length:
                continue
            space = other.config_space
            index = np.array([space.from_json(r.config).index for r in records])
        except TuningError:
            continue  # its template is gone or changed: its records no longer apply
        flop = other.flop or 1.0
        hosts = np.stack([host_row(r.host, r.threads) for r in records])
        xs.append(with_host(featurize(index), hosts))
        ys.append([flop / r.cost if r.ok and r.cost else 0.0 for r in records])
        keys = [
            (workload, r.target, json.dumps(r.host, sort_keys=True), r.threads) for r in records
        ]
        gs.append(np.array([group_of.setdefault(k, len(group_of)) for k in keys]))
    if not xs:
        empty = np.zeros((0, length + HOST_FEATURES), np.float32)
        return empty, np.zeros(0), np.zeros(0, np.int64)
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(gs)


def global_model(
    db: Database,
    task: Task,
    kind: str,
    loss: str = "rank",
    seed: int = 0,
    min_records: int = MIN_RECORDS,
) -> XGBCostModel | None:
    """A model of the history, or None when fewer than `min_records` usable records exist."""
    x, y, groups = history_dataset(db, task, kind)
    if len(y) < min_records:
        return None
    model = XGBCostModel(loss=loss, seed=seed)
    model.fit(x, y, groups)
    return model if model.booster is not None else None
