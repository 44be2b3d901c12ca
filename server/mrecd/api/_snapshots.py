"""Collections past one machine: published snapshots of a ``*.mrec.lmdb`` file.

LMDB needs a local file, so a collection reaches object storage as a
snapshot (:mod:`mrecd.storage._snapshot`): :func:`publish_collection`
compacts a copy of one committed state and publishes it as one object plus
a manifest; a catalog on ``s3://…`` opened with a ``cache_dir`` serves it
read-only from a verified local copy (:class:`SnapshotCollection`).
Appends stay on the replica that owns the live file: publish again to ship
them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Final

from ..bindings.lmdb import LmdbCollection
from ..errors import InvalidRecord, NotFound, ReadOnlyError
from ..storage import (
    DEFAULT_PART_SIZE,
    Manifest,
    SnapshotCache,
    Store,
    open_store,
    publish_snapshot,
)
from ._collection import Collection, open_collection

__all__ = ["COLLECTION_SUFFIX", "SnapshotCollection", "open_snapshot", "publish_collection"]

COLLECTION_SUFFIX: Final = ".mrec.lmdb"

#: Why a published snapshot takes no appends (the message every refusal carries).
APPENDS_STAY: Final = (
    "is a published snapshot, served read-only from a local cache; appends stay on the"
    " replica that owns the live *.mrec.lmdb file (append there, then publish again with"
    " mrecd push)"
)


class SnapshotCollection(Collection):
    """A collection read from the verified local copy of a published snapshot.

    Reads as any :class:`Collection` does; :meth:`append`, :meth:`extend`
    and :meth:`compact` raise :class:`~mrecd.errors.ReadOnlyError`.
    """

    __slots__ = ("_manifest",)

    def __init__(self, binding: LmdbCollection, manifest: Manifest) -> None:
        super().__init__(binding)
        self._manifest = manifest

    @property
    def snapshot(self) -> dict[str, Any]:
        """The snapshot served: ``created``, ``sha256``, ``size``, ``object`` and ``summary``."""
        m = self._manifest
        return {
            "created": m.created,
            "sha256": m.sha256,
            "size": m.size,
            "object": m.object,
            "summary": dict(m.summary),
        }

    def _refuse(self) -> ReadOnlyError:
        return ReadOnlyError(f"collection {self._manifest.key!r} {APPENDS_STAY}", path="collection")

    def append(self, record: Any, *, index: Any = None) -> int:
        """Refused: see :data:`APPENDS_STAY`."""
        raise self._refuse()

    def extend(self, records: Any, *, index: Any = None) -> range:
        """Refused: see :data:`APPENDS_STAY`."""
        raise self._refuse()

    def compact(self, path: Any = None, *, overwrite: bool = False) -> None:
        """Refused: a snapshot is published compacted."""
        raise self._refuse()

    def __repr__(self) -> str:
        return f"SnapshotCollection({self._manifest.key!r}, created={self._manifest.created!r})"


def refuse_appends(name: str) -> ReadOnlyError:
    """The error for opening published collection ``name`` to append (or create, delete)."""
    return ReadOnlyError(f"collection {name!r} {APPENDS_STAY}", path=name)


def open_snapshot(cache: SnapshotCache, name: str) -> SnapshotCollection:
    """Open the local copy of the snapshot published as ``<name>.mrec.lmdb`` (fetched as needed).

    Raises
    ------
    NotFound
        No collection of that name is published.
    StoreUnavailable
        The store failed before any copy was held, or a download failed its checksums.
    """
    key = f"{name}{COLLECTION_SUFFIX}"
    for attempt in range(2):
        cached = cache.get(key)
        try:
            return SnapshotCollection(LmdbCollection.open(os.fspath(cached.path)), cached.manifest)
        except NotFound:  # pruned by a newer snapshot between the lookup and the open
            if attempt:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def publish_collection(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str] | Store,
    *,
    name: str | None = None,
    overwrite: bool = False,
    part_size: int = DEFAULT_PART_SIZE,
    progress: bool = False,
) -> str:
    """Publish collection file ``source`` to the catalog ``dest`` as one snapshot.

    A compacted copy of the collection's current committed state is written
    to a temporary file (``TMPDIR``), then uploaded as one object named by
    its SHA-256, then the manifest ``<name>.mrec.lmdb.manifest.json`` is
    written: the commit point. Replicas serving ``dest`` pick it up at
    their next revalidation.

    Parameters
    ----------
    source
        A ``<name>.mrec.lmdb`` file.
    dest
        The catalog's store: ``s3://bucket/prefix``, any store URL, or a store.
    name
        The collection's name there (default: the file's stem).
    overwrite
        Replace a snapshot already published under that name.
    part_size
        Bytes per checksummed part of the manifest (a replica's unit of
        ranged GETs and of resumption).
    progress
        Show a progress bar of the upload on standard error.

    Returns
    -------
    str
        The published collection's URL (``s3://bucket/prefix/<name>.mrec.lmdb``).

    Raises
    ------
    InvalidRecord
        ``source`` is not a ``*.mrec.lmdb`` collection, or ``name`` is unsafe.
    NotFound
        No file at ``source``.
    AlreadyExists
        A snapshot of that name is published and ``overwrite`` is false.
    """
    from ._catalog import check_record_name

    path = Path(source)
    if not path.name.endswith(COLLECTION_SUFFIX):
        raise InvalidRecord(
            f"a collection to publish is a *{COLLECTION_SUFFIX} file", path=os.fspath(source)
        )
    stem = check_record_name(name if name is not None else path.name[: -len(COLLECTION_SUFFIX)])
    store = open_store(dest)
    with tempfile.TemporaryDirectory(prefix="mrecd-publish-") as scratch:
        copy = Path(scratch) / f"{stem}{COLLECTION_SUFFIX}"
        with open_collection(path) as collection:
            collection.compact(copy)
        with open_collection(copy) as compacted:
            summary = _summary(compacted)
        manifest = publish_snapshot(
            store,
            f"{stem}{COLLECTION_SUFFIX}",
            copy,
            summary=summary,
            overwrite=overwrite,
            part_size=part_size,
            progress=progress,
        )
    return f"{store.url.rstrip('/')}/{manifest.key}"


def _summary(collection: Collection) -> dict[str, Any]:
    """What a manifest says of the collection: counts, meta, declaration, index columns."""
    declaration = collection.declaration
    return {
        "kind": "collection",
        "n_records": len(collection),
        "n_frames": collection.n_frames,
        "meta": collection.meta,
        "declaration": None if declaration is None else declaration.to_dict(),
        "index_columns": sorted(collection.index_columns),
        "forcefield": collection.forcefield is not None,
    }
