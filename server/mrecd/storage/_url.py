"""From a URL or a path to a :class:`~mrecd.storage.Store`."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..errors import InvalidRecord
from ._base import Store
from ._directory import DirectoryStore
from ._memory import memory_store

__all__ = ["OBJECT_SCHEMES", "open_store"]

#: Schemes served by obstore.
OBJECT_SCHEMES = frozenset({"s3", "s3a", "gs", "az", "abfs", "abfss", "azure", "http", "https"})


def open_store(url: str | os.PathLike[str] | Store, *, read_only: bool = False) -> Store:
    """The store at ``url``: a bare path or ``file://`` (a directory), ``memory://name``,
    or ``s3://bucket/prefix``, ``gs://…``, ``az://…`` (obstore; credentials and endpoints
    from the environment as obstore reads them).

    Raises
    ------
    InvalidRecord
        An unknown scheme, or a ``file://`` URL naming another host.
    """
    if isinstance(url, Store):
        return url
    if not isinstance(url, str):
        return DirectoryStore(Path(url), read_only=read_only)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if len(scheme) <= 1:  # a bare path (a one-letter scheme would be a drive letter)
        return DirectoryStore(Path(url), read_only=read_only)
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise InvalidRecord(f"file:// URL names a remote host {parts.netloc!r}", path=url)
        return DirectoryStore(Path(unquote(parts.path)), read_only=read_only)
    if scheme == "memory":
        name = (parts.netloc + parts.path).strip("/")
        store = memory_store(name.split("/", 1)[0], read_only=read_only)
        rest = name.split("/", 1)[1] if "/" in name else ""
        return store.child(rest)
    if scheme in OBJECT_SCHEMES:
        from ._object import ObjectStore

        return ObjectStore.from_url(url, read_only=read_only)
    raise InvalidRecord(
        f"store URL scheme {parts.scheme!r} is not one of file, memory, s3, gs, az", path=url
    )
