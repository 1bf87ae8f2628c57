"""The "multiclass" kind of the sketch file format (``docs/sketch-format.md`` §9).

Same framing, flags, CRC and caps as the binary kind (:mod:`streameval.sketch.io`); this module encodes a
:class:`~streameval.MulticlassSketch`'s parts and decodes them back, checking the header fields,
the declared sizes against the caps before inflating anything, and every stored cell. Payload,
in order (little-endian)::

    n_bins  x uint64        one-vs-rest key deltas (key = column * grid size + bin)
    n_bins  x 2 x 4 float64 one-vs-rest cells [weight, min, max, sum] x (other classes, the column's class)
    n_pairs x uint64        pair key deltas (key = (true class * K + column) * pair grid size + bin)
    n_pairs x 4 float64     pair cells [weight, min, max, sum]
    K x K   float64         confusion (true class, predicted class)
    K x K   float64         ranks (true class, rank of its score)

Version 2 (a sketch with bootstrap replicates; without them the file stays version 1) adds the
header field ``bootstrap`` ``{"replicates": R, "seed", "keyed", "n_bins": [kb_0, ..., kb_{K-1}]}``
(an empty list for hard-prediction sketches) and, after the ranks::

    per column j: kb_j x uint32 key deltas, kb_j x 2 x R float64   (the binary replicate section)
    R x K x K float64                                              confusion replicates
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from typing import Any, Callable

import numpy as np

from ..grid import Grid, coarsening_map
from . import io, io_header
from .bootstrap import Replicates
from .io_bootstrap import (
    MAX_REPLICATE_BYTES,
    BootstrapHeader,
    check_bootstrap_header,
    decode_replicates,
    encode_replicates,
)
from .io_checks import MAX_TOTAL_WEIGHT, check_cells
from .io_checks import fail as _fail
from .multiclass_bootstrap import MulticlassReplicates

__all__ = ["encode_multiclass", "decode_multiclass", "INT_COUNTERS", "FLOAT_COUNTERS", "COLUMN_COUNTERS"]

OVR_BYTES = 8 + 2 * 4 * 8  # key delta and two cells per one-vs-rest bin
PAIR_BYTES = 8 + 4 * 8  # key delta and one cell per pair cell
INT_COUNTERS = ("n_rows", "n_zero_weight", "n_outside", "n_unnormalized")
FLOAT_COUNTERS = ("prob_weight", "log_loss_sum", "brier_sum")
COLUMN_COUNTERS = ("col_n_outside", "col_prob_weight", "col_brier_sum", "col_log_loss_sum", "class_rows")
MODES = ((None, None), ("scores", "argmax"), ("scores", "y_pred"), ("labels", "y_pred"))
_MAX_FLOAT = MAX_TOTAL_WEIGHT * 40  # as the binary kind: log loss <= 36.04 x weight
_RUN = 1 << 14  # cells inflated and checked at a time
_EMPTY = np.array([0.0, np.inf, -np.inf, 0.0])


def raw_size(k: int, n_bins: int, n_pairs: int) -> int:
    """Bytes of an uncompressed multiclass payload."""
    return n_bins * OVR_BYTES + n_pairs * PAIR_BYTES + 16 * k * k


# -- encode --------------------------------------------------------------------------------------


def encode_multiclass(parts: dict[str, Any], compress: bool = True) -> bytes:
    """Serialize a :meth:`MulticlassSketch._parts` dict in the current format version.

    Raises
    ------
    SketchFormatError
        If a counter is not finite (it could not be read back).
    """
    k = 0 if parts["classes"] is None else len(parts["classes"])
    counters: dict[str, Any] = {}
    for name, value in parts["counters"].items():
        if name in COLUMN_COUNTERS:
            counters[name] = [float(v) for v in np.asarray(value, dtype=np.float64).tolist()]
        elif name == "weighted":
            counters[name] = bool(value)
        else:
            counters[name] = int(value) if name in INT_COUNTERS else float(value)
        if not all(math.isfinite(v) for v in np.ravel(counters[name])):
            raise _fail(f"cannot encode the sketch: counter {name!r} is not finite (weights too large?)", None)
    ovr_keys = np.asarray(parts["ovr_keys"], dtype=np.int64)
    pair_keys = np.asarray(parts["pair_keys"], dtype=np.int64)
    header = {
        "sketch": "multiclass",
        "grid": parts["grid"],
        "pair_grid": parts["pair_grid"],
        "classes": parts["classes"],
        "learned": bool(parts["learned"]),
        "mode": parts["mode"],
        "prediction": parts["prediction"],
        "max_classes": int(parts["max_classes"]),
        "n_bins": int(ovr_keys.shape[0]),
        "n_pairs": int(pair_keys.shape[0]),
        "counters": counters,
    }
    if parts.get("pair_grid_given"):  # written only in that case: every other file is unchanged (§9.1)
        header["pair_grid_given"] = True

    def arr(value: Any, shape: tuple[int, ...]) -> bytes:
        return np.ascontiguousarray(np.asarray(value, dtype="<f8").reshape(shape)).tobytes()

    sections = [
        np.diff(ovr_keys, prepend=np.int64(0)).astype("<u8").tobytes(),
        arr(parts["ovr_values"], (ovr_keys.shape[0], 2, 4)),
        np.diff(pair_keys, prepend=np.int64(0)).astype("<u8").tobytes(),
        arr(parts["pair_values"], (pair_keys.shape[0], 4)),
        arr(parts["confusion"], (k, k)),
        arr(parts["ranks"], (k, k)),
    ]
    version = io.BASE_VERSION
    boot: MulticlassReplicates | None = parts.get("replicates")
    if boot is not None:  # version 2: the replicate sections after the ranks
        version = 2
        boot.compact()
        header["bootstrap"] = {"replicates": boot.n_replicates, "seed": boot.seed, "keyed": boot.keyed, "n_bins": []}
        for col in boot.ovr:
            field, raw = encode_replicates(col)
            header["bootstrap"]["n_bins"].append(field["n_bins"])
            sections.append(raw)
        sections.append(arr(boot.confusion, (boot.n_replicates, k, k)))
    try:
        hbytes = json.dumps(header, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise _fail(f"cannot encode the sketch header ({exc})", None) from None
    payload = b"".join(sections)
    flags = 0
    if compress:
        payload = zlib.compress(payload, 6)
        flags |= io.FLAG_ZLIB
    body = io._PREFIX.pack(io.MAGIC, version, flags, len(hbytes)) + hbytes + struct.pack("<Q", len(payload)) + payload
    return body + struct.pack("<I", zlib.crc32(body))


# -- header --------------------------------------------------------------------------------------


def _header(h: dict[str, Any], source: str | None) -> dict[str, Any]:
    """Every header field checked for type and range; grids built and capped."""
    for key in ("pair_grid", "classes", "learned", "mode", "prediction", "max_classes", "n_pairs"):
        if key not in h:
            raise _fail(f"bad header field: {key!r} is missing", source)
    grid = io_header._grid(h["grid"], source)
    pair_grid = None
    if h["pair_grid"] is not None:
        io_header._check_grid_spec(h["pair_grid"], source, "pair_grid")
        pair_grid = io_header._grid(h["pair_grid"], source)
        if coarsening_map(grid, pair_grid) is None:
            raise _fail(f"bad header field pair_grid={h['pair_grid']!r}: not the grid or a power-of-two coarsening of it", source)
    max_classes = h["max_classes"]
    if not io_header._is_int(max_classes) or not 1 <= max_classes <= io.MAX_COUNT:
        raise _fail(f"bad header field max_classes={max_classes!r}: need a positive integer", source)
    classes = h["classes"]
    if classes is not None:
        if not isinstance(classes, list) or not all(io_header._label_ok(c) for c in classes):
            raise _fail(f"bad header field classes={str(classes)[:80]}: need a list of short JSON scalars", source)
        kinds = {str if isinstance(c, str) else bool if isinstance(c, bool) else float for c in classes}
        if len(kinds) > 1 or len(set(classes)) != len(classes) or len(classes) > max_classes:
            raise _fail(f"bad header field classes={str(classes)[:80]}: need distinct labels of one type, at most max_classes", source)
    if not isinstance(h["learned"], bool):
        raise _fail(f"bad header field learned={h['learned']!r}: need true or false", source)
    if (h["mode"], h["prediction"]) not in MODES or (classes is None and h["mode"] is not None):
        raise _fail(f"bad header fields mode={h['mode']!r}, prediction={h['prediction']!r}", source)
    if classes is not None and len(classes) < 2 and h["mode"] != "labels":
        raise _fail(f"bad header field classes={classes!r}: scores need at least 2 classes", source)
    k = 0 if classes is None else len(classes)
    if "pair_grid_given" in h and (h["pair_grid_given"] is not True or classes is not None or pair_grid != grid):
        raise _fail(f"bad header field pair_grid_given={h['pair_grid_given']!r}: only true, and only with classes null "
                    "and pair_grid equal to grid", source)
    npair = (pair_grid or grid).n_bins
    for name, top in (("n_bins", k * grid.n_bins), ("n_pairs", 0 if pair_grid is None else k * (k - 1) * npair)):
        if not io_header._is_int(h[name]) or not 0 <= h[name] <= top:
            raise _fail(f"bad header field {name}={h[name]!r}: need an integer in [0, {top}]", source)
    return {"grid": grid, "pair_grid": pair_grid, "k": k, "npair": npair, "counters": _counters(h["counters"], k, source)}


def _counters(raw: Any, k: int, source: str | None) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _fail(f"bad header field counters={raw!r}: must be a JSON object", source)
    unknown = sorted(set(raw) - {*INT_COUNTERS, *FLOAT_COUNTERS, *COLUMN_COUNTERS, "weighted"})
    if unknown:
        raise _fail(f"unknown counter {unknown[0]!r} in the header (a newer format?)", source)
    out: dict[str, Any] = {}
    for name in INT_COUNTERS:
        value = raw.get(name, 0)
        if not io_header._is_int(value) or not 0 <= value <= io.MAX_COUNT:
            raise _fail(f"counter {name!r} has bad value {value!r}: need an integer in [0, 2**63)", source)
        out[name] = int(value)
    for name in FLOAT_COUNTERS:
        value = raw.get(name, 0.0)
        if not io_header._is_number(value) or not 0 <= value <= _MAX_FLOAT:
            raise _fail(f"counter {name!r} has bad value {value!r}: need a finite number >= 0", source)
        out[name] = float(value)
    for name in COLUMN_COUNTERS:
        if name not in raw:
            if k:
                raise _fail(f"counter {name!r} is missing", source)
            continue
        value = raw[name]
        if not isinstance(value, list) or len(value) != k or not all(io_header._is_number(v) and 0 <= v <= _MAX_FLOAT for v in value):
            raise _fail(f"counter {name!r} has bad value {str(value)[:80]}: need {k} finite numbers >= 0", source)
        out[name] = np.array(value, dtype=np.float64)
    weighted = raw.get("weighted", False)
    if not isinstance(weighted, bool):
        raise _fail(f"counter 'weighted' has bad value {weighted!r}: need true or false", source)
    out["weighted"] = weighted
    return out


# -- payload -------------------------------------------------------------------------------------


def _reader(stored: memoryview, compressed: bool, source: str | None) -> tuple[Callable[[int], bytes], Callable[[], None]]:
    """``take(n)``: the next ``n`` payload bytes (fewer if it ends), inflating only what is asked;
    ``finish()``: fail unless the payload ends exactly there."""
    if not compressed:
        pos = 0

        def take_raw(n: int) -> bytes:
            nonlocal pos
            out, pos = bytes(stored[pos:pos + n]), pos + n
            return out

        def finish_raw() -> None:
            if pos != len(stored):
                raise _fail(f"payload holds {len(stored)} bytes, its header says {pos}", source)

        return take_raw, finish_raw
    inflater = zlib.decompressobj()
    state: dict[str, Any] = {"pos": 0, "pending": b""}
    step = 1 << 16

    def take(n: int) -> bytes:
        parts = []
        try:
            while n > 0:
                if not state["pending"]:
                    if state["pos"] >= len(stored) or inflater.eof:
                        break
                    state["pending"] = bytes(stored[state["pos"]:state["pos"] + step])
                    state["pos"] += step
                chunk = inflater.decompress(state["pending"], n)
                state["pending"] = inflater.unconsumed_tail
                parts.append(chunk)
                n -= len(chunk)
        except zlib.error as exc:
            raise _fail(f"payload does not decompress ({exc})", source) from None
        return b"".join(parts)

    def finish() -> None:
        rest = b""
        if not inflater.eof:
            try:
                rest = inflater.decompress(state["pending"] + bytes(stored[state["pos"]:]), 1)
            except zlib.error as exc:
                raise _fail(f"payload does not decompress ({exc})", source) from None
            state["pos"], state["pending"] = len(stored), b""
        if rest or not inflater.eof:
            raise _fail("payload is longer than its header says, or incomplete", source)
        if inflater.unused_data or state["pending"] or state["pos"] < len(stored):
            raise _fail("trailing bytes after the compressed payload", source)

    return take, finish


def _exact(take: Callable[[int], bytes], n: int, what: str, source: str | None) -> bytes:
    raw = take(n)
    if len(raw) != n:
        raise _fail(f"payload ends inside the {what}: {len(raw)} of {n} bytes", source)
    return raw


def _keys(take: Callable[[int], bytes], n: int, top: int, what: str, source: str | None) -> np.ndarray:
    deltas = np.frombuffer(_exact(take, 8 * n, f"{what} keys", source), dtype="<u8")
    if n and (np.any(deltas[1:] == 0) or np.any(deltas > np.uint64(max(top - 1, 0)))):
        raise _fail(f"{what} keys are not strictly increasing below {top}", source)
    keys = np.cumsum(deltas.astype(np.int64))
    if n and keys[-1] >= top:
        raise _fail(f"{what} key {int(keys[-1])} is not below {top}", source)
    return keys


def _check_pairs(grid: Grid, keys: np.ndarray, cells: np.ndarray, source: str | None) -> None:
    """One-class cells: weight finite >= 0; empty ones exactly [0, inf, -inf, 0]; min <= max in the bin."""
    w, lo, hi, sums = cells[:, 0], cells[:, 1], cells[:, 2], cells[:, 3]
    filled = w > 0
    bins = keys % grid.n_bins

    def bad(mask: np.ndarray, what: str) -> None:
        if np.any(mask):
            i = int(np.argmax(mask))
            raise _fail(f"pair cell {int(keys[i])} {what}: {cells[i].tolist()!r}", source)

    bad(~np.isfinite(w) | (w < 0) | np.isnan(cells).any(axis=1), "has a bad weight or a NaN")
    bad(~filled & np.any(cells != _EMPTY, axis=1), "is empty but holds a min, max or sum")
    bad(filled & ~(lo <= hi), "has min > max")
    for arr in (lo, hi):
        bad(filled & (grid.bin_index(np.where(filled, arr, 0.0)) != bins), "has a min or max outside its bin")
    with np.errstate(over="ignore", invalid="ignore"):
        low, high = w * lo, w * hi
        slack = 1e-6 * np.maximum(np.abs(low), np.abs(high))
        slack = np.where(np.isfinite(slack), slack, 0.0) + 1e-300
        bad(filled & ~((sums >= low - slack) & (sums <= high + slack)), "has a sum outside [weight x min, weight x max]")


def _boot_header(header: dict[str, Any], version: int, k: int, source: str | None) -> tuple[dict[str, Any], int] | None:
    """The checked ``bootstrap`` header field (None in version 1) and the replicate sections' size."""
    raw = header.get("bootstrap")
    if version < 2:
        if raw is not None:
            raise _fail("header field 'bootstrap' needs format version 2, the file says 1", source)
        return None
    fields = {"replicates", "seed", "keyed", "n_bins"}
    if not isinstance(raw, dict) or set(raw) != fields:
        got = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
        raise _fail(f"a version-2 multiclass sketch needs the header field bootstrap with the keys {sorted(fields)}, got {got}", source)
    columns = k if header.get("mode") == "scores" else 0
    counts = raw["n_bins"]
    if not isinstance(counts, list) or len(counts) != columns or not all(io_header._is_int(c) and 0 <= c <= header["n_bins"] for c in counts):
        raise _fail(f"bad header field bootstrap.n_bins={str(counts)[:80]}: need {columns} bin counts in [0, n_bins]", source)
    check_bootstrap_header({**raw, "n_bins": 0}, 0, source)  # replicates, seed, keyed
    R = raw["replicates"]
    size = sum(counts) * (4 + 16 * R) + 8 * R * k * k
    if size > MAX_REPLICATE_BYTES:
        raise _fail(f"the bootstrap replicates take {size:,} bytes, more than the limit of {MAX_REPLICATE_BYTES:,}", source)
    return raw, size


def _decode_boot(raw: dict[str, Any], take: Callable[[int], bytes], grid: Grid, ovr: tuple[np.ndarray, np.ndarray],
                 confusion: np.ndarray, weighted: bool, source: str | None) -> MulticlassReplicates:
    """Read and check the replicate sections (after the ranks) against the sketch's own cells."""
    R, k = raw["replicates"], confusion.shape[0]
    out = MulticlassReplicates(R, raw["seed"], raw["keyed"])
    columns: list[Replicates] = []
    keys, values = ovr
    bounds = np.searchsorted(keys, np.arange(k + 1) * grid.n_bins)
    for j, kb in enumerate(raw["n_bins"]):
        a, b = int(bounds[j]), int(bounds[j + 1])
        head: BootstrapHeader = check_bootstrap_header({**raw, "n_bins": kb}, b - a, source)
        section = _exact(take, head.nbytes, f"bootstrap replicates of column {j}", source)
        columns.append(decode_replicates(head, section, grid, keys[a:b] - j * grid.n_bins, values[a:b], source, weighted))
    conf = np.frombuffer(_exact(take, 8 * R * k * k, "confusion replicates", source), dtype="<f8").reshape(R, k, k).astype(np.float64)
    if not np.all(np.isfinite(conf)) or np.any(conf < 0):
        raise _fail("confusion replicates must be finite and >= 0", source)
    if np.any(conf > 12.0 * confusion[None] * (1 + 1e-9)):
        raise _fail("a confusion replicate cell weighs more than 12 times the sketch's cell (or has weight where it is empty)", source)
    if not weighted and np.any(conf != np.floor(conf)):
        raise _fail("a confusion replicate weight of an unweighted sketch is not a whole number", source)
    if raw["keyed"] is None and np.any(conf > 0):
        raise _fail("bootstrap.keyed is null but the replicates hold rows: say row_id or position", source)
    out.confusion, out.ovr = conf, columns
    return out


def decode_multiclass(header: dict[str, Any], stored: memoryview, flags: int, source: str | None,
                      version: int = 1) -> dict[str, Any]:
    """The :meth:`MulticlassSketch._from_parts` dict of a framed, CRC-checked multiclass file.

    Version 1 holds no replicates; version 2 exactly when the sketch has bootstrap replicates.

    Raises
    ------
    SketchFormatError
    """
    h = _header(header, source)
    grid, k, npair = h["grid"], h["k"], h["npair"]
    n_bins, n_pairs = header["n_bins"], header["n_pairs"]
    boot = _boot_header(header, version, k, source)
    need = raw_size(k, n_bins, n_pairs)
    cap = io.max_grid_bins() * io.BIN_BYTES
    if need > cap:
        raise _fail(
            f"a multiclass payload of {k} classes, {n_bins:,} bins and {n_pairs:,} pair cells needs {need:,} bytes, "
            f"more than the limit of {cap:,} (raise it with {io.MAX_GRID_BINS_ENV})",
            source,
        )
    extra = 0 if boot is None else boot[1]
    if len(stored) > io._max_payload(-(-need // io.BIN_BYTES), flags, extra) or not flags & io.FLAG_ZLIB and len(stored) != need + extra:
        raise _fail(f"payload length {len(stored)} does not fit {need + extra} bytes of cells", source)
    take, finish = _reader(stored, bool(flags & io.FLAG_ZLIB), source)

    ovr_keys = _keys(take, n_bins, k * grid.n_bins, "one-vs-rest", source)
    runs: list[np.ndarray] = [np.empty((0, 2, 4))]
    for start in range(0, n_bins, _RUN):
        stop = min(start + _RUN, n_bins)
        raw = _exact(take, (stop - start) * 64, "one-vs-rest cells", source)
        run = np.frombuffer(raw, dtype="<f8").reshape(stop - start, 2, 4).astype(np.float64)
        check_cells(grid, ovr_keys[start:stop] % grid.n_bins, run, source)
        runs.append(run)
    ovr_values = np.concatenate(runs)

    pgrid = h["pair_grid"] or grid
    pair_keys = _keys(take, n_pairs, k * k * npair, "pair", source)
    block = pair_keys // npair
    if np.any(block // max(k, 1) == block % max(k, 1)):
        raise _fail("a pair cell is on the diagonal (true class = column)", source)
    pair_runs = [np.empty((0, 4))]
    for start in range(0, n_pairs, _RUN):
        stop = min(start + _RUN, n_pairs)
        cells = np.frombuffer(_exact(take, (stop - start) * 32, "pair cells", source), dtype="<f8").reshape(-1, 4).astype(np.float64)
        _check_pairs(pgrid, pair_keys[start:stop], cells, source)
        pair_runs.append(cells)
    pair_values = np.concatenate(pair_runs)

    tables = {}
    for name in ("confusion", "ranks"):
        arr = np.frombuffer(_exact(take, 8 * k * k, name, source), dtype="<f8").reshape(k, k).astype(np.float64)
        if not np.all(np.isfinite(arr)) or np.any(arr < 0) or not float(arr.sum()) <= MAX_TOTAL_WEIGHT:
            raise _fail(f"{name} holds a weight that is negative, not finite or too large", source)
        tables[name] = arr
    replicates = None
    if boot is not None:
        replicates = _decode_boot(boot[0], take, grid, (ovr_keys, ovr_values), tables["confusion"],
                                  bool(h["counters"]["weighted"]), source)
    finish()
    return {
        "grid": header["grid"],
        "pair_grid": header["pair_grid"],
        "classes": header["classes"],
        "learned": header["learned"],
        "mode": header["mode"],
        "prediction": header["prediction"],
        "max_classes": header["max_classes"],
        "counters": h["counters"],
        "confusion": tables["confusion"],
        "ranks": tables["ranks"],
        "ovr_keys": ovr_keys,
        "ovr_values": ovr_values,
        "pair_keys": pair_keys,
        "pair_values": pair_values,
        "replicates": replicates,
        **({"pair_grid_given": True} if "pair_grid_given" in header else {}),
    }
