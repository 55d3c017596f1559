"""Records databases as older versions of the toolkit wrote them, for the tests that load them."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def downgrade(path: Path, column: str, version: int) -> None:
    """Turn the records database at `path` back into schema `version` by dropping the
    `column` that version did not have."""
    conn = sqlite3.connect(path)
    conn.execute(f"ALTER TABLE records DROP COLUMN {column}")
    conn.execute("UPDATE schema_version SET version = ?", (version,))
    conn.commit()
    conn.close()
