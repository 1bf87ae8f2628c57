"""Exceptions and warnings raised by streameval.

Every error is a subclass of a builtin (``ValueError`` or ``TypeError``) so that code written
against scikit-learn's conventions keeps working, and of :class:`StreamevalError` so that callers
can catch everything this package raises in one place.
"""

from __future__ import annotations


class StreamevalError(Exception):
    """Base class of every error raised by streameval."""


class InputError(StreamevalError, ValueError):
    """Input data that cannot be evaluated as given (NaN scores, non-binary labels, bad weights).

    The message names the argument or column, the offending value, how many rows are affected
    and the first row, and says what to do.
    """


class UsageError(StreamevalError, ValueError):
    """Arguments that do not fit together (``table=`` with ``sql=``, a bad batch size, ...).

    The command line reports these with exit code 2, like any other usage error.
    """


class InputTypeError(StreamevalError, TypeError):
    """An input of a type streameval cannot read."""


class IncompatibleGridError(StreamevalError, ValueError):
    """Two sketches on different grids were merged; the message names both grids."""


class SketchFormatError(StreamevalError, ValueError):
    """Bytes that are not a valid streameval sketch: wrong magic, future version, truncated, corrupt."""


class UndefinedMetricWarning(UserWarning):
    """A metric is ill-defined on this data (for example only one class); NaN or 0 is returned."""


class InexactThresholdWarning(UserWarning):
    """A requested threshold falls inside a bin whose scores straddle it.

    The confusion counts are reported at the nearest exact threshold instead, together with the
    bounds that hold at the requested one.
    """
