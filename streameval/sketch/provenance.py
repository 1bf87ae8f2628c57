"""Provenance: what went into a sketch, so that merging the same input twice is caught.

A sketch built by :func:`streameval.evaluate` records one entry per input file: ``{"id": content
id, "name": path, "rows": rows or None}``. The content id hashes the file's size and its first and
last MiB (SHA-256), cheap for any size and stable across copies and renames. Merging takes the
union of the entries; an id seen in two inputs means those rows would be counted twice, which
:func:`streameval.merge` warns about (:class:`DuplicateInputWarning`) or, with ``strict=True``,
refuses. The record is bounded: at most :data:`MAX_INPUTS` entries are kept (later ones are only
counted in ``inputs_dropped``), so it cannot grow without limit over thousands of merges; beyond
the cap duplicates can go unnoticed, which the count says.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Sequence

from ..errors import SketchFormatError

__all__ = ["MAX_INPUTS", "DuplicateInputWarning", "file_id", "file_inputs", "check_inputs", "union"]

MAX_INPUTS = 1024
_BLOCK = 1 << 20


class DuplicateInputWarning(UserWarning):
    """Two merged sketches share an input: its rows are counted twice in the result."""


def file_id(path: str | os.PathLike[str]) -> str:
    """Content id of a file: ``sha256:`` of its size and its first and last MiB (hex, 32 digits)."""
    h = hashlib.sha256()
    size = os.path.getsize(path)
    h.update(str(size).encode())
    with open(path, "rb") as f:
        h.update(f.read(_BLOCK))
        if size > 2 * _BLOCK:
            f.seek(size - _BLOCK)
            h.update(f.read(_BLOCK))
        elif size > _BLOCK:
            h.update(f.read())
    return "sha256:" + h.hexdigest()[:32]


def file_inputs(files: Sequence[str], rows: int, ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Entries for the files of one evaluation (rows known per file only when there is one).

    ``ids``, when given, are the files' identities already known (remote objects, which are not
    read twice to digest them); otherwise each local file's identity is :func:`file_id`.
    """
    out = []
    for i, f in enumerate(list(files)[:MAX_INPUTS]):
        try:
            ident: str | None = ids[i] if ids is not None else file_id(f)
        except OSError:
            ident = None
        out.append({"id": ident, "name": str(f), "rows": rows if len(files) == 1 else None})
    return out


def check_inputs(raw: Any, source: str | None = None) -> list[dict[str, Any]]:
    """Validate a file's ``meta.inputs``.

    Raises
    ------
    SketchFormatError
        If it is not a list of at most ``MAX_INPUTS`` objects with a string-or-null ``id`` and
        ``name`` (at most 4,096 characters) and a non-negative integer-or-null ``rows``.
    """
    where = f"{source}: " if source else ""
    if not isinstance(raw, list) or len(raw) > MAX_INPUTS:
        raise SketchFormatError(f"{where}bad header field meta.inputs: must be a list of at most {MAX_INPUTS} entries")
    out = []
    for e in raw:
        ok = isinstance(e, dict) and set(e) <= {"id", "name", "rows"}
        ok = ok and all(e.get(k) is None or (isinstance(e.get(k), str) and len(e[k]) <= 4096) for k in ("id", "name"))
        rows = e.get("rows") if isinstance(e, dict) else None
        ok = ok and (rows is None or (isinstance(rows, int) and not isinstance(rows, bool) and 0 <= rows < 1 << 62))
        if not ok:
            raise SketchFormatError(f"{where}bad entry in meta.inputs: {str(e)[:120]!r}")
        out.append({"id": e.get("id"), "name": e.get("name"), "rows": rows})
    return out


class InputsFold:
    """The union of many sketches' provenance, one sketch at a time: ``add`` costs O(its entries)
    (:func:`union` of a growing list would rebuild its id set every time: O(files x 1,024) for
    a roll-up of thousands of shards). The same entries, duplicates and dropped count as folding
    with :func:`union`."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.dropped = 0
        self._ids: set[Any] = set()

    def add(self, more: list[dict[str, Any]], more_dropped: int = 0) -> list[dict[str, Any]]:
        """Fold in ``more`` (and its dropped count); return its entries already held (by id)."""
        self.dropped += more_dropped
        dup = [e for e in more if e.get("id") and e["id"] in self._ids]
        fresh = [e for e in more if not (e.get("id") and e["id"] in self._ids)]
        room = MAX_INPUTS - len(self.entries)
        self.dropped += max(len(fresh) - room, 0)
        kept = fresh[: max(room, 0)]
        self.entries.extend(kept)
        self._ids.update(e["id"] for e in kept if e.get("id"))
        return dup


def union(a: list[dict[str, Any]], b: list[dict[str, Any]], dropped: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """``(entries of a then b, entries of b whose id is already in a, dropped count)``, capped."""
    seen = {e["id"] for e in a if e.get("id")}
    dup = [e for e in b if e.get("id") and e["id"] in seen]
    merged = list(a) + [e for e in b if not (e.get("id") and e["id"] in seen)]
    if len(merged) > MAX_INPUTS:
        dropped += len(merged) - MAX_INPUTS
        merged = merged[:MAX_INPUTS]
    return merged, dup, dropped
