"""Tuning records in SQLite: every measurement of every config, kept across runs.

WAL journal, one transaction per measured batch, a schema version table. A run killed at any
point leaves the file consistent: committed batches are all there, the batch in flight is absent
(and is measured again on resume, so no measurement is ever stored twice). Records export to and
import from JSON lines.

A records file carries SQLite's `application_id` = APPLICATION_ID. An existing file is checked
read-only before anything is written to it: a file that is not SQLite, another application's
database, or one from a newer toolkit is refused and left untouched. Rows that do not decode
(edited by hand, damaged) are skipped and counted in `Database.skipped`, never fatal.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import sqlite3
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import TuningError
from .record import SCHEMA_VERSION, MeasureErrorNo, Record, legacy_threads

APPLICATION_ID = 0x56544152  # "VTAR": SQLite header field identifying a records file
_TABLES = {"schema_version", "records"}
_SELECT = (
    "SELECT workload, target, config, config_index, costs, error_no, error_msg, all_cost, "
    "measured_at, threads, host FROM records"
)

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
    stored_at    REAL    NOT NULL,
    threads      INTEGER,
    host         TEXT
);
CREATE INDEX IF NOT EXISTS records_task ON records (workload, target);
CREATE UNIQUE INDEX IF NOT EXISTS records_once ON records (workload, target, config, measured_at);
"""


def _sqlite_errors(method: Callable) -> Callable:
    """SQLite's errors on a damaged file ("database disk image is malformed") as TuningError."""

    @functools.wraps(method)
    def wrapped(self: Database, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            raise TuningError(f"records database {self.path}: damaged ({e})") from None

    return wrapped


class Database:
    """A SQLite file of Records; safe to read while another process appends."""

    def __init__(self, path: str | Path = ":memory:"):
        self.path = str(path)
        self.skipped = 0  # rows read that did not decode
        if self.path != ":memory:":
            _check_identity(Path(self.path))
        try:
            self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            self._open()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            raise TuningError(f"records database {self.path}: {e}") from None

    def _open(self) -> None:
        # text damaged on disk decodes with replacement characters; _decode skips such rows
        self.conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
        self.conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        with self._transaction():
            for stmt in filter(str.strip, _SCHEMA.split(";")):
                self.conn.execute(stmt)
            row = self.conn.execute("SELECT version FROM schema_version").fetchone()
            if row is None:
                self.conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            elif row[0] in (1, 2, 3):
                self._migrate(row[0])
            elif row[0] != SCHEMA_VERSION:
                raise TuningError(
                    f"records database {self.path} has schema version {row[0]}; "
                    f"this toolkit reads version {SCHEMA_VERSION}"
                )

    def _migrate(self, version: int) -> None:
        """Bring a file of an older schema `version` to SCHEMA_VERSION (in the open
        transaction)."""
        if version == 1:  # version 1 ranked by the mean of the costs, 2 by the minimum
            self.conn.execute("ALTER TABLE records RENAME COLUMN mean_cost TO cost")
            self.conn.execute(
                "UPDATE records SET cost = "
                "(SELECT MIN(value) FROM json_each(records.costs)) WHERE error_no = 0"
            )
        columns = {c[1] for c in self.conn.execute("PRAGMA table_info(records)")}
        if version < 3:
            # version 3 adds the thread count: older rows get what their writer measured with
            # where the row tells (`record.legacy_threads`), else NULL (unknown)
            if "threads" not in columns:
                self.conn.execute("ALTER TABLE records ADD COLUMN threads INTEGER")
            self.conn.create_function("legacy_threads", 2, legacy_threads)
            self.conn.execute("UPDATE records SET threads = legacy_threads(workload, target)")
        if "host" not in columns:  # version 4 adds the host; older rows' is unknown (NULL)
            self.conn.execute("ALTER TABLE records ADD COLUMN host TEXT")
        self.conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    @_sqlite_errors
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
                r.threads,
                None if r.host is None else json.dumps(r.host, sort_keys=True),
            )
            for r in records
        ]
        with self._transaction():
            before = self.conn.total_changes
            self.conn.executemany(
                f"{verb} INTO records (workload, target, config, config_index, costs, cost, "
                "error_no, error_class, error_msg, all_cost, measured_at, stored_at, threads, "
                "host) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            return self.conn.total_changes - before

    @_sqlite_errors
    def records(self, workload: str | None = None, target: str | None = None) -> list[Record]:
        """Records in insertion order, optionally of one workload and/or target."""
        where, params = self._where(workload, target)
        cur = self.conn.execute(f"{_SELECT} {where} ORDER BY id", params)
        return self._decode(cur)

    @_sqlite_errors
    def best(self, workload: str, target: str, threads: int | None = None) -> Record | None:
        """The successful record with the lowest cost, if any (damaged rows are passed over);
        with `threads`, the fastest of those measured with that thread count if there is one,
        else the fastest of the others."""
        order, params = ("cost", [workload, target])
        if threads is not None:
            order, params = ("(threads IS NOT ?), cost", [*params, threads])
        cur = self.conn.execute(
            f"{_SELECT} WHERE workload = ? AND target = ? AND error_no = 0 ORDER BY {order}",
            params,
        )
        for row in cur:
            found = self._decode([row])
            if found:
                return found[0]
        return None

    def _decode(self, rows: Iterable[tuple]) -> list[Record]:
        """Records of the rows that decode; the others are counted in `skipped` (one warning
        per call)."""
        out, bad = [], 0
        for w, t, c, i, costs, e, msg, a, ts, threads, host in rows:
            try:
                config, costs = json.loads(c), json.loads(costs)
                host = None if host is None else json.loads(host)
                if not (isinstance(config, dict) and isinstance(costs, list)):
                    raise TypeError("config is not an object or costs not a list")
                if not (host is None or isinstance(host, dict)):
                    raise TypeError("host is not an object")
                out.append(
                    Record(
                        w,
                        t,
                        config,
                        int(i),
                        [float(x) for x in costs],
                        MeasureErrorNo(e),
                        str(msg),
                        float(a),
                        float(ts),
                        None if threads is None else int(threads),
                        host,
                    )
                )
            except (ValueError, TypeError):
                bad += 1
        if bad:
            self.skipped += bad
            warnings.warn(
                f"records database {self.path}: skipped {bad} damaged record(s)", stacklevel=3
            )
        return out

    @_sqlite_errors
    def workloads(self, target: str | None = None) -> list[str]:
        where, params = self._where(None, target)
        cur = self.conn.execute(f"SELECT DISTINCT workload FROM records {where}", params)
        return sorted(w for (w,) in cur)

    @_sqlite_errors
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

    @_sqlite_errors
    def export_jsonl(self, path: str | Path) -> int:
        records = self.records()
        with open(path, "w") as f:
            for r in records:
                f.write(r.to_json() + "\n")
        return len(records)

    @_sqlite_errors
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


def _check_identity(path: Path) -> None:
    """Refuse (without writing) an existing file that is not this toolkit's records database."""
    if not path.exists() or path.stat().st_size == 0:
        return
    if path.is_dir():
        raise TuningError(f"records database {path}: is a directory")
    with open(path, "rb") as f:
        header = f.read(100)
    if not header.startswith(b"SQLite format 3\0"):
        raise TuningError(
            f"records database {path}: not a SQLite file (a new file is created "
            "only where none exists)"
        )
    app_id = int.from_bytes(header[68:72], "big")
    if app_id not in (0, APPLICATION_ID):
        raise TuningError(
            f"records database {path}: another application's SQLite file "
            f"(application_id {app_id:#x}); not modified"
        )
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
        try:
            tables = {
                n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            version = (
                conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
                if "schema_version" in tables
                else None
            )
        finally:
            conn.close()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:  # a damaged schema's message
        raise TuningError(f"records database {path}: damaged ({e}); not modified") from None
    # files written before the application id was set are ours if they hold exactly our tables
    if app_id == 0 and tables != _TABLES:
        found = ", ".join(sorted(tables)) or "none"
        raise TuningError(
            f"records database {path}: not a tuning records file (tables: {found}; expected "
            f"{', '.join(sorted(_TABLES))}); not modified"
        )
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise TuningError(
            f"records database {path} has schema version {version}; this toolkit reads "
            f"version {SCHEMA_VERSION} (a newer toolkit wrote it); not modified"
        )
