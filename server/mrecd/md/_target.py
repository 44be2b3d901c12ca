"""Where records come from and go to: ``STORE/NAME`` names, record paths, sinks.

A *sink* is anything with ``create_record(name, meta=, system=, declaration=)``
returning a record whose ``trajectory.extend(frames)`` appends: a local
:class:`~mrecd.api.Catalog` today, an HTTP client's store later.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from os import PathLike, fspath
from pathlib import Path
from typing import Any, Protocol

from ..api import Catalog, StoredRecord, open_record
from ..api import open as open_catalog
from ..model import Declaration, Frame

__all__ = ["RecordSink", "open_source", "sink_of", "split_target"]

_BRANDS = (".mrec.zip", ".mrec")


class SinkTrajectory(Protocol):
    """What ingest appends to: a trajectory taking frames in batches."""

    def extend(self, frames: Iterable[Frame]) -> int:
        """Append ``frames``, all or nothing; returns the frame count."""
        ...


class SinkRecord(Protocol):
    """A record being written by ingest."""

    @property
    def trajectory(self) -> Any:
        """The record's trajectory (a :class:`SinkTrajectory`)."""
        ...

    def close(self) -> None:
        """Commit durably and release the record."""
        ...


class RecordSink(Protocol):
    """Where ingest creates its record (a :class:`~mrecd.api.Catalog`, or a future remote store)."""

    def create_record(
        self,
        name: str,
        *,
        meta: Mapping[str, Any] | None = ...,
        system: Frame | None = ...,
        declaration: Declaration | None = ...,
    ) -> SinkRecord:
        """Create record ``name``; refuse a name that exists."""
        ...


def split_target(target: str | PathLike[str]) -> tuple[Path, str]:
    """``STORE/NAME`` (or ``STORE/NAME.mrec``) as ``(store root, record name)``.

    A bare ``NAME`` is a record in the current directory.
    """
    path = Path(fspath(target))
    name = path.name
    for brand in _BRANDS:
        if name.endswith(brand):
            name = name[: -len(brand)]
            break
    return path.parent, name


def sink_of(store: str | PathLike[str] | RecordSink) -> RecordSink:
    """``store`` itself when it can create records, else the local catalog rooted at that path."""
    if not isinstance(store, (str, PathLike)):
        return store
    catalog: Catalog = open_catalog(fspath(store))
    return catalog


def open_source(source: StoredRecord | str | PathLike[str]) -> tuple[StoredRecord, bool]:
    """The record ``source`` names, and whether the caller opened it (and so must close it).

    ``source`` is an open :class:`~mrecd.api.StoredRecord`, a record root
    (``*.mrec`` directory or ``*.mrec.zip``), or ``STORE/NAME``.

    Raises
    ------
    NotFound
        No such record.
    """
    if isinstance(source, StoredRecord):
        return source, False
    path = Path(fspath(source))
    if path.name.endswith(_BRANDS) and path.exists():
        return open_record(path), True
    root, name = split_target(path)
    return open_catalog(root, create=False).record(name), True
