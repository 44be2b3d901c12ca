"""The catalog: many records in one root, ``<root>/<name>.mrec`` (and packed ``<name>.mrec.zip``).

``mrecd.open(url)`` returns a :class:`Catalog`. Only local roots (a path or a
``file://`` URL) exist so far; object storage comes later. Collections will
live beside records as ``<name>.mrec.lmdb``: the catalog never lists or
touches those names.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit

from ..bindings.zarr._layout import BRAND, ZIP_BRAND
from ..errors import AlreadyExists, InvalidRecord, NotFound
from ..forcefield import ForceField
from ..model import Declaration, Frame
from ._collection import Collection, create_collection, open_collection
from ._record import Mode, StoredRecord, create_record, open_record, pack_record

if TYPE_CHECKING:
    from os import PathLike

__all__ = ["Catalog", "open_catalog"]

_NAME: Final = re.compile(r"^[A-Za-z0-9._-]+$")
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


def _root_of(url: str | PathLike[str]) -> Path:
    if not isinstance(url, str):
        return Path(url)
    parts = urlsplit(url)
    if len(parts.scheme) <= 1:  # a bare path (a one-letter scheme would be a drive letter)
        return Path(url)
    if parts.scheme != "file":
        raise InvalidRecord(
            f"catalog URL scheme {parts.scheme!r} is not supported yet; use a path or a"
            " file:// URL",
            path=url,
        )
    if parts.netloc not in ("", "localhost"):
        raise InvalidRecord(f"file:// URL names a remote host {parts.netloc!r}", path=url)
    return Path(unquote(parts.path))


class Catalog:
    """Records stored side by side in one root directory, addressed by name.

    Parameters
    ----------
    root
        The directory holding ``<name>.mrec`` records.
    """

    def __init__(self, root: Path) -> None:
        self._root = root

    @property
    def root(self) -> Path:
        """The directory holding the records."""
        return self._root

    def _live(self, name: str) -> Path:
        return self._root / f"{check_record_name(name)}{BRAND}"

    def _packed(self, name: str) -> Path:
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
    ) -> StoredRecord:
        """Create record ``name`` (keywords as :func:`mrecd.create_record`) and open it ``r+``.

        Raises
        ------
        InvalidRecord
            Unsafe name or invalid content.
        AlreadyExists
            A record of that name exists, live or packed (unless ``overwrite``).
        """
        live = self._live(name)
        if self._packed(name).exists() and not overwrite:
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
        )

    def record(self, name: str, mode: Mode = "r") -> StoredRecord:
        """Open record ``name``: the live directory if present, else the packed zip (read-only).

        Raises
        ------
        NotFound
            No record of that name.
        """
        live = self._live(name)
        if live.exists():
            return open_record(live, mode)
        packed = self._packed(name)
        if packed.exists():
            return open_record(packed, mode)
        raise NotFound(f"no record named {name!r}", path=name)

    def records(self, prefix: str | None = None) -> list[str]:
        """Sorted names of the records (live or packed) that start with ``prefix``."""
        if not self._root.is_dir():
            return []
        names: set[str] = set()
        for entry in self._root.iterdir():
            name = _record_name(entry)
            if name is not None and (prefix is None or name.startswith(prefix)):
                names.add(name)
        return sorted(names)

    def __contains__(self, name: object) -> bool:
        try:
            return self._live(str(name)).exists() or self._packed(str(name)).exists()
        except InvalidRecord:
            return False

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
        if not live.exists() and not packed.exists():
            raise NotFound(f"no record named {name!r}", path=name)
        if live.is_dir():
            # rename first so the name disappears at once, then remove the bytes
            trash = Path(
                tempfile.mkdtemp(prefix=f".{live.name}.", suffix=".deleted", dir=self._root)
            )
            live.rename(trash / live.name)
            shutil.rmtree(trash, ignore_errors=True)
        packed.unlink(missing_ok=True)

    def pack(
        self, name: str, dest: str | PathLike[str] | None = None, *, overwrite: bool = False
    ) -> Path:
        """Pack live record ``name`` into ``dest`` (default ``<root>/<name>.mrec.zip``)."""
        live = self._live(name)
        if not live.is_dir():
            raise NotFound(f"no live record named {name!r}", path=name)
        return pack_record(live, self._packed(name) if dest is None else dest, overwrite=overwrite)

    # -- collections (one *.mrec.lmdb file each) ---------------------------------------------

    def _collection_path(self, name: str) -> Path:
        return self._root / f"{check_record_name(name)}.mrec.lmdb"

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
        """Open collection ``name``; :class:`~mrecd.errors.NotFound` when there is none."""
        path = self._collection_path(name)
        if not path.is_file():
            raise NotFound(f"no collection named {name!r}", path=name)
        return open_collection(path, mode)

    def collections(self, prefix: str | None = None) -> list[str]:
        """Sorted names of the collections that start with ``prefix``."""
        if not self._root.is_dir():
            return []
        suffix = ".mrec.lmdb"
        names = (e.name[: -len(suffix)] for e in self._root.iterdir() if e.name.endswith(suffix))
        return sorted(n for n in names if prefix is None or n.startswith(prefix))

    def delete_collection(self, name: str) -> None:
        """Delete collection ``name`` (its file and LMDB's lock file beside it)."""
        path = self._collection_path(name)
        if not path.is_file():
            raise NotFound(f"no collection named {name!r}", path=name)
        path.unlink()
        Path(f"{path}-lock").unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"Catalog({str(self._root)!r})"


def _record_name(entry: Path) -> str | None:
    """The record name ``entry`` stands for, or ``None`` (staging files, collections, others)."""
    filename = entry.name
    if filename.startswith("."):
        return None
    if filename.endswith(BRAND) and entry.is_dir() and (entry / "zarr.json").is_file():
        stem = filename[: -len(BRAND)]
    elif filename.endswith(ZIP_BRAND) and entry.is_file():
        stem = filename[: -len(ZIP_BRAND)]
    else:
        return None
    try:
        return check_record_name(stem)
    except InvalidRecord:
        return None


def open_catalog(url: str | PathLike[str], *, create: bool = True) -> Catalog:
    """Open the catalog rooted at ``url``: a path or a ``file://`` URL.

    Parameters
    ----------
    url
        The root directory. Other schemes (``s3://`` ...) are refused for now.
    create
        Make the root directory when it is missing; with ``False`` a missing
        root raises :class:`~mrecd.NotFound`.

    Raises
    ------
    InvalidRecord
        An unsupported URL scheme, or a root that is a file.
    """
    root = _root_of(url)
    if root.exists() and not root.is_dir():
        raise InvalidRecord("the catalog root is a file, not a directory", path=str(root))
    if not root.exists():
        if not create:
            raise NotFound("no catalog root at this path", path=str(root))
        root.mkdir(parents=True)
    return Catalog(root)
