"""Live trajectory appends on object storage: mrecd's layout and its conditional writes.

Beyond the spec (README, "Live appends on object storage"). A store without
positional writes (S3, GCS, Azure) cannot grow a shard at its tail, so while a
trajectory is live there its arrays are **unsharded** Zarr V3: a block's chunk
holds at most :data:`LIVE_FRAMES_PER_CHUNK` frames, a per-step array's
:data:`LIVE_DENSE_CHUNK_ROWS` rows. A commit PUTs the chunks its rows fall in
(whole new chunks created, the partial last chunk rewritten), then each array's
``zarr.json``, group documents, and ``trajectory/zarr.json`` last: O(batch)
bytes, plain Zarr that zarr-python reads.

No lease spans processes on object storage, so every PUT of a writer is
conditional on what it last saw (:class:`ConditionalStore`): create-only for a
key it believes new, ``If-Match`` for a key it rewrites, and the marker
``If-Match`` on the ETag it last saw. A writer whose conditional PUT fails has
lost the race: it rolls back what it wrote in that commit (deletes what it
created, restores the committed bytes it replaced), never writes its marker,
and raises :class:`~mrecd.errors.WriterBusy`; reopening re-reads the store.

Objects past the committed state (a crashed writer's tail, or another
writer's commit in flight) are only overwritten once older than
:func:`tail_grace` seconds, and a writer abandons a commit that has taken more
than half of that before its marker; ``mrecd gc`` (:func:`collect_garbage`)
deletes such tails.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any, Final

import numpy as np

from ...errors import InvalidRecord, PreconditionFailed, ReadOnlyError, WriterBusy
from ...storage import (
    IfMatch,
    Location,
    ObjectInfo,
    PositionalFile,
    PutMode,
    RangeReader,
    Store,
    WriterLease,
    dumps_json,
    live_tail_grace,
    read_json,
)
from ...storage._base import ByteRequest
from ._extents import DENSE_CHUNK_ROWS, block_rows_per_chunk
from ._shard import ArrayAppender, ArrayLayout, chunk_key
from ._trajectory_read import TrajectoryReader

__all__ = [
    "LIVE_DENSE_CHUNK_ROWS",
    "LIVE_FRAMES_PER_CHUNK",
    "ConditionalStore",
    "ObjectArrayAppender",
    "collect_garbage",
    "committed_nodes",
    "live_root",
    "rows_per_chunk",
    "tail_grace",
    "trust_committed",
    "writer_is_stale",
]

#: Frames per chunk of a block while live on object storage. A commit of ``b``
#: frames rewrites at most ``k - 1`` frames of a partial chunk, so the write
#: amplification is at most ``1 + (k - 1) / b``: <= 1.44 at ``b >= 16``.
LIVE_FRAMES_PER_CHUNK: Final = 8
#: Rows per chunk of a per-step array (step, time, meta, indexes) while live.
LIVE_DENSE_CHUNK_ROWS: Final = 64
#: Chunk PUTs of one array's commit in flight at once.
UPLOAD_THREADS: Final = 8
_MARKER: Final = "zarr.json"


def tail_grace() -> float:
    """Seconds after which an object past the commit is taken for a crashed writer's.

    :func:`~mrecd.storage.live_tail_grace` (``MRECD_LIVE_TAIL_GRACE``, 10 s).
    A writer abandons a commit still unpublished after half of it, so a
    slower writer never publishes objects another one has since overwritten.
    ``0`` (one writer restarting after a crash, tests) takes every tail for
    dead at once.
    """
    return live_tail_grace()


def rows_per_chunk(store: Store, frame_rows: int, narrowest_row_bytes: int) -> int:
    """Rows per chunk of a new block array: the reference extents, at most 8 frames live."""
    rows = block_rows_per_chunk(frame_rows, narrowest_row_bytes)
    if store.positional_writes or frame_rows == 0:
        return rows
    return min(rows, frame_rows * LIVE_FRAMES_PER_CHUNK)


_UPLOADS: list[ThreadPoolExecutor] = []
_UPLOADS_LOCK = threading.Lock()


def _uploads() -> ThreadPoolExecutor:
    """Threads PUTting one commit's chunks concurrently (object stores want parallel requests)."""
    with _UPLOADS_LOCK:
        if not _UPLOADS:
            _UPLOADS.append(ThreadPoolExecutor(UPLOAD_THREADS, thread_name_prefix="mrecd-put"))
        return _UPLOADS[0]


def _live_layout(layout: ArrayLayout) -> ArrayLayout:
    """The unsharded layout used on object storage (``shard_rows == chunk_rows``)."""
    if layout.shard_rows == layout.chunk_rows:
        return layout
    rows = LIVE_DENSE_CHUNK_ROWS if layout.chunk_rows == DENSE_CHUNK_ROWS else layout.chunk_rows
    return ArrayLayout(layout.dtype, layout.trailing, rows, rows, layout.codecs)


# -- conditional writes -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Undo:
    """How to take back one PUT of a lost commit: delete what it created, else restore."""

    before: bytes | None
    created: bool


class ConditionalStore(Store):
    """A writer's view of an object store where every plain ``put`` is conditional.

    Built from one listing of ``prefix`` taken before the writer reads the
    committed state, so every ETag it holds is as old as (or older than) that
    state: a conditional PUT can fail wrongly (the writer retries), never
    succeed wrongly. Deletes are dropped: nothing is deleted unconditionally
    while others may write (``mrecd gc`` removes stale tails).

    Parameters
    ----------
    inner
        The object store (or a wrapper of one).
    prefix
        The trajectory's key prefix (``<record>/trajectory``).
    """

    positional_writes = False
    atomic_rename = False

    def __init__(self, inner: Store, prefix: str) -> None:
        super().__init__(read_only=inner.read_only)
        self.inner = inner
        self.prefix = prefix
        self.marker = f"{prefix}/{_MARKER}"
        self.grace = tail_grace()
        self.seen: dict[str, ObjectInfo] = dict(inner.list_info(prefix))
        self._trusted: set[str] = set()
        self._kept: dict[str, bytes] = {}  # committed bytes of keys a commit may rewrite
        self._undo: dict[str, _Undo] = {}  # this commit's landed PUTs: what each replaced
        self._started: float | None = None
        self._lost = False
        self._lock = threading.RLock()

    # -- what the writer tells us ---------------------------------------------------------

    def trust(self, key: str, data: bytes | None = None) -> None:
        """``key`` holds committed content (the writer checked): rewrite it with ``If-Match``.

        ``data`` (its bytes) lets a lost commit restore it.
        """
        with self._lock:
            if key in self.seen:
                self._trusted.add(key)
                if data is not None:
                    self._kept[key] = data

    def begin(self) -> None:
        """The commit's data PUTs start: its marker must follow within half the grace.

        Not counted from a group document PUT when a block is first queued:
        the commit rewrites that document ``If-Match`` on our ETag anyway.
        """
        with self._lock:
            self._started = self._started or time.time()

    def keep(self, key: str, data: bytes | None) -> None:
        """Remember (``None``: forget) what this writer put at ``key``, for a rollback."""
        with self._lock:
            if data is None:
                self._kept.pop(key, None)
            else:
                self._kept[key] = data

    # -- the Store interface ----------------------------------------------------------------

    @property
    def url(self) -> str:
        return self.inner.url

    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        return self.inner.get(key, byte_range)

    def head(self, key: str) -> ObjectInfo | None:
        """Under the prefix: what the listing (and this writer's own puts) say."""
        if key.startswith(self.prefix + "/"):
            with self._lock:
                return self.seen.get(key)
        return self.inner.head(key)

    def list_dir(self, prefix: str = "") -> tuple[list[str], list[str]]:
        return self.inner.list_dir(prefix)

    def keys(self, prefix: str = "") -> Iterator[str]:
        return self.inner.keys(prefix)

    def list_info(self, prefix: str = "") -> dict[str, ObjectInfo]:
        return self.inner.list_info(prefix)

    def open_reader(self, key: str) -> RangeReader | None:
        return self.inner.open_reader(key)

    def put(
        self,
        key: str,
        data: bytes | bytearray | memoryview,
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        """PUT conditionally (see the class); the marker last, only if the commit still holds.

        Raises
        ------
        WriterBusy
            Another writer changed a key since this writer saw it, or an
            object past the commit is younger than the grace (a commit in
            flight); what this commit wrote is rolled back.
        """
        raw = bytes(data)
        with self._lock:  # bookkeeping only: PUTs of several keys may be in flight at once
            if self._lost:
                raise WriterBusy("this writer lost a race earlier: reopen the trajectory", path=key)
            if key == self.marker:
                return self._publish(key, raw, mode, durable)
            chosen = mode if mode != "overwrite" else self._mode_for(key)
            created = chosen == "create"
            before = None if created else self._kept.get(key)
        if not created and before is None:  # a rewrite must be undoable: fetch what it replaces
            before = self.inner.get(key)
        try:
            etag = self.inner.put(key, raw, mode=chosen, durable=durable)
        except PreconditionFailed:
            with self._lock:
                self._rollback()
            raise WriterBusy(
                "another writer wrote this trajectory since this writer read it;"
                " nothing of this commit is visible (reopen and retry)",
                path=key,
            ) from None
        with self._lock:
            self._wrote(key, raw, etag)
            if self._lost:  # another PUT of this commit lost meanwhile: take this one back
                self._undo_one(key, _Undo(before, created), fresh=True)
            else:  # undone by a rollback from now on (only PUTs that landed are undone)
                self._undo.setdefault(key, _Undo(before, created))
        return etag

    def _mode_for(self, key: str) -> PutMode:
        info = self.seen.get(key)
        if info is None:
            return "create"
        if key in self._trusted:
            return IfMatch(info.etag)
        age = None if info.modified is None else time.time() - info.modified
        if self.grace == 0 or (age is not None and age >= self.grace):
            return IfMatch(info.etag)  # a crashed writer's tail: overwritten, conditionally
        self._rollback()
        raise WriterBusy(
            f"an object past the commit is younger than {self.grace:g} s: another writer's"
            " commit may be in flight (retry later)",
            path=key,
        )

    def _wrote(self, key: str, raw: bytes, etag: str) -> None:
        self.seen[key] = ObjectInfo(len(raw), etag, time.time())
        self._trusted.add(key)  # ours now: rewritten with If-Match on our own ETag
        if key.endswith(_MARKER):
            self._kept[key] = raw

    def _publish(self, key: str, raw: bytes, mode: PutMode, durable: bool) -> str:
        elapsed = 0.0 if self._started is None else time.time() - self._started
        if (
            self.grace and elapsed > self.grace / 2
        ):  # others may take our unpublished objects for a dead writer's by now
            self._rollback()
            raise WriterBusy(
                f"the commit took more than {self.grace / 2:g} s before its marker; abandoned"
                " (reopen and retry)",
                path=key,
            )
        if mode == "overwrite":
            info = self.seen.get(key)
            mode = "create" if info is None else IfMatch(info.etag)
        try:
            etag = self.inner.put(key, raw, mode=mode, durable=durable)
        except PreconditionFailed:
            self._rollback()
            raise
        self.seen[key] = ObjectInfo(len(raw), etag, time.time())
        self._undo.clear()
        self._started = None
        return etag

    def _rollback(self) -> None:
        """Undo this commit's writes (best effort, conditionally); the writer has lost."""
        self._lost = True
        undo, self._undo = self._undo, {}
        fresh = self._started is not None and time.time() - self._started < self.grace / 2
        for key, entry in reversed(list(undo.items())):
            self._undo_one(key, entry, fresh=fresh)
        self._started = None

    def _undo_one(self, key: str, undo: _Undo, *, fresh: bool) -> None:
        """Delete ``key`` (created by us moments ago: nobody else's yet) or restore its bytes."""
        info = self.seen.get(key)
        try:
            if undo.created:
                if fresh:
                    self.inner.delete(key)
                    self.seen.pop(key, None)
            elif undo.before is not None and info is not None:
                etag = self.inner.put(key, undo.before, mode=IfMatch(info.etag))
                self.seen[key] = ObjectInfo(len(undo.before), etag, time.time())
        except (PreconditionFailed, WriterBusy):
            pass  # changed by another writer since: not ours to restore

    def put_file(
        self,
        key: str,
        source: IO[bytes],
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        return self.put(key, source.read(), mode=mode, durable=durable)

    def delete(self, key: str) -> None:
        """Dropped: an unconditional delete could remove another writer's committed object."""

    def delete_prefix(self, prefix: str) -> None:
        """Dropped (see :meth:`delete`)."""

    def copy(self, source: str, dest: str) -> None:
        raise ReadOnlyError("a live object-storage writer never copies", path=dest)

    def open_positional(self, key: str) -> PositionalFile:
        raise NotImplementedError("object storage has no positional writes")

    def writer_lease(self, key: str, *, wait: float = 0.0) -> WriterLease:
        return self.inner.writer_lease(key, wait=wait)


def live_root(root: Location) -> Location:
    """``root`` on a :class:`ConditionalStore` when its store lacks positional writes.

    Call before reading the committed state (the listing must be older).
    """
    store = root.store
    if store.positional_writes or isinstance(store, ConditionalStore):
        return root
    return Location(ConditionalStore(store, f"{root.key}/trajectory".lstrip("/")), root.key)


def writer_is_stale(root: Location) -> bool:
    """Whether another writer committed since the writer on ``root`` (its live root) last did.

    One HEAD of the marker; always ``False`` where a lease keeps writers apart.
    """
    store = root.store
    if not isinstance(store, ConditionalStore):
        return False
    with store._lock:
        seen = store.seen.get(store.marker)
    now = store.inner.head(store.marker)
    return seen is None or now is None or seen.etag != now.etag


def trust_committed(root: Location, reader: TrajectoryReader) -> None:
    """Mark the group documents of the committed state rewritable (arrays mark themselves)."""
    store = root.store
    if not isinstance(store, ConditionalStore):
        return
    base = root / "trajectory"
    groups, _ = committed_nodes(reader)
    for group in groups:
        key = (base / group / _MARKER).key if group else (base / _MARKER).key
        store.trust(key)


# -- the unsharded appender ---------------------------------------------------------------------


class ObjectArrayAppender(ArrayAppender):
    """:class:`ArrayAppender` for object storage: unsharded chunks, one PUT per chunk.

    :class:`ArrayAppender` turns into this on a store without positional
    writes. The partial last chunk is kept in memory and PUT whole again by
    the next commit (``If-Match`` through :class:`ConditionalStore`).
    """

    def __init__(
        self,
        path: Location,
        layout: ArrayLayout,
        attributes: dict[str, Any] | None = None,
        *,
        length: int = 0,
        grow_ahead: bool = False,
    ) -> None:
        # exact shapes only: a commit's zarr.json states the rows its partial chunk ends at
        del grow_ahead
        super().__init__(path, _live_layout(layout), attributes, length=length)

    def _metadata(self, length: int) -> dict[str, Any]:
        document = self.layout.metadata(length, self.attributes)
        document["codecs"] = list(self.layout.codecs)
        return document

    def prepare(self, *, exact: bool = True) -> Any:
        commit = super().prepare(exact=True)
        if commit is not None:
            assert commit.metadata is not None  # exact commits always state their shape
            commit.metadata = self._metadata(int(commit.metadata["shape"][0]))
        return commit

    def _put(self, encoded: Sequence[tuple[int, bytes]], metadata: dict[str, Any] | None) -> None:
        assert metadata is not None  # exact commits always state their shape
        store = self.path.store
        ndim = 1 + len(self.layout.trailing)
        total = int(metadata["shape"][0])
        if isinstance(store, ConditionalStore):
            store.begin()
        partial = total // self.layout.chunk_rows if total % self.layout.chunk_rows else None

        def put(chunk: int, data: bytes) -> None:
            key = (self.path / chunk_key(chunk, ndim)).key
            store.put(key, data)
            if isinstance(store, ConditionalStore):
                store.keep(key, data if chunk == partial else None)

        if len(encoded) > 1:  # the chunks of one commit go up side by side
            futures = [_uploads().submit(put, chunk, data) for chunk, data in encoded]
            errors = [f.exception() for f in futures]  # every one settled before we go on
            first = next((e for e in errors if e is not None), None)
            if first is not None:
                raise first
        else:
            for chunk, data in encoded:
                put(chunk, data)
        store.put((self.path / "zarr.json").key, dumps_json(metadata))

    def sync(self) -> None:
        """Nothing: an acknowledged PUT is durable."""

    def close(self) -> None:
        """Nothing held open."""

    def _reopen(self, length: int) -> None:
        """Take the committed rows of the partial chunk; never delete (others may write)."""
        meta_key = self.path / "zarr.json"
        raw_meta = self.path.store.get(meta_key.key)
        document = None if raw_meta is None else json.loads(raw_meta)
        if not isinstance(document, dict):
            self._created = False
            return
        codecs = document.get("codecs", [])
        if codecs and codecs[0].get("name") == "sharding_indexed":
            raise ReadOnlyError(
                "a sharded array on object storage is not appended to live (repack or push)",
                path=self.path.key,
            )
        physical = int(document.get("shape", [0])[0])
        if length > physical:
            raise InvalidRecord(
                f"array holds {physical} rows but the commit needs {length}", path=self.path.key
            )
        store = self.path.store
        trusted = physical == length  # a longer shape is another writer's, not committed
        c = self.layout.chunk_rows
        tail_rows = length % c
        if tail_rows:
            key = (self.path / chunk_key(length // c, 1 + len(self.layout.trailing))).key
            raw = store.get(key)
            chunk = self.codec.fill() if raw is None else self.codec.decode(raw, where=key)
            self._tail = chunk[:tail_rows].copy()
            past = chunk[tail_rows:]
            clean = bool(np.array_equal(past, self.codec.fill()[tail_rows:]))
            if isinstance(store, ConditionalStore) and raw is not None and clean and trusted:
                store.trust(key, raw)
        if isinstance(store, ConditionalStore) and trusted and raw_meta is not None:
            store.trust(meta_key.key, raw_meta)
        self._flushed = self._published = length


# -- what the commit holds, and garbage past it -------------------------------------------------


def committed_nodes(reader: TrajectoryReader) -> tuple[set[str], dict[str, int]]:
    """Groups (keys under ``trajectory/``, ``""`` itself) and arrays with their committed rows."""
    n = reader.nstep
    groups: set[str] = {""}
    arrays: dict[str, int] = {}
    for name in reader.declaration.blocks:
        block = reader.block(name)
        if block is None or not block.n_updates:
            continue
        groups.add(name)
        for column in block.columns:
            arrays[f"{name}/{column}"] = block.total_rows
        if block.masks:
            groups.add(f"{name}/_validity")
        for column in block.masks:
            arrays[f"{name}/_validity/{column}"] = block.total_rows
        if block.indexed:
            arrays[f"{name}/step_index"] = block.n_updates
            arrays[f"{name}/offset"] = block.n_updates + 1
    box = reader._box_reader()
    if box is not None:
        groups.add("box")
        if box.vectors is not None:
            for array in ("step_index", "vectors", "origin", "boundary"):
                arrays[f"box/{array}"] = box.n_updates
    if reader.declaration.meta:
        groups.add("meta")
        for key in reader.declaration.meta:
            arrays[f"meta/{key}"] = n
    for series in ("step", "time"):
        if reader.dense_array(series) is not None:
            arrays[series] = n
    return groups, arrays


@dataclass(frozen=True)
class Garbage:
    """Objects under ``trajectory/`` no commit references: ``deleted`` or left (too young)."""

    deleted: list[str]
    young: list[str]


def collect_garbage(root: Location, *, dry_run: bool = False) -> Garbage:
    """Delete the objects of ``root``'s trajectory past its committed ``nstep``.

    Chunks of committed arrays wholly past their committed rows, and every
    object of an array or group no commit references. Objects younger than
    :func:`tail_grace` may belong to a commit in flight and are left. With
    the store's writer lease held (a directory's ``flock``).

    Raises
    ------
    ReadOnlyError
        A trajectory written by a foreign writer (its extents are not ours to judge).
    """
    from ._tree import Tree

    store = root.store
    base = (root / "trajectory").key
    grace = tail_grace()
    with store.writer_lease(base):
        listing = store.list_info(base)  # before the state: nothing committed after is listed
        reader = TrajectoryReader(Tree(root.as_store()))
        try:
            if reader.foreign:
                raise ReadOnlyError("a foreign writer's trajectory is not collected")
            groups, arrays = committed_nodes(reader)
            grids = {a: _grid_rows(root / "trajectory" / a) for a in arrays}
        finally:
            reader.close()
        now = time.time()
        deleted: list[str] = []
        young: list[str] = []
        for key, info in listing.items():
            if _referenced(key[len(base) + 1 :], groups, arrays, grids):
                continue
            old = info.modified is None or now - info.modified >= grace or store.positional_writes
            (deleted if old else young).append(key)
        if not dry_run:
            for key in deleted:
                store.delete(key)
    return Garbage(deleted, young)


def _grid_rows(array: Location) -> int:
    document = read_json(array / "zarr.json") or {}
    return int(document["chunk_grid"]["configuration"]["chunk_shape"][0])


def _referenced(
    rel: str, groups: Iterable[str], arrays: dict[str, int], grids: dict[str, int]
) -> bool:
    head, _, name = rel.rpartition("/")
    if name == _MARKER and (head in groups or head in arrays):
        return True
    for array, rows in arrays.items():
        if rel.startswith(array + "/c/"):
            index = int(rel[len(array) + 3 :].split("/")[0])
            return index * grids[array] < rows
    return False
