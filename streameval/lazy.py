"""Names and modules loaded on first use, so importing one module stays cheap.

Importing ``streameval.report.slices`` runs ``streameval/report/__init__.py`` first; when that file
imports every public class, a command that needs one submodule pays for all of them (Numba's
kernels among them). A package that lists its public names with :func:`lazy_names` (PEP 562)
instead loads each name's module when the name is first read. A module that calls compiled
kernels only in some of its functions holds them as :func:`lazy_module` stand-ins, so reading a
stored set or a report does not import Numba (~0.3 s per process).
"""

from __future__ import annotations

import importlib
import types
from typing import Any, Callable, Mapping

__all__ = ["lazy_names", "lazy_module"]


def lazy_names(
    package: str, namespace: dict[str, Any], names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for a package whose public names load lazily.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    namespace : dict
        The package's ``globals()``: a name, once loaded, is stored there, so later reads do not
        call ``__getattr__`` again.
    names : mapping of str to str
        Public name -> the module defining it, relative to the package (``".slices"``).

    Returns
    -------
    (__getattr__, __dir__)
        To assign to the package's module-level ``__getattr__`` and ``__dir__``.

    Raises
    ------
    AttributeError
        From ``__getattr__``, for a name that is neither loaded nor listed (the message names the
        package and the name, as Python's own does).

    Examples
    --------
    In a package's ``__init__.py``::

        __getattr__, __dir__ = lazy_names(__name__, globals(), {"SliceTable": ".slices"})
    """
    table = dict(names)

    def getattr_(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(table))

    return getattr_, dir_


class _LazyModule(types.ModuleType):
    """A stand-in for a module, imported on the first attribute read; each attribute read is then
    kept in the stand-in's own namespace, so later reads cost a plain attribute lookup."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(importlib.import_module(self.__name__), name)  # the import lock makes this thread-safe
        setattr(self, name, value)
        return value


def lazy_module(name: str) -> Any:
    """A stand-in for the module ``name`` that imports it when one of its attributes is first read.

    Parameters
    ----------
    name : str
        The module's absolute name (``"streameval.kernels.grouped"``).

    Returns
    -------
    module-like
        Reading ``stand_in.attr`` returns ``module.attr``. The stand-in is not put in
        ``sys.modules``; the module itself is imported normally, once.

    Notes
    -----
    Type checkers should see the real module: import it under ``typing.TYPE_CHECKING`` and
    assign the stand-in otherwise. Values are read once: replacing an attribute of the real
    module after the stand-in has read it does not reach the stand-in (patch the stand-in).

    Examples
    --------
    >>> grouped = lazy_module("streameval.kernels.grouped")  # Numba not imported yet
    """
    return _LazyModule(name)
