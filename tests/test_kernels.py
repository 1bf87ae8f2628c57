"""The compiled kernels against plain references: the probability sums, the bin indices."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streameval import ProbabilityGrid
from streameval.kernels.binary import LOG_LOSS_EPS, empty_state, probability_sums, update_state

EPS = LOG_LOSS_EPS


def reference_sums(scores, labels, weights=None):
    """``(n_outside, weight_01, brier_sum, log_loss_sum)`` with exactly rounded sums (math.fsum)."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels)
    w = np.ones_like(s) if weights is None else np.asarray(weights, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        inside = (s >= 0) & (s <= 1)
        outside = ((s < 0) | (s > 1)) & (w > 0)
    p = np.where(y != 0, s, 1.0 - s)[inside]
    wi = w[inside]
    brier = math.fsum((wi * (1.0 - p) ** 2).tolist())
    logloss = -math.fsum((wi * np.log(np.clip(p, EPS, 1 - EPS))).tolist())
    return int(outside.sum()), math.fsum(wi.tolist()), brier, logloss


def extreme_rows(n, seed):
    """Scores that stress the log-loss product: clipped at eps, next to 1, subnormal, NaN, outside."""
    rng = np.random.default_rng(seed)
    kinds = rng.integers(0, 7, n)
    s = rng.random(n)
    s[kinds == 0] = 0.0  # p_true = 0 or 1 for label 1 / 0: clipped to eps
    s[kinds == 1] = 1.0
    s[kinds == 2] = 10.0 ** rng.uniform(-320, -100, (kinds == 2).sum())  # tiny, some subnormal
    s[kinds == 3] = 1.0 - 10.0 ** rng.uniform(-16, -10, (kinds == 3).sum())
    s[kinds == 4] = np.nan
    s[kinds == 5] = rng.choice([-0.5, 1.5, np.inf, -np.inf], (kinds == 5).sum())
    y = rng.integers(0, 2, n).astype(np.int8)
    return s, y


@pytest.mark.parametrize("n", [1, 15, 16, 255, 256, 257, 4095, 4096, 4097, 70_001])
@pytest.mark.parametrize("weighted", [False, True])
def test_probability_sums_match_exact_sums(n, weighted):
    s, y = extreme_rows(n, seed=n)
    w = np.random.default_rng(n).random(n) * 3 if weighted else np.empty(0)
    w_ref = w if weighted else None
    ref = reference_sums(s, y, w_ref)
    state = empty_state(ProbabilityGrid().n_bins)
    n_nan, *kernel = update_state(state, *ProbabilityGrid().kernel_params(), s, y, w, weighted)
    assert n_nan == np.isnan(s).sum()
    for got in (kernel, list(probability_sums(s, y, w, weighted))):
        assert got[0] == ref[0]
        assert got[1] == pytest.approx(ref[1], rel=1e-13)
        assert got[2] == pytest.approx(ref[2], rel=1e-12, abs=1e-300)
        assert got[3] == pytest.approx(ref[3], rel=1e-13, abs=0)


def test_log_loss_product_does_not_underflow():
    # every row at the clip: the running products shrink by 2**-52 per row, the worst case
    n = 100_003
    s = np.zeros(n)
    y = np.ones(n, dtype=np.int8)
    _, _, _, logloss = probability_sums(s, y, np.empty(0), False)
    assert logloss == pytest.approx(-n * math.log(EPS), rel=1e-14)
    s = np.full(n, 1.0 - EPS)  # the other clip: products of numbers just below 1
    _, _, _, logloss = probability_sums(s, y, np.empty(0), False)
    assert logloss == pytest.approx(-n * math.log(1.0 - EPS), rel=1e-9)


@pytest.mark.parametrize("gap", [0.0, 1e-14, 1e-11, 1e-6, 0.3])
@pytest.mark.parametrize("weighted", [False, True])
def test_log_loss_of_confident_right_predictions_is_relatively_accurate(gap, weighted):
    # p_true just below 1: each row adds ~gap to the sum, so the sum is tiny and needs every digit
    n = 50_000
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, n).astype(np.int8)
    q = rng.random(n) * gap
    s = np.where(y == 1, 1.0 - q, q)
    w = np.ones(n) if weighted else np.empty(0)
    ref = reference_sums(s, y)
    _, _, _, got = probability_sums(s, y, w, weighted)
    assert got == pytest.approx(ref[3], rel=1e-13, abs=0)
    state = empty_state(ProbabilityGrid().n_bins)
    assert update_state(state, *ProbabilityGrid().kernel_params(), s, y, w, weighted)[4] == pytest.approx(ref[3], rel=1e-13, abs=0)


def test_float32_scores_sum_like_their_float64_values():
    rng = np.random.default_rng(3)
    s = rng.random(10_000).astype(np.float32)
    y = rng.integers(0, 2, 10_000).astype(np.int8)
    ref = reference_sums(s.astype(np.float64), y)
    got = probability_sums(s, y, np.empty(0), False)
    assert got[3] == pytest.approx(ref[3], rel=1e-13, abs=0)
    assert got[2] == pytest.approx(ref[2], rel=1e-13)


def brute_force_cells(grid, scores, labels, weights):
    """``{(bin, class): [weight, min, max, score_sum]}`` of the non-NaN, non-zero-weight rows, by
    a plain Python group-by (sums with math.fsum, so only the kernel's order can differ)."""
    keep = ~np.isnan(scores) & (weights > 0)
    bins = grid.bin_index(scores[keep])
    groups: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for b, c, s, w in zip(bins.tolist(), labels[keep].tolist(), scores[keep].tolist(), weights[keep].tolist(),
                          strict=True):
        groups.setdefault((b, c), []).append((s, w))
    return {k: [math.fsum(w for _, w in v), min(s for s, _ in v), max(s for s, _ in v), math.fsum(s * w for s, w in v)]
            for k, v in groups.items()}


@pytest.mark.parametrize("weighted", [False, True])
def test_zero_memory_dense_state_cells_match_a_group_by(weighted):
    from streameval.kernels.binary import compact, merge_dense, merge_into

    grid = ProbabilityGrid()
    rng = np.random.default_rng(11)
    n = 30_000
    # one-sided cells: all-negative and all-above-1 scores (a zero-initialised min or max would
    # show as 0), ties, NaN, and bins holding one class only
    s = np.concatenate([-rng.random(n // 6) * 5, 1 + rng.random(n // 6), rng.random(n - 2 * (n // 6))])
    s[rng.integers(0, n, 50)] = np.nan
    s[:200] = 0.25
    y = (rng.random(n) < 0.3).astype(np.int8)
    w = rng.random(n) * 2 if weighted else np.ones(n)
    w[rng.integers(0, n, 100)] = 0.0 if weighted else 1.0
    expected = brute_force_cells(grid, s, y, w)
    params = grid.kernel_params()
    # two states filled with different splits, then folded together, then through the compact form
    a, b = empty_state(grid.n_bins), empty_state(grid.n_bins)
    for lo, hi in ((0, 7), (7, 12_345), (12_345, 20_000)):
        update_state(a, *params, s[lo:hi], y[lo:hi], w[lo:hi] if weighted else np.empty(0), weighted)
    update_state(b, *params, s[20_000:], y[20_000:], w[20_000:] if weighted else np.empty(0), weighted)
    merge_dense(a, b)
    keys, values = compact(a)
    again = empty_state(grid.n_bins)
    merge_into(again, keys, values)
    for state_keys, state_values in ((keys, values), compact(again)):
        assert sorted({k for k, _ in expected}) == state_keys.tolist()
        for i, k in enumerate(state_keys.tolist()):
            for c in (0, 1):
                got = state_values[i, c]
                if (k, c) not in expected:
                    assert got.tolist() == [0.0, math.inf, -math.inf, 0.0]
                    continue
                wt, lo, hi, sm = expected[(k, c)]
                assert got[1] == lo and got[2] == hi  # min and max exactly
                assert got[0] == pytest.approx(wt, rel=1e-12) and got[3] == pytest.approx(sm, rel=1e-12, abs=1e-12)


def _resident_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def test_an_empty_state_holds_no_memory_until_written():
    # 4M bins x 64 B = 256 MB of zero memory: allocating it and writing one cell must not grow
    # the resident set by more than a few pages
    before = _resident_mb()
    state = empty_state(1 << 22)
    state[123, 1, 0] = 1.0
    grown = _resident_mb() - before
    assert state.nbytes == 256 << 20 and grown < 16, grown


def test_folding_into_an_empty_dense_cell_adds_to_zero():
    # as the old [0, +inf, -inf, 0] cells did: a -0.0 score sum lands as 0.0 + -0.0 = +0.0
    from streameval.kernels.binary import compact, empty_values, merge_into

    state = empty_state(4)
    values = empty_values(1)
    values[0, 0] = [1.0, -0.0, -0.0, -0.0]
    merge_into(state, np.array([2]), values)
    keys, got = compact(state)
    assert keys.tolist() == [2] and got[0, 0, 0] == 1.0 and not np.signbit(got[0, 0, 3])
    assert got[0, 1].tolist() == [0.0, math.inf, -math.inf, 0.0]
