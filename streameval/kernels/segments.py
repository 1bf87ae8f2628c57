"""Sums over consecutive segments of an array, in plain NumPy, with the compiled kernels' order of additions.

A report's read path (merge the store on read, build the table of every group) needs three
reductions over segments: running sums restarted per segment, ``np.sum`` of each segment, and the
left-to-right sum of the cells that merge into one. :mod:`.grouped` has them compiled, but the
first call of any compiled kernel in a process costs Numba's initialisation (~0.8-1.0 s of CPU on
the 2-core reference machine, more than all the arithmetic of a 90-day x 1,000-slice report).
Here the same additions run as vectorized NumPy over all segments at once, in the same order, so
every result equals the compiled one bit for bit (tests compare them on random data):

- :func:`segment_cumsum`: ``acc = 0.0; acc += x[i]`` per segment (as ``np.cumsum``, but for the
  sign of a leading ``-0.0``), by ``np.add.accumulate`` along the rows of a matrix holding the
  segments of one length class (powers of two), padded after their ends;
- :func:`segment_sum`: NumPy's pairwise summation (``pairwise_sum`` in its float loops: eight
  accumulators for 8-128 values, halves above), one level of the recursion at a time for all
  segments together;
- :func:`run_sum`: a run's values added left to right starting from its first value (how
  :func:`.grouped.sort_reduce` combines cells with equal codes), one position at a time for all
  runs of up to 256 values.

When every partial sum is exact whatever the order (whole numbers or quarters whose absolute
values add up to less than 2**50: unweighted counts, the AUC's pair counts), the first two take
differences of one running sum instead, which gives the same bits. The cost is O(total length)
NumPy work plus O(log(longest segment)) Python steps (O(min(longest run, 256)) for :func:`run_sum`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["segment_cumsum", "segment_sum", "run_sum"]

_STEPPED = 256
"""Runs up to this long are summed one position at a time for all runs together."""

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def _length_classes(lengths: IntArray) -> list[tuple[IntArray, int]]:
    """Segments grouped by ``ceil(log2(length))``: ``[(segment indices, padded width)]``, empty
    segments left out; each class's matrix is at most twice its segments' total length."""
    nonempty = np.flatnonzero(lengths > 0)
    if nonempty.shape[0] == 0:
        return []
    width_class = np.ceil(np.log2(lengths[nonempty].astype(np.float64))).astype(np.int64)
    order = np.argsort(width_class, kind="stable")
    classes = width_class[order]
    cuts = np.flatnonzero(np.diff(classes)) + 1
    return [(nonempty[part], 1 << int(classes[i])) for part, i in zip(np.split(order, cuts), np.r_[0, cuts], strict=True)]


def _flat_index(starts: IntArray, lengths: IntArray, width: int) -> tuple[IntArray, npt.NDArray[np.bool_]]:
    """Row-major positions of segments laid out as rows of width ``width`` (past a segment's end:
    its last position, a harmless repeat) and the mask of positions inside the segments."""
    col = np.arange(width, dtype=np.int64)
    inside = col[None, :] < lengths[:, None]
    index = starts[:, None] + np.minimum(col[None, :], lengths[:, None] - 1)
    return index, inside


def _exact_in_any_order(x: FloatArray) -> bool:
    """Whether every partial sum of ``x``, in any order, is exact: quarters (whole numbers of
    1/4) whose absolute values add up to less than 2**50, so that any order of additions gives
    the same bits (weights of unweighted rows, and the pair counts of the AUC)."""
    q = x * 4.0
    return bool(np.all(q == np.rint(q))) and float(np.sum(np.abs(q))) < 2.0**52


def segment_cumsum(x: FloatArray, starts: IntArray) -> FloatArray:
    """Running sums restarted at each segment ``[starts[g], starts[g + 1])``.

    Parameters
    ----------
    x : ndarray of float64, shape (n,)
    starts : ndarray of int64, shape (n_segments + 1,)
        Non-decreasing segment boundaries, ``starts[0] == 0`` and ``starts[-1] == n``.

    Returns
    -------
    ndarray of float64, shape (n,)
        ``out[i]`` is the sum of its segment's values up to ``i``, added left to right from
        ``0.0`` (equal bit for bit to :func:`streameval.kernels.grouped.segment_cumsum`).

    Notes
    -----
    Whole-number weights (unweighted rows) take a shortcut: one running sum over all segments,
    minus each segment's offset, exact because every partial sum is.
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    starts = np.asarray(starts, dtype=np.int64)
    if x.shape[0] == 0:
        return x.copy()
    lengths = starts[1:] - starts[:-1]
    if _exact_in_any_order(x):
        total = np.cumsum(x)
        before = np.concatenate([[0.0], total])[starts[:-1]]
        out: FloatArray = total - np.repeat(before, lengths)
        return out + 0.0  # no -0.0: the compiled sums start from +0.0
    out = np.empty_like(x)
    for seg, width in _length_classes(lengths):
        index, inside = _flat_index(starts[seg], lengths[seg], width)
        values = x[index]
        values[:, 0] += 0.0  # acc = 0.0; acc += x[first]: a leading -0.0 becomes +0.0
        acc = np.add.accumulate(values, axis=1)
        out[index[inside]] = acc[inside]
    return out


def _pairwise(x: FloatArray, a: IntArray, n: IntArray) -> FloatArray:
    """NumPy's pairwise sum of each ``x[a[i]:a[i] + n[i]]``, for all segments together."""
    out = np.zeros(a.shape[0])
    last = x.shape[0] - 1
    small = np.flatnonzero(n < 8)
    if small.shape[0]:  # res = 0.0; res += x[i]
        a_s, n_s = a[small], n[small]
        res = np.zeros(small.shape[0])
        for j in range(int(n_s.max())):
            res = np.where(j < n_s, res + x[np.minimum(a_s + j, last)], res)
        out[small] = res
    mid = np.flatnonzero((n >= 8) & (n <= 128))
    if mid.shape[0]:
        am, nm = a[mid], n[mid]
        blocks = nm // 8
        res = np.empty(mid.shape[0])
        for nb in np.unique(blocks).tolist():  # r[j] = x[a + j]; r[j] += x[a + i + j] for each full block
            sel = np.flatnonzero(blocks == nb)
            m = x[am[sel, None] + np.arange(8 * nb, dtype=np.int64)[None, :]].reshape(sel.shape[0], nb, 8)
            r = m[:, 0, :].copy()
            for b in range(1, nb):
                r += m[:, b, :]
            res[sel] = ((r[:, 0] + r[:, 1]) + (r[:, 2] + r[:, 3])) + ((r[:, 4] + r[:, 5]) + (r[:, 6] + r[:, 7]))
        rest = nm % 8
        for j in range(int(rest.max())):  # then the n % 8 values left, one at a time
            sel = np.flatnonzero(rest > j)
            res[sel] += x[am[sel] + 8 * blocks[sel] + j]
        out[mid] = res
    big = np.flatnonzero(n > 128)
    if big.shape[0]:  # the two halves, the first a multiple of 8 long
        ab, nb_ = a[big], n[big]
        half = nb_ // 2
        half -= half % 8
        both = _pairwise(x, np.concatenate([ab, ab + half]), np.concatenate([half, nb_ - half]))
        out[big] = both[: big.shape[0]] + both[big.shape[0]:]
    return out


def segment_sum(x: FloatArray, starts: IntArray) -> FloatArray:
    """``np.sum`` of each segment ``x[starts[g]:starts[g + 1]]`` in NumPy's order of additions.

    Parameters
    ----------
    x : ndarray of float64, shape (n,)
    starts : ndarray of int64, shape (n_segments + 1,)
        Non-decreasing segment boundaries.

    Returns
    -------
    ndarray of float64, shape (n_segments,)
        Each segment's pairwise sum (0 for an empty one), equal bit for bit to
        :func:`streameval.kernels.grouped.segment_sum`.
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    starts = np.asarray(starts, dtype=np.int64)
    if x.shape[0] == 0:
        return np.zeros(starts.shape[0] - 1)
    if _exact_in_any_order(x):  # any order of additions gives these bits: differences of one running sum
        total = np.concatenate([[0.0], np.cumsum(x)])
        out: FloatArray = (total[starts[1:]] - total[starts[:-1]]) + 0.0
        # the one sign the order keeps: eight or more -0.0 and nothing else sum to -0.0 pairwise
        negative_zeros = np.concatenate([[0], np.cumsum((x == 0.0) & np.signbit(x))])
        n = starts[1:] - starts[:-1]
        out[(n >= 8) & (negative_zeros[starts[1:]] - negative_zeros[starts[:-1]] == n)] = -0.0
        return out
    return _pairwise(x, starts[:-1], starts[1:] - starts[:-1])


def run_sum(x: FloatArray, starts: IntArray) -> FloatArray:
    """Each run ``x[starts[g]:starts[g + 1]]`` (non-empty) added left to right from its first value.

    Parameters
    ----------
    x : ndarray of float64, shape (n,) or (n, m)
        Values; with ``m`` columns, each column is summed on its own.
    starts : ndarray of int64, shape (n_runs + 1,)
        Strictly increasing run boundaries, ``starts[-1] == n``.

    Returns
    -------
    ndarray of float64, shape (n_runs,) or (n_runs, m)
        ``x[a] + x[a + 1] + ...`` in that order (as :func:`streameval.kernels.grouped.sort_reduce`
        combines the cells of one code).

    Notes
    -----
    Runs of up to 256 values are added one position at a time for all of them (runs ordered
    by length, so the runs still going are a prefix): O(longest run) NumPy steps. Longer runs
    go through :func:`numpy.add.accumulate` along the rows of a padded matrix per length class.
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    starts = np.asarray(starts, dtype=np.int64)
    lengths = starts[1:] - starts[:-1]
    out = x[starts[:-1]].copy()
    if out.shape[0] == 0:
        return out
    stepped = np.flatnonzero((lengths > 1) & (lengths <= _STEPPED))
    if stepped.shape[0]:
        by_length = stepped[np.argsort(-lengths[stepped], kind="stable")]
        still = -lengths[by_length]  # ascending: runs longer than k are the first searchsorted(still, -k)
        first = starts[by_length]
        for k in range(1, int(-still[0])):
            c = int(np.searchsorted(still, -k, side="left"))
            out[by_length[:c]] += x[first[:c] + k]
    for seg, width in _length_classes(np.where(lengths > _STEPPED, lengths, 0)):
        index, _ = _flat_index(starts[seg], lengths[seg], width)
        acc = np.add.accumulate(x[index], axis=1)  # past a run's end: repeats, never read
        out[seg] = acc[np.arange(seg.shape[0]), lengths[seg] - 1]
    return out
