"""Tests of streameval.report: schema, renderings, intervals shown when not exact."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streameval import BinarySketch, synthetic
from streameval.report import METRIC_LABELS, SCHEMA_VERSION, Report, format_metric


@pytest.fixture(scope="module")
def continuous() -> Report:
    t = synthetic.generate(20_000, seed=21)
    s = BinarySketch().update(t.column("label"), t.column("score"))
    return Report.from_sketch(s, thresholds=[0.5, 0.3], provenance={"source": "unit test"})


@pytest.fixture(scope="module")
def discrete() -> Report:
    t = synthetic.generate(5_000, decimals=2, seed=22)
    s = BinarySketch().update(t.column("label"), t.column("score"))
    return Report.from_sketch(s)


def test_json_schema(continuous):
    d = json.loads(continuous.to_json())
    assert d["schema"] == "streameval.report" and d["schema_version"] == SCHEMA_VERSION
    assert set(d) == {"schema", "schema_version", "metrics", "thresholds", "provenance", "notes"}
    assert set(d["metrics"]) == set(METRIC_LABELS)
    for key, v in d["metrics"].items():
        if key == "n_rows":
            assert v == 20_000
            continue
        assert {"value", "lower", "upper", "exact"} <= set(v), key
    assert d["metrics"]["ks"]["threshold"] is not None and "confusion" in d["metrics"]["best_f1"]
    assert [c["requested_threshold"] for c in d["thresholds"]] == [0.5, 0.3]
    for c in d["thresholds"]:
        assert {"tp", "fp", "fn", "tn", "precision", "recall", "f1", "exact", "threshold"} <= set(c)
    p = d["provenance"]
    assert p["source"] == "unit test" and p["grid"]["kind"] == "probability" and p["rows_read"] == 20_000


def test_intervals_shown_when_not_exact(continuous):
    auc = continuous.metrics["roc_auc"]
    assert not auc["exact"] and auc["lower"] < auc["upper"]
    text = continuous.to_text()
    md = continuous.to_markdown()
    shown = format_metric(auc)
    assert "[" in shown and shown in text and shown in md
    assert "~" in format_metric(continuous.metrics["pr_auc"])


def test_exact_numbers_have_no_interval(discrete):
    auc = discrete.metrics["roc_auc"]
    assert auc["exact"] and auc["lower"] == auc["upper"] == auc["value"]
    assert "[" not in format_metric(auc)
    assert discrete.metrics["pr_auc"]["exact"]


def test_default_threshold_only_for_probabilities(discrete):
    assert [c["requested_threshold"] for c in discrete.confusion] == [0.5]
    s = BinarySketch().update([0, 1, 1], [-2.0, 3.0, 5.0])
    r = Report.from_sketch(s)
    assert r.confusion == [] and r.metrics["log_loss"]["value"] is None
    r.to_json()


def test_markdown_and_text_render(continuous):
    md = continuous.to_markdown()
    assert md.startswith("## streameval report") and "| ROC AUC |" in md and "### Provenance" in md
    assert "ROC AUC" in str(continuous)


def test_format_metric():
    assert format_metric({"value": 0.5, "lower": 0.5, "upper": 0.5, "exact": True}) == "0.5"
    assert format_metric({"value": 0.5, "lower": 0.4, "upper": 0.6, "exact": False}) == "0.5 [0.4, 0.6]"
    assert format_metric({"value": None, "lower": None, "upper": None, "exact": True}) == "n/a"
    assert format_metric(12345) == "12,345"


def test_nan_is_null_in_json():
    s = BinarySketch().update(np.array([1, 1]), np.array([0.2, 0.9]))
    d = json.loads(Report.from_sketch(s).to_json())
    assert d["metrics"]["roc_auc"]["value"] is None
    assert d["notes"]


@pytest.mark.parametrize("width", [60, 80, 100, 200])
def test_terminal_tables_never_cut_a_number(width):
    import re

    from streameval.report import CIOptions

    t = synthetic.generate(20_000, seed=3)
    sketch = BinarySketch().update(t.column("label"), t.column("score"))
    r = Report.from_sketch(sketch, thresholds=[0.3, 0.5], ci=CIOptions())
    text = r.to_text(width=width)
    for c in r.confusion:
        for name in ("precision", "recall", "fpr", "accuracy"):
            band = c["ci"][name]
            # Each interval appears whole on one line, and so does each value.
            assert f"{band['lower']:.4g}-{band['upper']:.4g}" in text
        for name in ("tp", "fp", "fn", "tn"):
            assert f"{c[name]:,.0f}" in text or f"{c[name]:g}" in text
    assert max(len(line) for line in text.splitlines()) <= width
    # Wide terminals get one table with a column per count; narrow ones one table per threshold.
    wide = re.search(r"┃ +threshold ┃", text) is not None
    assert wide == (width >= 200)
