"""The ``metrics`` section on disk: the live WAL and the closed Zarr form (run-surface.md §4).

``metrics/metrics.jsonl`` is a plain object beside the group's arrays. An
appender keeps it with positional writes where the store has them (append
at the tail, then ``sync``), and elsewhere by read-modify-put conditional
on the ETag, so a second writer loses with :class:`~mrecd.WriterBusy`
instead of interleaving. Densifying lays the merged series down as
``series/``, ``steps/`` and ``wall_time/`` arrays plus the catalog, with the
WAL bytes it covered copied alongside and recorded as the watermark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any, Final

import numpy as np

from ...errors import InvalidRecord, PreconditionFailed, WriterBusy
from ...model import (
    STRING_DTYPE,
    MetricEvent,
    MetricSeries,
    complete_lines,
    densifiable,
    encode_event,
    merge_series,
    parse_wal,
    safe_name,
    wal_lines,
)
from ...storage import IfMatch, Location, PositionalFile, PutMode, Store, WriterLease
from ._arrays import array_dtype, read_values, write_array, zarr_store_at
from ._frames import write_group_json
from ._tree import Tree, join

__all__ = [
    "SECTION",
    "WAL",
    "ClosedMetrics",
    "WalAppender",
    "densified_writer",
    "densify_plan",
    "read_closed",
    "read_metrics",
    "read_wal",
]

SECTION: Final = "metrics"
WAL: Final = "metrics/metrics.jsonl"
_ARRAYS: Final = ("series", "steps", "wall_time")
#: Bytes read per step when an appender looks back for the last ``\n``.
_SCAN: Final = 65536
_GROUP: Final = b'{"zarr_format":3,"node_type":"group","attributes":{}}'


class ClosedMetrics:
    """The closed form as read: catalog attributes and the dense series it names."""

    def __init__(self, attributes: dict[str, Any], series: dict[str, MetricSeries]) -> None:
        self.attributes = attributes
        self.series = series

    @property
    def watermark(self) -> tuple[int, int] | None:
        """``(lines, bytes)`` of the ``wal`` catalog key, or ``None`` without one."""
        wal = self.attributes.get("wal")
        if wal is None:
            return None
        lines, size = (wal.get(k) if isinstance(wal, Mapping) else None for k in ("lines", "bytes"))
        if not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (lines, size)
        ):
            raise InvalidRecord(
                f"wal {wal!r} is {{'lines': L, 'bytes': B}} with non-negative integers"
                " (run-surface.md §4.2)",
                path="metrics.wal",
            )
        assert isinstance(lines, int) and isinstance(size, int)
        return lines, size


def _catalog(attributes: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    series = attributes.get("series", {})
    if not isinstance(series, Mapping) or not all(isinstance(v, Mapping) for v in series.values()):
        raise InvalidRecord(
            "the catalog's series is an object key -> entry (run-surface.md §4.2)",
            path="metrics.series",
        )
    return {str(k): dict(v) for k, v in series.items()}


def _array(tree: Tree, group: str, key: str) -> np.ndarray[Any, Any] | None:
    node = tree.node(join(SECTION, group, safe_name(key)))
    if node is None:
        return None
    if node.kind != "array":
        raise InvalidRecord(f"{group}/ holds arrays (run-surface.md §4.2)", path=node.path)
    return read_values(tree, node, array_dtype(node))


def _dense_series(tree: Tree, key: str, entry: Mapping[str, Any]) -> MetricSeries:
    where = join(SECTION, "series", safe_name(key))
    values = _array(tree, "series", key)
    if values is None:
        raise InvalidRecord(
            f"the catalog names series {key!r} but {where} is absent (run-surface.md §4.2)",
            path=where,
        )
    steps, times = _array(tree, "steps", key), _array(tree, "wall_time", key)
    for other in (steps, times):
        if other is not None and other.shape != values.shape:
            raise InvalidRecord(
                f"series, steps and wall_time of {key!r} are aligned index for index"
                f", not {values.shape} vs {other.shape} (run-surface.md §4.2)",
                path=where,
            )
    if entry.get("count") != len(values):
        raise InvalidRecord(
            f"catalog count {entry.get('count')!r} differs from the {len(values)} points of"
            f" {key!r} (run-surface.md §4.2)",
            path=f"metrics.series.{key}",
        )
    kind = entry.get("type", "scalar")
    series = MetricSeries(key, kind if isinstance(kind, str) else "scalar")
    for i, value in enumerate(values.tolist()):
        step = None if steps is None else int(steps[i])
        wall = "" if times is None else str(times[i])
        series.add(MetricEvent(key, float(value), wall, step, series.type))
    return series


def read_closed(tree: Tree) -> ClosedMetrics | None:
    """The closed form (catalog and dense series), or ``None`` without a ``metrics/`` group."""
    node = tree.node(SECTION)
    if node is None:
        return None
    if node.kind != "group":
        raise InvalidRecord("metrics is a group (storage.md §3.1)", path=SECTION)
    attributes = dict(node.attributes)
    series = {k: _dense_series(tree, k, e) for k, e in _catalog(attributes).items()}
    return ClosedMetrics(attributes, series)


def read_wal(tree: Tree) -> bytes:
    """The WAL's bytes as stored (``b""`` when there is none)."""
    return tree.read(WAL) or b""


def read_metrics(tree: Tree) -> dict[str, MetricSeries]:
    """Every series, merged as run-surface.md §4.3 says which form is authoritative.

    Dense series up to the watermark, then the WAL lines past it; with no
    watermark and dense series, the dense series alone; with neither, the WAL.
    """
    closed = read_closed(tree)
    wal = read_wal(tree)
    if closed is None or (closed.watermark is None and not closed.series):
        return merge_series(parse_wal(wal)[0])
    mark = closed.watermark
    if mark is None:
        return closed.series
    lines, size = mark
    events, _ = parse_wal(wal[size:], first_line=lines + 1)
    return merge_series(events, closed.series)


# -- the closed form ---------------------------------------------------------------------------


def densify_plan(tree: Tree) -> tuple[dict[str, MetricSeries], tuple[int, int]]:
    """The series the closed form can hold and the watermark ``(lines, bytes)`` they cover.

    The dense arrays hold exactly the first ``lines`` WAL lines (§4.2), so
    the watermark stops before the first line the closed form cannot hold
    (:func:`~mrecd.model.densifiable`: a custom event whose value is no
    number, a key changing type or step presence); that line and every
    later one stay in the WAL, where readers merge them past the watermark.
    """
    closed = read_closed(tree)
    wal = complete_lines(read_wal(tree))
    if closed is not None and closed.watermark is None and closed.series:
        return closed.series, (wal.count(b"\n"), len(wal))  # no wal key: dense is the record
    series: dict[str, MetricSeries] = {}
    lines = size = 0
    if closed is not None and closed.watermark is not None:
        series = closed.series
        lines, size = closed.watermark
    start = size
    for event, end in wal_lines(wal[start:], first_line=lines + 1):
        if event is not None:
            if not densifiable(series.get(event.key), event):
                break
            merge_series([event], series)
        lines, size = lines + 1, start + end
    return series, (lines, size)


def closed_catalog(
    old: Mapping[str, Any], series: Mapping[str, MetricSeries], watermark: tuple[int, int]
) -> dict[str, Any]:
    """The catalog after densifying: old extra keys kept, ``wal`` and ``series`` renewed."""
    entries = _catalog(old) if "series" in old else {}
    catalog = dict(old)
    catalog["wal"] = {"lines": watermark[0], "bytes": watermark[1]}
    catalog["series"] = {
        key: {**entries.get(key, {}), **s.catalog_entry()} for key, s in series.items()
    }
    return catalog


def _write_series(new: Location, series: MetricSeries) -> None:
    values = series.value_array()
    if values.dtype != np.float64:
        raise InvalidRecord(
            f"series {series.key!r} of type {series.type!r} holds values that are no f64"
            " (run-surface.md §4.2)",
            path=join(SECTION, "series", safe_name(series.key)),
        )
    if any(s is not None for s in series.steps) and not series.has_steps:
        raise InvalidRecord(
            f"series {series.key!r} mixes points with and without a step; steps/ cannot align"
            " (run-surface.md §4.2)",
            path=join(SECTION, "steps", safe_name(series.key)),
        )
    store, name = zarr_store_at(new), safe_name(series.key)
    write_array(store, f"series/{name}", values, "f64")
    steps = series.step_array()
    if steps is not None:
        write_array(store, f"steps/{name}", steps, "i64")
    times = np.asarray(series.wall_times, dtype=STRING_DTYPE)
    write_array(store, f"wall_time/{name}", times, "string")


def _copy_unknown(old: Location, new: Location) -> None:
    """Every entry of the old group but the catalog, the arrays and the WAL (storage.md §8)."""
    if not old.is_dir():
        return
    store = old.store
    for key in store.keys(old.key):
        relative = key[len(old.key) + 1 :]
        head = relative.partition("/")[0]
        if head not in (*_ARRAYS, "zarr.json", "metrics.jsonl"):
            store.copy(key, (new / relative).key)


def densified_writer(
    old: Location, catalog: Mapping[str, Any], series: Mapping[str, MetricSeries], wal: bytes
) -> Callable[[Location], None]:
    """A section writer laying down the closed form and the WAL bytes it covers."""

    def writer(new: Location) -> None:
        _copy_unknown(old, new)
        for group in _ARRAYS:
            write_group_json(new / group, {})
        for one in series.values():
            _write_series(new, one)
        if wal:
            new.store.put((new / "metrics.jsonl").key, wal)
        write_group_json(new, catalog)

    return writer


# -- the live WAL ------------------------------------------------------------------------------


def _last_newline(file: PositionalFile) -> int:
    """The size the file has when cut just after its last ``\\n`` (0 when it has none)."""
    end = file.size
    while end > 0:
        start = max(0, end - _SCAN)
        found = file.pread(start, end - start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


class WalAppender:
    """The one appending writer of a record's ``metrics/metrics.jsonl`` (run-surface.md §4.3).

    Opening cuts a torn tail (bytes after the last ``\\n``) before anything
    is appended.

    Parameters
    ----------
    root
        The record root (``metrics/`` is created as a group when absent), or
        a host run directory when ``wal`` is given.
    wal
        The WAL's key under ``root``: a host's is ``artifacts/<stem>.mlp.jsonl``
        (storage.md §2), which is no record and gets no Zarr group.
    """

    def __init__(self, root: Location, *, wal: str | None = None) -> None:
        self._store: Store = root.store
        self._key = (root / (wal or WAL)).key
        self._name = wal or WAL
        folder, _, file = (wal or "").rpartition("/")
        lease = ".metrics-writer" if wal is None else join(folder, f".{file}.writer")  # hidden
        self._lease = self._take_lease(root, lease)
        self._file: PositionalFile | None = None
        self._data = b""
        self._etag: str | None = None
        self._open = False
        try:
            if wal is None:
                self._ensure_group(root)
            self._reopen()
        except BaseException:
            self._lease.release()
            raise

    def _take_lease(self, root: Location, lease: str) -> WriterLease:
        try:
            return self._store.writer_lease(join(root.key, lease))
        except WriterBusy:
            raise WriterBusy(
                f"another writer is appending to {self._name}: exactly one appending"
                " writer at a time (run-surface.md §4.3)",
                path=self._key,
            ) from None

    def _reopen(self) -> None:
        if self._store.positional_writes:
            self._open_positional()
        else:
            self._open_conditional()
        self._open = True

    def suspend(self) -> None:
        """Let go of the file (not the lease) while the section is swapped; reopened on append."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._open = False

    def _ensure_group(self, root: Location) -> None:
        with suppress(PreconditionFailed):  # the group is there already
            self._store.put((root / SECTION / "zarr.json").key, _GROUP, mode="create")

    def _open_positional(self) -> None:
        self._file = self._store.open_positional(self._key)
        keep = _last_newline(self._file)
        if keep != self._file.size:
            self._file.truncate(keep)
            self._file.sync()
        self._size = keep

    def _open_conditional(self) -> None:
        info = self._store.head(self._key)
        data = self._store.get(self._key) if info is not None else None
        self._data = b"" if data is None else data
        self._etag = None if info is None else info.etag
        if complete_lines(self._data) != self._data:
            self._data = complete_lines(self._data)
            self._put(self._data)

    def _put(self, data: bytes) -> None:
        mode: PutMode = "create" if self._etag is None else IfMatch(self._etag)
        try:
            self._etag = self._store.put(self._key, data, mode=mode, durable=True)
        except PreconditionFailed:
            raise WriterBusy(
                f"another writer changed {self._name}: exactly one appending writer"
                " at a time (run-surface.md §4.3)",
                path=self._key,
            ) from None

    def append(self, events: list[MetricEvent]) -> None:
        """Append one line per event, durably."""
        lines = b"".join(encode_event(e) for e in events)
        if not self._open:
            self._reopen()
        if self._file is not None:
            self._file.pwrite(self._size, lines)
            self._file.sync()
            self._size += len(lines)
        else:
            self._put(self._data + lines)
            self._data += lines

    def close(self) -> None:
        """Release the file handle and the writer lease."""
        self.suspend()
        self._lease.release()


# -- validation --------------------------------------------------------------------------------


def _same_points(a: MetricSeries, b: MetricSeries) -> bool:
    values = np.array_equal(a.value_array(), b.value_array(), equal_nan=True)
    return bool(values) and a.steps == b.steps


def _watermark_problems(closed: ClosedMetrics, wal: bytes) -> list[InvalidRecord]:
    mark = closed.watermark
    if mark is None:
        return []
    lines, size = mark
    covered = wal[:size]
    whole = size == 0 or covered.endswith(b"\n")
    if len(covered) < size or covered.count(b"\n") != lines or not whole:
        return [
            InvalidRecord(
                f"watermark {{'lines': {lines}, 'bytes': {size}}} is not the first {lines}"
                f" complete lines of the {len(wal)}-byte WAL (run-surface.md §4.2)",
                path=WAL,
            )
        ]
    dense = merge_series(parse_wal(covered)[0])
    differ = sorted(
        k
        for k in set(dense) | set(closed.series)
        if k not in dense or k not in closed.series or not _same_points(dense[k], closed.series[k])
    )
    return [
        InvalidRecord(
            f"dense series {k!r} is not the first {lines} WAL lines densified"
            " (run-surface.md §4.2)",
            path=join(SECTION, "series", safe_name(k)),
        )
        for k in differ
    ]


def _type_problems(tree: Tree, modules: Mapping[str, Any]) -> list[InvalidRecord]:
    try:
        series = read_metrics(tree)
    except InvalidRecord:
        return []  # reported by metrics_problems
    return [
        InvalidRecord(
            f"series {key!r} has custom type {s.type!r}, which names no module under"
            " meta/modules (run-surface.md §4.1)",
            path=f"metrics.series.{key}",
        )
        for key, s in series.items()
        if s.type != "scalar" and s.type not in modules
    ]


def metrics_problems(tree: Tree, modules: Mapping[str, Any]) -> list[InvalidRecord]:
    """Every broken §4 rule of the ``metrics`` section: catalog, arrays, WAL, watermark, types.

    ``modules`` is ``meta.modules`` (custom event types must name one).
    """
    problems: list[InvalidRecord] = []
    if tree.read(join(SECTION, "index.json")) is not None:
        problems.append(
            InvalidRecord("no metrics/index.json exists (run-surface.md §4.3)", path=SECTION)
        )
    wal = read_wal(tree)
    try:
        parse_wal(wal)
        closed = read_closed(tree)
    except InvalidRecord as exc:
        return [*problems, exc]
    if closed is not None:
        try:
            problems.extend(_watermark_problems(closed, wal))
        except InvalidRecord as exc:
            problems.append(exc)
    return [*problems, *_type_problems(tree, modules)]
