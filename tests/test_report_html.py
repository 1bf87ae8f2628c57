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
    # The distributions are histograms: rectangles from 0, the tallest filling most of the plot.
    heights = page.eval_on_selector_all("#chart-distribution g.mark-rect path", "ps => ps.map(p => p.getBoundingClientRect().height)")
    assert len(heights) > 100 and max(heights) > 150
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


# -- monitoring views: a sliced and windowed result -------------------------------------------------

SLICES, DAYS = 1000, 3


@pytest.fixture(scope="module")
def sliced(tmp_path_factory):
    from streameval.monitor.alerts import AlertTable

    rng = np.random.default_rng(11)
    n = 150_000
    y = rng.integers(0, 2, n)
    sl = rng.integers(0, SLICES, n)
    # Separation falls with the slice number, so the worst slices are the high numbers.
    s = np.clip(rng.normal(0.35 + (0.35 - 0.3 * sl / SLICES) * y, 0.2), 0, 1)
    day = rng.integers(0, DAYS, n)
    ts = np.datetime64("2026-01-01T00:00:00", "us") + (day * 86_400_000_000 + rng.integers(0, 86_400_000_000, n)
                                                        ).astype("timedelta64[us]")
    names = np.array([f"s{i:04d}" for i in range(SLICES)])
    data = {"score": s, "label": y, "segment": names[sl], "ts": ts}
    table = streameval.evaluate(data, score="score", label="label", by=["segment"], time="ts", window="1d", ci=True,
                                thresholds=[0.5])
    alerted = "s0007"  # a good slice, so that the alert (not the AUC) puts it first in the list
    alerts = AlertTable(
        rows=[{"segment": alerted, "n_current": 50.0, "reference": 0.8, "current": 0.7, "delta": -0.1, "ci_lower": -0.15,
               "ci_upper": -0.05, "p_value": 1e-4, "p_adjusted": 1e-3, "contribution": -1e-3, "alert": True},
              {"segment": "s0008", "n_current": 50.0, "reference": 0.8, "current": 0.8, "delta": 0.0, "ci_lower": -0.05,
               "ci_upper": 0.05, "p_value": 0.9, "p_adjusted": 0.9, "contribution": 0.0, "alert": False}],
        overall={}, provenance={"metric": "roc_auc", "by": ["segment"], "current": "[2026-01-03 00:00+00:00, 2026-01-04 00:00+00:00)",
                                "reference": "[2026-01-01 00:00+00:00, 2026-01-03 00:00+00:00)", "alpha": 0.05, "min_effect": 0.0})
    path = tmp_path_factory.mktemp("slices") / "slices.html"
    table.to_html(path, alerts=alerts)
    return table, path, data, alerted


def test_sliced_page_with_1000_slices_renders(browser, sliced):
    table, path, _, alerted = sliced
    assert len(table.rows) == SLICES * DAYS
    page, errors, requests = open_page(browser, path, 1)
    assert errors == [] and requests == []
    assert page.eval_on_selector_all(".chart", "els => els.map(e => e.id)") == ["chart-monitor"]
    size = page.eval_on_selector("#chart-monitor svg", "s => s.getBoundingClientRect().width * s.getBoundingClientRect().height")
    assert size > 500_000
    # Six panels (AUC, AP, precision, recall, FPR at 0.5, PSI), each with its title.
    titles = page.eval_on_selector_all("#chart-monitor svg g.role-title text", "ts => ts.map(t => t.textContent)")
    assert titles == ["ROC AUC", "average precision", "precision@0.5", "recall@0.5", "fpr@0.5",
                      "score drift (PSI vs first window)"]
    # Every slice can be picked; the alerted one comes first, then the lowest AUC in the newest window.
    options = page.eval_on_selector_all("#slice-picker select option", "os => os.map(o => o.value)")
    assert len(options) == SLICES and options[0] == alerted
    newest = max(r["window"] for r in table.rows)
    by_auc = sorted((r for r in table.rows if r["window"] == newest and r["segment"] != alerted),
                    key=lambda r: (r["roc_auc"], r["segment"]))
    assert options[1:4] == [r["segment"] for r in by_auc[:3]]
    page.close()


def test_sliced_page_numbers_equal_the_json(browser, sliced):
    import csv
    import io

    from sklearn.metrics import roc_auc_score

    table, path, data, _ = sliced
    doc = json.loads(table.to_json())
    page, _, _ = open_page(browser, path, 1)
    text = page.evaluate("() => SPECS.monitor.data.find(d => typeof d.values === 'string').values")  # the CSV
    plotted = list(csv.DictReader(io.StringIO(text)))
    assert len(plotted) == SLICES * DAYS + DAYS  # every group, plus all slices together per window
    by_key = {(r["window"], r["segment"]): r for r in doc["rows"]}
    for p in plotted:
        if p["slice"] == "(all)":
            continue
        j = by_key[(p["window"], p["slice"])]
        for field, col in (("roc_auc", "roc_auc"), ("roc_auc_ci_lower", "roc_auc_ci_lower"), ("n_rows", "n_rows"),
                           ("recall_at_0_5", "recall@0.5"), ("average_precision_upper", "average_precision_upper")):
            if j[col] is None:
                assert p[field] == ""
            else:
                assert float(p[field]) == pytest.approx(j[col], rel=1e-6, abs=1e-12)
        assert p["psi"] == "0" if p["window"].startswith("2026-01-01") else float(p["psi"]) >= 0
    # The all-slices line against scikit-learn on each day's rows: inside the binning bounds.
    day = (data["ts"] - np.datetime64("2026-01-01T00:00:00", "us")) // np.timedelta64(1, "D")
    for p in (p for p in plotted if p["slice"] == "(all)"):
        d = int(p["window"][8:10]) - 1
        exact = roc_auc_score(data["label"][day == d], data["score"][day == d])
        assert float(p["roc_auc_lower"]) - 1e-6 <= exact <= float(p["roc_auc_upper"]) + 1e-6
    # The worst-slices table: the newest window's lowest AUCs, as in the JSON.
    shown = page.eval_on_selector_all("table.worst tr", "rs => rs.slice(1).map(r => [...r.cells].map(c => c.textContent))")
    newest = max(r["window"] for r in doc["rows"])
    expect = sorted((r for r in doc["rows"] if r["window"] == newest and r["roc_auc"] is not None),
                    key=lambda r: (r["roc_auc"], r["segment"]))[:20]
    assert [row[0] for row in shown] == [r["segment"] for r in expect]
    for row, r in zip(shown, expect, strict=True):
        assert float(row[3].split()[0]) == round(r["roc_auc"], 4)
        assert row[4] == f"{r['roc_auc_ci_lower']:.4f} to {r['roc_auc_ci_upper']:.4f}"
    page.close()


def test_sliced_page_picker_and_alert_markers(browser, sliced):
    _, path, _, alerted = sliced
    page, errors, _ = open_page(browser, path, 1)
    page.wait_for_function("() => VIEWS.monitor !== undefined")
    orange = "s => [...s.querySelectorAll('g.mark-symbol path')].filter(p => p.getAttribute('fill') === '#D55E00').length"
    assert page.evaluate("() => VIEWS.monitor.signal('slice')") == alerted
    assert page.eval_on_selector("#chart-monitor svg", orange) == 1  # the alerted slice's current window
    page.select_option("#slice-picker select", "s0500")
    page.wait_for_function("() => VIEWS.monitor.signal('slice') === 's0500'")
    page.wait_for_timeout(200)
    assert page.eval_on_selector("#chart-monitor svg", orange) == 0
    alert_rows = page.eval_on_selector_all("table.alerts tr", "rs => rs.slice(1).map(r => r.cells[0].textContent)")
    assert alert_rows == [alerted]
    assert errors == []
    page.close()


def test_sliced_page_without_windows(browser, tmp_path):
    rng = np.random.default_rng(12)
    n = 60_000
    y = rng.integers(0, 2, n)
    data = {"score": np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0, 1), "label": y,
            "segment": np.array([f"s{i:04d}" for i in range(SLICES)])[rng.integers(0, SLICES, n)]}
    table = streameval.evaluate(data, score="score", label="label", by=["segment"])
    path = tmp_path / "by.html"
    table.to_html(path)
    page, errors, _ = open_page(browser, path, 1)
    assert errors == []
    notes = page.eval_on_selector_all("p.missing", "ps => ps.map(p => p.textContent)")
    assert any("no time windows" in n for n in notes)
    # The 30 lowest AUCs as dots, and the spread of all 1,000.
    dots = page.eval_on_selector("#chart-slices svg", "s => s.querySelectorAll('g.mark-symbol path').length")
    assert dots == 30
    page.close()


def test_cli_monitor_report_html_with_alerts(browser, tmp_path):
    from typer.testing import CliRunner

    from streameval.cli.main import app

    data = tmp_path / "log.parquet"
    synthetic.write_parquet(data, 100_000, seed=8)  # ts: 3 s apart from 2024-01-01, about 3.5 days
    store = tmp_path / "m.duckdb"
    run = CliRunner()
    r = run.invoke(app, ["monitor", "ingest", str(data), "--store", str(store), "-s", "score", "-l", "label",
                         "--by", "segment", "--time", "ts", "--window", "1d", "-q"])
    assert r.exit_code == 0, r.output
    r = run.invoke(app, ["monitor", "check", "--store", str(store), "--reference", "2024-01-01:2024-01-03",
                         "--current", "2024-01-03:2024-01-05", "-f", "json"])
    assert r.exit_code in (0, 3), r.output
    checked = tmp_path / "check.json"
    checked.write_text(r.stdout)
    out = tmp_path / "monitor.html"
    r = run.invoke(app, ["monitor", "report", "--store", str(store), "--ci", "-f", "json", "-o", str(tmp_path / "t.json"),
                         "--html", str(out), "--alerts", str(checked)])
    assert r.exit_code == 0, r.output
    page, errors, requests = open_page(browser, out, 1)
    assert errors == [] and requests == []
    assert "Alerts" in page.eval_on_selector_all("h2", "hs => hs.map(h => h.textContent)")
    n_segments = len({row["segment"] for row in json.loads((tmp_path / "t.json").read_text())["rows"]})
    assert len(page.eval_on_selector_all("#slice-picker select option", "os => os")) == n_segments
    page.close()
    bad = run.invoke(app, ["monitor", "report", "--store", str(store), "--html", str(out), "--alerts", str(data)])
    assert bad.exit_code != 0 and "--alerts" in bad.output


def test_roc_binning_band_and_ci_band(browser, tmp_path):
    from sklearn.metrics import roc_curve

    t = synthetic.generate(3_000, seed=21)
    y, s = t["label"].to_numpy(), t["score"].to_numpy()
    # A coarse grid, so that bins hold both classes and the binning band is wide.
    r = streameval.evaluate(t, score="score", label="label", grid="linear:0.0:1.0:20", ci=True)
    path = tmp_path / "roc.html"
    r.to_html(path)
    page, errors, _ = open_page(browser, path, 9)
    assert errors == []
    assert page.eval_on_selector("#chart-roc svg", "s => s.querySelectorAll('g.mark-area path').length") == 2
    subtitle = page.eval_on_selector("#chart-roc svg g.role-title-subtitle text", "t => [...t.children].map(c => c.textContent)")
    assert subtitle == ["grey: binning band (the exact curve lies inside)",
                        "light blue: 95% CI of the TPR at each threshold (Wilson, pointwise)"]
    sets = page.evaluate("() => SPECS.roc.data.filter(d => Array.isArray(d.values)).map(d => d.values)")
    page.close()
    box = next(d for d in sets if d and "box_lower" in d[0])
    f = np.array([d["fpr"] for d in box])
    lo, hi = np.array([d["box_lower"] for d in box]), np.array([d["box_upper"] for d in box])
    # Every point of scikit-learn's exact curve lies in a box between two consecutive plotted points.
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
    assert len(box) <= 21 and (hi - lo).max() > 0.05
    for fx, tx in zip(fpr, tpr, strict=True):
        right = np.r_[f[1:], 1.0]
        inside = (f - 1e-12 <= fx) & (fx <= right + 1e-12) & (lo - 1e-12 <= tx) & (tx <= hi + 1e-12)
        assert inside.any() or (fx, tx) in ((0.0, 0.0), (1.0, 1.0)), (fx, tx)
    # The CI band is Wilson's interval of tp out of P at each plotted threshold, by hand.
    P = float(y.sum())
    z = 1.959963984540054
    for d in (d for d in sets if d and "tpr_ci_lower" in d[0]):
        for row in d:
            tp = row["tpr"] * P
            centre, half = (tp + z * z / 2) / (P + z * z), z * np.sqrt(tp * (P - tp) / P + z * z / 4) / (P + z * z)
            assert row["tpr_ci_lower"] == pytest.approx(centre - half, abs=1e-9)
            assert row["tpr_ci_upper"] == pytest.approx(centre + half, abs=1e-9)
    assert "CI of the TPR" not in Report.from_sketch(r.sketch).to_html()


# -- static images --------------------------------------------------------------------------------

def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG, after checking it whole: signature, every chunk's CRC, and the
    image data inflating to exactly one filter byte plus ``width x channels`` bytes per row."""
    import struct
    import zlib

    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        assert struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0] == zlib.crc32(kind + body)
        chunks.append((kind, body))
        pos += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    w, h, depth, colour = struct.unpack(">IIBB", chunks[0][1][:10])
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
    assert depth == 8
    pixels = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    assert len(pixels) == h * (1 + w * channels)
    assert len(set(pixels)) > 20  # not a blank image
    return w, h


def test_report_to_png_writes_valid_images(report, tmp_path):
    r, _ = report
    files = r.to_png(tmp_path / "png")
    assert [f.name for f in files] == [f"{c}.png" for c in ("distribution", "roc", "pr", "sweep", "far_frr", "det", "ks",
                                                            "gains", "calibration")]
    for f in files:
        w, h = _png_size(f.read_bytes())
        assert w > 500 and h > 400  # scale 2: a 320 x 260 chart with its axes
    svg = r.to_png(tmp_path / "svg", format="svg")
    import xml.etree.ElementTree as ET

    assert ET.parse(svg[1]).getroot().tag.endswith("svg")
    with pytest.raises(ValueError, match="png or svg"):
        r.to_png(tmp_path, format="gif")


@pytest.mark.slow  # PNG rendering is also covered by test_report_to_png_writes_valid_images
def test_png_of_one_class_and_sliced_results(sliced, tmp_path):
    from streameval.report.html import write_images

    s = BinarySketch().update(np.ones(100, dtype=int), np.linspace(0.01, 0.99, 100))
    assert [f.name for f in Report.from_sketch(s).to_png(tmp_path / "one")] == ["distribution.png", "calibration.png"]
    table, *_ = sliced
    (png,) = write_images(table, tmp_path / "slices")
    assert png.name == "monitor.png" and min(_png_size(png.read_bytes())) > 1000


@pytest.mark.slow  # PNG rendering is also covered by test_report_to_png_writes_valid_images
def test_cli_png_option(tmp_path):
    from typer.testing import CliRunner

    from streameval.cli.main import app

    data = tmp_path / "log.parquet"
    synthetic.write_parquet(data, 5_000, seed=8)
    out = tmp_path / "plots"
    run = CliRunner().invoke(app, ["eval", str(data), "-s", "score", "-l", "label", "-q", "--png", str(out),
                                   "--save-sketch", str(tmp_path / "s.sketch")])
    assert run.exit_code == 0, run.output
    assert len(list(out.glob("*.png"))) == 9
    run = CliRunner().invoke(app, ["report", str(tmp_path / "s.sketch"), "--svg", str(tmp_path / "svg")])
    assert run.exit_code == 0, run.output
    assert sorted(p.name for p in (tmp_path / "svg").glob("*.svg"))[:2] == ["calibration.svg", "det.svg"]


def test_downsampled_curves_keep_a_rare_event_rise():
    from sklearn.metrics import roc_curve

    from streameval.report.html import data

    rng = np.random.default_rng(5)
    n, pos = 400_000, 400
    y = np.zeros(n, dtype=int)
    y[:pos] = 1
    # Negatives pile up near 1e-4 (tens of thousands of bins); positives sit a little higher.
    s = np.where(y == 1, rng.beta(2, 2000, n) * 3, rng.beta(1, 8000, n))
    sketch = BinarySketch().update(y, s)
    assert sketch.n_occupied_bins > 20_000
    full_fpr, full_tpr, _ = sketch.roc_curve(drop_intermediate=False)
    sw = data.sweep(sketch)
    assert len(sw["fpr"]) <= data.MAX_POINTS + 2
    # Between two consecutive plotted points the exact curve stays in their box. Spread along the
    # curve's length (FPR + TPR + rank, total 3), no box exceeds 3 / MAX_POINTS plus one step of
    # the full curve; evenly spaced indices leave a box over most of the rise.
    def largest_box(fpr, tpr):
        f, t = np.r_[0.0, fpr], np.r_[0.0, tpr]
        return np.maximum(np.diff(f), np.diff(t)).max()

    step = largest_box(full_fpr, full_tpr)
    assert largest_box(sw["fpr"], sw["tpr"]) <= 3 / data.MAX_POINTS + step + 1e-12
    even = data.downsample(full_fpr.shape[0] - 1)
    assert largest_box(full_fpr[1:][even], full_tpr[1:][even]) > 0.2
    # scikit-learn's curve on the rows agrees with the plotted one where both are drawn.
    fpr, tpr, _ = roc_curve(y, s)
    at = np.linspace(0.001, 0.2, 50)
    assert np.interp(at, np.r_[0.0, sw["fpr"]], np.r_[0.0, sw["tpr"]]) == pytest.approx(np.interp(at, fpr, tpr), abs=0.02)


def test_sliced_page_caps_the_plotted_groups(sliced):
    from streameval.report.html.monitor import monitor_charts

    table, *_ = sliced
    _, notes, rows = monitor_charts(table, None, max_groups=2_500)
    # 1,000 groups a day: the newest two days fit in 2,500, each with its all-slices row.
    assert sorted({r["window"][:10] for r in rows}) == ["2026-01-02", "2026-01-03"]
    assert len(rows) == 2 * SLICES + 2
    assert any("newest 2 of 3 windows" in n for n in notes)
    _, notes_all, rows_all = monitor_charts(table, None)
    assert not any("newest" in n for n in notes_all)
    full = {(r["window"], r["slice"]): r for r in rows_all}
    assert all(r == full[(r["window"], r["slice"])] for r in rows)  # same numbers, PSI included
