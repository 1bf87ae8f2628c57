"""``streameval eval --engine spark|dask``: read files with the engine, then evaluate there.

Lets a user switch engines without writing code. Spark uses the active session, else one built
from ``SPARK_MASTER`` (default ``local[*]``); Dask uses the active client or scheduler.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import UsageError

__all__ = ["evaluate_files"]


def _files(paths: Sequence[str]) -> tuple[list[str], str | None, str]:
    from ..sources.files import _file_format, expand_files

    files, base = expand_files(list(paths))
    fmt = _file_format(files)
    if fmt not in ("parquet", "csv"):
        raise UsageError(f"--engine reads Parquet and CSV files; these are {fmt}: use the local engine")
    return files, base, fmt


def evaluate_files(engine: str, paths: Sequence[str], **options: Any) -> Any:
    """Evaluate ``paths`` (files, directories, globs) on ``engine`` (``"spark"`` or ``"dask"``).

    Parameters
    ----------
    engine : {"spark", "dask"}
    paths : sequence of str
        Parquet or CSV inputs, as for the local engine.
    **options
        ``score`` (one column, or several / a glob for a multiclass evaluation), ``label``,
        ``weight``, ``grid``, ``pos_label``, ``nan_policy``, ``thresholds``, ``positive_if``,
        ``ci``, ``by``, ``time``, ``window``, ``tz``, ``require_labels``, ``max_groups``: as for
        :func:`streameval.spark.evaluate`.

    Returns
    -------
    Report, SliceTable or MulticlassReport
        What the local engine returns for the same options.

    Raises
    ------
    UsageError
        An unknown engine, or inputs it cannot read (DuckDB files, IPC, NDJSON).
    """
    files, base, fmt = _files(paths)
    if engine == "spark":
        import os
        import sys

        from pyspark.sql import SparkSession

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors run this Python, with streameval

        from .spark import evaluate as on_spark

        session = SparkSession.getActiveSession() or SparkSession.builder.master(
            os.environ.get("SPARK_MASTER", "local[*]")).appName("streameval").getOrCreate()
        reader = session.read.option("basePath", base) if base else session.read
        df = reader.parquet(*files) if fmt == "parquet" else reader.option("header", True).option(
            "inferSchema", True).csv(files)
        return on_spark(df, **options)
    if engine == "dask":
        import dask.dataframe as dd

        from .dask import evaluate as on_dask

        ddf = dd.read_parquet(files) if fmt == "parquet" else dd.read_csv(files)
        return on_dask(ddf, **options)
    raise UsageError(f"unknown engine {engine!r}; choose local, spark or dask")
