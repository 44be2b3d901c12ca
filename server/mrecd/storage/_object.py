"""Object storage (S3, GCS, Azure, obstore's ``MemoryStore``) through obstore.

Every write is a whole-object PUT; ``create`` and :class:`IfMatch` map to
obstore's conditional put modes, which S3 honours with ``If-None-Match`` and
``If-Match``. There are no positional writes and no atomic renames. Reads
are ranged GETs. The only module importing obstore.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import obstore
from obstore.exceptions import AlreadyExistsError, NotFoundError, PreconditionError

from ..errors import ReadOnlyError, RetryableError
from ._base import (
    ByteRange,
    ByteRequest,
    IfMatch,
    ObjectInfo,
    Offset,
    PutMode,
    Store,
    Suffix,
    check_key,
    check_request,
    join_key,
    precondition_failed,
)

__all__ = ["ObjectStore"]


class ObjectStore(Store):
    """The objects of an obstore store under ``prefix``.

    Parameters
    ----------
    store
        An obstore store (``obstore.store.S3Store``, ``MemoryStore`` …).
    url
        The URL it stands for (what :attr:`url` answers).
    prefix
        Keys are relative to this prefix inside the bucket.
    """

    positional_writes = False
    conditional_put = True
    atomic_rename = False

    def __init__(self, store: Any, url: str, prefix: str = "", *, read_only: bool = False) -> None:
        super().__init__(read_only=read_only)
        self._store = store
        self._url = url
        self.prefix = prefix.strip("/")

    @classmethod
    def from_url(cls, url: str, *, read_only: bool = False, **options: Any) -> ObjectStore:
        """Open ``s3://bucket/prefix`` (``gs://``, ``az://`` …), configured from the environment.

        The store is rooted at the bucket; the URL's path is the key prefix,
        so one client serves every record under it.
        """
        from obstore.store import from_url

        parts = urlsplit(url)
        bucket_url = f"{parts.scheme}://{parts.netloc}"
        store = from_url(bucket_url, **options)
        return cls(store, url.rstrip("/"), parts.path.strip("/"), read_only=read_only)

    @property
    def url(self) -> str:
        return self._url

    def child(self, prefix: str) -> Store:
        if not prefix:
            return self
        return ObjectStore(
            self._store,
            f"{self._url}/{check_key(prefix)}",
            join_key(self.prefix, prefix),
            read_only=self.read_only,
        )

    def _k(self, key: str) -> str:
        return join_key(self.prefix, check_key(key))

    # -- reading -------------------------------------------------------------------------------

    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        check_request(byte_range, key)
        options: dict[str, Any] = {}
        if isinstance(byte_range, ByteRange):
            if byte_range.end == byte_range.start:
                return b"" if self.exists(key) else None
            options["range"] = (byte_range.start, byte_range.end)
        elif isinstance(byte_range, Offset):
            options["range"] = {"offset": byte_range.offset}
        elif isinstance(byte_range, Suffix):
            if byte_range.length == 0:
                return b"" if self.exists(key) else None
            options["range"] = {"suffix": byte_range.length}
        try:
            result = obstore.get(self._store, self._k(key), options=options or None)  # type: ignore[arg-type]
            return bytes(result.bytes())
        except (NotFoundError, FileNotFoundError):
            return None
        except obstore.exceptions.GenericError as exc:
            if _range_past_end(exc):
                return b""
            raise RetryableError(f"object store read failed: {exc}", path=key) from None

    def head(self, key: str) -> ObjectInfo | None:
        try:
            meta = obstore.head(self._store, self._k(key))
        except (NotFoundError, FileNotFoundError):
            return None
        return ObjectInfo(int(meta["size"]), str(meta.get("e_tag") or meta.get("version") or ""))

    def list_dir(self, prefix: str = "") -> tuple[list[str], list[str]]:
        full = self._k(prefix) if prefix else self.prefix
        listing = obstore.list_with_delimiter(self._store, f"{full}/" if full else None)
        cut = len(full) + 1 if full else 0
        dirs = sorted(p.rstrip("/")[cut:] for p in listing["common_prefixes"])
        files = sorted(o["path"][cut:] for o in listing["objects"])
        return dirs, files

    def keys(self, prefix: str = "") -> Iterator[str]:
        full = self._k(prefix) if prefix else self.prefix
        cut = len(self.prefix) + 1 if self.prefix else 0
        found: list[str] = []
        for batch in obstore.list(self._store, f"{full}/" if full else None):
            found += [o["path"][cut:] for o in batch]
        return iter(sorted(found))

    # -- writing -------------------------------------------------------------------------------

    def put(
        self,
        key: str,
        data: bytes | bytearray | memoryview,
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        if self.read_only:
            raise ReadOnlyError("the store is open read-only", path=key)
        native: Any = {"e_tag": mode.etag} if isinstance(mode, IfMatch) else mode
        try:
            result = obstore.put(self._store, self._k(key), bytes(data), mode=native)
        except (AlreadyExistsError, PreconditionError):
            raise precondition_failed(key, mode) from None
        etag = result.get("e_tag")
        if etag is None:  # a backend that answers no ETag on put: ask
            info = self.head(key)
            etag = "" if info is None else info.etag
        return str(etag)

    def delete(self, key: str) -> None:
        if self.read_only:
            raise ReadOnlyError("the store is open read-only", path=key)
        with contextlib.suppress(NotFoundError, FileNotFoundError):
            obstore.delete(self._store, self._k(key))

    def copy(self, source: str, dest: str) -> None:
        if self.read_only:
            raise ReadOnlyError("the store is open read-only", path=dest)
        with contextlib.suppress(NotFoundError, FileNotFoundError):
            obstore.copy(self._store, self._k(source), self._k(dest))


def _range_past_end(exc: Exception) -> bool:
    text = str(exc)
    return "416" in text or ("Range" in text and "not satisfiable" in text.lower())
