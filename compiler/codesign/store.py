"""Every evaluated design point in SQLite, so a killed search resumes where it stopped.

A study is one model (its bytes), calibration, part, knob candidates and base configuration:
its key is a hash of them, and a point is evaluated once per study.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path

from ..errors import CompilerError
from .evaluate import Evaluation

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS codesign_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS evaluations (
    study   TEXT NOT NULL,
    label   TEXT NOT NULL,
    result  TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (study, label)
)
"""


def study_key(model: str | Path, calibration: str | None, part: str, candidates: int,
              base: str | None) -> str:  # fmt: skip
    """The hash naming a study (model bytes, calibration bytes, part, candidates, base)."""
    h = hashlib.sha256(Path(model).read_bytes())
    if calibration:
        h.update(Path(calibration).read_bytes())
    h.update(json.dumps([part, candidates, base]).encode())
    return h.hexdigest()[:16]


class Store:
    """The evaluations of design points, by study and point label."""

    def __init__(self, path: str | Path = ":memory:"):
        self.path = str(path)
        try:
            self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            for statement in filter(str.strip, _SCHEMA.split(";")):
                self.conn.execute(statement)
            row = self.conn.execute("SELECT version FROM codesign_schema").fetchone()
            if row is None:
                self.conn.execute("INSERT INTO codesign_schema VALUES (?)", (SCHEMA_VERSION,))
            elif row[0] != SCHEMA_VERSION:
                raise CompilerError(
                    f"co-design database {self.path}: schema version {row[0]}, this toolkit "
                    f"reads version {SCHEMA_VERSION}"
                )
        except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
            raise CompilerError(f"co-design database {self.path}: {err}") from None

    def get(self, study: str, label: str) -> Evaluation | None:
        row = self._query("SELECT result FROM evaluations WHERE study = ? AND label = ?",
                          (study, label)).fetchone()  # fmt: skip
        return None if row is None else self._load(row[0])

    def put(self, study: str, ev: Evaluation, label: str | None = None) -> None:
        """Store `ev` under `label` (default: its point's)."""
        self._query(
            "INSERT OR REPLACE INTO evaluations VALUES (?, ?, ?, ?)",
            (study, label or ev.point.label, json.dumps(ev.to_dict()), time.time()),
        )

    def all(self, study: str) -> list[Evaluation]:
        """The study's evaluations of search points (not presets), in the order they were made."""
        rows = self._query(
            "SELECT result FROM evaluations WHERE study = ? AND label NOT LIKE 'preset:%' "
            "ORDER BY created, label",
            (study,),
        ).fetchall()
        return [self._load(r[0]) for r in rows]

    def _query(self, sql: str, args: tuple) -> sqlite3.Cursor:
        try:
            return self.conn.execute(sql, args)
        except sqlite3.DatabaseError as err:
            raise CompilerError(f"co-design database {self.path}: {err}") from None

    def _load(self, text: str) -> Evaluation:
        try:
            return Evaluation.from_dict(json.loads(text))
        except (ValueError, KeyError, TypeError) as err:
            raise CompilerError(f"co-design database {self.path}: damaged row ({err})") from None

    def close(self) -> None:
        self.conn.close()
