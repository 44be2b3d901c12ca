"""The in-RAM store: a directory's capabilities without a disk (the seam's test double).

``memory://name`` names one store per process: every ``open_store`` of the
same name sees the same objects, so a catalog opened twice behaves as a
directory opened twice. Objects live until :func:`drop_memory_store`.
"""

from __future__ import annotations

import itertools
import tempfile
import threading
from collections.abc import Iterator
from typing import Final

from ..errors import ReadOnlyError, WriterBusy
from ._base import (
    ByteRequest,
    IfMatch,
    ObjectInfo,
    PositionalFile,
    PutMode,
    RangeReader,
    Store,
    WriterLease,
    check_key,
    check_request,
    precondition_failed,
    range_bounds,
    wait_for_lease,
)

__all__ = ["MemoryStore", "drop_memory_store", "memory_store"]


class _Objects:
    """The shared state behind every :class:`MemoryStore` of one name."""

    def __init__(self) -> None:
        self.data: dict[str, bytearray] = {}
        self.etags: dict[str, str] = {}
        self.lock = threading.RLock()
        self.leases: set[str] = set()
        self.counter = itertools.count(1)
        self.scratch: tempfile.TemporaryDirectory[str] | None = None

    def stamp(self, key: str) -> str:
        etag = f'"m{next(self.counter)}"'
        self.etags[key] = etag
        return etag


_REGISTRY: Final[dict[str, _Objects]] = {}
_REGISTRY_LOCK: Final = threading.Lock()


def memory_store(name: str, *, read_only: bool = False) -> MemoryStore:
    """The memory store called ``name`` in this process (created empty on first use)."""
    with _REGISTRY_LOCK:
        objects = _REGISTRY.setdefault(name, _Objects())
    return MemoryStore(name, objects, read_only=read_only)


def drop_memory_store(name: str) -> None:
    """Forget the memory store ``name`` and everything in it."""
    with _REGISTRY_LOCK:
        objects = _REGISTRY.pop(name, None)
    if objects is not None and objects.scratch is not None:
        objects.scratch.cleanup()


class MemoryStore(Store):
    """Objects in a dict of ``bytearray``; positional writes, conditional puts, atomic renames.

    Use :func:`memory_store` (or ``open_store("memory://name")``) to get one.
    """

    positional_writes = True
    conditional_put = True
    atomic_rename = True

    def __init__(self, name: str, objects: _Objects, *, read_only: bool = False) -> None:
        super().__init__(read_only=read_only)
        self.name = name
        self._o = objects

    @property
    def url(self) -> str:
        return f"memory://{self.name}"

    def local_directory(self) -> str | None:
        """A scratch directory removed with the store, for files that must be real (LMDB)."""
        with self._o.lock:
            if self._o.scratch is None:
                self._o.scratch = tempfile.TemporaryDirectory(prefix=f"mrecd-memory-{self.name}-")
            return self._o.scratch.name

    def _writable(self, key: str) -> None:
        if self.read_only:
            raise ReadOnlyError("the store is open read-only", path=key)

    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        check_request(byte_range, key)
        with self._o.lock:
            data = self._o.data.get(key)
            if data is None:
                return None
            start, end = range_bounds(len(data), byte_range)
            return bytes(data[start:end])  # copies the range only, not the object

    def head(self, key: str) -> ObjectInfo | None:
        with self._o.lock:
            data = self._o.data.get(key)
            return None if data is None else ObjectInfo(len(data), self._o.etags[key])

    def list_dir(self, prefix: str = "") -> tuple[list[str], list[str]]:
        start = f"{prefix}/" if prefix else ""
        dirs: set[str] = set()
        files: set[str] = set()
        with self._o.lock:
            for key in self._o.data:
                if key.startswith(start):
                    head, sep, _ = key[len(start) :].partition("/")
                    (dirs if sep else files).add(head)
        return sorted(dirs), sorted(files)

    def keys(self, prefix: str = "") -> Iterator[str]:
        start = f"{prefix}/" if prefix else ""
        with self._o.lock:
            found = sorted(k for k in self._o.data if k.startswith(start))
        return iter(found)

    def put(
        self,
        key: str,
        data: bytes | bytearray | memoryview,
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        self._writable(check_key(key))
        with self._o.lock:
            current = self._o.etags.get(key) if key in self._o.data else None
            if (mode == "create" and current is not None) or (
                isinstance(mode, IfMatch) and current != mode.etag
            ):
                raise precondition_failed(key, mode)
            self._o.data[key] = bytearray(data)
            return self._o.stamp(key)

    def delete(self, key: str) -> None:
        self._writable(key)
        with self._o.lock:
            self._o.data.pop(key, None)
            self._o.etags.pop(key, None)

    def rename(self, source: str, dest: str) -> None:
        self._writable(source)
        with self._o.lock:  # one lock: readers see the old names or the new ones
            moved = [k for k in self._o.data if k == source or k.startswith(f"{source}/")]
            if any(k == dest or k.startswith(f"{dest}/") for k in self._o.data):
                raise FileExistsError(f"{dest!r} exists: a rename never merges into it")
            for key in moved:
                target = dest + key[len(source) :]
                self._o.data[target] = self._o.data.pop(key)
                self._o.etags.pop(key, None)
                self._o.stamp(target)

    def open_reader(self, key: str) -> RangeReader | None:
        with self._o.lock:
            if key not in self._o.data:
                return None
            return _MemoryReader(self._o, key, len(self._o.data[key]))

    def open_positional(self, key: str) -> PositionalFile:
        self._writable(check_key(key))
        with self._o.lock:
            if key not in self._o.data:
                self._o.data[key] = bytearray()
                self._o.stamp(key)
        return _MemoryFile(self._o, key)

    def writer_lease(self, key: str, *, wait: float = 0.0) -> WriterLease:
        return wait_for_lease(lambda: self._take_lease(key), wait)

    def _take_lease(self, key: str) -> WriterLease:
        with self._o.lock:
            if key in self._o.leases:
                raise WriterBusy("another writer holds this trajectory", path=key)
            self._o.leases.add(key)
        return _MemoryLease(self._o, key)


class _MemoryReader(RangeReader):
    """Positional reads of one object (its size as when opened, as a file's would be)."""

    def __init__(self, objects: _Objects, key: str, size: int) -> None:
        self._o = objects
        self._key = key
        self.size = size

    def pread(self, offset: int, size: int) -> bytes:
        size = self.clip(offset, size)
        with self._o.lock:
            data = self._o.data.get(self._key, bytearray())
            return bytes(data[offset : offset + size])


class _MemoryFile(PositionalFile):
    def __init__(self, objects: _Objects, key: str) -> None:
        self._o = objects
        self._key = key

    def _buf(self) -> bytearray:
        buf = self._o.data.get(self._key)
        if buf is None:  # deleted under us: recreate, as an unlinked-and-recreated file would not
            buf = self._o.data[self._key] = bytearray()
        return buf

    @property
    def size(self) -> int:
        with self._o.lock:
            return len(self._buf())

    def pread(self, offset: int, size: int) -> bytes:
        with self._o.lock:
            return bytes(self._buf()[offset : offset + size])

    def pwrite(self, offset: int, data: bytes) -> None:
        with self._o.lock:
            buf = self._buf()
            if offset > len(buf):
                buf.extend(bytes(offset - len(buf)))
            buf[offset : offset + len(data)] = data
            self._o.stamp(self._key)

    def truncate(self, size: int) -> None:
        with self._o.lock:
            del self._buf()[size:]
            self._o.stamp(self._key)

    def sync(self) -> None:
        """RAM is as durable as it gets."""

    def close(self) -> None:
        """Nothing is held open."""


class _MemoryLease(WriterLease):
    def __init__(self, objects: _Objects, key: str) -> None:
        self._o = objects
        self._key: str | None = key

    def release(self) -> None:
        with self._o.lock:
            if self._key is not None:
                self._o.leases.discard(self._key)
                self._key = None
