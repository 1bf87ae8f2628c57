"""The compiled per-chunk updates: :mod:`.binary` (one score column), :mod:`.multiclass`
(K score columns), and :mod:`.intrinsics` (bit casts and a vectorizable log they share).

Nothing here knows about files, frames or reports; the sketch classes in :mod:`streameval.sketch`
own the state these kernels update.
"""
