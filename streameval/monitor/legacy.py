"""Stores of schema version 1 (one BLOB per group): read them, and move them to the columnar layout.

Version 1 kept, for every (file, window, slice) group, the labelled rows as a binary sketch file
and the unlabelled rows as a cell block, in a ``sketches`` table. Reading parsed every BLOB one
at a time (37 s for 30,000 groups); version 2 keeps plain columns (:mod:`.layout`). A store opened
for writing is upgraded in place, in one transaction (:func:`upgrade`); one opened read-only is
read through :func:`read_v1` (slowly) and a note says how to upgrade it.
"""

from __future__ import annotations

import json
from typing import Any

from ..sketch.binary import BinarySketch
from ..sketch.sketchset import DEFAULT_MAX_GROUPS, SketchSet
from .layout import CELLS_DDL, GROUPS_DDL, SINGLE_CELLS_DDL, insert_tables

__all__ = ["read_v1", "upgrade"]


def read_v1(con: Any, path: str, names: list[str], grid: Any, windowed: bool, where: str = "true",
            params: list[Any] | None = None) -> SketchSet:
    """All groups of a version-1 store (optionally those matching ``where`` on ``sketches``)."""
    ss = SketchSet(names, grid, max_groups=10 * DEFAULT_MAX_GROUPS)
    query = f"SELECT window_start, slice, labelled, unlabelled, counters FROM sketches WHERE {where}"
    rows = con.sql(query, params=params or []).to_arrow_table().to_pylist()
    for start, slice_json, lab, unl, counters in (tuple(r.values()) for r in rows):
        key = ((start,) if windowed else ()) + tuple(json.loads(slice_json))
        ss.add_group(key, BinarySketch.from_bytes(bytes(lab), source=path), None if unl is None else bytes(unl),
                     json.loads(counters))
    return ss


def upgrade(con: Any, path: str, names: list[str], grid: Any, windowed: bool, version: int) -> None:
    """Move a version-1 store to the columnar layout of schema ``version`` (2 or later) in one
    transaction (all of it, or nothing)."""
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(GROUPS_DDL)
        con.execute(CELLS_DDL)
        con.execute(SINGLE_CELLS_DDL)
        con.execute("""CREATE TABLE files_v2 (
            path VARCHAR PRIMARY KEY, file_id INTEGER NOT NULL, size BIGINT NOT NULL,
            mtime_ns BIGINT NOT NULL, digest VARCHAR NOT NULL, rows BIGINT NOT NULL,
            ingested_at TIMESTAMPTZ NOT NULL, labels VARCHAR NOT NULL, weighted BOOLEAN NOT NULL)""")
        files = [r[0] for r in con.execute("SELECT path FROM files ORDER BY path").fetchall()]
        for file_id, file in enumerate(files):
            ss = read_v1(con, path, names, grid, windowed, "path = ?", [file])
            insert_tables(con, ss, file_id, windowed)
            labels = json.dumps([ss._labels.pos_label, ss._labels.neg_label], default=str)
            con.execute("INSERT INTO files_v2 SELECT path, ?, size, mtime_ns, digest, rows, ingested_at, ?, ? "
                        "FROM files WHERE path = ?", [file_id, labels, ss.weighted, file])
        con.execute("DROP TABLE sketches")
        con.execute("DROP TABLE files")
        con.execute("ALTER TABLE files_v2 RENAME TO files")
        con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(version)])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("CHECKPOINT")
