"""The run surface of a stored record: ``rec.observables`` and ``rec.metrics`` (run-surface.md).

:class:`Observables` is a mapping of the record's named observables (with
``del`` and assignment on a writable record). :class:`Metrics` logs events to
the live WAL the way a training job logs to a tracking server
(``rec.metrics.log(step, loss=0.5, lr=1e-3)``), reads every series back with
the closed form and the WAL merged, and densifies on ``flush``/``close``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from os import PathLike
from typing import TYPE_CHECKING, Any, Literal

from ..bindings.zarr import (
    RecordStore,
    Tree,
    WalAppender,
    closed_catalog,
    densified_writer,
    densify_plan,
    observables_writer,
    read_closed,
    read_metrics,
    read_observables,
    read_wal,
)
from ..errors import InvalidRecord, NotFound, ReadOnlyError
from ..model import (
    MetricSeries,
    Observable,
    complete_lines,
    make_event,
    merge_series,
    now_rfc3339,
    parse_wal,
)
from ..storage import Location, location_of

if TYPE_CHECKING:
    from ._record import StoredRecord

__all__ = ["HostMetrics", "Metrics", "Observables", "host_metric_stems", "open_host_metrics"]


class Observables(Mapping[str, Observable]):
    """The record's observables by name (run-surface.md §5), read when first used.

    ``obs[name]`` is an :class:`~mrecd.model.Observable`; on a writable
    record ``obs[name] = Observable.build(...)`` writes one and
    ``del obs[name]`` removes it (see :meth:`StoredRecord.write_observable`).
    """

    def __init__(self, record: StoredRecord) -> None:
        self._record = record

    def _all(self) -> dict[str, Observable]:
        return self._record._observables()

    def __getitem__(self, name: str) -> Observable:
        try:
            return self._all()[name]
        except KeyError:
            raise NotFound(
                f"the record has no observable {name!r}", path=f"observables/{name}"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __setitem__(self, name: str, observable: Observable) -> None:
        self._record.write_observable(name, observable.data, observable.document)

    def __delitem__(self, name: str) -> None:
        self._record.delete_observable(name)

    def __repr__(self) -> str:
        return f"Observables({sorted(self._all())})"


def write_observables(store: RecordStore, changes: Mapping[str, Observable | None]) -> None:
    """Replace the ``observables`` section with ``changes`` applied, the rest carried."""
    store.replace("observables", observables_writer(store.path / "observables", changes))


def read_record_observables(tree: Tree) -> dict[str, Observable]:
    """Every observable of the tree (``{}`` without the section)."""
    return read_observables(tree) or {}


class _MetricLog:
    """Logging and reading shared by a record's metrics and a host's (run-surface.md §4)."""

    def __init__(self) -> None:
        self._appender: WalAppender | None = None
        #: Per series key: whether its points carry steps (checked before each append).
        self._stepped: dict[str, bool] = {}

    def _open_writer(self) -> WalAppender:
        raise NotImplementedError

    def _read(self) -> dict[str, MetricSeries]:
        raise NotImplementedError

    def log(
        self,
        step: int | None = None,
        values: Mapping[str, float] | None = None,
        *,
        wall_time: str | None = None,
        tags: Mapping[str, Any] | None = None,
        **named: float,
    ) -> None:
        """Append one scalar event per value, durably: ``log(10, loss=0.5, lr=1e-3)``.

        Parameters
        ----------
        step
            The producer iteration (a non-negative integer), or ``None``.
        values
            ``{key: value}`` for keys that are not Python names (``"train/loss"``).
        wall_time
            RFC 3339 with an offset; defaults to now (UTC).
        tags
            Optional object stored with each event.
        **named
            More ``key=value`` pairs.

        Raises
        ------
        InvalidRecord
            An empty key, a non-integer step, a non-number value, a bad time,
            or a step given (or not) unlike the series' earlier points.
        ReadOnlyError
            The record is read-only.
        WriterBusy
            Another writer appended meanwhile (object storage).
        """
        items = {**(values or {}), **named}
        stamp = now_rfc3339() if wall_time is None else wall_time
        events = [make_event(k, v, step=step, wall_time=stamp, tags=tags) for k, v in items.items()]
        if events:
            writer = self._writer()
            for event in events:
                self._check_stepped(event.key, event.step is not None)
            writer.append(events)
            self._stepped.update((e.key, e.step is not None) for e in events)

    def _writer(self) -> WalAppender:
        if self._appender is None:
            self._appender = self._open_writer()
            self._stepped = {k: s.has_steps for k, s in self._read().items()}
        return self._appender

    def _check_stepped(self, key: str, stepped: bool) -> None:
        """A series is logged with a step always or never: its ``steps/`` array must align."""
        known = self._stepped.get(key)
        if known is not None and known != stepped:
            how = "with" if known else "without"
            raise InvalidRecord(
                f"series {key!r} was logged {how} a step; every point of a series has a step or"
                " none does, so steps/ stays aligned with series/ (run-surface.md §4.2)",
                path=f"metrics.series.{key}",
            )

    def series(self, key: str) -> MetricSeries:
        """The points of series ``key`` (values, steps, wall times), every form merged.

        Raises
        ------
        NotFound
            No event was logged under ``key``.
        """
        found = self._read().get(key)
        if found is None:
            raise NotFound(f"no metrics series {key!r}", path=f"metrics.series.{key}")
        return found

    def keys(self) -> list[str]:
        """Every series key, in first-logged order."""
        return list(self._read())

    def __contains__(self, key: object) -> bool:
        return key in self._read()

    def release(self) -> None:
        """Close the appending writer (a later ``log`` reopens it)."""
        if self._appender is not None:
            self._appender.close()
            self._appender = None


class Metrics(_MetricLog):
    """A record's metrics: log to the live WAL, read merged series, densify (run-surface.md §4).

    The first :meth:`log` on a writable record opens the single appending
    writer (cutting a torn tail left by a killed one); :meth:`flush` and
    :meth:`close` write the closed Zarr form and its watermark. Reads work on
    any record, packed ones included.
    """

    def __init__(self, record: StoredRecord) -> None:
        super().__init__()
        self._record = record

    def _tree(self) -> Tree:
        return self._record._tree

    def _read(self) -> dict[str, MetricSeries]:
        return read_metrics(self._tree())

    def _open_writer(self) -> WalAppender:
        return WalAppender(self._record._written().path)

    def flush(self) -> None:
        """Densify: write the merged series as the closed form with the watermark (§4.3)."""
        if self._record.read_only:
            raise ReadOnlyError("the record is open read-only", path=self._record.url)
        store = self._record._written()
        tree = store.tree
        closed = read_closed(tree)
        series, watermark = densify_plan(tree)
        wal = complete_lines(read_wal(tree))
        catalog = closed_catalog({} if closed is None else closed.attributes, series, watermark)
        old = store.path / "metrics"
        if self._appender is not None:  # the section is swapped whole: reopen the WAL after
            self._appender.suspend()
        store.replace("metrics", densified_writer(old, catalog, series, wal))

    def close(self) -> None:
        """Densify if this object appended anything, then release the writer."""
        try:
            if self._appender is not None:
                self.flush()
        finally:
            self.release()

    def __repr__(self) -> str:
        return f"Metrics({self.keys()})"


# -- the host surface (storage.md §2, run-surface.md §4.3) ---------------------------------------

HOST_SUFFIX = ".mlp.jsonl"
HostMode = Literal["r", "r+"]


def _host_wal(stem: str) -> str:
    if not isinstance(stem, str) or not stem or "/" in stem or stem.startswith("."):
        raise InvalidRecord(
            f"a host metrics stem is a non-empty file name without '/' or a leading '.',"
            f" not {stem!r} (storage.md §2)",
            path="stem",
        )
    return f"artifacts/{stem}{HOST_SUFFIX}"


class HostMetrics(_MetricLog):
    """The metrics of a host run directory: the WAL ``artifacts/<stem>.mlp.jsonl`` alone.

    A host (a run directory, not a record) keeps no closed form: its WAL is
    always authoritative (run-surface.md §4.3), so there is nothing to
    densify. Leftover ``<stem>.mlp.zarr/`` and ``<stem>.mlp.index.json`` are
    never read (storage.md §2).

    Parameters
    ----------
    run_dir
        The host run directory (any store location).
    stem
        The WAL's stem; ``metrics`` by default.
    mode
        ``"r"`` to read; ``"r+"`` to also :meth:`log` (the directory and
        ``artifacts/`` are created on the first event).
    """

    def __init__(
        self, run_dir: str | PathLike[str] | Location, stem: str = "metrics", mode: HostMode = "r"
    ) -> None:
        super().__init__()
        if mode not in ("r", "r+"):
            raise ValueError(f"mode must be 'r' or 'r+', not {mode!r}")
        self._wal = _host_wal(stem)
        self._root = location_of(run_dir, read_only=mode == "r")
        self._read_only = mode == "r"

    @property
    def url(self) -> str:
        """Where the WAL lives."""
        return str(self._root / self._wal)

    def _read(self) -> dict[str, MetricSeries]:
        data = self._root.store.get((self._root / self._wal).key) or b""
        return merge_series(parse_wal(data)[0])

    def _open_writer(self) -> WalAppender:
        if self._read_only:
            raise ReadOnlyError("the host metrics are open read-only", path=self.url)
        return WalAppender(self._root, wal=self._wal)

    def close(self) -> None:
        """Release the appending writer (the WAL is the closed form on a host)."""
        self.release()

    def __enter__(self) -> HostMetrics:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"HostMetrics({self.url!r})"


def host_metric_stems(run_dir: str | PathLike[str] | Location) -> list[str]:
    """The stems of every ``artifacts/*.mlp.jsonl`` of a host run directory, sorted.

    Discovery matches ``*.mlp.jsonl`` only (storage.md §2): leftover
    ``*.mlp.zarr/`` and ``*.mlp.index.json`` are not metrics.
    """
    root = location_of(run_dir, read_only=True)
    _, files = root.store.list_dir((root / "artifacts").key)
    return sorted(
        f[: -len(HOST_SUFFIX)] for f in files if f.endswith(HOST_SUFFIX) and f != HOST_SUFFIX
    )


def open_host_metrics(
    run_dir: str | PathLike[str] | Location, stem: str = "metrics", mode: HostMode = "r"
) -> HostMetrics:
    """Open the metrics WAL of a host run directory (``artifacts/<stem>.mlp.jsonl``).

    See :class:`HostMetrics`; ``mode="r+"`` to log.
    """
    return HostMetrics(run_dir, stem, mode)
