"""Where records come from and go to: ``STORE/NAME`` names, record paths, sinks.

A *sink* is anything with ``create_record(name, meta=, system=, declaration=)``
returning a record whose ``trajectory.extend(frames)`` appends: a local
:class:`~mrecd.api.Catalog`, or a server through :class:`mrecd_client.Client`
(``http://host:port``), whose appends travel as idempotent producer batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from os import PathLike, fspath
from pathlib import Path
from typing import Any, Protocol

from ..api import Catalog, StoredRecord, open_record
from ..api import open as open_catalog
from ..errors import InvalidRecord
from ..model import Declaration, Frame

__all__ = ["RecordSink", "is_service_url", "open_source", "sink_of", "split_target", "split_url"]

_BRANDS = (".mrec.zip", ".mrec")
_SCHEMES = ("http://", "https://")
#: Bytes of frames per POST when ingest streams into a server: well under the
#: service's default 256 MiB body limit, large enough to amortize a request.
REMOTE_BATCH_BYTES = 16 << 20


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


def is_service_url(target: object) -> bool:
    """Whether ``target`` is an ``http(s)://`` URL (a server), not a path."""
    return isinstance(target, str) and target.startswith(_SCHEMES)


def split_url(target: str) -> tuple[str, str]:
    """``http://host:port/NAME`` as ``(service URL, record name)``.

    Raises
    ------
    InvalidRecord
        Not an ``http(s)://`` URL, or no record name after the host.
    """
    if not is_service_url(target):
        raise InvalidRecord("a server target is http://host:port/NAME", path=target)
    scheme, _, rest = target.partition("://")
    host, _, path = rest.partition("/")
    base, _, name = path.rstrip("/").rpartition("/")
    for brand in _BRANDS:
        name = name.removesuffix(brand)
    if not host or not name:
        raise InvalidRecord(
            "a server target names the record after the host: http://host:port/NAME", path=target
        )
    return f"{scheme}://{host}" + (f"/{base}" if base else ""), name


def sink_of(
    store: str | PathLike[str] | RecordSink,
    *,
    token: str | None = None,
    frame_bytes: int = 0,
) -> tuple[RecordSink, Callable[[], None]]:
    """Where ingest writes, and how to let go of it.

    ``store`` itself when it can create records; an :class:`mrecd_client.Client`
    for an ``http(s)://`` service URL (``token`` its bearer token, POSTs of at
    most 64 frames and about 16 MiB of ``frame_bytes`` frames); else the local
    catalog rooted at that path.
    """
    if is_service_url(store):
        from mrecd_client import Client  # the client loads only for a server target

        batch = max(1, min(64, REMOTE_BATCH_BYTES // max(1, frame_bytes)))
        client = Client(str(store), token, batch_frames=batch)
        return client, client.close
    if not isinstance(store, (str, PathLike)):
        return store, _nothing
    catalog: Catalog = open_catalog(fspath(store))
    return catalog, _nothing


def _nothing() -> None:
    """Nothing to release (the caller's own sink, or a local catalog)."""


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
