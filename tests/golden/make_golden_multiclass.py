"""Build the golden multiclass sketch files (run once, when the file format carries the kind).

    python tests/golden/make_golden_multiclass.py

Needs ``MulticlassSketch.to_bytes`` (the "multiclass" kind of ``streameval/sketch/io.py``); until then
:func:`build` alone is usable (tests rebuild the same sketches and compare their parts). Each
sketch comes from small deterministic data computed with plain arithmetic (no random generator),
covering: scores on the default grid with full-resolution pairs, weights with zero weights and
string labels, no pairwise histograms, a coarsened pair grid (K = 20), and hard predictions only.
Once written, a ``multiclass-v<N>-*.sevsk`` file must never change.

Version 2 (:func:`build_v2`): sketches with bootstrap replicates, scores keyed by integer row ids
(weighted, two chunks) and hard predictions keyed by string row ids.
"""

from __future__ import annotations

import pathlib

import numpy as np

from streameval import LinearGrid, MulticlassSketch, ProbabilityGrid

VERSION = 1
HERE = pathlib.Path(__file__).resolve().parent


def _scores(n: int, k: int, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(n, dtype=np.int64)
    y = (i * a + 1) % k
    raw = ((i[:, None] * b + np.arange(k)[None, :] * 7 + 3) % 11).astype(np.float64) + 1.0
    raw[i, y] += 6.0  # the true class tends to score highest
    return y, raw / raw.sum(axis=1, keepdims=True)


def build() -> dict[str, MulticlassSketch]:
    """The golden sketches by name, rebuilt identically on every call."""
    out: dict[str, MulticlassSketch] = {}
    y, p = _scores(60, 3, 5, 3)
    out["scores"] = MulticlassSketch(classes=[0, 1, 2]).update(y[:30], p[:30]).update(y[30:], p[30:])

    y, p = _scores(48, 4, 3, 5)
    names = np.array(["ant", "bee", "cat", "dog"])[y]
    w = 0.5 + (np.arange(48) % 4) * 0.25
    w[::7] = 0.0
    out["weighted"] = MulticlassSketch(classes=["ant", "bee", "cat", "dog"], grid=ProbabilityGrid(8, -20, 4)).update(
        names, p, sample_weight=w
    )

    y, p = _scores(40, 3, 2, 7)
    out["no-pairs"] = MulticlassSketch(classes=[0, 1, 2], grid=LinearGrid(0.0, 1.0, 64), pair_grid=None).update(y, p)

    y, p = _scores(200, 20, 7, 3)
    out["coarse-pairs"] = MulticlassSketch(classes=range(20), grid=ProbabilityGrid(10, -20, 6)).update(y, p)

    i = np.arange(30)
    out["labels"] = MulticlassSketch().update((i * 3) % 5, y_pred=(i * 2) % 5)
    return out


def build_v2() -> dict[str, MulticlassSketch]:
    """The version-2 golden sketches (with bootstrap replicates) by name, rebuilt identically."""
    out: dict[str, MulticlassSketch] = {}
    y, p = _scores(50, 3, 4, 5)
    w = 1.0 + (np.arange(50) % 3) * 0.5
    w[::9] = 0.0
    ids = np.arange(50) * 17 + 2
    s = MulticlassSketch(classes=[0, 1, 2], grid=ProbabilityGrid(8, -20, 4), bootstrap=5, seed=11)
    out["bootstrap"] = s.update(y[:20], p[:20], sample_weight=w[:20], row_id=ids[:20]).update(
        y[20:], p[20:], sample_weight=w[20:], row_id=ids[20:]
    )
    i = np.arange(24)
    out["bootstrap-labels"] = MulticlassSketch(bootstrap=4, seed=2).update(
        (i * 3) % 4, y_pred=(i * 5) % 4, row_id=np.array([f"r{k}" for k in i])
    )
    return out


def path_for(name: str, version: int = VERSION) -> pathlib.Path:
    return HERE / f"multiclass-v{version}-{name}.sevsk"


def main() -> None:
    todo = [(name, sketch, VERSION) for name, sketch in build().items()]
    todo += [(name, sketch, 2) for name, sketch in build_v2().items()]
    for name, sketch, version in todo:
        path = path_for(name, version)
        if path.exists():
            print(f"keeping existing {path.name} (golden files never change)")
            continue
        path.write_bytes(sketch.to_bytes())  # type: ignore[attr-defined]
        print(f"wrote {path.name}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
