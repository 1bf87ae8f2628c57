"""Local Parquet, CSV, TSV and NDJSON files without hive partitions, listed without ``pyarrow.dataset``.

The readers of :mod:`.files` need little of a dataset: its files in order, each file's own
schema (and a Parquet file's footer), and the first file's schema as the dataset's. For local
files that are not hive-partitioned this module gives exactly that, with the same inference as
the dataset scanner (pyarrow's CSV and JSON readers on the first block, the Parquet footer).

Why not ``pyarrow.dataset``: importing it imports pandas (measured with pyarrow 26: +36 MB of
resident memory and ~0.2 s in a fresh process), which a plain evaluation never uses. Hive
partitions, remote files, Arrow IPC and the SQL paths still use ``pyarrow.dataset``.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

__all__ = ["LocalDataset", "LocalFile", "LOCAL_FORMATS"]

LOCAL_FORMATS = ("parquet", "csv", "tsv", "json")
_DELIMITERS = {"csv": ",", "tsv": "\t"}


class LocalFile:
    """One local file with the fragment attributes :mod:`.files` reads: ``path``, ``filesystem``
    (None: local), ``partition_expression`` (None: no hive keys), ``physical_schema`` and, for
    Parquet, ``metadata`` (the footer). Schema and footer are read once, on first use.
    """

    filesystem = None
    partition_expression = None

    def __init__(self, path: str, fmt: str) -> None:
        self.path, self.format = path, fmt
        self._schema: Any = None
        self._metadata: Any = None

    @property
    def physical_schema(self) -> Any:
        """The file's own schema (types inferred from the first block of a text file).

        Raises
        ------
        pyarrow.ArrowInvalid, OSError
            If the file cannot be read or parsed.
        """
        if self._schema is None:
            self._schema = self._read_schema()
        return self._schema

    @property
    def metadata(self) -> Any:
        """The Parquet footer (``pyarrow.parquet.FileMetaData``).

        Raises
        ------
        pyarrow.ArrowInvalid, OSError
            If the file is not a readable Parquet file.
        """
        if self._metadata is None:
            self._read_parquet_footer()
        return self._metadata

    def _read_parquet_footer(self) -> None:
        import pyarrow.parquet as pq

        with pq.ParquetFile(self.path) as f:
            self._metadata, self._schema = f.metadata, f.schema_arrow

    def _read_schema(self) -> Any:
        if self.format == "parquet":
            self._read_parquet_footer()
            return self._schema
        if self.format in _DELIMITERS:
            import pyarrow.csv as pcsv

            reader = pcsv.open_csv(self.path, parse_options=pcsv.ParseOptions(delimiter=_DELIMITERS[self.format]))
        else:
            import pyarrow.json as pjson

            reader = pjson.open_json(self.path)
        try:
            return reader.schema
        finally:
            reader.close()

    def __repr__(self) -> str:
        return f"LocalFile({self.path!r})"


class LocalDataset:
    """Local files of one format, in order; ``schema`` is the first file's, as
    ``pyarrow.dataset.dataset(files)`` has it.

    Raises
    ------
    pyarrow.ArrowInvalid, OSError
        If the first file's schema cannot be read (as ``pyarrow.dataset.dataset`` raises).
    """

    def __init__(self, files: Sequence[str], fmt: str) -> None:
        self._files = [LocalFile(f, fmt) for f in files]
        self.schema = self._files[0].physical_schema

    def get_fragments(self) -> Iterator[LocalFile]:
        """The files, in order."""
        return iter(self._files)
