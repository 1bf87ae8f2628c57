"""The HTML report, opened in real headless Chromium (Debian's, installed by .ci/run) from
file:// with the network blocked."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from playwright.sync_api import sync_playwright  # in the test extra: a missing driver fails

import streameval
from streameval import BinarySketch, synthetic
from streameval.report import Report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    assert CHROMIUM, "headless Chromium is needed (apt-get install chromium; .ci/run installs it)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def open_page(browser, path, expect_charts):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            requests.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(path.as_uri())
    if expect_charts:
        page.wait_for_function(f"document.querySelectorAll('.chart svg').length >= {expect_charts}", timeout=60_000)
    return page, errors, requests


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    t = synthetic.generate(50_000, seed=7)
    r = streameval.evaluate(t, score="score", label="label", thresholds=[0.3, 0.5])
    path = tmp_path_factory.mktemp("html") / "report.html"
    r.to_html(path)
    return r, path


def test_page_renders_offline_with_every_plot(browser, report):
    r, path = report
    assert path.stat().st_size < 3_000_000
    page, errors, requests = open_page(browser, path, 9)
    assert errors == [] and requests == []
    ids = page.eval_on_selector_all(".chart", "els => els.map(e => e.id)")
    assert ids == ["chart-distribution", "chart-roc", "chart-pr", "chart-sweep", "chart-far_frr", "chart-det", "chart-ks",
                   "chart-gains", "chart-calibration"]
    sizes = page.eval_on_selector_all(".chart svg", "els => els.map(e => e.getBoundingClientRect().width * e.getBoundingClientRect().height)")
    assert len(sizes) == 9 and min(sizes) > 10_000
    # The ROC chart draws its curve (one path) plus the chance diagonal.
    assert page.eval_on_selector("#chart-roc svg", "s => s.querySelectorAll('path.mark-line, g.mark-line path').length") >= 2
    page.close()


def test_numbers_on_the_page_equal_the_json_report(browser, report):
    r, path = report
    page, _, _ = open_page(browser, path, 1)
    rows = page.eval_on_selector_all("table.summary tr", "rs => rs.slice(1).map(r => [...r.cells].map(c => c.textContent))")
    assert rows == [[label, text] for label, text in r.rows()]
    doc = json.loads(r.to_json())
    auc = doc["metrics"]["roc_auc"]
    assert f"{auc['value']:.6g}" in dict(rows)["ROC AUC"]
    confusion = page.eval_on_selector_all("table.confusion", "ts => ts.map(t => [...t.rows].slice(1).map(r => [...r.cells].slice(1).map(c => c.textContent)))")
    for table, c in zip(confusion, doc["thresholds"], strict=True):
        assert table == [[f"{c['tp']:,.0f}", f"{c['fn']:,.0f}"], [f"{c['fp']:,.0f}", f"{c['tn']:,.0f}"]]
    page.close()


def test_hover_shows_threshold_and_metrics(browser, report):
    _, path = report
    page, _, _ = open_page(browser, path, 9)
    # Move the pointer onto points of the ROC curve until the tooltip shows one.
    page.locator("#chart-roc").scroll_into_view_if_needed()
    centres = page.eval_on_selector_all(
        "#chart-roc svg g.mark-symbol path",
        "ps => ps.map(p => { const r = p.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })")
    assert len(centres) > 50
    text = ""
    for x, y in centres[len(centres) // 3 :: max(1, len(centres) // 20)]:
        page.mouse.move(x, y)
        page.wait_for_timeout(50)
        text = page.evaluate("() => (document.querySelector('#vg-tooltip-element') || {}).textContent || ''")
        if "threshold" in text:
            break
    assert "threshold" in text and "TPR" in text and "FPR" in text
    page.close()


def test_one_class_sketch_says_what_is_missing(browser, tmp_path):
    s = BinarySketch().update(np.ones(100, dtype=int), np.linspace(0.01, 0.99, 100))
    path = tmp_path / "one.html"
    Report.from_sketch(s).to_html(path)
    page, errors, _ = open_page(browser, path, 2)
    assert errors == []
    notes = page.eval_on_selector_all("p.missing", "ps => ps.map(p => p.textContent)")
    assert any("no negative rows" in n for n in notes)
    page.close()


def test_large_sketch_is_downsampled_and_small(browser, tmp_path):
    rng = np.random.default_rng(3)
    n = 400_000
    y = rng.integers(0, 2, n)
    s = BinarySketch().update(y, rng.uniform(size=n))
    assert s.n_occupied_bins > 30_000
    path = tmp_path / "big.html"
    Report.from_sketch(s).to_html(path)
    assert path.stat().st_size < 3_000_000
    page, errors, _ = open_page(browser, path, 9)
    assert errors == []
    page.close()


def test_cli_html_option(tmp_path):
    from typer.testing import CliRunner

    from streameval.cli.main import app

    data = tmp_path / "log.parquet"
    synthetic.write_parquet(data, 5_000, seed=8)
    out = tmp_path / "r.html"
    run = CliRunner().invoke(app, ["eval", str(data), "-s", "score", "-l", "label", "-q", "--html", str(out)])
    assert run.exit_code == 0, run.output
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_multiclass_page(browser, tmp_path):
    rng = np.random.default_rng(9)
    y = rng.integers(0, 4, 20_000)
    z = rng.normal(size=(20_000, 4))
    z[np.arange(20_000), y] += 1.5
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    report = streameval.evaluate({"y": y, **{f"p_{k}": p[:, k] for k in range(4)}}, score="p_*", label="y")
    path = tmp_path / "multi.html"
    report.to_html(path)
    page, errors, requests = open_page(browser, path, 4)
    assert errors == [] and requests == []
    ids = page.eval_on_selector_all(".chart", "els => els.map(e => e.id)")
    assert ids == ["chart-confusion", "chart-confusion_normalised", "chart-ovr_roc", "chart-ovr_pr"]
    rows = page.eval_on_selector_all("table.per-class tr", "rs => rs.slice(1).map(r => [...r.cells].map(c => c.textContent))")
    keys = ("class", "precision", "recall", "f1", "support", "roc_auc", "average_precision")
    assert rows == [[report._cell(r[k]) for k in keys] for r in report.per_class]
    # The heatmap draws one cell per (true, predicted) pair.
    assert page.eval_on_selector("#chart-confusion svg", "s => s.querySelectorAll('g.mark-rect.role-mark path').length") == 16
    page.close()
