"""Packages whose public names load on first use (streameval/lazy.py): every listed name loads,
and is the object its module defines; an unknown name fails as Python's own lookup does."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = {
    "streameval.metrics": {"BinTable": "table", "roc_auc_score": "functional", "TopK": "thresholds"},
    "streameval.monitor": {"Store": "store", "check": "alerts"},
    "streameval.report": {"SliceTable": "slices", "Report": "binary", "MulticlassReport": "multiclass"},
    "streameval.sketch": {"SketchSet": "sketchset", "BinarySketch": "binary", "MulticlassSketch": "multiclass"},
}


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_every_public_name_loads_from_its_module(package):
    pkg = importlib.import_module(package)
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None, name
        assert name in dir(pkg)
    for name, module in PACKAGES[package].items():
        assert getattr(pkg, name) is getattr(importlib.import_module(f"{package}.{module}"), name)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such_name'"):
        pkg.no_such_name  # noqa: B018
    from_import = {}
    exec(f"from {package} import {', '.join(pkg.__all__)}", from_import)  # what `from ... import` sees
    assert all(from_import[n] is getattr(pkg, n) for n in pkg.__all__)


def test_a_lazy_module_reads_the_real_modules_attributes_once():
    import types

    from streameval.lazy import lazy_module

    stand_in = lazy_module("streameval.kernels.fields")
    assert isinstance(stand_in, types.ModuleType) and "W" not in vars(stand_in)
    from streameval.kernels import fields

    assert stand_in.MAX is fields.MAX and vars(stand_in)["MAX"] is fields.MAX
    with pytest.raises(AttributeError):
        stand_in.no_such_name  # noqa: B018
