"""Names of a package loaded on first use (PEP 562), so importing one submodule stays cheap.

Importing ``streameval.report.slices`` runs ``streameval/report/__init__.py`` first; when that file
imports every public class, a command that needs one submodule pays for all of them (Numba's
kernels among them). A package that lists its public names with :func:`lazy_names` instead loads
each name's module when the name is first read.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping

__all__ = ["lazy_names"]


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
