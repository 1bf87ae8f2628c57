"""Synthetic prediction logs of any size, for tests, benchmarks and the demo.

A log is a stream of Arrow record batches with the columns a real prediction log has: ``score``,
``label`` (int8, 1 = positive), optionally ``weight``, plus ``segment`` and ``ts`` so that
partitioning and filters have something to work on. Rows are generated chunk by chunk from a
seeded generator, so a log of a billion rows is written with the memory of one chunk and the same
arguments always give the same rows.

Score distributions (``distribution=``):

``"mid"``
    10% positives; logit-normal scores spread over (0, 1): negatives' logits ~ N(-1, 1.5),
    positives' ~ N(+1, 1.5) (``separation`` = difference of the means, default 2).
``"rare"``
    0.1% positives; most scores near 1e-4: negatives' logits ~ N(logit(1e-4), 1), positives'
    ~ N(logit(1e-4) + 2.5, 1) (``separation`` default 2.5).
``"calibrated"``
    The "mid" classes, scored by the exact posterior ``P(y = 1 | logit)`` (for two normal classes
    of equal variance, ``logit(prevalence) + separation * logit / 1.5**2``): a well-calibrated
    model, as a deployed one should be. The demo uses it.
``"credit"``
    5% positives (defaults); an integer risk score in 300..850, higher meaning riskier, from the
    "mid" logits scaled by 80 points per unit and centred on 575.
``"logit"``
    The "mid" logits themselves: unbounded real scores (margins), for :class:`FloatGrid`.

``decimals=k`` rounds scores to ``k`` decimals, which makes them discrete (at most ``10**k + 1``
distinct values in [0, 1]): every metric of a sketch whose grid separates them is then exact.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

__all__ = ["DISTRIBUTIONS", "LogSpec", "iter_batches", "generate", "write_parquet", "write_csv", "write_log"]

DISTRIBUTIONS = ("mid", "rare", "calibrated", "credit", "logit")
_DEFAULTS = {  # distribution -> (prevalence, separation)
    "mid": (0.10, 2.0),
    "calibrated": (0.10, 2.0),
    "rare": (0.001, 2.5),
    "credit": (0.05, 2.0),
    "logit": (0.10, 2.0),
}
SEGMENTS = ("web", "app", "store", "partner")
_T0 = np.datetime64("2024-01-01T00:00:00", "us")


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


@dataclass(frozen=True)
class LogSpec:
    """Parameters of a synthetic log (see the module docstring for the distributions).

    Attributes
    ----------
    rows : int
        Number of rows, ``>= 0``.
    distribution : {"mid", "rare", "credit", "logit"}
        Score distribution.
    prevalence : float, optional
        Share of positives in (0, 1); default depends on the distribution (0.1, 0.001, 0.05, 0.1).
    separation : float, optional
        Distance between the class means on the logit scale; larger means a better model.
    decimals : int, optional
        Round scores to this many decimals (discrete scores).
    seed : int
        Seed; equal arguments give equal rows.
    score_dtype : {"float64", "float32"}
        dtype of the ``score`` column.
    weight : bool
        Add a ``weight`` column (float64, uniform in [0.5, 2)).
    chunk_rows : int
        Rows per generated batch.
    """

    rows: int
    distribution: str = "mid"
    prevalence: float | None = None
    separation: float | None = None
    decimals: int | None = None
    seed: int = 0
    score_dtype: str = "float64"
    weight: bool = False
    chunk_rows: int = 1 << 20

    def __post_init__(self) -> None:
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(f"unknown distribution {self.distribution!r}; choose one of {', '.join(DISTRIBUTIONS)}")
        if int(self.rows) != self.rows or self.rows < 0:
            raise ValueError(f"rows must be an integer >= 0, got {self.rows!r}")
        p = self.prevalence
        if p is not None and not 0.0 < p < 1.0:
            raise ValueError(f"prevalence must be in (0, 1), got {p!r}")
        if self.score_dtype not in ("float32", "float64"):
            raise ValueError(f"score_dtype must be 'float32' or 'float64', got {self.score_dtype!r}")
        if self.decimals is not None and not 0 <= int(self.decimals) <= 15:
            raise ValueError(f"decimals must be in [0, 15], got {self.decimals!r}")
        if self.chunk_rows < 1:
            raise ValueError(f"chunk_rows must be >= 1, got {self.chunk_rows!r}")

    @property
    def effective_prevalence(self) -> float:
        """The prevalence used (the given one or the distribution's default)."""
        return _DEFAULTS[self.distribution][0] if self.prevalence is None else float(self.prevalence)

    @property
    def effective_separation(self) -> float:
        """The separation used (the given one or the distribution's default)."""
        return _DEFAULTS[self.distribution][1] if self.separation is None else float(self.separation)


def _chunk(spec: LogSpec, start: int, n: int, rng: np.random.Generator) -> dict[str, Any]:
    import pyarrow as pa

    y = (rng.random(n) < spec.effective_prevalence).astype(np.int8)
    sep = spec.effective_separation
    if spec.distribution == "rare":
        base = _logit(1e-4)
        logits = rng.normal(0.0, 1.0, n) + base + sep * y
    else:
        logits = rng.normal(0.0, 1.5, n) + sep * (y - 0.5)
    if spec.distribution in ("mid", "rare"):
        score = 1.0 / (1.0 + np.exp(-logits))
    elif spec.distribution == "calibrated":
        posterior = _logit(spec.effective_prevalence) + sep * logits / 1.5**2
        score = 1.0 / (1.0 + np.exp(-posterior))
    elif spec.distribution == "credit":
        score = np.clip(np.rint(575.0 + 80.0 * logits), 300, 850)
    else:
        score = logits
    if spec.decimals is not None:
        score = np.round(score, int(spec.decimals))
    cols: dict[str, Any] = {"score": score.astype(spec.score_dtype), "label": y}
    if spec.weight:
        cols["weight"] = rng.uniform(0.5, 2.0, n)
    cols["segment"] = pa.array(SEGMENTS, pa.string()).take(pa.array(rng.integers(0, len(SEGMENTS), n)))
    # One row every 3 seconds from 2024-01-01: a month holds ~860K rows.
    cols["ts"] = _T0 + (np.arange(start, start + n, dtype=np.int64) * 3_000_000).astype("timedelta64[us]")
    return cols


def iter_batches(rows: int, **params: Any) -> Iterator[Any]:
    """Generate a synthetic log chunk by chunk.

    Parameters
    ----------
    rows : int
        Number of rows.
    **params
        Any field of :class:`LogSpec` (``distribution``, ``prevalence``, ``separation``,
        ``decimals``, ``seed``, ``score_dtype``, ``weight``, ``chunk_rows``).

    Yields
    ------
    pyarrow.RecordBatch
        Batches of at most ``chunk_rows`` rows with columns ``score``, ``label`` (int8),
        [``weight``], ``segment`` (string), ``ts`` (timestamp[us]).

    Raises
    ------
    ValueError
        If a parameter is out of range.

    Examples
    --------
    >>> from streameval import synthetic
    >>> sum(b.num_rows for b in synthetic.iter_batches(2500, chunk_rows=1000))
    2500
    """
    import pyarrow as pa

    spec = LogSpec(rows, **params)
    # One child seed per chunk: chunks are independent streams, reproducible from (seed, index).
    for i, start in enumerate(range(0, spec.rows, spec.chunk_rows)):
        n = min(spec.chunk_rows, spec.rows - start)
        rng = np.random.default_rng(np.random.SeedSequence([spec.seed, i]))
        yield pa.RecordBatch.from_pydict(_chunk(spec, start, n, rng))


def generate(rows: int, **params: Any) -> Any:
    """A whole synthetic log as one ``pyarrow.Table`` (for small sizes; see :func:`iter_batches`).

    Returns
    -------
    pyarrow.Table
    """
    import pyarrow as pa

    batches = list(iter_batches(rows, **params))
    if not batches:
        return _empty_schema(LogSpec(rows, **params)).empty_table()
    return pa.Table.from_batches(batches)


def _empty_schema(spec: LogSpec) -> Any:
    import pyarrow as pa

    fields = [pa.field("score", pa.from_numpy_dtype(np.dtype(spec.score_dtype))), pa.field("label", pa.int8())]
    if spec.weight:
        fields.append(pa.field("weight", pa.float64()))
    fields += [pa.field("segment", pa.string()), pa.field("ts", pa.timestamp("us"))]
    return pa.schema(fields)


def write_parquet(path: str | os.PathLike[str], rows: int, *, row_group_rows: int = 1_000_000, **params: Any) -> str:
    """Write a synthetic log to one Parquet file, one chunk at a time.

    Parameters
    ----------
    path : str or path-like
        Output file.
    rows : int
        Number of rows.
    row_group_rows : int, default 1,000,000
        Rows per Parquet row group (also the generation chunk size unless ``chunk_rows`` is given).
    **params
        Fields of :class:`LogSpec`.

    Returns
    -------
    str
        The path written.
    """
    import pyarrow.parquet as pq

    params.setdefault("chunk_rows", row_group_rows)
    spec = LogSpec(rows, **params)
    path = os.fspath(path)
    with pq.ParquetWriter(path, _empty_schema(spec)) as writer:
        for batch in iter_batches(rows, **params):
            writer.write_batch(batch, row_group_size=row_group_rows)
    return path


def write_csv(path: str | os.PathLike[str], rows: int, **params: Any) -> str:
    """Write a synthetic log to a CSV file (gzip-compressed when the name ends in ``.gz``).

    Parameters
    ----------
    path : str or path-like
        Output file, e.g. ``log.csv`` or ``log.csv.gz``.
    rows : int
        Number of rows.
    **params
        Fields of :class:`LogSpec`.

    Returns
    -------
    str
        The path written.
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv

    spec = LogSpec(rows, **params)
    path = os.fspath(path)
    compression = "gzip" if path.lower().endswith(".gz") else None
    with pa.CompressedOutputStream(path, compression) if compression else pa.OSFile(path, "wb") as sink:
        with pcsv.CSVWriter(sink, _empty_schema(spec)) as writer:
            for batch in iter_batches(rows, **params):
                writer.write_batch(batch)
    return path


def write_log(path: str | os.PathLike[str], rows: int, **params: Any) -> str:
    """Write a synthetic log, choosing Parquet or CSV from the file name (``.parquet``, ``.csv[.gz]``).

    Raises
    ------
    ValueError
        If the extension is neither.
    """
    p = os.fspath(path).lower()
    if p.endswith((".parquet", ".pq")):
        return write_parquet(path, rows, **params)
    if p.endswith((".csv", ".csv.gz")):
        return write_csv(path, rows, **params)
    raise ValueError(f"cannot tell the format of {os.fspath(path)!r}: use a .parquet, .csv or .csv.gz name")

