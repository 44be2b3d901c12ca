"""A store that counts the requests and bytes passing through it, per verb.

Benchmarks and tests use it to state costs as requests ("a warm frame read
is one GET per array") rather than as timings.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Final, cast

from ._base import (
    ByteRequest,
    ObjectInfo,
    PositionalFile,
    PutMode,
    RangeReader,
    Revalidated,
    Store,
    WriterLease,
)

__all__ = ["VERBS", "CountingStore", "VerbCount"]

#: The verbs counted. A ranged read of an open reader is a ``get``; opening
#: it is a ``head``; ``keys``, ``list_dir`` and ``list_info`` are each one
#: ``list`` (a paged listing still counts once); a positional write is a ``put``.
VERBS: Final = ("get", "head", "list", "put", "delete", "copy", "rename")


@dataclass(slots=True)
class VerbCount:
    """Requests of one verb, and the payload bytes they moved (read or written)."""

    requests: int = 0
    bytes: int = 0


class CountingStore(Store):
    """Every call forwarded to ``inner``, counted per verb (thread-safe).

    Parameters
    ----------
    inner
        The store that does the work; its capabilities are this store's.

    Examples
    --------
    >>> from mrecd.storage import memory_store
    >>> store = CountingStore(memory_store("doc"))
    >>> _ = store.put("a", b"xyz"); _ = store.get("a")
    >>> store.requests("get"), store.nbytes("put")
    (1, 3)
    """

    def __init__(self, inner: Store) -> None:
        super().__init__(read_only=inner.read_only)
        self.inner = inner
        self.positional_writes = inner.positional_writes
        self.conditional_put = inner.conditional_put
        self.atomic_rename = inner.atomic_rename
        self._lock = threading.Lock()
        self._counts = {verb: VerbCount() for verb in VERBS}

    # -- the counters ----------------------------------------------------------------------------

    def count(self, verb: str, nbytes: int = 0) -> None:
        """Record one ``verb`` request that moved ``nbytes`` bytes."""
        with self._lock:
            entry = self._counts[verb]
            entry.requests += 1
            entry.bytes += nbytes

    def requests(self, verb: str | None = None) -> int:
        """Requests of ``verb`` so far (of every verb when ``None``)."""
        with self._lock:
            counts = [self._counts[verb]] if verb else list(self._counts.values())
            return sum(c.requests for c in counts)

    def nbytes(self, verb: str | None = None) -> int:
        """Payload bytes moved by ``verb`` so far (by every verb when ``None``)."""
        with self._lock:
            counts = [self._counts[verb]] if verb else list(self._counts.values())
            return sum(c.bytes for c in counts)

    def snapshot(self) -> dict[str, VerbCount]:
        """A copy of every counter, verb → :class:`VerbCount` (verbs not used included)."""
        with self._lock:
            return {v: VerbCount(c.requests, c.bytes) for v, c in self._counts.items()}

    def reset(self) -> None:
        """Set every counter back to zero."""
        with self._lock:
            self._counts = {verb: VerbCount() for verb in VERBS}

    # -- identity --------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self.inner.url

    def local_directory(self) -> str | None:
        return self.inner.local_directory()

    def __repr__(self) -> str:
        return f"CountingStore({self.inner!r})"

    # -- reading ---------------------------------------------------------------------------------

    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        data = self.inner.get(key, byte_range)
        self.count("get", 0 if data is None else len(data))
        return data

    def get_if_none_match(self, key: str, etag: str | None) -> Revalidated | None:
        answer = self.inner.get_if_none_match(key, etag)
        self.count("get", 0 if answer is None or answer.data is None else len(answer.data))
        return answer

    def head(self, key: str) -> ObjectInfo | None:
        self.count("head")
        return self.inner.head(key)

    def list_dir(self, prefix: str = "") -> tuple[list[str], list[str]]:
        self.count("list")
        return self.inner.list_dir(prefix)

    def keys(self, prefix: str = "") -> Iterator[str]:
        self.count("list")
        return self.inner.keys(prefix)

    def list_info(self, prefix: str = "") -> dict[str, ObjectInfo]:
        self.count("list")
        return self.inner.list_info(prefix)

    def open_reader(self, key: str) -> RangeReader | None:
        self.count("head")
        reader = self.inner.open_reader(key)
        return None if reader is None else _CountingReader(self, reader)

    # -- writing ---------------------------------------------------------------------------------

    def put(
        self,
        key: str,
        data: bytes | bytearray | memoryview,
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        self.count("put", len(data))
        return self.inner.put(key, data, mode=mode, durable=durable)

    def put_file(
        self,
        key: str,
        source: IO[bytes],
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        tally = _Tally(source)
        etag = self.inner.put_file(key, cast(IO[bytes], tally), mode=mode, durable=durable)
        self.count("put", tally.nbytes)
        return etag

    def delete(self, key: str) -> None:
        self.count("delete")
        self.inner.delete(key)

    def delete_prefix(self, prefix: str) -> None:
        # Counted as the listing and the deletes a plain store would send.
        for key in list(self.keys(prefix)):
            self.delete(key)

    def copy(self, source: str, dest: str) -> None:
        self.count("copy")
        self.inner.copy(source, dest)

    def rename(self, source: str, dest: str) -> None:
        self.count("rename")
        self.inner.rename(source, dest)

    def sync(self, keys: Iterable[str]) -> None:
        self.inner.sync(keys)

    def open_positional(self, key: str) -> PositionalFile:
        return _CountingFile(self, self.inner.open_positional(key))

    def writer_lease(self, key: str, *, wait: float = 0.0) -> WriterLease:
        return self.inner.writer_lease(key, wait=wait)

    def close(self) -> None:
        self.inner.close()


class _CountingReader(RangeReader):
    def __init__(self, counter: CountingStore, inner: RangeReader) -> None:
        self._counter = counter
        self._inner = inner
        self.size = inner.size

    def pread(self, offset: int, size: int) -> bytes:
        data = self._inner.pread(offset, size)
        self._counter.count("get", len(data))
        return data

    def close(self) -> None:
        self._inner.close()


class _CountingFile(PositionalFile):
    def __init__(self, counter: CountingStore, inner: PositionalFile) -> None:
        self._counter = counter
        self._inner = inner

    @property
    def size(self) -> int:
        return self._inner.size

    def pread(self, offset: int, size: int) -> bytes:
        data = self._inner.pread(offset, size)
        self._counter.count("get", len(data))
        return data

    def pwrite(self, offset: int, data: bytes) -> None:
        self._counter.count("put", len(data))
        self._inner.pwrite(offset, data)

    def truncate(self, size: int) -> None:
        self._inner.truncate(size)

    def sync(self) -> None:
        self._inner.sync()

    def close(self) -> None:
        self._inner.close()


class _Tally(io.RawIOBase):
    """Reads of a file, passed through and added up."""

    def __init__(self, source: IO[bytes]) -> None:
        self._source = source
        self.nbytes = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        data = self._source.read(-1 if size is None else size)
        self.nbytes += len(data)
        return data

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)
