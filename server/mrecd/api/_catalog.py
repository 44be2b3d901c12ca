"""The catalog: many records in one store, ``<name>.mrec`` (and packed ``<name>.mrec.zip``).

``mrecd.open(url)`` returns a :class:`Catalog` on any store of the seam: a
path or ``file://`` URL (a directory), ``memory://name``, ``s3://bucket/prefix``,
``gs://…``, ``az://…``. Collections live beside records as
``<name>.mrec.lmdb`` files; LMDB needs a local file, so they exist on stores
with a local directory (a directory, and a memory store's scratch directory).
On object storage a catalog opened with a ``cache_dir`` serves the
collections published there (``mrecd push``) read-only from verified local
copies (:mod:`mrecd.api._snapshots`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ..bindings.zarr import BRAND, UNBORN, ZIP_BRAND
from ..errors import AlreadyExists, InvalidRecord, NotFound, ReadOnlyError
from ..forcefield import ForceField
from ..model import Declaration, Frame
from ..storage import (
    ByteRequest,
    Location,
    ObjectInfo,
    SnapshotCache,
    Store,
    check_key,
    open_store,
    published_snapshots,
)
from ._collection import Collection, create_collection, open_collection
from ._record import Mode, StoredRecord, create_record, open_record, open_unborn, pack_record
from ._snapshots import COLLECTION_SUFFIX, open_snapshot, refuse_appends

if TYPE_CHECKING:
    from os import PathLike

__all__ = ["Catalog", "open_catalog"]

_NAME: Final = re.compile(r"^[A-Za-z0-9._-]+$")
#: How long deleting an unborn run waits for a birth of it in progress.
_BIRTH_WAIT: Final = 30.0
#: Longest record name: ``<name>.mrec.zip`` plus a staging prefix must fit a 255-byte file name.
MAX_NAME: Final = 200


def check_record_name(name: object) -> str:
    """Return ``name`` when it is a safe record name, else refuse.

    Safe: 1..200 characters of ``[A-Za-z0-9._-]``, not starting with ``.``
    (hidden names are the catalog's staging files) and without ``..``, so no
    name reaches outside the root.
    """
    if (
        not isinstance(name, str)
        or not _NAME.match(name)
        or len(name) > MAX_NAME
        or name.startswith(".")
        or ".." in name
    ):
        raise InvalidRecord(
            f"record name {name!r} must be 1..{MAX_NAME} characters of [A-Za-z0-9._-], not start"
            " with '.' and not contain '..'",
            path="name",
        )
    return name


class Catalog:
    """Records stored side by side in one store, addressed by name.

    Parameters
    ----------
    store
        The store holding ``<name>.mrec`` records.
    cache_dir
        Where a catalog on object storage keeps its verified copies of the
        collections published there (``None``: it serves none).
    revalidate_seconds
        How long a cached collection is served before its manifest is
        checked again (a conditional GET).
    """

    def __init__(
        self,
        store: Store,
        *,
        cache_dir: str | PathLike[str] | None = None,
        revalidate_seconds: float = 30.0,
    ) -> None:
        self._store = store
        self._root = Location(store)
        self._snapshots: SnapshotCache | None = None
        if store.local_directory() is None and cache_dir is not None:
            self._snapshots = SnapshotCache(store, cache_dir, revalidate_seconds=revalidate_seconds)

    @property
    def url(self) -> str:
        """The catalog's store URL (what :func:`mrecd.open` was given, normalised)."""
        return self._store.url

    @property
    def local_path(self) -> str | None:
        """Escape hatch: the local root directory, or ``None`` for memory and object storage."""
        return None if self._store.url.startswith("memory:") else self._store.local_directory()

    @property
    def lease_free_writes(self) -> bool:
        """Whether writers in other processes append without a lease (object storage).

        There each commit's conditional PUTs decide who wins; a writer that
        lost reopens and tries again.
        """
        return not self._store.positional_writes

    def _live(self, name: str) -> Location:
        return self._root / f"{check_record_name(name)}{BRAND}"

    def _packed(self, name: str) -> Location:
        return self._root / f"{check_record_name(name)}{ZIP_BRAND}"

    def create_record(
        self,
        name: str,
        *,
        meta: Mapping[str, Any] | None = None,
        system: Frame | None = None,
        frame: Frame | None = None,
        forcefield: ForceField | None = None,
        declaration: Declaration | None = None,
        status: Mapping[str, Any] | None = None,
        method: Mapping[str, Any] | None = None,
        overwrite: bool = False,
        exist_ok: bool = False,
    ) -> StoredRecord:
        """Create record ``name`` (keywords as :func:`mrecd.create_record`) and open it ``r+``.

        ``create_record(name)`` alone starts a run whose first appended frames
        declare the trajectory; ``exist_ok=True`` opens the record if it exists.

        Raises
        ------
        InvalidRecord
            Unsafe name or invalid content.
        AlreadyExists
            A record of that name exists, live or packed (unless ``overwrite``).
        """
        live = self._live(name)
        if self._packed(name).is_file() and not overwrite:
            if exist_ok:
                return open_record(self._packed(name), "r+")
            raise AlreadyExists(f"record {name!r} exists (packed)", path=name)
        return create_record(
            live,
            meta=meta,
            system=system,
            frame=frame,
            forcefield=forcefield,
            declaration=declaration,
            status=status,
            method=method,
            overwrite=overwrite,
            exist_ok=exist_ok,
        )

    def record(self, name: str, mode: Mode = "r") -> StoredRecord:
        """Open record ``name``: the live directory if present, else the packed zip (read-only).

        An unborn run (created with a name alone, in any process) opens as an
        unborn :class:`StoredRecord`: its first write creates it.

        Raises
        ------
        NotFound
            No record of that name.
        """
        live = self._live(name)
        if (live / "zarr.json").is_file():
            return open_record(live, mode)
        packed = self._packed(name)
        if packed.is_file():
            return open_record(packed, mode)
        unborn = open_unborn(live, mode)
        if unborn is not None:
            return unborn
        raise NotFound(f"no record named {name!r}", path=name)

    def records(self, prefix: str | None = None) -> list[str]:
        """Sorted names of the records (live or packed) that start with ``prefix``."""
        dirs, files = self._store.list_dir("")
        names = {n for d in dirs if (n := self._live_name(d)) is not None}
        names |= {n for f in files if (n := _stem(f, ZIP_BRAND)) is not None}
        return sorted(n for n in names if prefix is None or n.startswith(prefix))

    def _live_name(self, entry: str) -> str | None:
        stem = _stem(entry, BRAND)
        if stem is None:
            return None
        born = self._store.exists(f"{entry}/zarr.json")
        return stem if born or self._store.exists(f"{entry}/{UNBORN}") else None

    def __contains__(self, name: object) -> bool:
        try:
            live, packed = self._live(str(name)), self._packed(str(name))
        except InvalidRecord:
            return False
        return (live / "zarr.json").is_file() or packed.is_file() or (live / UNBORN).is_file()

    def __iter__(self) -> Iterator[str]:
        return iter(self.records())

    def delete_record(self, name: str) -> None:
        """Delete record ``name``, both its live directory and its packed zip.

        Raises
        ------
        NotFound
            No record of that name.
        """
        live, packed = self._live(name), self._packed(name)
        if name not in self:
            raise NotFound(f"no record named {name!r}", path=name)
        if not (live / "zarr.json").is_file() and (live / UNBORN).is_file():
            with self._store.writer_lease(live.key, wait=_BIRTH_WAIT):  # not during a birth
                self._store.delete((live / UNBORN).key)
        if live.is_dir():
            # the root zarr.json goes first, so the name disappears at once; then the bytes
            trash = f".{live.name}.{uuid.uuid4().hex[:12]}.deleted"
            if self._store.atomic_rename:
                self._store.rename(live.key, trash)
            else:
                self._store.delete((live / "zarr.json").key)
                trash = live.key
            self._store.delete_prefix(trash)
        packed.unlink(missing_ok=True)

    def check(self) -> None:
        """Ask the store one cheap question, so that an unreachable store raises.

        Raises
        ------
        StoreUnavailable
            The store could not be reached.
        """
        self._store.exists("zarr.json")

    def key_info(self, name: str, key: str) -> ObjectInfo | None:
        """Size and ETag of the raw store key ``key`` inside live record ``name``.

        Parameters
        ----------
        name
            A record name (checked as by :func:`check_record_name`).
        key
            A store key relative to the record root (``zarr.json``,
            ``trajectory/atoms/x/c/0``); checked by :func:`mrecd.storage.check_key`.

        Returns
        -------
        ObjectInfo or None
            ``None`` when the record or the key does not exist (packed
            records have no raw keys).
        """
        if not _public_key(key):
            return None
        return self._store.head(f"{self._live(name).key}/{key}")

    def read_key(self, name: str, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        """The bytes of raw store key ``key`` of live record ``name`` (``None`` when absent).

        Parameters
        ----------
        name, key
            As for :meth:`key_info`.
        byte_range
            Only these bytes (clipped at the object's end).
        """
        if not _public_key(key):
            return None
        return self._store.get(f"{self._live(name).key}/{key}", byte_range)

    def pack(
        self,
        name: str,
        dest: str | PathLike[str] | Location | None = None,
        *,
        overwrite: bool = False,
    ) -> Location:
        """Pack live record ``name`` into ``dest`` (default ``<name>.mrec.zip`` in the catalog)."""
        live = self._live(name)
        if not (live / "zarr.json").is_file():
            raise NotFound(f"no live record named {name!r}", path=name)
        return pack_record(live, self._packed(name) if dest is None else dest, overwrite=overwrite)

    # -- collections (one *.mrec.lmdb file each) ---------------------------------------------

    def _collection_path(self, name: str) -> Path:
        local = self._store.local_directory()
        if local is None:
            check_record_name(name)
            raise refuse_appends(name)
        return Path(local) / f"{check_record_name(name)}{COLLECTION_SUFFIX}"

    def create_collection(
        self,
        name: str,
        *,
        meta: Mapping[str, Any],
        declaration: Declaration | Mapping[str, Any] | None = None,
        index_columns: Mapping[str, Mapping[str, Any]] | None = None,
        forcefield: ForceField | Mapping[str, Any] | None = None,
        overwrite: bool = False,
    ) -> Collection:
        """Create collection ``name`` (keywords as :func:`mrecd.create_collection`), open ``r+``.

        Raises
        ------
        InvalidRecord
            Unsafe name or invalid content.
        AlreadyExists
            A collection of that name exists (unless ``overwrite``).
        """
        path = self._collection_path(name)
        if path.exists() and not overwrite:
            raise AlreadyExists(f"collection {name!r} exists", path=name)
        return create_collection(
            path,
            meta=meta,
            declaration=declaration,
            index_columns=index_columns,
            forcefield=forcefield,
            overwrite=overwrite,
        )

    def collection(self, name: str, mode: Mode = "r") -> Collection:
        """Open collection ``name``; :class:`~mrecd.errors.NotFound` when there is none.

        On object storage: the collection published as ``name``, read from
        this catalog's verified local copy (fetched on first use, revalidated
        every ``revalidate_seconds``). Close it after use, so that a newer
        snapshot's copy replaces the old one on disk.

        Raises
        ------
        ReadOnlyError
            ``mode="r+"`` on object storage: appends stay on the replica that
            owns the live file; or object storage without a ``cache_dir``.
        StoreUnavailable
            The store failed before a copy was held, or a download failed its checksums.
        """
        if self._store.local_directory() is None:
            check_record_name(name)
            if mode != "r":
                raise refuse_appends(name)
            if self._snapshots is None:
                raise ReadOnlyError(
                    f"collections on {self.url} are published snapshots; serving them needs a"
                    " local cache directory (cache_dir, MRECD_CACHE_DIR)",
                    path=name,
                )
            return open_snapshot(self._snapshots, name)
        path = self._collection_path(name)
        if not path.is_file():
            raise NotFound(f"no collection named {name!r}", path=name)
        return open_collection(path, mode)

    def collections(self, prefix: str | None = None) -> list[str]:
        """Sorted names of the collections that start with ``prefix``.

        On object storage: those published there (one listing).
        """
        local = self._store.local_directory()
        suffix = COLLECTION_SUFFIX
        if local is None:
            keys = published_snapshots(self._store)
        elif Path(local).is_dir():
            keys = [e.name for e in Path(local).iterdir()]
        else:
            return []
        names = (k[: -len(suffix)] for k in keys if k.endswith(suffix) and not k.startswith("."))
        return sorted(n for n in names if prefix is None or n.startswith(prefix))

    def delete_collection(self, name: str) -> None:
        """Delete collection ``name`` (its file and LMDB's lock file beside it)."""
        path = self._collection_path(name)
        if not path.is_file():
            raise NotFound(f"no collection named {name!r}", path=name)
        path.unlink()
        Path(f"{path}-lock").unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"Catalog({self.url!r})"


def _public_key(key: str) -> bool:
    """A record's raw key a reader may see: well formed, and none of the store's hidden files."""
    return bool(key) and not any(part.startswith(".") for part in check_key(key).split("/"))


def _stem(entry: str, brand: str) -> str | None:
    """The record name ``entry`` stands for with ``brand``, or ``None`` (others, unsafe names)."""
    if not entry.endswith(brand) or entry.startswith("."):
        return None
    try:
        return check_record_name(entry[: -len(brand)])
    except InvalidRecord:
        return None


def open_catalog(
    url: str | PathLike[str] | Store,
    *,
    create: bool = True,
    cache_dir: str | PathLike[str] | None = None,
    revalidate_seconds: float = 30.0,
) -> Catalog:
    """Open the catalog at ``url``: a path, ``file://``, ``memory://name``, ``s3://bucket/prefix`` …

    Parameters
    ----------
    url
        Where the records live (or a :class:`~mrecd.storage.Store`).
    create
        Make a missing local root directory; with ``False`` a missing
        directory raises :class:`~mrecd.NotFound`.
    cache_dir
        On object storage: the local directory of verified copies of the
        collections published there (see :meth:`Catalog.collection`).
    revalidate_seconds
        How often (at most) a cached collection's manifest is checked again.

    Raises
    ------
    InvalidRecord
        An unsupported URL scheme, or a local root that is a file.
    """
    store = open_store(url)
    local = store.local_directory()
    if local is not None and isinstance(url, (str, Path)) and not str(url).startswith("memory:"):
        root = Path(local)
        if root.exists() and not root.is_dir():
            raise InvalidRecord("the catalog root is a file, not a directory", path=str(root))
        if not root.exists():
            if not create:
                raise NotFound("no catalog root at this path", path=str(root))
            root.mkdir(parents=True)
    return Catalog(store, cache_dir=cache_dir, revalidate_seconds=revalidate_seconds)
