"""Monitoring: an incremental store of per-(window, slice) sketches, and alerts on it.

- :mod:`.store`: :class:`Store`, the DuckDB file (ingest, forget, merge on read);
- :mod:`.layout`: its columnar tables (``groups``, ``cells``) and the vectorized merge on read;
- :mod:`.legacy`: reading and upgrading stores of schema version 1 (a BLOB per group);
- :mod:`.alerts`: :func:`check`, each slice's current window against its reference period, with
  Benjamini-Hochberg correction across slices.

The names load on first use (:mod:`streameval.lazy`): a report from the store does not import the
statistics that alerts need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

__all__ = ["AlertTable", "IngestResult", "Store", "StoreBusyError", "check"]

__getattr__, __dir__ = lazy_names(__name__, globals(), {
    "AlertTable": ".alerts", "check": ".alerts", "IngestResult": ".store", "Store": ".store", "StoreBusyError": ".store",
})

if TYPE_CHECKING:  # what type checkers see; at run time the names load lazily
    from .alerts import AlertTable, check
    from .store import IngestResult, Store, StoreBusyError
