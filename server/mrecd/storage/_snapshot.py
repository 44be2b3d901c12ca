"""Published snapshots of one local file on a store, and a local cache that serves them.

A file that needs a local disk (an LMDB collection) reaches object storage
as a *snapshot*: one immutable, content-addressed data object plus a small
JSON manifest naming it. For the published key ``<key>`` (``ala.mrec.lmdb``)::

    <key>.manifest.json              the commit point: object, size, sha256 per part, summary
    <key>.snapshots/<sha256>         the file's bytes, named by their SHA-256

:func:`publish_snapshot` uploads the data object first, checks its size,
then writes the manifest with a conditional PUT (create-only, or ``If-Match``
on the manifest it replaces), so a reader sees the old snapshot or the new
one, never a mix; the data object of the snapshot before stays, so a reader
that read the old manifest can still finish its download.

:class:`SnapshotCache` gives a replica a local copy: fetched once in ranged
GETs of one manifest part each, every part checked against its SHA-256 as
it lands (a bad part is fetched again, and refused after
:data:`FETCH_ATTEMPTS`), the whole file checked before it is used, resumed
from the last good part after an interruption, and revalidated with a
conditional GET of the manifest (``If-None-Match``) at most every
``revalidate_seconds``. A newer snapshot is downloaded beside the one in
use and swapped in by renaming a small pointer file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Final

from ..errors import AlreadyExists, InvalidRecord, NotFound, PreconditionFailed, StoreUnavailable
from ._base import ByteRange, IfMatch, PutMode, Store, check_key
from ._directory import fsync_directory
from ._transfer import _Progress

__all__ = [
    "DEFAULT_PART_SIZE",
    "FETCH_ATTEMPTS",
    "MANIFEST_SUFFIX",
    "SNAPSHOT_FORMAT",
    "CachedSnapshot",
    "Manifest",
    "SnapshotCache",
    "SnapshotPart",
    "publish_snapshot",
    "published_snapshots",
]

#: The manifest's ``format``; ``format_version`` is :data:`FORMAT_VERSION`.
SNAPSHOT_FORMAT: Final = "mrecd-snapshot"
FORMAT_VERSION: Final = 1
MANIFEST_SUFFIX: Final = ".manifest.json"
DATA_SUFFIX: Final = ".snapshots"
#: Bytes per part: one ranged GET and one SHA-256 each.
DEFAULT_PART_SIZE: Final = 8 << 20
#: Tries of one part whose bytes fail their checksum before the download is refused.
FETCH_ATTEMPTS: Final = 3
_POINTER: Final = "current.json"
_LOCK: Final = ".fetch.lock"
_HASH_BLOCK: Final = 1 << 20
_log = logging.getLogger("mrecd.snapshots")


@dataclass(frozen=True, slots=True)
class SnapshotPart:
    """Bytes ``[offset, offset + size)`` of the snapshot and their SHA-256 (hex)."""

    offset: int
    size: int
    sha256: str

    @property
    def end(self) -> int:
        """One past the part's last byte."""
        return self.offset + self.size


@dataclass(frozen=True, slots=True)
class Manifest:
    """What a published snapshot is: its data object, size, checksums, when, and a summary.

    Parameters
    ----------
    key
        The published key (``ala.mrec.lmdb``).
    object
        The data object's key (``ala.mrec.lmdb.snapshots/<sha256>``).
    size
        The file's size in bytes.
    sha256
        The SHA-256 (hex) of the whole file.
    parts
        The file cut in parts of ``part_size`` bytes (the last shorter), each with its SHA-256.
    created
        When it was published (ISO 8601, UTC).
    summary
        What the publisher says about the content (a collection's counts and meta).
    """

    key: str
    object: str
    size: int
    sha256: str
    part_size: int
    parts: tuple[SnapshotPart, ...]
    created: str
    summary: Mapping[str, Any] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        """The manifest as JSON (``format``, ``format_version`` and every field)."""
        document = {
            "format": SNAPSHOT_FORMAT,
            "format_version": FORMAT_VERSION,
            "key": self.key,
            "object": self.object,
            "size": self.size,
            "sha256": self.sha256,
            "part_size": self.part_size,
            "parts": [{"offset": p.offset, "size": p.size, "sha256": p.sha256} for p in self.parts],
            "created": self.created,
            "summary": dict(self.summary),
        }
        return json.dumps(document, indent=1, allow_nan=False).encode()

    @classmethod
    def from_bytes(cls, raw: bytes, where: str) -> Manifest:
        """Parse and check a manifest; :class:`~mrecd.errors.InvalidRecord` naming ``where``."""
        try:
            doc = json.loads(raw)
            if doc.get("format") != SNAPSHOT_FORMAT or doc.get("format_version") != FORMAT_VERSION:
                raise ValueError(f"format is not {SNAPSHOT_FORMAT} version {FORMAT_VERSION}")
            parts = tuple(
                SnapshotPart(int(p["offset"]), int(p["size"]), str(p["sha256"]))
                for p in doc["parts"]
            )
            manifest = cls(
                key=check_key(str(doc["key"])),
                object=check_key(str(doc["object"])),
                size=int(doc["size"]),
                sha256=str(doc["sha256"]),
                part_size=int(doc["part_size"]),
                parts=parts,
                created=str(doc["created"]),
                summary=dict(doc.get("summary") or {}),
            )
        except (ValueError, TypeError, KeyError, AttributeError, InvalidRecord) as exc:
            raise InvalidRecord(f"not a snapshot manifest: {exc}", path=where) from None
        _check_parts(manifest, where)
        return manifest


def _check_parts(manifest: Manifest, where: str) -> None:
    """The parts tile ``[0, size)`` in order, each within ``part_size``."""
    offset = 0
    for part in manifest.parts:
        if part.offset != offset or not 0 < part.size <= manifest.part_size:
            raise InvalidRecord("the manifest's parts do not tile the file", path=where)
        offset += part.size
    if offset != manifest.size or not _is_hex_digest(manifest.sha256):
        raise InvalidRecord("the manifest's size or sha256 is malformed", path=where)


def _is_hex_digest(text: str) -> bool:
    return re.fullmatch(r"[0-9a-f]{64}", text) is not None


# -- publishing ------------------------------------------------------------------------------


def publish_snapshot(
    dest: Store,
    key: str,
    path: str | os.PathLike[str],
    *,
    summary: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    part_size: int = DEFAULT_PART_SIZE,
    progress: bool = False,
) -> Manifest:
    """Publish the local file ``path`` on ``dest`` as snapshot ``key``; answer its manifest.

    Parameters
    ----------
    dest
        The store (a bucket prefix, or any store).
    key
        The published key, one path component (``ala.mrec.lmdb``).
    path
        The file; it must not change while it is published.
    summary
        JSON-able facts about the content, copied into the manifest.
    overwrite
        Replace a snapshot already published under ``key``.
    part_size
        Bytes per checksummed part (the unit of a replica's ranged GETs and resumption).
    progress
        Show a progress bar of the upload on standard error.

    Raises
    ------
    AlreadyExists
        A snapshot is published under ``key`` and ``overwrite`` is false, or
        another publisher replaced the manifest while this one uploaded.
    StoreUnavailable
        The store failed, or lists the data object at another size than sent.
    """
    if "/" in check_key(key) or not key:
        raise InvalidRecord("a snapshot key is one path component", path=key)
    if part_size <= 0:
        raise InvalidRecord("part_size must be positive", path="part_size")
    manifest_key = key + MANIFEST_SUFFIX
    previous = dest.get_if_none_match(manifest_key, None)
    if previous is not None and not overwrite:
        raise AlreadyExists(
            "a snapshot of this name is published (overwrite to replace it)",
            path=f"{dest.url.rstrip('/')}/{key}",
        )
    manifest = _describe(Path(path), key, part_size, summary or {})
    with _Progress(f"push {key}", progress) as bar:
        _upload(dest, manifest, Path(path), bar)
    mode: PutMode = "create" if previous is None else IfMatch(previous.etag)
    try:
        dest.put(manifest_key, manifest.to_bytes(), mode=mode)
    except PreconditionFailed:
        raise AlreadyExists(
            "another push replaced this snapshot while it uploaded; push again to replace it",
            path=f"{dest.url.rstrip('/')}/{manifest_key}",
        ) from None
    keep = {manifest.object}
    if previous is not None and previous.data is not None:
        with contextlib.suppress(InvalidRecord):  # a broken old manifest names nothing to keep
            keep.add(Manifest.from_bytes(previous.data, manifest_key).object)
    _drop_unreferenced(dest, key, keep)
    return manifest


def published_snapshots(store: Store) -> list[str]:
    """The keys published on ``store`` (those with a manifest at its root), sorted."""
    _, files = store.list_dir("")
    return sorted(f[: -len(MANIFEST_SUFFIX)] for f in files if f.endswith(MANIFEST_SUFFIX))


def _describe(path: Path, key: str, part_size: int, summary: Mapping[str, Any]) -> Manifest:
    """Read ``path`` once: its size, its SHA-256 and each part's."""
    whole = hashlib.sha256()
    parts: list[SnapshotPart] = []
    with path.open("rb") as source:
        while chunk := source.read(part_size):
            whole.update(chunk)
            digest = hashlib.sha256(chunk).hexdigest()
            parts.append(SnapshotPart(len(parts) * part_size, len(chunk), digest))
    sha = whole.hexdigest()
    return Manifest(
        key=key,
        object=f"{key}{DATA_SUFFIX}/{sha}",
        size=sum(p.size for p in parts),
        sha256=sha,
        part_size=part_size,
        parts=tuple(parts),
        created=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        summary=dict(summary),
    )


def _upload(dest: Store, manifest: Manifest, path: Path, bar: _Progress) -> None:
    """The data object (skipped when that content is already there), its size checked."""
    present = dest.head(manifest.object)
    if present is None or present.size != manifest.size:
        bar.add_total(manifest.size)
        with path.open("rb", buffering=0) as source:
            ticking = io.BufferedReader(_TickingFile(source, bar.advance), DEFAULT_PART_SIZE)
            dest.put_file(manifest.object, ticking)
        present = dest.head(manifest.object)
    if present is None or present.size != manifest.size:
        raise StoreUnavailable(
            "the snapshot's data object is missing or of another size after the upload",
            path=f"{dest.url.rstrip('/')}/{manifest.object}",
        )


class _TickingFile(io.RawIOBase):
    """A file read front to back, each read reported to ``tick`` (the progress bar)."""

    def __init__(self, source: IO[bytes], tick: Callable[[int], None]) -> None:
        self._source = source
        self._tick = tick

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._source.read(len(buffer))
        buffer[: len(data)] = data
        self._tick(len(data))
        return len(data)


def _drop_unreferenced(dest: Store, key: str, keep: set[str]) -> None:
    """Delete the data objects of ``key`` that neither the new nor the old manifest names."""
    prefix = f"{key}{DATA_SUFFIX}"
    for stale in [k for k in dest.keys(prefix) if k not in keep]:
        dest.delete(stale)


# -- the replica's cache ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CachedSnapshot:
    """A verified local copy: its ``path``, the ``manifest`` it matches and that manifest's ETag."""

    path: Path
    manifest: Manifest
    etag: str


class SnapshotCache:
    """Local, verified copies of the snapshots published on one store.

    Parameters
    ----------
    store
        Where the snapshots are published.
    directory
        The cache directory (shared by the worker processes of one replica:
        a download is serialised by a file lock).
    revalidate_seconds
        A copy younger than this (since its manifest was last checked, in
        this process) is served without asking the store.
    """

    def __init__(
        self, store: Store, directory: str | os.PathLike[str], *, revalidate_seconds: float = 30.0
    ) -> None:
        if revalidate_seconds < 0:
            raise InvalidRecord("revalidate_seconds must not be negative", path="cache")
        self.store = store
        self.root = Path(directory) / _store_dirname(store.url)
        self.revalidate_seconds = revalidate_seconds
        self._checked: dict[str, float] = {}
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def names(self) -> list[str]:
        """The keys published on the store (a listing)."""
        return published_snapshots(self.store)

    def get(self, key: str) -> CachedSnapshot:
        """The verified local copy of snapshot ``key``, fetched or refreshed as needed.

        While a newer snapshot downloads (in another thread or worker), the
        copy in use is served; the first request for a key waits for it.
        When the store cannot be reached, or a newer snapshot's manifest or
        download is refused, a copy already held is served (and a warning
        logged on ``mrecd.snapshots``); the next revalidation tries again.

        Raises
        ------
        NotFound
            Nothing is published under ``key``.
        StoreUnavailable
            The store failed (and no copy is held), or the download failed its
            checksums :data:`FETCH_ATTEMPTS` times: nothing of it is served.
        InvalidRecord
            The manifest is malformed.
        """
        if "/" in check_key(key) or not key:
            raise InvalidRecord("a snapshot key is one path component", path=key)
        entry = self.root / key
        current = _read_pointer(entry)
        if current is not None and self._fresh(key):
            return current
        with self._key_lock(key, wait=current is None) as held:
            if not held:  # another thread is refreshing: serve what we have
                return current  # type: ignore[return-value]
            return self._refresh(key, entry)

    def _fresh(self, key: str) -> bool:
        checked = self._checked.get(key)
        return checked is not None and time.monotonic() - checked < self.revalidate_seconds

    @contextlib.contextmanager
    def _key_lock(self, key: str, *, wait: bool) -> Iterator[bool]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        if not lock.acquire(blocking=wait):
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    def _refresh(self, key: str, entry: Path) -> CachedSnapshot:
        current = _read_pointer(entry)  # another thread may have refreshed it meanwhile
        if current is not None and self._fresh(key):
            return current
        try:
            cached = self._revalidate(key, entry, current)
        except (StoreUnavailable, InvalidRecord) as exc:
            if current is None:
                raise
            # a replica keeps serving the verified copy it holds; it asks again later
            _log.warning("serving the cached snapshot %s: %s", key, exc)
            cached = current
        self._checked[key] = time.monotonic()
        return cached

    def _revalidate(self, key: str, entry: Path, current: CachedSnapshot | None) -> CachedSnapshot:
        """The manifest by a conditional GET; a newer one's file fetched and swapped in."""
        answer = self.store.get_if_none_match(
            key + MANIFEST_SUFFIX, None if current is None else current.etag
        )
        if answer is None:
            _drop_pointer(entry)
            raise NotFound(f"no snapshot published as {key!r}", path=key)
        if answer.data is None and current is not None:
            return current
        raw = answer.data if answer.data is not None else b""
        manifest = Manifest.from_bytes(raw, f"{self.store.url.rstrip('/')}/{key}")
        return self._install(entry, manifest, answer.etag, current)

    def _install(
        self, entry: Path, manifest: Manifest, etag: str, current: CachedSnapshot | None
    ) -> CachedSnapshot:
        """Fetch ``manifest``'s file under the cross-process lock, then swap the pointer.

        With a copy in hand, a download another worker process is making is
        not waited for: the copy is served meanwhile.
        """
        entry.mkdir(parents=True, exist_ok=True)
        with _file_lock(entry / _LOCK, wait=current is None) as held:
            if not held and current is not None:
                return current
            path = _Download(self.store, entry, manifest).run()
            cached = CachedSnapshot(path, manifest, etag)
            _write_pointer(entry, cached)
            keep = {path.name} | ({current.path.name} if current is not None else set())
            _prune(entry, keep)
        return cached


class _Download:
    """One snapshot into ``entry``: resumed from the good parts of a ``.part`` file."""

    def __init__(self, store: Store, entry: Path, manifest: Manifest) -> None:
        self.store = store
        self.manifest = manifest
        self.final = entry / _local_name(manifest)
        self.partial = entry / f"{self.final.name}.part"

    def run(self) -> Path:
        if self.final.is_file() and self.final.stat().st_size == self.manifest.size:
            return self.final  # verified when it was installed
        for stale in self.final.parent.glob("*.part"):
            if stale != self.partial:
                stale.unlink(missing_ok=True)
        fd = os.open(self.partial, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            start = self._good_parts(fd)
            for part in self.manifest.parts[start:]:
                os.pwrite(fd, self._fetch(part), part.offset)
            os.fsync(fd)
        finally:
            os.close(fd)
        if _sha256_of(self.partial) != self.manifest.sha256:
            self.partial.unlink(missing_ok=True)
            raise StoreUnavailable(
                "the downloaded snapshot does not match its manifest's sha256; refused",
                path=self.manifest.object,
            )
        os.replace(self.partial, self.final)
        fsync_directory(self.final.parent)
        return self.final

    def _good_parts(self, fd: int) -> int:
        """How many leading parts of the partial file check out; the rest is cut off."""
        size = os.fstat(fd).st_size
        good = 0
        for part in self.manifest.parts:
            if part.offset + part.size > size:
                break
            if hashlib.sha256(os.pread(fd, part.size, part.offset)).hexdigest() != part.sha256:
                break
            good += 1
        os.ftruncate(fd, sum(p.size for p in self.manifest.parts[:good]))
        return good

    def _fetch(self, part: SnapshotPart) -> bytes:
        """One part by a ranged GET, fetched again while its checksum fails."""
        where = f"{self.store.url.rstrip('/')}/{self.manifest.object}"
        for _ in range(FETCH_ATTEMPTS):
            data = self.store.get(self.manifest.object, ByteRange(part.offset, part.end))
            if data is None:
                raise StoreUnavailable(
                    "the snapshot's data object is gone (a newer push replaced it); retry",
                    path=where,
                )
            if len(data) == part.size and hashlib.sha256(data).hexdigest() == part.sha256:
                return data
        raise StoreUnavailable(
            f"bytes {part.offset}..{part.end} of the snapshot failed their sha256 check"
            f" {FETCH_ATTEMPTS} times; the download is refused",
            path=where,
        )


def _local_name(manifest: Manifest) -> str:
    """The verified copy's file name: content-addressed, ending like the published key."""
    return f"{manifest.sha256}-{manifest.key}"


def _store_dirname(url: str) -> str:
    """A directory name per store: readable, and unique by a hash of the whole URL."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", url.split("?", 1)[0].split("@")[-1])[:60]
    return f"{readable.strip('_.')}-{hashlib.sha256(url.encode()).hexdigest()[:12]}"


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while block := source.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _read_pointer(entry: Path) -> CachedSnapshot | None:
    """The copy in use, or ``None`` (none yet, or its file is gone)."""
    try:
        doc = json.loads((entry / _POINTER).read_bytes())
        manifest = Manifest.from_bytes(json.dumps(doc["manifest"]).encode(), str(entry))
        path = entry / _local_name(manifest)
        if not path.is_file():
            return None
        return CachedSnapshot(path, manifest, str(doc["etag"]))
    except (OSError, ValueError, KeyError, TypeError, InvalidRecord):
        return None


def _write_pointer(entry: Path, cached: CachedSnapshot) -> None:
    """Replace the pointer atomically: a reader sees the old copy or the new one."""
    document = {"etag": cached.etag, "manifest": json.loads(cached.manifest.to_bytes())}
    staged = entry / f".{_POINTER}.{os.getpid()}.{threading.get_ident()}"
    with staged.open("wb") as out:
        out.write(json.dumps(document).encode())
        out.flush()
        os.fsync(out.fileno())
    os.replace(staged, entry / _POINTER)
    fsync_directory(entry)


def _drop_pointer(entry: Path) -> None:
    (entry / _POINTER).unlink(missing_ok=True)


def _prune(entry: Path, keep: set[str]) -> None:
    """Remove copies other than ``keep`` (and their LMDB lock files).

    A process that has one open keeps reading it: the inode lives until it
    is closed.
    """
    for path in entry.iterdir():
        if path.name.startswith(".") or path.name == _POINTER or path.name.endswith(".part"):
            continue
        if path.name.removesuffix("-lock") not in keep:
            path.unlink(missing_ok=True)


@contextlib.contextmanager
def _file_lock(path: Path, *, wait: bool) -> Iterator[bool]:
    """An exclusive ``flock`` on ``path`` (the worker processes of one replica take turns).

    Yields whether it is held: with ``wait`` false, a lock another process
    holds is not waited for.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
