"""Group ids of rows from their key columns: the key encoding of a SketchSet.

Each key column is dictionary-encoded by Arrow (or arrives dictionary-encoded, as window starts
do; integer columns of a small range are indexed by value instead); the chunk's dictionary values
get per-column value ids once per distinct value, the rows' value ids are combined into one code
per row (mixed radix, one compiled pass per column through each column's small table of ids, so
no per-column id array is made), and only the distinct combinations of the chunk are looked up:
known ones by binary search in a sorted table of packed codes, new ones in Python, once each. A
chunk costs O(rows) compiled or NumPy work plus O(new keys) Python.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from ..errors import InputError, InputTypeError
from ..inputs import plain_value as _plain
from ..kernels.grouped import add_lookup, add_scaled, first_rows, first_rows_from, min_max

__all__ = ["KeyEncoder"]

Key = tuple[Any, ...]
FUSED = True
"""Combine the key columns' ids into codes in one compiled pass per column, without an id array
per column (100M rows in 30,000 groups: ~18 -> ~11 ms per 1M-row chunk); False takes the ids
apart first (the path of codes too wide to combine, which renumbers them)."""


class KeyEncoder:
    """Turns chunks of key columns into group indices, stable across chunks.

    Parameters
    ----------
    key_names : sequence of str
        The key's parts, in order.
    new_group : callable
        ``new_group(key) -> int``: the group index of a key tuple, creating the group if needed
        (it may raise, e.g. past a cap on the number of groups).
    new_groups : callable, optional
        ``new_groups(keys) -> int64 array``: the same for a list of distinct keys at once (a
        chunk's new keys; thousands of them when a log starts).
    """

    def __init__(self, key_names: Sequence[str], new_group: Callable[[Key], int],
                 new_groups: Callable[[list[Key]], npt.NDArray[np.int64]] | None = None) -> None:
        self.key_names = tuple(key_names)
        self._new_group = new_group
        self._new_groups = new_groups
        self._values: list[list[Any]] = [[] for _ in self.key_names]  # per key column: value id -> value
        self._value_index: list[dict[Any, int]] = [{} for _ in self.key_names]
        self._combos: dict[tuple[int, ...], int] = {}  # value ids -> group
        self._packed = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))  # the same, packed and sorted

    def group_ids(self, keys: Mapping[str, Any] | Sequence[Any], n: int) -> npt.NDArray[np.int64]:
        """Group index of every row, creating groups for new keys.

        Parameters
        ----------
        keys : mapping of key name -> array-like of shape (n,), or a sequence in key order
            NumPy, Arrow (also dictionary-encoded), Polars, pandas or lists; null is a value.
        n : int
            Rows in the chunk.

        Returns
        -------
        ndarray of int64, shape (n,)

        Raises
        ------
        InputError
            A missing key column or one of the wrong length (and whatever ``new_group`` raises).
        InputTypeError
            A column that cannot be a group key.
        """
        if isinstance(keys, Mapping):
            missing = [k for k in self.key_names if k not in keys]
            if missing:
                raise InputError(f"key column(s) {missing} not given; this set is keyed by {list(self.key_names)}")
            columns = [keys[k] for k in self.key_names]
        else:
            columns = list(keys)
            if len(columns) != len(self.key_names):
                raise InputError(f"got {len(columns)} key columns for key names {list(self.key_names)}")
        if not columns:
            return np.full(n, self._new_group(()), dtype=np.int64)
        parts = [self._column_ids(i, name, col, n) for i, (name, col) in enumerate(zip(self.key_names, columns, strict=True))]
        sizes = [max(len(values), 1) for values in self._values]
        ids: list[Any]  # per column, the value ids of any rows asked for
        if FUSED and math.prod(sizes) <= 1 << 62:  # codes fit: no renumbering
            codes = np.empty(n, dtype=np.int64)
            radix = 1
            for i, ((values, lo, lut), size) in enumerate(zip(parts, sizes, strict=True)):
                add_lookup(codes, lut, values, lo, radix, i == 0)
                radix *= size
            ids = [_LazyIds(values, lo, lut) for values, lo, lut in parts]
        else:
            ids = [lut[values.astype(np.int64) - lo] for values, lo, lut in parts]
            codes = np.array(ids[0], dtype=np.int64)
            radix = len(self._values[0])
            for i in range(1, len(ids)):
                size = len(self._values[i])
                if radix > (1 << 62) // max(size, 1):  # renumber the combinations so far densely
                    uniq, inverse = np.unique(codes, return_inverse=True)
                    codes, radix = inverse.reshape(-1).astype(np.int64), int(uniq.shape[0])
                add_scaled(codes, ids[i], radix)
                radix *= size
        if radix <= max(4 * n, 1 << 16):  # dense: a lookup table over all codes
            rep = first_rows(codes, radix)
            uniq = np.flatnonzero(rep >= 0)
            rows = rep[uniq]
        else:
            uniq, first = np.unique(codes, return_index=True)
            rows = first
        gmap = self._combo_groups([col[rows] for col in ids])
        if radix <= max(4 * n, 1 << 16):
            lut = np.empty(radix, dtype=np.int64)
            lut[uniq] = gmap
            return lut[codes]
        return gmap[np.searchsorted(uniq, codes)]

    def _column_ids(self, i: int, name: str, col: Any, n: int) -> tuple[np.ndarray, int, npt.NDArray[np.int64]]:
        """Per-column ids (stable across chunks) of one key column's values, null being a value,
        as ``(values, lo, lut)``: row ``j``'s id is ``lut[values[j] - lo]`` (``values`` integers:
        the column itself or its dictionary indices)."""
        import pyarrow as pa

        arr = _as_arrow(col, name)
        if len(arr) != n:
            raise InputError(f"key column {name!r} has {len(arr)} rows but the scores have {n}")
        direct = self._small_int_ids(i, arr)
        if direct is not None:
            return direct
        t = arr.type
        if pa.types.is_timestamp(t) and t.tz is not None and t.tz not in ("UTC", "utc", "Z", "+00:00"):
            # instants as UTC values: Python compares two datetimes of one zone by their local
            # reading, so the two instants of a repeated hour (clocks going back) were one key
            arr = arr.cast(pa.timestamp(t.unit, tz="UTC"))
        enc = arr if pa.types.is_dictionary(arr.type) else arr.dictionary_encode(null_encoding="encode")
        seen, values = self._value_index[i], self._values[i]
        local = np.empty(len(enc.dictionary) + 1, dtype=np.int64)
        for j, v in enumerate([_plain(v) for v in enc.dictionary.to_pylist()] + [None]):
            vid = seen.get(v)
            if vid is None:
                vid = seen[v] = len(values)
                values.append(v)
            local[j] = vid
        idx = enc.indices
        if idx.null_count:
            idx = idx.fill_null(len(enc.dictionary))
        return np.asarray(idx.to_numpy(zero_copy_only=False)), 0, local

    def _small_int_ids(self, i: int, arr: Any) -> tuple[np.ndarray, int, npt.NDArray[np.int64]] | None:
        """Value ids of an integer column without nulls whose values span a small range, by a
        lookup table over that range instead of Arrow's hashing (~5x faster on a million rows),
        as :meth:`_column_ids` gives them; new values get ids in order of first appearance, as
        Arrow's dictionary lists them. None for other columns."""
        import pyarrow as pa

        t = arr.type
        if not pa.types.is_integer(t) or t == pa.uint64() or arr.null_count or len(arr) == 0:
            return None
        v = np.asarray(arr.to_numpy(zero_copy_only=False))
        lo, hi = (int(x) for x in min_max(v))
        span = hi - lo + 1
        if span > max(4 * len(v), 1 << 16):
            return None
        first = first_rows_from(v, lo, span)
        present = np.flatnonzero(first >= 0)
        present = present[np.argsort(first[present], kind="stable")]
        seen, values = self._value_index[i], self._values[i]
        lut = np.empty(span, dtype=np.int64)
        for j, value in zip(present.tolist(), (present + lo).tolist(), strict=True):
            vid = seen.get(value)
            if vid is None:
                vid = seen[value] = len(values)
                values.append(value)
            lut[j] = vid
        return v, lo, lut

    def _combo_groups(self, ids: list[npt.NDArray[np.int64]]) -> npt.NDArray[np.int64]:
        """Groups of distinct value-id combinations (one array per key column).

        Known combinations are found by a binary search in a sorted table of packed codes (each
        column's id in ``63 // columns`` bits); only new ones (or ids too large to pack) go
        through Python, once each.
        """
        bits = 63 // len(ids)
        if max(int(col.max(initial=0)) for col in ids) >= (1 << bits):
            combos = zip(*(col.tolist() for col in ids), strict=True)
            return np.fromiter((self._combo_group(c) for c in combos), dtype=np.int64, count=ids[0].shape[0])
        packed = np.zeros(ids[0].shape[0], dtype=np.int64)
        for i, col in enumerate(ids):
            packed |= col << (bits * i)
        known, known_gid = self._packed
        pos = np.minimum(np.searchsorted(known, packed), max(known.shape[0] - 1, 0))
        found = (known[pos] == packed) if known.shape[0] else np.zeros(packed.shape[0], dtype=bool)
        out = np.empty(packed.shape[0], dtype=np.int64)
        out[found] = known_gid[pos[found]]
        new = np.flatnonzero(~found)
        if new.shape[0]:
            out[new] = self._new_combos([col[new] for col in ids])
            codes, gids = np.concatenate([known, packed[new]]), np.concatenate([known_gid, out[new]])
            order = np.argsort(codes, kind="stable")
            self._packed = (codes[order], gids[order])
        return out

    def _new_combos(self, ids: list[npt.NDArray[np.int64]]) -> npt.NDArray[np.int64]:
        """Groups of distinct value-id combinations not in the packed table, created in one call
        of ``new_groups`` when there is one (one at a time otherwise, or when some are known)."""
        lists = [col.tolist() for col in ids]
        combos = list(zip(*lists, strict=True))
        if self._new_groups is None or not self._combos.keys().isdisjoint(combos):
            return np.fromiter((self._combo_group(c) for c in combos), dtype=np.int64, count=len(combos))
        keys = list(zip(*(map(values.__getitem__, col) for values, col in zip(self._values, lists, strict=True)),
                        strict=True))
        gids = self._new_groups(keys)
        self._combos.update(zip(combos, gids.tolist(), strict=True))
        return gids

    def _combo_group(self, combo: tuple[int, ...]) -> int:
        gid = self._combos.get(combo)
        if gid is None:
            gid = self._combos[combo] = self._new_group(tuple(self._values[i][v] for i, v in enumerate(combo)))
        return gid



class _LazyIds:
    """A key column's value ids, ``lut[values - lo]``, computed only for the rows asked for."""

    def __init__(self, values: np.ndarray, lo: int, lut: npt.NDArray[np.int64]) -> None:
        self.values, self.lo, self.lut = values, lo, lut

    def __getitem__(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        out: npt.NDArray[np.int64] = self.lut[self.values[rows].astype(np.int64) - self.lo]
        return out


def _as_arrow(col: Any, name: str) -> Any:
    import pyarrow as pa

    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks()
    if isinstance(col, pa.Array):
        return col
    try:
        if hasattr(col, "to_arrow"):  # Polars Series
            return pa.array(col.to_arrow())
        return pa.array(col, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
        raise InputTypeError(f"key column {name!r} cannot be a group key: {exc}") from None
