"""The records database never modifies a file that is not its own and survives damaged rows."""

from __future__ import annotations

import hashlib
import sqlite3
import warnings

import pytest

from compiler.errors import TuningError
from compiler.tune.database import APPLICATION_ID, Database
from compiler.tune.record import Record


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _record(i: int) -> Record:
    return Record("matmul(8, 8, 8)", "llvm", {"tile": i}, i, [1e-3 * (i + 1)])


def test_new_file_carries_the_application_id(tmp_path):
    path = tmp_path / "r.db"
    with Database(path) as db:
        db.add_batch([_record(0)])
    assert int.from_bytes(path.read_bytes()[68:72], "big") == APPLICATION_ID
    with Database(path) as db:
        assert len(db) == 1


def _sqlite_file(path, *statements):
    """`statements` run on the SQLite file at `path` and committed (by someone else than the
    Database class)."""
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()
    return path


def test_foreign_sqlite_file_is_refused_untouched(tmp_path):
    path = _sqlite_file(
        tmp_path / "other.db",
        "CREATE TABLE notes (text TEXT)",
        "INSERT INTO notes VALUES ('keep me')",
    )
    before = _digest(path)
    with pytest.raises(TuningError, match="not a tuning records file .tables: notes"):
        Database(path)
    assert _digest(path) == before
    assert not (tmp_path / "other.db-wal").exists()


def test_other_application_id_is_refused(tmp_path):
    path = _sqlite_file(
        tmp_path / "app.db", "PRAGMA application_id=1234", "CREATE TABLE records (x)"
    )
    before = _digest(path)
    with pytest.raises(TuningError, match="another application's SQLite file"):
        Database(path)
    assert _digest(path) == before


@pytest.mark.parametrize("content", [b"not a database at all" * 10, b"\0" * 4096])
def test_non_sqlite_file_is_refused_untouched(tmp_path, content):
    path = tmp_path / "junk.db"
    path.write_bytes(content)
    with pytest.raises(TuningError, match="not a SQLite file"):
        Database(path)
    assert path.read_bytes() == content


def test_newer_schema_is_refused_untouched(tmp_path):
    path = tmp_path / "new.db"
    Database(path).close()
    _sqlite_file(path, "UPDATE schema_version SET version = 99")
    before = _digest(path)
    with pytest.raises(TuningError, match="schema version 99"):
        Database(path)
    assert _digest(path) == before


def test_files_without_the_id_but_with_our_tables_are_ours(tmp_path):
    path = tmp_path / "old.db"
    with Database(path) as db:
        db.add_batch([_record(0)])
    _sqlite_file(path, "PRAGMA application_id=0")
    with Database(path) as db:
        assert [r.config for r in db.records()] == [{"tile": 0}]


def test_damaged_rows_are_skipped_and_counted(tmp_path):
    path = tmp_path / "r.db"
    with Database(path) as db:
        db.add_batch([_record(i) for i in range(3)])
    _sqlite_file(
        path,
        "UPDATE records SET config = '{not json' WHERE config_index = 0",
        "UPDATE records SET costs = '\"text\"' WHERE config_index = 1",
    )
    with Database(path) as db, pytest.warns(UserWarning, match="skipped 2 damaged"):
        records = db.records()
    assert [r.config_index for r in records] == [2]
    assert db.skipped == 2
    with Database(path) as db, pytest.warns(UserWarning):
        assert db.best("matmul(8, 8, 8)", "llvm").config_index == 2


def test_flipped_bytes_give_records_or_a_tuning_error(tmp_path):
    """Damage anywhere past the header: reading either works (damaged rows skipped) or raises
    TuningError, never a foreign exception (UnicodeDecodeError, sqlite3.DatabaseError)."""
    clean = tmp_path / "clean.db"
    with Database(clean) as db:
        db.add_batch([_record(i) for i in range(20)])
    raw = clean.read_bytes()
    outcomes = {"ok": 0, "error": 0}
    for pos in range(100, len(raw), 97):
        damaged = bytearray(raw)
        damaged[pos] ^= 0xFF
        path = tmp_path / f"d{pos}.db"
        path.write_bytes(bytes(damaged))
        try:
            with warnings.catch_warnings(), Database(path) as db:
                warnings.simplefilter("ignore")
                db.records()
                db.best("matmul(8, 8, 8)", "llvm")
                db.add_batch([_record(99)])
            outcomes["ok"] += 1
        except TuningError:
            outcomes["error"] += 1
    assert sum(outcomes.values()) > 10
