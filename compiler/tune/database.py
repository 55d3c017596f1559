"""Tuning records in SQLite: every measurement of every config, kept across runs.

WAL journal, one transaction per measured batch, a schema version table. A run killed at any
point leaves the file consistent: committed batches are all there, the batch in flight is absent
(and is measured again on resume, so no measurement is ever stored twice). Records export to and
import from JSON lines.
"""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import TuningError
from .record import SCHEMA_VERSION, Record

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    id           INTEGER PRIMARY KEY,
    workload     TEXT    NOT NULL,
    target       TEXT    NOT NULL,
    config       TEXT    NOT NULL,
    config_index INTEGER NOT NULL,
    costs        TEXT    NOT NULL,
    cost         REAL,
    error_no     INTEGER NOT NULL,
    error_class  TEXT    NOT NULL,
    error_msg    TEXT    NOT NULL DEFAULT '',
    all_cost     REAL    NOT NULL DEFAULT 0,
    measured_at  REAL    NOT NULL,
    stored_at    REAL    NOT NULL
);
CREATE INDEX IF NOT EXISTS records_task ON records (workload, target);
CREATE UNIQUE INDEX IF NOT EXISTS records_once ON records (workload, target, config, measured_at);
"""


class Database:
    """A SQLite file of Records; safe to read while another process appends."""

    def __init__(self, path: str | Path = ":memory:"):
        self.path = str(path)
        self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        with self._transaction():
            for stmt in filter(str.strip, _SCHEMA.split(";")):
                self.conn.execute(stmt)
            row = self.conn.execute("SELECT version FROM schema_version").fetchone()
            if row is None:
                self.conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            elif row[0] == 1:  # version 1 ranked by the mean of the costs, 2 by the minimum
                self.conn.execute("ALTER TABLE records RENAME COLUMN mean_cost TO cost")
                self.conn.execute(
                    "UPDATE records SET cost = (SELECT MIN(value) FROM json_each(records.costs)) "
                    "WHERE error_no = 0"
                )
                self.conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
            elif row[0] != SCHEMA_VERSION:
                raise TuningError(
                    f"records database {self.path} has schema version {row[0]}; "
                    f"this toolkit reads version {SCHEMA_VERSION}"
                )

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def add_batch(self, records: Iterable[Record], ignore_duplicates: bool = False) -> int:
        """Store a batch atomically: all of it or (if the process dies) none of it."""
        verb = "INSERT OR IGNORE" if ignore_duplicates else "INSERT"
        now = time.time()
        rows = [
            (
                r.workload,
                r.target,
                json.dumps(r.config, sort_keys=True),
                r.config_index,
                json.dumps(r.costs),
                None if math.isinf(r.cost) else r.cost,  # failures rank by no cost: NULL
                int(r.error_no),
                r.error_no.name,
                r.error_msg,
                r.all_cost,
                r.timestamp,
                now,
            )
            for r in records
        ]
        with self._transaction():
            before = self.conn.total_changes
            self.conn.executemany(
                f"{verb} INTO records (workload, target, config, config_index, costs, cost, "
                "error_no, error_class, error_msg, all_cost, measured_at, stored_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            return self.conn.total_changes - before

    def records(self, workload: str | None = None, target: str | None = None) -> list[Record]:
        """Records in insertion order, optionally of one workload and/or target."""
        where, params = self._where(workload, target)
        cur = self.conn.execute(
            "SELECT workload, target, config, config_index, costs, error_no, error_msg, all_cost, "
            f"measured_at FROM records {where} ORDER BY id",
            params,
        )
        return [
            Record(w, t, json.loads(c), i, json.loads(costs), e, msg, a, ts)
            for w, t, c, i, costs, e, msg, a, ts in cur
        ]

    def best(self, workload: str, target: str) -> Record | None:
        """The successful record with the lowest cost, if any."""
        rows = self.conn.execute(
            "SELECT id FROM records WHERE workload = ? AND target = ? AND error_no = 0 "
            "ORDER BY cost LIMIT 1",
            (workload, target),
        ).fetchone()
        if rows is None:
            return None
        return next(r for r in self._by_ids([rows[0]]))

    def _by_ids(self, ids: list[int]) -> Iterator[Record]:
        for row in self.conn.execute(
            "SELECT workload, target, config, config_index, costs, error_no, error_msg, all_cost, "
            f"measured_at FROM records WHERE id IN ({','.join('?' * len(ids))})",
            ids,
        ):
            w, t, c, i, costs, e, msg, a, ts = row
            yield Record(w, t, json.loads(c), i, json.loads(costs), e, msg, a, ts)

    def workloads(self, target: str | None = None) -> list[str]:
        where, params = self._where(None, target)
        cur = self.conn.execute(f"SELECT DISTINCT workload FROM records {where}", params)
        return sorted(w for (w,) in cur)

    def __len__(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]

    @staticmethod
    def _where(workload: str | None, target: str | None) -> tuple[str, list[str]]:
        terms, params = [], []
        if workload is not None:
            terms.append("workload = ?")
            params.append(workload)
        if target is not None:
            terms.append("target = ?")
            params.append(target)
        return ("WHERE " + " AND ".join(terms) if terms else ""), params

    def export_jsonl(self, path: str | Path) -> int:
        records = self.records()
        with open(path, "w") as f:
            for r in records:
                f.write(r.to_json() + "\n")
        return len(records)

    def import_jsonl(self, path: str | Path) -> int:
        """Add the records of a JSON-lines file; ones already present are skipped."""
        records = []
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    records.append(Record.from_json(line))
                except (ValueError, TypeError) as err:
                    raise TuningError(f"{path}:{n}: not a tuning record ({err})") from None
        return self.add_batch(records, ignore_duplicates=True)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
