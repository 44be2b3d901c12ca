"""A view of one store's keys under a prefix (a record inside a catalog's store)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO

from ._base import (
    ByteRequest,
    ObjectInfo,
    PositionalFile,
    PutMode,
    RangeReader,
    Revalidated,
    Store,
    WriterLease,
    join_key,
)

__all__ = ["PrefixStore"]


class PrefixStore(Store):
    """The keys of ``parent`` under ``prefix``, addressed relative to it."""

    def __init__(self, parent: Store, prefix: str) -> None:
        super().__init__(read_only=parent.read_only)
        self.parent = parent
        self.prefix = prefix
        self.positional_writes = parent.positional_writes
        self.conditional_put = parent.conditional_put
        self.atomic_rename = parent.atomic_rename

    def _k(self, key: str) -> str:
        return join_key(self.prefix, key)

    @property
    def url(self) -> str:
        return f"{self.parent.url.rstrip('/')}/{self.prefix}"

    def child(self, prefix: str) -> Store:
        return self.parent.child(self._k(prefix)) if prefix else self

    def local_directory(self) -> str | None:
        base = self.parent.local_directory()
        return None if base is None else f"{base}/{self.prefix}"

    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        return self.parent.get(self._k(key), byte_range)

    def get_if_none_match(self, key: str, etag: str | None) -> Revalidated | None:
        return self.parent.get_if_none_match(self._k(key), etag)

    def head(self, key: str) -> ObjectInfo | None:
        return self.parent.head(self._k(key))

    def list_dir(self, prefix: str = "") -> tuple[list[str], list[str]]:
        return self.parent.list_dir(self._k(prefix))

    def keys(self, prefix: str = "") -> Iterator[str]:
        cut = len(self.prefix) + 1
        return (k[cut:] for k in self.parent.keys(self._k(prefix)))

    def list_info(self, prefix: str = "") -> dict[str, ObjectInfo]:
        cut = len(self.prefix) + 1
        return {k[cut:]: v for k, v in self.parent.list_info(self._k(prefix)).items()}

    def open_reader(self, key: str) -> RangeReader | None:
        return self.parent.open_reader(self._k(key))

    def put(
        self,
        key: str,
        data: bytes | bytearray | memoryview,
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        return self.parent.put(self._k(key), data, mode=mode, durable=durable)

    def put_file(
        self,
        key: str,
        source: IO[bytes],
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        return self.parent.put_file(self._k(key), source, mode=mode, durable=durable)

    def delete(self, key: str) -> None:
        self.parent.delete(self._k(key))

    def delete_prefix(self, prefix: str) -> None:
        self.parent.delete_prefix(self._k(prefix))

    def copy(self, source: str, dest: str) -> None:
        self.parent.copy(self._k(source), self._k(dest))

    def rename(self, source: str, dest: str) -> None:
        self.parent.rename(self._k(source), self._k(dest))

    def sync(self, keys: Iterable[str]) -> None:
        self.parent.sync(self._k(k) for k in keys)

    def open_positional(self, key: str) -> PositionalFile:
        return self.parent.open_positional(self._k(key))

    def writer_lease(self, key: str, *, wait: float = 0.0) -> WriterLease:
        return self.parent.writer_lease(self._k(key), wait=wait)
