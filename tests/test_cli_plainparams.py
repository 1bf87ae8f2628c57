"""Option values converted without pydantic (cli/plainparams.py) equal typer's own conversion,
for every option of every command whose type the fast path takes."""

from __future__ import annotations

import pytest
import typer.main
from typer._coercion import build_runtime_param

from streameval.cli.main import app
from streameval.cli.plainparams import PlainCommand, PlainGroup, _fill, _kind, _PlainParam

SAMPLES = {"str": ["x", "", "a,b", "2026-11-01:2026-11-08", "ünï"], "bool": [True, False],
           "path": ["out.csv", "dir/sub/f.parquet", ".", "-", "/tmp"], "strs": [("0.3",), ("0.3,0.5", "0.9"), []]}


def _commands():
    """Every command and group of the CLI, the root included."""
    out, stack = [], [typer.main.get_command(app)]
    while stack:
        cmd = stack.pop()
        out.append(cmd)
        stack.extend(getattr(cmd, "commands", {}).values())
    return out


def _both(param, kind):
    d = param.type_descriptor
    return _PlainParam(parameter_info=d.parameter_info, annotation=d.annotation, kind=kind, descriptor=d), build_runtime_param(d)


def test_plain_values_convert_as_typer_converts_them():
    seen = set()
    for cmd in _commands():
        for param in cmd.params:
            kind = _kind(param.type_descriptor)
            if kind is None:
                continue
            seen.add(kind)
            mine, theirs = _both(param, kind)
            for value in SAMPLES[kind]:
                a = mine.coerce(value, param=param, ctx=None)
                b = theirs.coerce(value, param=param, ctx=None)
                assert (a, type(a)) == (b, type(b)), (cmd.name, param.name, value)
    assert seen == {"str", "bool", "path", "strs"}


def test_the_monitor_commands_and_groups_take_the_fast_path():
    root = typer.main.get_command(app)
    assert isinstance(root, PlainGroup)
    monitor = root.commands["monitor"]
    assert isinstance(monitor, PlainGroup)
    assert all(isinstance(c, PlainCommand) for c in monitor.commands.values())
    report = monitor.commands["report"]
    params = report.get_params(report.make_context("report", ["--store", "x"]))
    _fill(params)
    assert all(isinstance(p._runtime_param, _PlainParam) for p in params), [p.name for p in params]


@pytest.mark.parametrize("kind, value", [("path", 3), ("str", 3), ("path", b"bytes.csv")])
def test_a_value_of_another_type_goes_through_typer(kind, value):
    report = typer.main.get_command(app).commands["monitor"].commands["report"]
    param = next(p for p in report.params if _kind(p.type_descriptor) == kind)
    mine, theirs = _both(param, kind)
    try:
        expected = theirs.coerce(value, param=param, ctx=None)
    except Exception as exc:  # noqa: BLE001 - whatever typer raises, the fast path raises too
        with pytest.raises(type(exc)):
            mine.coerce(value, param=param, ctx=None)
    else:
        got = mine.coerce(value, param=param, ctx=None)
        assert (got, type(got)) == (expected, type(expected))
