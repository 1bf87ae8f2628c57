"""Poisson-bootstrap replicates of MulticlassSketch: confusion and one-vs-rest replicates, merge, CI, files."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import struct
import warnings
import zlib

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    cohen_kappa_score,
    f1_score,
    matthews_corrcoef,
    precision_score,
    recall_score,
    roc_auc_score,
)
from test_bootstrap import _reference_weights

import streameval
from streameval import LinearGrid, MulticlassSketch, ProbabilityGrid
from streameval.errors import InputError, SketchFormatError, UsageError
from streameval.sketch.bootstrap import CorrelatedReplicatesWarning
from streameval.sketch.multiclass import merge_multiclass
from streameval.stats.bootstrap import replicate_estimates

K = 4
GRID = LinearGrid(-0.005, 1.005, 101)  # one bin per score rounded to 2 decimals: discrete scores


def _data(n: int, seed: int, k: int = K) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    logits = rng.normal(0.0, 1.0, (n, k))
    logits[np.arange(n), y] += 1.0
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return y, np.round(p, 2)


def _weights(ids: np.ndarray, seed: int, R: int) -> np.ndarray:
    return np.array([_reference_weights(int(i), seed, R) for i in ids], dtype=float)  # (n, R)


def _pandas_confusion(y: np.ndarray, pred: np.ndarray, w: np.ndarray, k: int) -> np.ndarray:
    frame = pd.DataFrame({"t": y, "p": pred, "w": w})
    table = frame.groupby(["t", "p"])["w"].sum().unstack(fill_value=0.0)
    return table.reindex(index=range(k), columns=range(k), fill_value=0.0).to_numpy()


@pytest.mark.parametrize("seed", range(3))
def test_each_confusion_replicate_is_the_weighted_confusion_matrix(seed: int) -> None:
    y, p = _data(700, seed)
    ids = np.arange(700) * 13 + seed
    R = 10
    sw = 0.5 + (np.arange(700) % 3) * 0.5
    sw[::11] = 0.0
    s = MulticlassSketch(grid=GRID, bootstrap=R, seed=seed).update(y, p, sample_weight=sw, row_id=ids)
    w = _weights(ids, seed, R)
    pred = np.argmax(p, axis=1)
    for r in range(R):
        assert np.array_equal(s.replicates.confusion[r], _pandas_confusion(y, pred, sw * w[:, r], K))
    # hard predictions only: the same rows, the given predictions
    y_pred = (y + (np.arange(700) % 5 == 0)) % K
    h = MulticlassSketch(bootstrap=R, seed=seed).update(y, y_pred=y_pred, row_id=ids)
    for r in range(R):
        assert np.array_equal(h.replicates.confusion[r], _pandas_confusion(y, y_pred, w[:, r], K))


@pytest.mark.parametrize("seed", range(3))
def test_replicate_ovr_aucs_equal_sklearn_with_poisson_weights(seed: int) -> None:
    y, p = _data(600, 10 + seed)
    ids = np.arange(600) + 5000
    R = 8
    s = MulticlassSketch(grid=GRID, bootstrap=R, seed=seed).update(y, p, row_id=ids)
    w = _weights(ids, seed, R)
    for j in range(K):
        lo, hi = replicate_estimates(s.one_vs_rest(j), "roc_auc")
        for r in range(R):
            ref = roc_auc_score(y == j, p[:, j], sample_weight=w[:, r])
            assert lo[r] == hi[r] == pytest.approx(ref, abs=1e-12)
    # the averaged replicates behind ci("roc_auc"): sklearn's macro and weighted OvR
    from streameval.sketch.multiclass_ci import _replicate_roc_auc

    # (rounded scores do not sum to 1, which roc_auc_score's multiclass form refuses: average the
    # binary scores as its _average_binary_score does, support = weight of each class)
    for average in ("macro", "weighted"):
        lo, hi = _replicate_roc_auc(s, average)
        for r in range(R):
            per_class = [roc_auc_score(y == j, p[:, j], sample_weight=w[:, r]) for j in range(K)]
            support = [w[y == j, r].sum() for j in range(K)] if average == "weighted" else None
            assert lo[r] == hi[r] == pytest.approx(np.average(per_class, weights=support), abs=1e-12)


@pytest.mark.parametrize(
    ("metric", "average", "reference"),
    [
        ("accuracy", None, lambda y, q, w: accuracy_score(y, q, sample_weight=w)),
        ("balanced_accuracy", None, lambda y, q, w: balanced_accuracy_score(y, q, sample_weight=w)),
        ("precision", "macro", lambda y, q, w: precision_score(y, q, average="macro", sample_weight=w)),
        ("recall", "weighted", lambda y, q, w: recall_score(y, q, average="weighted", sample_weight=w)),
        ("f1", "micro", lambda y, q, w: f1_score(y, q, average="micro", sample_weight=w)),
        ("f1_macro", None, lambda y, q, w: f1_score(y, q, average="macro", sample_weight=w)),
        ("cohen_kappa", None, lambda y, q, w: cohen_kappa_score(y, q, sample_weight=w)),
        ("matthews_corrcoef", None, lambda y, q, w: matthews_corrcoef(y, q, sample_weight=w)),
    ],
)
def test_ci_is_the_percentile_interval_of_sklearn_replicate_values(metric: str, average: str | None, reference) -> None:
    y, p = _data(900, 7)
    ids = np.arange(900)
    R = 60
    s = MulticlassSketch(grid=GRID, bootstrap=R, seed=4).update(y, p, row_id=ids)
    w = _weights(ids, 4, R)
    pred = np.argmax(p, axis=1)
    values = np.array([reference(y, pred, w[:, r]) for r in range(R)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ci = s.ci(metric, level=0.9, average=average or "macro")
    assert ci.ci_lower == pytest.approx(np.quantile(values, 0.05), abs=1e-12)
    assert ci.ci_upper == pytest.approx(np.quantile(values, 0.95), abs=1e-12)
    assert ci.estimate.value == pytest.approx(reference(y, pred, None), abs=1e-12)
    assert ci.ci_lower < ci.estimate.value < ci.ci_upper and not ci.widened
    assert "R=60" in ci.method


def test_roc_auc_ci_on_binned_scores_contains_the_exact_rows_interval() -> None:
    rng = np.random.default_rng(3)
    n, R = 1500, 40
    y = rng.integers(0, 3, n)
    logits = rng.normal(0.0, 1.0, (n, 3))
    logits[np.arange(n), y] += 1.2
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)  # continuous scores
    ids = np.arange(n)
    s = MulticlassSketch(grid=ProbabilityGrid(mantissa_bits=2), bootstrap=R, seed=1).update(y, p, row_id=ids)
    w = _weights(ids, 1, R)
    values = np.array([roc_auc_score(y, p, multi_class="ovr", sample_weight=w[:, r]) for r in range(R)])
    ci = s.ci("roc_auc", level=0.9)
    assert ci.widened
    assert ci.ci_lower <= np.quantile(values, 0.05) + 1e-12
    assert np.quantile(values, 0.95) <= ci.ci_upper + 1e-12
    exact = roc_auc_score(y, p, multi_class="ovr")
    assert ci.estimate.lower <= exact <= ci.estimate.upper


@pytest.mark.parametrize("cuts", [[0, 1000], [0, 1, 999, 1000], [0, 250, 500, 1700]])
def test_shards_with_row_id_merge_into_the_one_pass_replicates(cuts: list[int]) -> None:
    y, p = _data(2000, 21)
    ids = np.array([f"id-{i}" for i in range(2000)])
    whole = MulticlassSketch(grid=GRID, bootstrap=16, seed=5).update(y, p, row_id=ids)
    order = np.random.default_rng(1).permutation(2000)
    bounds = cuts + [2000]
    shards = [
        MulticlassSketch(grid=GRID, bootstrap=16, seed=5).update(y[order[a:b]], p[order[a:b]], row_id=ids[order[a:b]])
        for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    ]
    merged = merge_multiclass(shards[::-1])
    assert merged.replicates == whole.replicates
    for j in range(K):
        assert merged.one_vs_rest(j).replicates == whole.one_vs_rest(j).replicates
    assert merged.ci("f1", level=0.8).ci_lower == whole.ci("f1", level=0.8).ci_lower


def test_chunking_threads_and_dense_path_do_not_change_replicates() -> None:
    y, p = _data(70_000, 2)  # above the threaded-binning size
    ids = np.arange(70_000) * 3
    one = MulticlassSketch(grid=GRID, bootstrap=12, seed=2, threads=2).update(y, p, row_id=ids)
    two = MulticlassSketch(grid=GRID, bootstrap=12, seed=2, threads=1)
    for a in range(0, 70_000, 9_000):
        two.update(y[a:a + 9_000], p[a:a + 9_000], row_id=ids[a:a + 9_000])
    assert one.replicates == two.replicates
    # without row_id the position keys: the same split-independence within one stream
    a = MulticlassSketch(grid=GRID, bootstrap=12, seed=2).update(y[:5000], p[:5000])
    b = MulticlassSketch(grid=GRID, bootstrap=12, seed=2).update(y[:1234], p[:1234]).update(y[1234:5000], p[1234:5000])
    assert a.replicates == b.replicates and a.replicates.keyed == "position"


def test_a_rejected_chunk_changes_nothing() -> None:
    y, p = _data(300, 4)
    s = MulticlassSketch(grid=GRID, bootstrap=6, seed=0).update(y, p, row_id=np.arange(300))
    before = s.copy()
    with pytest.raises(InputError, match="row_id"):
        s.update(y[:10], p[:10])  # keyed by row id: row_id is needed
    with pytest.raises(InputError, match="rows"):
        s.update(y[:10], p[:10], row_id=np.arange(9))
    with pytest.raises(InputError, match="null"):
        s.update(y[:3], p[:3], row_id=np.array(["a", None, "c"], dtype=object))
    bad = p[:10].copy()
    bad[4, 1] = np.nan
    with pytest.raises(InputError):
        s.update(y[:10], bad, row_id=np.arange(10))
    assert s == before and s.replicates == before.replicates
    with pytest.raises(InputError, match="bootstrap=R"):
        MulticlassSketch().update(y, p, row_id=np.arange(300))


def test_merge_errors_and_warnings() -> None:
    y, p = _data(200, 8)
    ids = np.arange(200)
    a = MulticlassSketch(grid=GRID, bootstrap=6, seed=0).update(y, p, row_id=ids)
    with pytest.raises(InputError, match="R=6, seed=0 vs R=6, seed=1"):
        a.merge(MulticlassSketch(grid=GRID, bootstrap=6, seed=1).update(y, p, row_id=ids))
    with pytest.raises(InputError, match="R=6"):
        a.merge(MulticlassSketch(grid=GRID, bootstrap=8, seed=0).update(y, p, row_id=ids))
    with pytest.raises(InputError, match="without"):
        a.merge(MulticlassSketch(grid=GRID).update(y, p))
    with pytest.raises(InputError, match="keyed by row_id"):
        a.merge(MulticlassSketch(grid=GRID, bootstrap=6, seed=0).update(y, p))
    with pytest.warns(CorrelatedReplicatesWarning):
        MulticlassSketch(grid=GRID, bootstrap=6).update(y, p).merge(MulticlassSketch(grid=GRID, bootstrap=6).update(y, p))
    empty = MulticlassSketch(grid=GRID, bootstrap=6, seed=0)
    assert a.merge(empty).replicates == a.replicates  # identity
    assert empty.merge(MulticlassSketch(grid=GRID)).replicates is not None


def test_labels_learned_as_they_come_reindex_the_replicates() -> None:
    ids = np.arange(12)
    y = np.array(["b", "c", "b", "c", "a", "d", "a", "d", "b", "a", "c", "d"])
    q = np.array(["b", "b", "c", "c", "a", "a", "d", "d", "b", "a", "d", "c"])
    one = MulticlassSketch(bootstrap=5, seed=3).update(y, y_pred=q, row_id=ids)
    two = MulticlassSketch(bootstrap=5, seed=3).update(y[:4], y_pred=q[:4], row_id=ids[:4])
    two.update(y[4:], y_pred=q[4:], row_id=ids[4:])
    assert list(two.classes) == ["a", "b", "c", "d"] and one.replicates == two.replicates
    parts = [MulticlassSketch(bootstrap=5, seed=3).update(y[a:a + 4], y_pred=q[a:a + 4], row_id=ids[a:a + 4]) for a in (0, 4, 8)]
    assert merge_multiclass(parts).replicates == one.replicates
    w = _weights(ids, 3, 5)
    codes = {c: i for i, c in enumerate("abcd")}
    for r in range(5):
        ref = _pandas_confusion(np.array([codes[c] for c in y]), np.array([codes[c] for c in q]), w[:, r], 4)
        assert np.array_equal(one.replicates.confusion[r], ref)


def test_ci_errors() -> None:
    y, p = _data(200, 9)
    s = MulticlassSketch(grid=GRID, bootstrap=6).update(y, p, row_id=np.arange(200))
    with pytest.raises(UsageError, match="no bootstrap replicates"):
        MulticlassSketch().update(y, p).ci("accuracy")
    with pytest.raises(UsageError, match="method"):
        s.ci("accuracy", method="delong")
    with pytest.raises(UsageError, match="unknown metric"):
        s.ci("log_loss")
    with pytest.raises(UsageError, match="average"):
        s.ci("f1", average=None)
    with pytest.raises(UsageError, match="average"):
        s.ci("roc_auc", average="micro")
    with pytest.raises(UsageError):
        s.ci("accuracy", level=1.5)
    with pytest.raises(UsageError, match="needs scores"):
        MulticlassSketch(bootstrap=6).update(y, y_pred=y).ci("roc_auc")
    with pytest.raises(InputError, match="bootstrap must be"):
        MulticlassSketch(bootstrap=1)


def test_one_vs_rest_view_carries_its_replicates() -> None:
    y, p = _data(800, 12)
    ids = np.arange(800)
    s = MulticlassSketch(grid=GRID, bootstrap=30, seed=6).update(y, p, row_id=ids)
    view = s.one_vs_rest(2)
    ref = streameval.BinarySketch(GRID, bootstrap=30, seed=6).update(y == 2, p[:, 2], row_id=ids)
    assert view.replicates == ref.replicates
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert view.ci("roc_auc", method="bootstrap").ci_lower == ref.ci("roc_auc", method="bootstrap").ci_lower


# -- files ---------------------------------------------------------------------------------------
GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"


def _golden_module():
    spec = importlib.util.spec_from_file_location("make_golden_multiclass", GOLDEN / "make_golden_multiclass.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("compress", [True, False])
def test_round_trip_keeps_replicates_bit_for_bit(compress: bool, tmp_path: pathlib.Path) -> None:
    y, p = _data(500, 30)
    ids = np.arange(500)
    sketches = [
        MulticlassSketch(grid=GRID, bootstrap=7, seed=1).update(y, p, row_id=ids, sample_weight=(ids % 4) * 0.25),
        MulticlassSketch(bootstrap=7, seed=1).update(y, y_pred=(y + 1) % K),
        MulticlassSketch(bootstrap=7, seed=1),
        MulticlassSketch(classes=[0, 1, 2, 3], bootstrap=7, seed=1, pair_grid=None),
    ]
    for s in sketches:
        data = s.to_bytes(compress=compress)
        assert struct.unpack_from("<H", data, 8)[0] == 2  # replicates: version 2
        back = MulticlassSketch.from_bytes(data)
        assert back == s and back.replicates == s.replicates and back.to_bytes(compress=compress) == data
    s = sketches[0]
    s.save(tmp_path / "m.sevsk")
    back = streameval.load(tmp_path / "m.sevsk")
    assert back.replicates == s.replicates
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert back.ci("f1").ci_upper == s.ci("f1").ci_upper
        assert back.ci("roc_auc").ci_lower == s.ci("roc_auc").ci_lower
    # a sketch without replicates stays version 1, readable by older releases
    assert struct.unpack_from("<H", MulticlassSketch(grid=GRID).update(y, p).to_bytes(), 8)[0] == 1


@pytest.mark.parametrize("name", ["bootstrap", "bootstrap-labels"])
def test_golden_v2(name: str) -> None:
    """Never regenerate or edit ``tests/golden/multiclass-v2-*.sevsk``: every release must read them."""
    mod = _golden_module()
    built = mod.build_v2()[name]
    path = mod.path_for(name, 2)
    data = path.read_bytes()
    read = streameval.load(path)
    assert read == built and read.replicates == built.replicates
    assert read.to_bytes() == data and built.to_bytes() == data
    assert read.replicates.confusion.sum() > 0 and read.replicates.keyed == "row_id"


def _frame(header: dict, payload: bytes, version: int) -> bytes:
    hbytes = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    body = b"\x89SEVSK\r\n" + struct.pack("<HHI", version, 0, len(hbytes)) + hbytes + struct.pack("<Q", len(payload)) + payload
    return body + struct.pack("<I", zlib.crc32(body))


def _unframe(data: bytes) -> tuple[dict, bytes]:
    (hlen,) = struct.unpack_from("<I", data, 12)
    header = json.loads(data[16:16 + hlen])
    (plen,) = struct.unpack_from("<Q", data, 16 + hlen)
    return header, data[24 + hlen:24 + hlen + plen]


def test_crafted_replicate_sections_are_refused() -> None:
    y, p = _data(120, 31)
    s = MulticlassSketch(grid=GRID, bootstrap=3, seed=0).update(y, p, row_id=np.arange(120))
    header, payload = _unframe(s.to_bytes(compress=False))
    R = 3
    conf_at = len(payload) - 8 * R * K * K

    def refused(h: dict, body: bytes, version: int, match: str) -> None:
        with pytest.raises(SketchFormatError, match=match):
            MulticlassSketch.from_bytes(_frame(h, body, version))

    assert MulticlassSketch.from_bytes(_frame(header, payload, 2)) == s  # the helpers frame it as written
    refused(header, payload, 1, "needs format version 2")
    plain = {k: v for k, v in header.items() if k != "bootstrap"}
    refused(plain, payload, 2, "needs the header field bootstrap")
    refused({**header, "bootstrap": {**header["bootstrap"], "n_bins": header["bootstrap"]["n_bins"][:-1]}}, payload, 2, "n_bins")
    refused({**header, "bootstrap": {**header["bootstrap"], "replicates": 1}}, payload, 2, "replicates")
    refused({**header, "bootstrap": {**header["bootstrap"], "keyed": "rows"}}, payload, 2, "keyed")
    conf = np.frombuffer(payload[conf_at:], dtype="<f8").reshape(R, K, K).copy()
    for value, match in ((-1.0, "finite and >= 0"), (0.5, "whole number"), (1e6, "12 times")):
        bad = conf.copy()
        bad[1, 0, 0] = value
        refused(header, payload[:conf_at] + bad.tobytes(), 2, match)
    refused(header, payload[:-8], 2, "payload")
    # a one-vs-rest replicate weight where the sketch's cell is empty
    col0 = header["bootstrap"]["n_bins"][0]
    start = len(payload) - 8 * R * K * K - sum(kb * (4 + 16 * R) for kb in header["bootstrap"]["n_bins"])
    weights = np.frombuffer(payload[start + 4 * col0:start + col0 * (4 + 16 * R)], dtype="<f8").reshape(col0, 2, R).copy()
    weights[:, :, 0] += 1000.0
    body = payload[:start + 4 * col0] + weights.tobytes() + payload[start + col0 * (4 + 16 * R):]
    refused(header, body, 2, "bootstrap")


def test_load_then_update_and_merge_across_grids_equal_one_pass(tmp_path: pathlib.Path) -> None:
    y, p = _data(3000, 40)
    ids = np.arange(3000) + 77
    fine, coarse = ProbabilityGrid(mantissa_bits=8), ProbabilityGrid(mantissa_bits=5)
    whole = MulticlassSketch(grid=coarse, bootstrap=9, seed=8).update(y, p, row_id=ids)
    first = MulticlassSketch(grid=coarse, bootstrap=9, seed=8).update(y[:1000], p[:1000], row_id=ids[:1000])
    first.save(tmp_path / "first.sevsk")
    resumed = streameval.load(tmp_path / "first.sevsk").update(y[1000:], p[1000:], row_id=ids[1000:])
    assert resumed.replicates == whole.replicates
    a = MulticlassSketch(grid=fine, bootstrap=9, seed=8).update(y[:1800], p[:1800], row_id=ids[:1800])
    b = MulticlassSketch(grid=coarse, bootstrap=9, seed=8).update(y[1800:], p[1800:], row_id=ids[1800:])
    merged = a.merge(b)
    assert merged.grid == coarse and merged.replicates == whole.replicates
