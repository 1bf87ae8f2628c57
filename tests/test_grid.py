"""Grids: monotone, total, equal to the kernel's scalar twin, comparable and serializable."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streameval.grid import CutGrid, FloatGrid, LinearGrid, ProbabilityGrid, grid_from_spec, parse_grid
from streameval.kernels import binary as kernels

GRIDS = [
    ProbabilityGrid(),
    ProbabilityGrid(mantissa_bits=3, min_exponent=-5),
    ProbabilityGrid(mantissa_bits=0, min_exponent=-2),
    ProbabilityGrid(tail_bits=None),
    ProbabilityGrid(mantissa_bits=3, min_exponent=-5, tail_bits=0),
    LinearGrid(0.0, 1.0, 200),
    LinearGrid(300, 851, 551),
    LinearGrid(-3.5, 7.25, 1000),
    FloatGrid(),
    FloatGrid(mantissa_bits=2, min_exponent=-3, max_exponent=4),
    ProbabilityGrid().with_cuts(0.3, 0.8),
    LinearGrid(0, 1, 3).with_cuts(0.1, 0.1 + 1e-12, 0.5, -7.0, 2.0),
]

SPECIAL = np.array(
    [-np.inf, -1e308, -2.0, -1.0, -0.0, 0.0, 5e-324, 1e-300, 1e-12, 1e-4, 0.1, 0.25, 0.4999999999999999,
     0.5, 0.5000000000000001, 0.75, 0.9999, 1 - 2**-53, 1.0, 1.0000000000000002, 2.0, 299.5, 300, 850,
     851, 851.0000001, 1e300, np.inf]
)


def kernel_bins(grid, scores):
    out = np.empty(scores.shape[0], dtype=np.int64)
    kernels.bin_indices(*grid.kernel_params(), np.ascontiguousarray(scores, dtype=np.float64), out)
    return out


def sample_scores(rng, n=20000):
    return np.concatenate([
        SPECIAL,
        rng.random(n),
        rng.normal(0, 10, n),
        np.exp(rng.uniform(-700, 700, n)) * rng.choice([-1, 1], n),
        rng.integers(250, 900, n).astype(float),
        1 - rng.random(n) * 1e-9,
    ])


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: g.describe())
def test_bins_are_in_range_monotone_and_match_kernel(grid):
    s = np.sort(sample_scores(np.random.default_rng(1)))
    b = grid.bin_index(s)
    assert b.dtype == np.int64
    assert b.min() >= 0 and b.max() < grid.n_bins
    assert np.all(np.diff(b) >= 0), "bin index must be non-decreasing in the score"
    np.testing.assert_array_equal(kernel_bins(grid, s), b)
    # float32 inputs are widened exactly, so they bin like their float64 value
    s32 = s[np.isfinite(s) & (np.abs(s) < 3e38)].astype(np.float32)
    np.testing.assert_array_equal(grid.bin_index(s32), grid.bin_index(s32.astype(np.float64)))


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: g.describe())
def test_end_bins_and_full_range(grid):
    b = grid.bin_index(np.array([-np.inf, np.inf]))
    assert b[0] == 0 and b[1] == grid.n_bins - 1
    # every bin is reachable (spot check: all bins of the small grids)
    if grid.n_bins <= 2000 and isinstance(grid, (ProbabilityGrid, FloatGrid)) and not isinstance(grid, CutGrid):
        s = np.sort(sample_scores(np.random.default_rng(2), 200000))
        assert np.unique(grid.bin_index(s)).size == grid.n_bins


@given(st.lists(st.floats(allow_nan=False), min_size=2, max_size=50))
@settings(max_examples=300, deadline=None)
def test_monotone_property(values):
    s = np.sort(np.array(values, dtype=np.float64))
    for grid in GRIDS:
        b = grid.bin_index(s)
        assert np.all(np.diff(b) >= 0)
        np.testing.assert_array_equal(kernel_bins(grid, s), b)


def test_probability_grid_relative_precision():
    g = ProbabilityGrid(mantissa_bits=12)
    for q in [1e-8, 1e-4, 0.01, 0.3]:
        # values differing by more than 2**-12 relative land in different bins, at both ends
        a, b = q, q * (1 + 2 ** -11)
        assert g.bin_index([a])[0] != g.bin_index([b])[0]
        assert g.bin_index([1 - a])[0] != g.bin_index([1 - b])[0]
    # 4-decimal discrete probabilities are all separated
    s = np.round(np.linspace(0, 1, 10001), 4)
    assert np.unique(g.bin_index(s)).size == np.unique(s).size


def test_linear_grid_integer_scores_get_their_own_bins():
    g = LinearGrid(300, 851, 551)
    s = np.arange(300, 851, dtype=float)
    assert np.unique(g.bin_index(s)).size == s.size


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: g.describe())
def test_spec_round_trip_and_equality(grid):
    again = grid_from_spec(grid.spec())
    assert again == grid and hash(again) == hash(grid)
    assert again.n_bins == grid.n_bins


def test_inequality_and_bad_params():
    assert ProbabilityGrid(12) != ProbabilityGrid(11)
    assert LinearGrid(0, 1, 10) != LinearGrid(0, 1, 11)
    assert LinearGrid(0, 1, 10) != ProbabilityGrid()
    for bad in [lambda: LinearGrid(1, 0, 10), lambda: LinearGrid(0, np.inf, 10), lambda: LinearGrid(0, 1, 0),
                lambda: ProbabilityGrid(21), lambda: ProbabilityGrid(12, -1), lambda: FloatGrid(10, 5, 5)]:
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(ValueError, match="unknown grid kind"):
        grid_from_spec({"kind": "nope"})
    with pytest.raises(ValueError):
        grid_from_spec({"kind": "linear", "lo": 0})


def test_parse_grid():
    assert parse_grid("probability") == ProbabilityGrid()
    assert parse_grid("probability:14") == ProbabilityGrid(14)
    assert parse_grid("linear:300:851:551") == LinearGrid(300, 851, 551)
    assert parse_grid("float:8") == FloatGrid(8)
    assert parse_grid("probability@0.8,0.3") == CutGrid(ProbabilityGrid(), (0.3, 0.8))
    assert parse_grid("linear:0:1:10@0.35") == LinearGrid(0, 1, 10).with_cuts(0.35)
    with pytest.raises(ValueError, match="cuts"):
        parse_grid("probability@x")
    with pytest.raises(ValueError, match="expected"):
        parse_grid("log:3")


def test_cut_grid_puts_each_cut_on_a_bin_edge():
    g = ProbabilityGrid(4, -6).with_cuts(0.3, 0.77)
    assert g.n_bins == ProbabilityGrid(4, -6).n_bins + 2
    for c in g.cuts:
        below, at = g.bin_index([np.nextafter(c, -1), c])
        assert at == below + 1
    with pytest.raises(ValueError):
        CutGrid(ProbabilityGrid(), ())
    with pytest.raises(ValueError):
        CutGrid(g, (0.5,))
    with pytest.raises(ValueError):
        ProbabilityGrid().with_cuts(np.nan)
    assert "cuts at 0.3, 0.77" in g.describe()


# -- the default grid's tails: any real score, not just probabilities (issue: logits on the default
# grid used to collapse into one end bin and give "AUC 0.5 [0, 1]") --------------------------------


def test_probability_grid_tails_keep_relative_precision_outside_0_1():
    g = ProbabilityGrid()
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(1.0001, 2**31, 5000), -rng.uniform(2**-29, 2**31, 5000)])
    b = g.bin_index(x)
    # two scores in the same tail bin differ by at most 2**-tail_bits relative to their magnitude
    order = np.argsort(b, kind="stable")
    same = b[order][1:] == b[order][:-1]
    a, c = np.abs(x[order][1:][same]), np.abs(x[order][:-1][same])
    assert np.all(np.abs(a - c) <= 2.0**-g.tail_bits * np.maximum(a, c))
    # integers below 2**(tail_bits + 1) each get a bin of their own, on both sides
    ints = np.arange(-2047, 2048, dtype=np.float64)
    ints = ints[(ints < 0) | (ints > 1)]
    assert np.unique(g.bin_index(ints)).size == ints.size


@pytest.mark.parametrize("fine,coarse", [
    (ProbabilityGrid(), ProbabilityGrid(10, -30, 8)),
    (ProbabilityGrid(), ProbabilityGrid(tail_bits=None)),
    (ProbabilityGrid(), ProbabilityGrid(9, tail_bits=None)),
    (ProbabilityGrid(5, -8, 4), ProbabilityGrid(5, -8, 0)),
])
def test_tailed_grids_coarsen_exactly(fine, coarse):
    from streameval.grid import coarsening_map

    s = sample_scores(np.random.default_rng(4), 5000)
    to_coarse = coarsening_map(fine, coarse)
    assert to_coarse is not None
    np.testing.assert_array_equal(to_coarse(fine.bin_index(s)), coarse.bin_index(s))
    assert coarsening_map(coarse, fine) is None  # the other way would split bins


def test_old_probability_spec_reads_as_the_grid_without_tails():
    old = {"kind": "probability", "mantissa_bits": 12, "min_exponent": -30}
    assert grid_from_spec(old) == ProbabilityGrid(tail_bits=None)
    assert ProbabilityGrid(tail_bits=None).spec() == old  # written exactly as before
    assert grid_from_spec(ProbabilityGrid().spec()) == ProbabilityGrid()


@pytest.mark.parametrize("kind", ["logits", "credit", "percent", "margins"])
def test_default_grid_serves_any_real_score(kind):
    """On the default grid, non-probability scores give a narrow interval (exact on integers)."""
    from sklearn.metrics import roc_auc_score

    from streameval import BinarySketch

    rng = np.random.default_rng(5)
    n = 200_000
    y = rng.random(n) < 0.2
    s = {
        "logits": rng.normal(0, 3, n) + 1.5 * y,
        "credit": np.clip(np.round(rng.normal(600, 80, n) + 40 * y), 300, 850),
        "percent": np.round(100 / (1 + np.exp(-(rng.normal(0, 1, n) + y))), 2),
        "margins": rng.normal(0, 1, n) * 0.05 + 0.03 * y - 0.02,
    }[kind]
    auc = BinarySketch().update(y, s).roc_auc()
    assert auc.width <= 1e-3
    expected = roc_auc_score(y, s)
    assert auc.lower - 1e-12 <= expected <= auc.upper + 1e-12
    if kind == "credit":
        assert auc.exact and auc.value == pytest.approx(expected, abs=1e-12)
