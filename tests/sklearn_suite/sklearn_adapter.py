"""A pytest plugin that runs scikit-learn's own metric tests against streameval.

Loaded with ``-p sklearn_adapter`` while pytest runs the ``test_ranking.py`` and
``test_classification.py`` files of the installed scikit-learn. Before the test modules are
imported, the metric functions of ``sklearn.metrics`` are replaced by adapters: a call with
a binary problem that streameval's scikit-learn-shaped API covers (1-D labels with at most two
values, 1-D scores or ``(n, 2)`` probabilities, default options) is answered by
:mod:`streameval.metrics.functional`; any other call (multiclass, multilabel, sparse input,
``labels=``, ``normalize=False``...) goes to scikit-learn unchanged. Each test's outcome and the
number of calls streameval answered are written as JSON to ``$SKLEARN_ADAPTER_REPORT``.

Nothing of scikit-learn is copied: its test files are run from the installed package.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from streameval.metrics import functional as se

_SERVED: dict[str, int] = {}
_OUTCOMES: dict[str, str] = {}
_CURRENT: list[str] = [""]


def _labels(y: Any) -> np.ndarray | None:
    """The distinct values of a 1-D label array, or None if the input is not plainly 1-D."""
    if hasattr(y, "toarray") or hasattr(y, "tocsr"):  # sparse
        return None
    try:
        a = np.asarray(y)
    except Exception:
        return None
    if a.ndim != 1 or a.size == 0 or a.dtype.kind not in "biuUSO":
        return None
    try:
        return np.unique(a)
    except TypeError:  # mixed types
        return None


def _scores(y_score: Any) -> bool:
    try:
        a = np.asarray(y_score)
    except Exception:
        return False
    return a.dtype.kind in "biuf" and (a.ndim == 1 or (a.ndim == 2 and a.shape[1] == 2))


def _binary_01(y: Any) -> bool:
    """Labels sklearn's ranking metrics accept without pos_label: {0, 1} or {-1, 1} (or a subset)."""
    u = _labels(y)
    return u is not None and u.dtype.kind in "biu" and set(u.tolist()) <= {0, 1, -1} and not {0, -1} <= set(u.tolist())


def _wrap(name: str, original: Callable[..., Any], serve: Callable[..., Any]) -> Callable[..., Any]:
    def adapter(*args: Any, **kwargs: Any) -> Any:
        out = serve(*args, **kwargs)
        if out is _FALLBACK:
            return original(*args, **kwargs)
        _SERVED[_CURRENT[0]] = _SERVED.get(_CURRENT[0], 0) + 1
        return out

    adapter.__name__ = name
    adapter.__wrapped__ = original  # type: ignore[attr-defined]
    return adapter


_FALLBACK = object()


def _only(kwargs: dict[str, Any], **defaults: Any) -> bool:
    """True if every keyword other than those listed in ``defaults`` is absent, and the listed
    ones are absent or equal to their default."""
    for k, v in kwargs.items():
        if k not in defaults:
            return False
        d = defaults[k]
        if d is not _ANY and not (v is d or (isinstance(v, str) and v == d)):
            return False
    return True


_ANY = object()


def _positional(args: tuple[Any, ...], kw: dict[str, Any], names: tuple[str, ...]) -> tuple[Any, Any] | None:
    """``(y_true, second)`` from positional or keyword arguments (any of ``names`` for the second),
    or None when the call has another shape (the adapter then falls back to scikit-learn)."""
    if len(args) > 2:
        return None
    vals = list(args)
    if not vals:
        if "y_true" not in kw:
            return None
        vals.append(kw.pop("y_true"))
    if len(vals) == 1:
        found = [n for n in names if n in kw]
        if len(found) != 1:
            return None
        vals.append(kw.pop(found[0]))
    return vals[0], vals[1]


def _ranking(func: Callable[..., Any], *extra: str) -> Callable[..., Any]:
    def serve(*args: Any, **kw: Any) -> Any:
        got = _positional(args, kw, ("y_score",))
        if got is None:
            return _FALLBACK
        y_true, y_score = got
        allowed = {"sample_weight": _ANY, "average": _ANY, "multi_class": _ANY, **{e: _ANY for e in extra}}
        if y_score is None or not _only(kw, **allowed) or not _binary_01(y_true) or not _scores(y_score):
            return _FALLBACK
        if np.asarray(y_score).ndim == 2:
            return _FALLBACK
        if kw.get("pos_label") not in (None, 1):
            return _FALLBACK
        kw = {k: v for k, v in kw.items() if k in ("sample_weight",) + extra and v is not None}
        return func(y_true, y_score, **kw)

    return serve


def _probability(func: Callable[..., Any]) -> Callable[..., Any]:
    def serve(*args: Any, **kw: Any) -> Any:
        got = _positional(args, kw, ("y_prob", "y_proba"))
        if got is None:
            return _FALLBACK
        y_true, y_prob = got
        if not _only(kw, sample_weight=_ANY, normalize=True) or not _binary_01(y_true) or not _scores(y_prob):
            return _FALLBACK
        if set(_labels(y_true).tolist()) != {0, 1}:  # type: ignore[union-attr]
            return _FALLBACK
        return func(y_true, y_prob, sample_weight=kw.get("sample_weight"))

    return serve


def _hard(func: Callable[..., Any], *, average: bool = True, **fixed: Any) -> Callable[..., Any]:
    def serve(*args: Any, **kw: Any) -> Any:
        got = _positional(args, kw, ("y_pred",))
        if got is None:
            return _FALLBACK
        y_true, y_pred = got
        allowed: dict[str, Any] = {"sample_weight": _ANY, **fixed}
        if average:
            allowed.update(average="binary", pos_label=_ANY, zero_division="warn")
        if "beta" in kw:
            allowed["beta"] = _ANY
        if not _only(kw, **allowed):
            return _FALLBACK
        ut, up = _labels(y_true), _labels(y_pred)
        if ut is None or up is None or ut.dtype.kind != up.dtype.kind:
            return _FALLBACK
        union = set(ut.tolist()) | set(up.tolist())
        pos = kw.get("pos_label", 1) if average else max(union)
        if len(union) != 2 or pos not in union:
            return _FALLBACK
        args = {"sample_weight": kw.get("sample_weight"), "pos_label": pos}
        if "beta" in kw:
            args["beta"] = kw["beta"]
        return func(y_true, y_pred, **args)

    return serve


ADAPTERS: dict[str, Callable[..., Any]] = {
    "roc_auc_score": _ranking(se.roc_auc_score, "max_fpr"),
    "average_precision_score": _ranking(se.average_precision_score, "pos_label"),
    "roc_curve": _ranking(se.roc_curve, "pos_label", "drop_intermediate"),
    "precision_recall_curve": _ranking(se.precision_recall_curve, "pos_label", "drop_intermediate"),
    "det_curve": _ranking(se.det_curve, "pos_label", "drop_intermediate"),
    "log_loss": _probability(se.log_loss),
    "brier_score_loss": _probability(se.brier_score_loss),
    "precision_score": _hard(se.precision_score),
    "recall_score": _hard(se.recall_score),
    "f1_score": _hard(se.f1_score),
    "fbeta_score": _hard(se.fbeta_score),
    "accuracy_score": _hard(se.accuracy_score, average=False, normalize=True),
    "balanced_accuracy_score": _hard(se.balanced_accuracy_score, average=False, adjusted=False),
    "matthews_corrcoef": _hard(se.matthews_corrcoef, average=False),
    "confusion_matrix": _hard(se.confusion_matrix, average=False, normalize=None),
}


def pytest_configure(config: pytest.Config) -> None:
    """Replace the metric functions in ``sklearn.metrics`` before any test module imports them, so
    the names a test module imports, and the functions its ``parametrize`` lists hold, are the
    adapters (identity checks such as ``metric is brier_score_loss`` still hold)."""
    import sklearn.metrics

    for name, serve in ADAPTERS.items():
        original = getattr(sklearn.metrics, name)
        setattr(sklearn.metrics, name, _wrap(name, original, serve))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _CURRENT[0] = item.nodeid


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        _OUTCOMES[report.nodeid] = report.outcome
    elif report.when == "setup" and report.outcome != "passed":
        _OUTCOMES[report.nodeid] = "error" if report.outcome == "failed" else report.outcome


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get("SKLEARN_ADAPTER_REPORT")
    if path:
        rows = {k: {"outcome": v, "served": _SERVED.get(k, 0)} for k, v in _OUTCOMES.items()}
        with open(path, "w") as f:
            json.dump(rows, f, indent=1, sort_keys=True)
