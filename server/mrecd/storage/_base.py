"""The store interface: bytes under ``/``-separated keys, nothing else.

Modelled on zarr-python's ``abc/store.py`` (string keys, byte-range reads,
capabilities as properties) and on obstore's verbs (a conditional write is a
*mode* of ``put``). Every method blocks the calling thread; callers on an
event loop run them in a worker thread.

Keys never start or end with ``/`` and never hold ``.`` or ``..`` components;
``""`` is the store root (as a prefix). A missing key reads as ``None``.
"""

from __future__ import annotations

import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import IO, Literal

from ..errors import InvalidRecord, PreconditionFailed, WriterBusy

__all__ = [
    "ByteRange",
    "IfMatch",
    "ObjectInfo",
    "Offset",
    "PositionalFile",
    "PutMode",
    "RangeReader",
    "Revalidated",
    "Store",
    "Suffix",
    "WriterLease",
    "check_key",
    "join_key",
    "live_tail_grace",
]


@dataclass(frozen=True, slots=True)
class ByteRange:
    """Bytes ``[start, end)`` of an object (clipped at its end)."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Offset:
    """Every byte from ``offset`` to the end."""

    offset: int


@dataclass(frozen=True, slots=True)
class Suffix:
    """The last ``length`` bytes."""

    length: int


ByteRequest = ByteRange | Offset | Suffix


@dataclass(frozen=True, slots=True)
class IfMatch:
    """Put mode: replace the object only while its ETag is still ``etag``."""

    etag: str


#: ``"overwrite"`` always writes; ``"create"`` only when the key is absent;
#: :class:`IfMatch` only when the current ETag matches. A failed condition
#: raises :class:`~mrecd.errors.PreconditionFailed` and writes nothing.
PutMode = Literal["overwrite", "create"] | IfMatch


@dataclass(frozen=True, slots=True)
class Revalidated:
    """What a conditional GET answers: the new ``data`` and ``etag``, or ``data=None``
    when the object still has the ETag the caller holds."""

    data: bytes | None
    etag: str


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """What ``head`` answers: the object's ``size`` in bytes and its ``etag``.

    ``modified`` is the last write as POSIX seconds where the store says
    (object storage; ``None`` elsewhere).
    """

    size: int
    etag: str
    modified: float | None = None


def check_key(key: str) -> str:
    """Return ``key`` when it is a well-formed store key, else refuse it.

    Raises
    ------
    InvalidRecord
        A key with a leading or trailing ``/``, an empty, ``.`` or ``..``
        component, or a NUL.
    """
    if key == "":
        return key
    parts = key.split("/")
    if any(p in ("", ".", "..") for p in parts) or "\x00" in key:
        raise InvalidRecord(
            f"store key {key!r} has an empty, '.' or '..' component or a NUL", path=key
        )
    return key


def join_key(*parts: str) -> str:
    """Join key components, skipping empty ones: ``join_key("", "a", "b") == "a/b"``."""
    return "/".join(p for p in parts if p)


def range_bounds(size: int, request: ByteRequest | None) -> tuple[int, int]:
    """``(start, end)`` within an object of ``size`` bytes that ``request`` asks for."""
    if request is None:
        return 0, size
    if isinstance(request, ByteRange):
        return min(request.start, size), min(request.end, size)
    if isinstance(request, Offset):
        return min(request.offset, size), size
    return (max(0, size - request.length), size) if request.length else (size, size)


def slice_range(data: bytes, request: ByteRequest | None) -> bytes:
    """The part of ``data`` that ``request`` asks for (the whole when ``None``)."""
    start, end = range_bounds(len(data), request)
    return data[start:end]


def check_request(request: ByteRequest | None, key: str) -> None:
    """Refuse a negative or inverted byte request."""
    if request is None:
        return
    bad = (
        (isinstance(request, ByteRange) and not 0 <= request.start <= request.end)
        or (isinstance(request, Offset) and request.offset < 0)
        or (isinstance(request, Suffix) and request.length < 0)
    )
    if bad:
        raise InvalidRecord(f"byte request {request!r} is negative or inverted", path=key)


class RangeReader(ABC):
    """Positional reads of one object, kept open (a file descriptor, a zip member, a URL)."""

    size: int

    @abstractmethod
    def pread(self, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes at ``offset`` (fewer at the end). Thread-safe."""

    def clip(self, offset: int, size: int) -> int:
        """How many of ``size`` bytes at ``offset`` lie inside the object (never negative)."""
        return max(0, min(size, self.size - offset))

    def close(self) -> None:  # noqa: B027 - optional: most readers hold nothing
        """Release what the reader holds."""


class PositionalFile(ABC):
    """An object open for writes at byte offsets: a shard grown at its tail.

    Only stores with :attr:`Store.positional_writes` hand these out. Writes
    are visible to readers at once; :meth:`sync` makes them durable.
    """

    @property
    @abstractmethod
    def size(self) -> int:
        """The object's size in bytes now."""

    @abstractmethod
    def pread(self, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes at ``offset``."""

    @abstractmethod
    def pwrite(self, offset: int, data: bytes) -> None:
        """Write ``data`` at ``offset`` (past the end extends the object)."""

    @abstractmethod
    def truncate(self, size: int) -> None:
        """Cut the object to ``size`` bytes."""

    @abstractmethod
    def sync(self) -> None:
        """Make every write so far durable (fsync on a directory)."""

    @abstractmethod
    def close(self) -> None:
        """Release the handle."""


class WriterLease(AbstractContextManager["WriterLease"]):
    """Exclusive right to write under one key prefix, held until :meth:`release`.

    A directory keeps it with an ``flock`` (it spans processes); the memory
    store with a lock in the process; object storage holds nothing: there,
    conditional puts are the safety argument.
    """

    @abstractmethod
    def release(self) -> None:
        """Give the lease up (idempotent)."""

    def __exit__(self, *exc: object) -> None:
        self.release()


def wait_for_lease(take: Callable[[], WriterLease], wait: float) -> WriterLease:
    """``take()`` retried until it stops raising :class:`WriterBusy` or ``wait`` seconds pass.

    Polls (1 ms, doubling to 10 ms) rather than blocking in ``flock``: a
    blocked call cannot be given up at a deadline.
    """
    deadline = time.monotonic() + wait
    pause = 0.001
    while True:
        try:
            return take()
        except WriterBusy:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
        time.sleep(min(pause, left))
        pause = min(2 * pause, 0.01)


#: Default of :func:`live_tail_grace`.
DEFAULT_LIVE_TAIL_GRACE = 10.0


def live_tail_grace() -> float:
    """Seconds after which an object a lease-free writer left past its commit counts as dead.

    On object storage (no lease) an object written past a trajectory's
    committed state belongs to a commit in flight or to a crashed writer;
    after this long it is taken for the latter. ``MRECD_LIVE_TAIL_GRACE``
    overrides :data:`DEFAULT_LIVE_TAIL_GRACE`; negative values count as 0.
    """
    raw = os.environ.get("MRECD_LIVE_TAIL_GRACE")
    return DEFAULT_LIVE_TAIL_GRACE if raw is None else max(0.0, float(raw))


class NoLease(WriterLease):
    """The lease of a store that cannot lock: conditional puts decide races instead."""

    def release(self) -> None:
        """Nothing to release."""


class Store(ABC):
    """A bytes-only key/value store: the one thing the Zarr binding reads and writes through.

    Implementations: :class:`~mrecd.storage.DirectoryStore` (the embedded
    default), :class:`~mrecd.storage.MemoryStore` (in RAM, a directory's
    capabilities, the seam's test double) and
    :class:`~mrecd.storage.ObjectStore` (S3, GCS, Azure through obstore).
    """

    #: Whether :meth:`open_positional` is available (grow a shard in place).
    positional_writes: bool = False
    #: Whether ``put(mode=IfMatch(...))`` and ``mode="create"`` are honoured atomically.
    conditional_put: bool = True
    #: Whether :meth:`rename` is atomic (a staged record or section appears at once).
    atomic_rename: bool = False

    def __init__(self, *, read_only: bool = False) -> None:
        self.read_only = read_only

    # -- identity ------------------------------------------------------------------------------

    @property
    @abstractmethod
    def url(self) -> str:
        """A URL that :func:`~mrecd.storage.open_store` turns back into this store."""

    def child(self, prefix: str) -> Store:
        """A view of the keys under ``prefix`` (keys relative to it)."""
        from ._prefix import PrefixStore

        return PrefixStore(self, check_key(prefix)) if prefix else self

    def local_directory(self) -> str | None:
        """A local directory holding this store's root, for what needs real files (LMDB).

        ``None`` when the store has none (object storage).
        """
        return None

    # -- reading -------------------------------------------------------------------------------

    @abstractmethod
    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        """The object's bytes (or the requested range of them); ``None`` when absent."""

    @abstractmethod
    def head(self, key: str) -> ObjectInfo | None:
        """Size and ETag of the object, or ``None`` when absent."""

    def get_if_none_match(self, key: str, etag: str | None) -> Revalidated | None:
        """The object unless its ETag is still ``etag`` (a conditional GET); ``None`` when absent.

        Object stores send one ``GET`` with ``If-None-Match``; elsewhere a
        ``head`` decides, then a ``get`` (whose bytes may be newer than the
        ETag answered: the next revalidation then fetches them again).
        """
        info = self.head(key)
        if info is None:
            return None
        if etag is not None and info.etag == etag:
            return Revalidated(None, etag)
        data = self.get(key)
        return None if data is None else Revalidated(data, info.etag)

    @abstractmethod
    def list_dir(self, prefix: str = "") -> tuple[list[str], list[str]]:
        """``(sub-prefixes, objects)`` directly under ``prefix``, names only, each sorted."""

    def keys(self, prefix: str = "") -> Iterator[str]:
        """Every key under ``prefix``, recursively, in sorted order (full keys)."""
        dirs, files = self.list_dir(prefix)
        names = [(d, True) for d in dirs] + [(f, False) for f in files]
        for name, is_dir in sorted(names):
            key = join_key(prefix, name)
            if is_dir:
                yield from self.keys(key)
            else:
                yield key

    def list_info(self, prefix: str = "") -> dict[str, ObjectInfo]:
        """Size and ETag of every object under ``prefix`` (full keys, sorted).

        Object stores answer from the listing itself; elsewhere one ``head`` per key.
        """
        found: dict[str, ObjectInfo] = {}
        for key in self.keys(prefix):
            info = self.head(key)
            if info is not None:  # deleted between the listing and the head
                found[key] = info
        return found

    def exists(self, key: str) -> bool:
        """Whether an object is stored at ``key``."""
        return self.head(key) is not None

    def is_prefix(self, prefix: str) -> bool:
        """Whether any object is stored under ``prefix/``."""
        dirs, files = self.list_dir(prefix)
        return bool(dirs or files)

    def open_reader(self, key: str) -> RangeReader | None:
        """A positional reader of the object, or ``None`` when absent."""
        info = self.head(key)
        return None if info is None else _GetRangeReader(self, key, info.size)

    # -- writing -------------------------------------------------------------------------------

    @abstractmethod
    def put(
        self,
        key: str,
        data: bytes | bytearray | memoryview,
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        """Store ``data`` at ``key`` whole and atomically; answer the new ETag.

        Raises
        ------
        PreconditionFailed
            ``mode`` is ``"create"`` and the key exists, or an :class:`IfMatch`
            whose ETag is no longer current. Nothing is written.
        ReadOnlyError
            The store is read-only.
        """

    def put_file(
        self,
        key: str,
        source: IO[bytes],
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        """Store the rest of the open binary file ``source`` at ``key``; answer the ETag.

        Stores that can stream do so (an object store uploads a large file in
        parts); a conditional ``mode`` may need the whole file in memory.

        Raises
        ------
        PreconditionFailed
            As :meth:`put`.
        """
        return self.put(key, source.read(), mode=mode, durable=durable)

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove the object (absent is fine)."""

    def delete_prefix(self, prefix: str) -> None:
        """Remove every object under ``prefix``."""
        for key in list(self.keys(prefix)):
            self.delete(key)

    def copy(self, source: str, dest: str) -> None:
        """Copy one object (overwriting ``dest``)."""
        data = self.get(source)
        if data is not None:
            self.put(dest, data)

    def rename(self, source: str, dest: str) -> None:
        """Move every object under prefix (or key) ``source`` to ``dest``.

        Atomic only when :attr:`atomic_rename`; elsewhere a copy then a delete.
        ``dest`` must not exist.
        """
        keys = list(self.keys(source)) or ([source] if self.exists(source) else [])
        for key in keys:
            self.copy(key, dest + key[len(source) :])
        for key in keys:
            self.delete(key)

    def sync(self, keys: Iterable[str]) -> None:  # noqa: B027 - stores that ack durably need none
        """Make earlier non-durable puts of ``keys`` durable (a directory fsyncs them)."""

    def open_positional(self, key: str) -> PositionalFile:
        """Open ``key`` for positional writes (created empty when absent).

        Raises
        ------
        NotImplementedError
            The store has no :attr:`positional_writes`.
        """
        raise NotImplementedError(f"{type(self).__name__} has no positional writes")

    def writer_lease(self, key: str, *, wait: float = 0.0) -> WriterLease:
        """Take the exclusive writer lease on ``key``, waiting up to ``wait`` seconds for it.

        Raises
        ------
        WriterBusy
            Another writer (thread or process) holds it (still, after ``wait``).
        """
        return NoLease()

    def close(self) -> None:  # noqa: B027 - stores holding nothing open need no close
        """Release held connections and descriptors."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


class _GetRangeReader(RangeReader):
    """Positional reads through ranged ``get`` calls (object storage, zip members)."""

    def __init__(self, store: Store, key: str, size: int) -> None:
        self._store = store
        self._key = key
        self.size = size

    def pread(self, offset: int, size: int) -> bytes:
        size = self.clip(offset, size)
        if not size:
            return b""
        data = self._store.get(self._key, ByteRange(offset, offset + size))
        return b"" if data is None else data


class KeyLocks:
    """Per-key mutexes of one process (conditional puts on stores without native ones)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def __call__(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())


def precondition_failed(key: str, mode: PutMode) -> PreconditionFailed:
    """The error a failed conditional put raises."""
    rule = "the key exists" if mode == "create" else "the ETag changed"
    return PreconditionFailed(f"conditional put refused: {rule}", path=key)
