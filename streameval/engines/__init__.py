"""Distributed engines: each partition of a Spark or Dask DataFrame becomes a sketch where it
lives, the engine merges the sketches in a tree, and the driver gets one sketch (or report).

:mod:`.common` holds the engine-neutral steps (a partition's rows -> serialized sketch; merging
two serialized sketches; the report). :mod:`.spark` and :mod:`.dask` only map them onto each
engine. Neither engine is imported until used; they are exposed as :mod:`streameval.spark` and
:mod:`streameval.dask`.
"""
