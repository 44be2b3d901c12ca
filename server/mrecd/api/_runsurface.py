"""The run surface of a stored record: ``rec.observables`` and ``rec.metrics`` (run-surface.md).

:class:`Observables` is a mapping of the record's named observables (with
``del`` and assignment on a writable record). :class:`Metrics` logs events to
the live WAL the way a training job logs to a tracking server
(``rec.metrics.log(step, loss=0.5, lr=1e-3)``), reads every series back with
the closed form and the WAL merged, and densifies on ``flush``/``close``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

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
from ..model import MetricSeries, Observable, complete_lines, make_event, now_rfc3339

if TYPE_CHECKING:
    from ._record import StoredRecord

__all__ = ["Metrics", "Observables"]


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


class Metrics:
    """A record's metrics: log to the live WAL, read merged series, densify (run-surface.md §4).

    The first :meth:`log` on a writable record opens the single appending
    writer (cutting a torn tail left by a killed one); :meth:`flush` and
    :meth:`close` write the closed Zarr form and its watermark. Reads work on
    any record, packed ones included.
    """

    def __init__(self, record: StoredRecord) -> None:
        self._record = record
        self._appender: WalAppender | None = None
        #: Per series key: whether its points carry steps (checked before each append).
        self._stepped: dict[str, bool] = {}

    def _tree(self) -> Tree:
        return self._record._tree

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
            store = self._record._written()
            self._appender = WalAppender(store.path)
            self._stepped = {k: s.has_steps for k, s in read_metrics(store.tree).items()}
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
        """The points of series ``key`` (values, steps, wall times), closed form and WAL merged.

        Raises
        ------
        NotFound
            No event was logged under ``key``.
        """
        found = read_metrics(self._tree()).get(key)
        if found is None:
            raise NotFound(f"no metrics series {key!r}", path=f"metrics.series.{key}")
        return found

    def keys(self) -> list[str]:
        """Every series key, in first-logged order."""
        return list(read_metrics(self._tree()))

    def __contains__(self, key: object) -> bool:
        return key in read_metrics(self._tree())

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

    def release(self) -> None:
        """Close the appending writer without densifying (a later ``log`` reopens it)."""
        if self._appender is not None:
            self._appender.close()
            self._appender = None

    def close(self) -> None:
        """Densify if this object appended anything, then release the writer."""
        try:
            if self._appender is not None:
                self.flush()
        finally:
            self.release()

    def __repr__(self) -> str:
        return f"Metrics({self.keys()})"
