# mypy: disable-error-code="call-arg,no-untyped-call,assignment,var-annotated"
# (Numba-compiled code: scalar types are Numba's)
"""Reading the counters of a batch of canonical binary sketch headers in one compiled call.

A roll-up folds thousands of shards whose headers differ only in their counters and ``n_bins``.
``sketch.fold_files`` reads such a header with one regular expression and converts its
counters in Python: about 5 us a file, a tenth of what is left in Python per shard.
:func:`scan_headers` recognises, for a whole batch at once, the headers that are the canonical
form with a known grid-and-meta text (``template``) and no ``weight_sq``, exactly where that
regular expression (``fold_files._HEADER``) matches them with ``template`` as its grid-and-meta
group. It reads their integer counters and ``n_bins`` and finds their three number tokens, which
the caller converts as the JSON parser does. Anything else is marked for the regular expression.

The grammar is the expression's: integers ``0|[1-9][0-9]{0,18}``; numbers that, plus an optional
fraction ``\\.[0-9]+`` and exponent ``[eE][-+]?[0-9]+``; ``true`` or ``false``. Each token is
followed by a literal that cannot continue it (a comma or a brace), so reading each token as far as
it goes decides a match exactly as the expression's backtracking does.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .cache import ENABLED as CACHE

__all__ = ["scan_headers", "gather_tokens", "LITERALS", "LIT_ENDS", "INTS", "NUMS"]

# The header between its tokens, in order (``fold_files._HEADER``): after each literal comes one
# token: NUM, NUM, INT x 4, NUM, BOOL; then ``},`` + template + ``,"n_bins":`` INT + the tail.
_PARTS = (
    b'{"counters":{"brier_sum":', b',"log_loss_sum":', b',"n_nan":', b',"n_outside":', b',"n_rows":',
    b',"n_zero_weight":', b',"prob_weight":', b',"weighted":', b"},", b',"n_bins":', b',"sketch":"binary"}',
)
LITERALS = np.frombuffer(b"".join(_PARTS), dtype=np.uint8)
LIT_ENDS = np.cumsum([0] + [len(p) for p in _PARTS]).astype(np.int64)
"""Where each part of :data:`LITERALS` starts and ends: part ``t`` is ``LITERALS[LIT_ENDS[t]:LIT_ENDS[t + 1]]``."""
INTS = ("n_nan", "n_outside", "n_rows", "n_zero_weight", "n_bins")
"""The columns of ``ints`` :func:`scan_headers` fills."""
NUMS = ("brier_sum", "log_loss_sum", "prob_weight")
"""The number tokens whose spans it gives, in this order."""
_MAX_INT = np.uint64((1 << 63) - 1)
_TRUE = np.frombuffer(b"true", dtype=np.uint8)
_FALSE = np.frombuffer(b"false", dtype=np.uint8)


@nb.njit(inline="always", nogil=True)
def _lit(buf, p, end, lit, a, b):  # type: ignore[no-untyped-def]
    """Where ``lit[a:b]`` ends if it starts at ``buf[p]`` (before ``end``), else -1."""
    if p < 0 or p + (b - a) > end:
        return np.int64(-1)
    for i in range(b - a):
        if buf[p + i] != lit[a + i]:
            return np.int64(-1)
    return p + (b - a)


@nb.njit(inline="always", nogil=True)
def _digits(buf, p, end, most):  # type: ignore[no-untyped-def]
    """Where a run of at most ``most`` ASCII digits from ``p`` ends, and its value (uint64)."""
    v = np.uint64(0)
    q = p
    while q < end and q - p < most and buf[q] >= 48 and buf[q] <= 57:
        v = v * np.uint64(10) + np.uint64(buf[q] - 48)
        q += 1
    return q, v


@nb.njit(inline="always", nogil=True)
def _int(buf, p, end):  # type: ignore[no-untyped-def]
    """``0|[1-9][0-9]{0,18}`` at ``p``: where it ends (-1: none) and its value."""
    if p < 0 or p >= end or buf[p] < 48 or buf[p] > 57:
        return np.int64(-1), np.uint64(0)
    if buf[p] == 48:
        return p + 1, np.uint64(0)
    return _digits(buf, p, end, 19)


@nb.njit(inline="always", nogil=True)
def _num(buf, p, end):  # type: ignore[no-untyped-def]
    """An unsigned JSON number (``fold_files._NUM``) at ``p``: where it ends, -1: none."""
    q, _ = _int(buf, p, end)
    if q < 0:
        return q
    if q < end and buf[q] == 46:  # '.', then at least one digit
        r = q + 1
        while r < end and buf[r] >= 48 and buf[r] <= 57:
            r += 1
        if r > q + 1:
            q = r
    if q < end and (buf[q] == 101 or buf[q] == 69):  # 'e' or 'E', an optional sign, digits
        r = q + 1
        if r < end and (buf[r] == 43 or buf[r] == 45):
            r += 1
        s = r
        while r < end and buf[r] >= 48 and buf[r] <= 57:
            r += 1
        if r > s:
            q = r
    return q


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def scan_headers(buf, starts, ends, lits, lit_ends, template, ints, spans, weighted, ok):  # type: ignore[no-untyped-def]
    """Read the canonical headers ``buf[starts[j]:ends[j]]`` (uint8) whose grid-and-meta text is
    ``template``.

    Parameters
    ----------
    buf : uint8 array
    starts, ends : int64 arrays (n,)
        Each header's bytes (the JSON text between a file's 16-byte prefix and its payload).
    lits, lit_ends : arrays
        :data:`LITERALS` and :data:`LIT_ENDS`.
    template : uint8 array
        The grid-and-meta text (``"grid":...,"meta":...``) a header must hold.
    ints : int64 array (n, 5)
        Receives the integer counters and ``n_bins`` (:data:`INTS`).
    spans : int64 array (n, 3, 2)
        Receives where the number tokens of :data:`NUMS` start and end in ``buf``.
    weighted : bool array (n,)
    ok : bool array (n,)
        True where header ``j`` is recognised and its integers are at most ``2**63 - 1``; the
        other outputs of a header are meaningful only there.
    """
    for j in range(starts.shape[0]):
        ok[j] = False
        end = ends[j]
        p = _lit(buf, starts[j], end, lits, lit_ends[0], lit_ends[1])
        good = p >= 0
        n_int = 0
        n_num = 0
        for t in range(8):  # the token after literal t, then literal t + 1
            if not good:
                break
            if t == 0 or t == 1 or t == 6:
                q = _num(buf, p, end)
                spans[j, n_num, 0], spans[j, n_num, 1] = p, q
                n_num += 1
            elif t == 7:
                q = _lit(buf, p, end, _TRUE, 0, 4)
                weighted[j] = q >= 0
                if q < 0:
                    q = _lit(buf, p, end, _FALSE, 0, 5)
            else:
                q, v = _int(buf, p, end)
                good = v <= _MAX_INT
                ints[j, n_int] = np.int64(v) if good else 0
                n_int += 1
            p = _lit(buf, q, end, lits, lit_ends[t + 1], lit_ends[t + 2])
            good = good and p >= 0
        if not good:
            continue
        p = _lit(buf, p, end, template, 0, template.shape[0])
        p = _lit(buf, p, end, lits, lit_ends[9], lit_ends[10])
        if p < 0:
            continue
        q, v = _int(buf, p, end)
        p = _lit(buf, q, end, lits, lit_ends[10], lit_ends[11])
        if p == end and v <= _MAX_INT:
            ints[j, 4] = np.int64(v)
            ok[j] = True



@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def gather_tokens(buf, spans, out):  # type: ignore[no-untyped-def]
    """Copy the tokens ``buf[spans[j, t, 0]:spans[j, t, 1]]`` (int64 spans (n, 3, 2)) into ``out``
    (uint8), in order, each followed by a space: the bytes written, or -1 when ``out`` is too short."""
    p = 0
    for j in range(spans.shape[0]):
        for t in range(spans.shape[1]):
            a, b = spans[j, t, 0], spans[j, t, 1]
            if p + (b - a) + 1 > out.shape[0]:
                return -1
            for i in range(a, b):
                out[p] = buf[i]
                p += 1
            out[p] = 32
            p += 1
    return p
