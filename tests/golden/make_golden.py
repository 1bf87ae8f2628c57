"""Build the golden sketch files of format versions 1 to 4 (run once; never regenerate old versions).

    python tests/golden/make_golden.py

Each golden sketch is built from small deterministic data computed with plain arithmetic (no
random generator, whose streams may change between NumPy versions), so ``tests/test_io.py`` can
rebuild the same sketch and compare. Once written and committed, a ``binary-v<N>-*.sevsk`` file
must never change: it pins what every future streameval must still read. A new format version
gets new files next to these ones (bump ``VERSION`` and the file prefix), not replacements.
"""

from __future__ import annotations

import pathlib

import numpy as np

from streameval import BinarySketch, FloatGrid, LinearGrid, ProbabilityGrid

VERSION = 1
HERE = pathlib.Path(__file__).resolve().parent


def _data(n: int, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(n, dtype=np.int64)
    y = ((i * a + 3) % 7 < 3).astype(np.int8)  # about 3/7 positives, interleaved
    u = ((i * b + 11) % 101) / 100.0  # 0.00 .. 1.00 in a fixed shuffled order
    return y, u


def build() -> dict[str, BinarySketch]:
    """The golden sketches by name, rebuilt identically on every call."""
    out: dict[str, BinarySketch] = {}

    y, u = _data(60, 5, 37)
    s = np.round(300.0 + 550.0 * u) + 2.0 * y  # integer credit-style scores, a few outside range
    s[:2] = [250.0, 900.0]
    out["linear"] = BinarySketch(LinearGrid(300, 851, 551)).update(y, s)

    y, u = _data(80, 3, 41)
    p = u * u * (1 - 0.25 * (1 - y))  # probabilities piled near 0, with exact 0 and 1
    out["probability"] = BinarySketch(ProbabilityGrid(mantissa_bits=6, min_exponent=-20, tail_bits=None)).update(y, p)

    y, u = _data(70, 4, 29)
    z = (u - 0.5) * 40.0 + 3.0 * y  # logits, both signs, with 0 and a few infinities
    z[:3] = [0.0, -np.inf, np.inf]
    out["float"] = BinarySketch(FloatGrid(mantissa_bits=4, min_exponent=-8, max_exponent=8)).update(y, z)

    y, u = _data(90, 2, 13)
    p = u.copy()
    p[::9] = np.nan  # skipped and counted
    w = 0.25 + (np.arange(90) % 5) * 0.5
    w[::11] = 0.0  # counted as zero-weight, not binned
    sk = BinarySketch(ProbabilityGrid(mantissa_bits=8, min_exponent=-16, tail_bits=None))
    sk.update(y[:45], p[:45], w[:45], nan_policy="skip")
    sk.update(y[45:], p[45:], w[45:], nan_policy="skip")
    out["weighted-nan"] = sk
    return out


def build_v2() -> dict[str, BinarySketch]:
    """The golden sketches of format version 2: bootstrap replicates."""
    out: dict[str, BinarySketch] = {}
    y, u = _data(64, 3, 23)
    ids = np.arange(64, dtype=np.int64) * 37 + 5
    sk = BinarySketch(ProbabilityGrid(mantissa_bits=5, min_exponent=-12), bootstrap=6, seed=2026)
    sk.update(y[:40], u[:40] * 0.9 + 0.05 * y[:40], row_id=ids[:40])
    sk.update(y[40:], u[40:] * 0.9 + 0.05 * y[40:], row_id=ids[40:])
    out["bootstrap"] = sk
    return out


def build_v1_kish() -> dict[str, BinarySketch]:
    """A version-1 golden sketch written after version 1 was released: the header key ``weight_sq``
    (Kish's squared weights), which older readers ignore."""
    y, u = _data(50, 6, 19)
    w = 0.5 + (np.arange(50) % 4) * 0.75
    return {"weighted-kish": BinarySketch(LinearGrid(0, 1, 40)).update(y, u, w)}


def build_v3() -> dict[str, tuple[BinarySketch, bool]]:
    """The golden sketches of format version 3 (compact bins) and whether each is zlib-compressed.

    Between them they use every nibble the writer picks: integer and float weights, single-score
    cells whose sum is ``weight x score`` and ones whose sum is not (ten rows of 0.1 add up to
    0.9999999999999999, not 1.0), float32 and float64 scores, ``-0.0``, and infinite scores read
    from the version-1 "float" file.
    """
    out: dict[str, tuple[BinarySketch, bool]] = {}
    y, u = _data(120, 5, 37)
    s32 = (u * 0.98 + 0.01).astype(np.float32)  # float32 scores, many bins shared
    s64 = u / 3.0 + 1e-9 * np.arange(120)  # float64 scores, one row per bin mostly
    sk = BinarySketch(ProbabilityGrid(mantissa_bits=6, min_exponent=-20))
    sk.update(y, s32)
    sk.update(y[:60], s64[:60])
    sk.update(np.ones(10, dtype=np.int8), np.full(10, 0.1))
    sk.update(np.array([0, 0, 1]), np.array([-0.0, 0.0, -0.0]))
    out["mixed"] = (sk, False)
    out["mixed-zlib"] = (sk, True)
    w = 0.25 + (np.arange(120) % 5) * 0.5  # fractional and whole weights
    w[7] = 2.0**60  # whole, beyond 2**53: written as a float
    weighted = BinarySketch(LinearGrid(0, 1, 2000)).update(y, s64, w)  # mostly one row per bin
    weighted.update(y[:40], s32[:40], w[:40])
    out["weighted"] = (weighted.merge(BinarySketch(LinearGrid(0, 1, 500)).update(y, s64, w)), False)  # and many
    from streameval import load

    out["float-inf"] = (load(path_for("float", 1)), False)
    return out


def path_for(name: str, version: int = VERSION) -> pathlib.Path:
    return HERE / f"binary-v{version}-{name}.sevsk"


def main() -> None:
    v1 = ("linear", "probability", "float", "weighted-nan")
    # (version 1 is complete; rebuilding it needs the pre-finite-score acceptance, see test_io.py)
    for name, sketch in ({} if all(path_for(n).exists() for n in v1) else build()).items():
        path = path_for(name)
        if path.exists():
            print(f"keeping existing {path.name} (golden files never change)")
            continue
        path.write_bytes(sketch.to_bytes(format_version=1))
        print(f"wrote {path.name}: {path.stat().st_size} bytes")
    for version, built in ((2, build_v2()), (1, build_v1_kish())):
        for name, sketch in built.items():
            path = path_for(name, version)
            if path.exists():
                print(f"keeping existing {path.name} (golden files never change)")
                continue
            path.write_bytes(sketch.to_bytes() if version == 2 else sketch.to_bytes(format_version=1))
            print(f"wrote {path.name}: {path.stat().st_size} bytes")
    for name, (sketch, compress) in build_v3().items():
        path = path_for(name, 3)
        if path.exists():
            print(f"keeping existing {path.name} (golden files never change)")
            continue
        path.write_bytes(sketch.to_bytes(compress=compress))
        print(f"wrote {path.name}: {path.stat().st_size} bytes")
    for name, (sketch, compress) in build_v3().items():  # version 4: the same sketches, columnar
        path = path_for(name, 4)
        if path.exists():
            print(f"keeping existing {path.name} (golden files never change)")
            continue
        path.write_bytes(sketch.to_bytes(compress=compress, format_version=4))
        print(f"wrote {path.name}: {path.stat().st_size} bytes")

if __name__ == "__main__":
    main()
