"""``streameval.dask``: evaluate Dask DataFrames where they live (see :mod:`streameval.engines.dask`)."""

from .engines.dask import evaluate, sketch

__all__ = ["evaluate", "sketch"]
