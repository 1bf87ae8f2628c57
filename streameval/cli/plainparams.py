"""Plain option values without typer's pydantic validators: a command's start-up cost.

typer 0.2x converts each option's value through a pydantic ``TypeAdapter``, built when the
command runs: importing pydantic and building the adapters of ``monitor report``'s 12 options cost
0.3 s of a 1.4 s run (measured in fresh processes, bytecode cached). For the plain types this CLI
uses — ``str``, ``Path`` and lists of ``str`` — the conversion is ``str`` as given and
``pathlib.Path(value)``, followed by typer's own path checks (so errors read the same). Commands
declared with ``cls=PlainCommand`` convert those values here; any other type, and any value that
is not a ``str``, goes through typer as before.

Typer builds each option's converter lazily (``_TyperParameter._runtime_param``); this module
fills that slot before parsing. Where the installed typer has no such slot (other versions), the
command runs exactly as a plain ``TyperCommand``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, List

from typer.core import TyperCommand, TyperGroup

__all__ = ["PlainCommand", "PlainGroup"]

try:  # typer's converter interface (typer >= 0.2x); absent elsewhere, and then nothing changes here
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer._param_types import coerce_cli_path

    HAVE_SLOT = True
except ImportError:  # pragma: no cover - depends on the installed typer
    HAVE_SLOT = False


def _kind(descriptor: Any) -> str | None:
    """``"str"``, ``"path"``, ``"strs"`` (a list of str), ``"bool"`` or None (typer converts it)."""
    info = descriptor.parameter_info
    if info.parser is not None or getattr(info, "click_type", None) is not None or descriptor.file_annotation is not None:
        return None
    annotation = descriptor.annotation
    if annotation is str:
        return "str"
    if annotation is bool:
        return "bool"
    if annotation is Path and info.path_type is None:
        return "path"
    if annotation in (List[str], list[str]):
        return "strs"
    return None


if HAVE_SLOT:

    @dataclass(frozen=True)
    class _PlainParam(RuntimeParam):
        """A ``str``, ``bool``, ``Path`` or ``list[str]`` option converted without pydantic."""

        kind: str
        descriptor: Any

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.kind == "strs" and isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                return list(value)
            if (self.kind == "str" and isinstance(value, str)) or (self.kind == "bool" and isinstance(value, bool)):
                return value
            if self.kind == "path" and isinstance(value, str):
                return coerce_cli_path(Path(value), self.parameter_info, path_type=Path, param=param, ctx=ctx)
            return build_runtime_param(self.descriptor)._coerce_value(value, param=param, ctx=ctx)


def _fill(params: list[Any]) -> None:
    """Give each plain-typed option of ``params`` (the help option included) its converter, before typer builds its own."""
    if not HAVE_SLOT:
        return
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", False) is not None:
            continue
        kind = _kind(descriptor)
        if kind is not None:
            param._runtime_param = _PlainParam(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation,
                                               kind=kind, descriptor=descriptor)


class PlainCommand(TyperCommand):
    """A typer command whose ``str``, ``bool``, ``Path`` and ``list[str]`` options convert without pydantic."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        _fill(self.get_params(ctx))
        rest: list[str] = super().parse_args(ctx, args)
        return rest


class PlainGroup(TyperGroup):
    """A typer group whose own options (``--version``) convert as :class:`PlainCommand`'s do."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        _fill(self.get_params(ctx))
        rest: list[str] = super().parse_args(ctx, args)
        return rest
