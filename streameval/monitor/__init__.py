"""Monitoring: an incremental store of per-(window, slice) sketches, and alerts on it.

- :mod:`.store`: :class:`Store`, the DuckDB file (ingest, forget, merge on read);
- :mod:`.layout`: its columnar tables (``groups``, ``cells``) and the vectorized merge on read;
- :mod:`.legacy`: reading and upgrading stores of schema version 1 (a BLOB per group);
- :mod:`.alerts`: :func:`check`, each slice's current window against its reference period, with
  Benjamini-Hochberg correction across slices.
"""

from .alerts import AlertTable, check
from .store import IngestResult, Store, StoreBusyError

__all__ = ["AlertTable", "IngestResult", "Store", "StoreBusyError", "check"]
