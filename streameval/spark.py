"""``streameval.spark``: evaluate Spark DataFrames where they live (see :mod:`streameval.engines.spark`)."""

from .engines.spark import evaluate, sketch

__all__ = ["evaluate", "sketch"]
