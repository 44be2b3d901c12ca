"""``LmdbCollection``: the collection file (lmdb.md) as a binding object.

It owns the environment handle, the committed state this process last saw
(``meta``, the decoded index, record layouts) and the two paths through
the file: a write transaction per append or extend (``meta`` last), and read
transactions that resolve records and frames.

Committed state is refreshed when ``meta`` changes (another writer, maybe in
another process, committed). A record never changes once committed, so what
is cached about it stays valid for the life of the file.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from ...codecs import decode_blocks, encode_blocks, plain_document
from ...errors import (
    AlreadyExists,
    FrameBytesError,
    InvalidRecord,
    NotFound,
    ReadOnlyError,
    RetryableError,
)
from ...forcefield import ForceField
from ...model import (
    MOLREC_VERSION,
    Declaration,
    Frame,
    check_collection_meta,
    check_system_alignment,
)
from . import _env
from ._index import (
    IndexColumnSpec,
    IndexTable,
    decode_index,
    decode_pages,
    parse_index_columns,
    reopen_index_columns,
)
from ._keys import FF, INDEX, META, frame_key, index_page_key, record_key, system_key
from ._meta import PAGE_ROWS, MetaValue, decode_meta, meta_encoder
from ._read import (
    Expected,
    Layout,
    RecordView,
    loads,
    resolve,
    rewalk,
    scan,
    walk,
)
from ._system import decode_system
from ._write import Incoming, Prepared, derive_declaration, prepare, shared_columns

__all__ = ["SUFFIX", "LmdbCollection", "RecordParts"]

SUFFIX: Final = ".mrec.lmdb"
#: Record layouts kept per file and process (each a few hundred bytes).
LAYOUT_CACHE: Final = 65536
#: Bytes of stored system values whose decoded (immutable) frames are kept.
SYSTEM_CACHE_BYTES: Final = 64 * 2**20
_NO_DECLARATION: Final = Declaration()
#: A record's ``s`` value not read yet (``None`` is its absence).
_UNREAD: Final[Any] = object()


@dataclass(slots=True)
class _Caches:
    """What this process knows about committed records: valid for the life of
    the file, since a record never changes once committed. Bounded LRUs."""

    layouts: OrderedDict[int, Layout] = field(default_factory=OrderedDict)
    systems: OrderedDict[int, tuple[Frame, int]] = field(default_factory=OrderedDict)
    system_bytes: int = 0
    #: record -> (the checks it passed under, its system, its view); checked once
    views: OrderedDict[int, tuple[Expected, Frame | None, RecordView]] = field(
        default_factory=OrderedDict
    )
    lock: threading.Lock = field(default_factory=threading.Lock)

    def view(self, r: int, expect: Expected) -> tuple[Frame | None, RecordView] | None:
        entry = self.views.get(r)
        return entry[1:] if entry is not None and entry[0] is expect else None

    def put_view(self, r: int, expect: Expected, system: Frame | None, view: RecordView) -> None:
        with self.lock:
            self.views[r] = (expect, system, view)
            if len(self.views) > LAYOUT_CACHE:
                self.views.popitem(last=False)

    def layout(self, r: int) -> Layout | None:
        # No lock and no move to the end: every frame read asks, and one dict
        # lookup is atomic; the cache so drops its oldest insertion first.
        return self.layouts.get(r)

    def put_layout(self, r: int, layout: Layout) -> None:
        with self.lock:
            self.layouts[r] = layout
            if len(self.layouts) > LAYOUT_CACHE:
                self.layouts.popitem(last=False)

    def system(self, r: int) -> Frame | None:
        with self.lock:
            entry = self.systems.get(r)
            if entry is None:
                return None
            self.systems.move_to_end(r)
            return entry[0]

    def put_system(self, r: int, system: Frame, size: int) -> None:
        with self.lock:
            if r in self.systems or size > SYSTEM_CACHE_BYTES:
                return
            self.systems[r] = (system, size)
            self.system_bytes += size
            while self.system_bytes > SYSTEM_CACHE_BYTES:
                _, (_, dropped) = self.systems.popitem(last=False)
                self.system_bytes -= dropped


@dataclass(frozen=True, slots=True)
class _State:
    """Committed state as of one ``meta`` value."""

    raw: bytes
    meta: MetaValue
    table: IndexTable
    forcefield: ForceField | None
    caches: _Caches
    expect: Expected
    txn_id: int  #: the LMDB transaction that committed it (monotonic per file)

    @property
    def declaration(self) -> Declaration:
        return self.meta.declaration or _NO_DECLARATION


def _state(
    raw: bytes,
    meta: MetaValue,
    table: IndexTable,
    ff: ForceField | None,
    caches: _Caches,
    txn_id: int,
    old: _State | None = None,
) -> _State:
    """A state; ``old``'s precomputed checks are kept when the declaration is the same."""
    if old is not None and _schema(old.meta.declaration) == _schema(meta.declaration):
        expect = old.expect
    else:
        expect = Expected.of(meta.declaration or _NO_DECLARATION)
    return _State(raw, meta, table, ff, caches, expect, txn_id)


def _install(handle: _env.EnvHandle, state: _State) -> None:
    """Make ``state`` the cached one unless a newer one is already cached."""
    with handle.state_lock:
        current: _State | None = handle.state
        if current is None or state.txn_id > current.txn_id:
            handle.previous, handle.state = current, state


class RecordParts(NamedTuple):
    """Record ``r`` as read: its ``meta`` document, ``system`` and trajectory view.

    A named tuple: built at every ``col[r]``, where a frozen dataclass's
    ``__init__`` cost as much as reading the record's meta.
    """

    meta: dict[str, Any]
    system: Frame | None
    view: RecordView | None  #: ``None`` when the record has no trajectory


def _check_path(path: str) -> str:
    text = os.fspath(path)
    if not text.endswith(SUFFIX) or os.path.basename(text) == SUFFIX:
        raise InvalidRecord(f"a collection file is named <name>{SUFFIX} (lmdb.md §1)", path=text)
    return text


def _forcefield(value: Any) -> ForceField | None:
    if value is None or isinstance(value, ForceField):
        return value
    if isinstance(value, Mapping):
        return ForceField.from_dict(value)
    raise InvalidRecord(
        f"forcefield is a ForceField, not {type(value).__name__}", path="forcefield"
    )


def _encode_ff(ff: ForceField) -> bytes:
    document, tables = ff.to_section()
    return encode_blocks(tables, {"meta": document})


def _decode_ff(raw: Any, version: int | None) -> ForceField:
    tables, header = decode_blocks(bytes(raw), copy=False)
    document = plain_document(header)
    if "meta_types" in header or any(k in header for k in ("step", "time", "box")):
        raise FrameBytesError("the ff value carries only blocks and meta (lmdb.md §6.1)", path="ff")
    return ForceField.from_section(document, tables, molrec_version=version)


def _schema(declaration: Declaration | None) -> dict[str, Any] | None:
    return None if declaration is None else declaration.to_dict()


def _compatible(old: _State, new: MetaValue) -> bool:
    """Whether ``new`` extends ``old`` by appends only (so cached records stay valid)."""
    pinned_later = old.meta.declaration is None and old.meta.n_frames == 0
    return (
        new.n_records >= old.meta.n_records
        and new.n_frames >= old.meta.n_frames
        and new.collection == old.meta.collection
        and (pinned_later or _schema(new.declaration) == _schema(old.meta.declaration))
    )


class LmdbCollection:
    """One open collection file.

    Use :meth:`create` or :meth:`open`; call :meth:`close` when done. Any
    thread may call any method: each call runs its transactions to the end
    on the calling thread, and writers of one process take turns.
    """

    def __init__(
        self, handle: _env.EnvHandle, *, writable: bool, own: dict[str, IndexColumnSpec]
    ) -> None:
        self._handle: _env.EnvHandle | None = handle
        self.writable = writable
        self._own = own

    # -- opening --------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str,
        *,
        meta: Mapping[str, Any],
        declaration: Declaration | Mapping[str, Any] | None = None,
        index_columns: Mapping[str, Any] | None = None,
        forcefield: Any = None,
        overwrite: bool = False,
    ) -> LmdbCollection:
        """Create the file with zero records (one transaction, ``meta`` last)."""
        path = _check_path(path)
        document = dict(meta) if isinstance(meta, Mapping) else meta
        document = check_collection_meta(document, path="meta")
        # Writers stamp the current contract version (lmdb.md §3), whatever was given.
        document["molrec_version"] = MOLREC_VERSION
        pinned = None if declaration is None else Declaration.from_dict(declaration)
        if pinned is not None and not pinned.blocks and not pinned.meta:
            pinned = None
        own = parse_index_columns(index_columns)
        ff = _forcefield(forcefield)
        cls._make_room(path, overwrite)
        handle = _env.acquire(path, create=True)
        try:
            table = IndexTable.empty(own)
            encode = meta_encoder(document, pinned)
            with handle.lock:
                with handle.env.begin(write=True) as txn:
                    if txn.stat()["entries"]:
                        raise AlreadyExists(f"{path} already holds data", path=path)
                    if ff is not None:
                        txn.put(FF, _encode_ff(ff))
                    txn.put(INDEX, table.encode())
                    raw = encode(0, 0)
                    txn.put(META, raw)  # last (lmdb.md §3)
                    txn_id = txn.id()
                _install(handle, _state(raw, decode_meta(raw), table, ff, _Caches(), txn_id))
        except BaseException:
            _env.release(handle)
            raise
        return cls(handle, writable=True, own=own)

    @staticmethod
    def _make_room(path: str, overwrite: bool) -> None:
        if not os.path.exists(path):
            if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
                raise NotFound(f"the directory of {path} does not exist", path=path)
            return
        if not overwrite:
            raise AlreadyExists(f"{path} exists; pass overwrite=True to replace it", path=path)
        if _env.is_open(path):
            raise AlreadyExists(
                f"{path} is open in this process; close it before overwriting", path=path
            )
        # Chosen: overwrite replaces the file (and its lock file). Another process
        # that still has the old file open keeps reading the old collection.
        os.unlink(path)
        if os.path.exists(path + "-lock"):
            os.unlink(path + "-lock")

    @classmethod
    def open(
        cls, path: str, *, mode: str = "r", index_columns: Mapping[str, Any] | None = None
    ) -> LmdbCollection:
        """Open an existing file: ``mode="r"`` reads, ``"r+"`` also appends."""
        if mode not in ("r", "r+"):
            raise ValueError(f"mode is 'r' or 'r+', not {mode!r}")
        path = _check_path(path)
        if not os.path.isfile(path):
            raise NotFound(f"no collection file at {path}", path=path)
        handle = _env.acquire(path)
        try:
            with handle.env.begin(buffers=True) as txn:
                state = _refresh(handle, txn)
            if mode == "r+":
                if not handle.writable:
                    raise ReadOnlyError(f"{path} is not writable", path=path)
                if state.meta.molrec_version == 1:
                    raise ReadOnlyError(
                        "a version-1 collection is read, never appended to (forcefield.md §11)",
                        path=path,
                    )
            own = reopen_index_columns(state.table.own, index_columns)
        except BaseException:
            _env.release(handle)
            raise
        return cls(handle, writable=mode == "r+", own=own)

    def compact(self, path: str | None = None, *, overwrite: bool = False) -> None:
        """Write a packed copy of the committed collection to ``path``, or in place.

        LMDB splits a full leaf page in half unless keys are appended at the
        very end of the database, which ``f``/``r``/``s`` keys interleaved with
        ``index`` and ``meta`` never are; a growing collection so keeps its
        leaves about half full. The copy writes every key in order with
        ``MDB_APPEND`` (full leaves), ``meta`` last, in transactions of about
        64 MB: a copy cut short has no ``meta`` and is not a collection. A
        paged index (mrecd's extension) is written as the one ``index`` value
        of lmdb.md §4, so the copy is in the baseline layout any reader reads.

        Without ``path`` the copy is written beside the file and renamed over
        it (see :meth:`_compact_in_place`).
        """
        if path is None:
            self._compact_in_place()
            return
        path = _check_path(path)
        source = self._live()
        self._make_room(path, overwrite)
        with source.env.begin(buffers=True) as txn:
            _write_compacted(source, txn, path)

    def _compact_in_place(self) -> None:
        """Compact into a sibling file, then rename it over this one.

        A write transaction on the file is held throughout, so no writer in
        any process commits meanwhile. The data file and its lock file are
        both replaced (the old lock describes the old file). This process
        switches to the new file at once (transactions already begun finish
        on the old one). Another process keeps reading the old file, a
        consistent snapshot, until it reopens; its next append is refused with
        :class:`~mrecd.errors.RetryableError` (reopen and append again).
        """
        if not self.writable:
            raise ReadOnlyError("compacting in place needs mode 'r+'", path=self.path)
        handle = self._live()
        head, name = os.path.split(handle.path)
        scratch = os.path.join(head, f".{name[: -len(SUFFIX)]}.compacting-{os.getpid()}{SUFFIX}")
        with handle.lock:
            txn = handle.env.begin(write=True, buffers=True)
            try:
                self._check_same_file(handle)
                self._make_room(scratch, True)
                _write_compacted(handle, txn, scratch)
                os.replace(scratch, handle.path)
                for lock in (handle.path + "-lock", scratch + "-lock"):
                    if os.path.exists(lock):
                        os.unlink(lock)
                new_env = _env.open_env(handle.path, writable=True)
            finally:
                txn.abort()
            with handle.state_lock:
                handle.retired.append(handle.env)
                handle.env = new_env
                handle.identity = _env.file_identity(handle.path)
                handle.state = handle.previous = None  # txn ids restart in the new file

    @staticmethod
    def _check_same_file(handle: _env.EnvHandle) -> None:
        if handle.replaced():
            raise RetryableError(
                "the file was compacted in place (or replaced) since this process opened it;"
                " reopen the collection and append again",
                path=handle.path,
            )

    def close(self) -> None:
        """Release the environment (closed with the last user in this process)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            _env.release(handle)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._handle is None

    @property
    def path(self) -> str:
        """The file's path."""
        return self._live().path

    def _live(self) -> _env.EnvHandle:
        if self._handle is None:
            raise ValueError("I/O operation on a closed collection")
        return self._handle

    # -- committed state ------------------------------------------------------------------

    def reading(self, buffers: bool = True) -> Any:
        """A read transaction, to use as a context manager (values are buffers
        valid while it is open; ``bytes`` when not ``buffers``)."""
        return self._live().env.begin(buffers=buffers)

    def get(self, key: bytes) -> bytes | None:
        """The value of ``key`` as committed now, in a read transaction of its own."""
        with self._live().env.begin() as txn:
            value: bytes | None = txn.get(key)
            return value

    def state(self, txn: Any | None = None) -> _State:
        """The committed state, refreshed from ``txn`` (a new read transaction when ``None``)."""
        handle = self._live()
        if txn is not None:
            return _refresh(handle, txn)
        with handle.env.begin(buffers=True) as own_txn:
            return _refresh(handle, own_txn)

    def cached(self) -> _State:
        """The last committed state seen, without touching the file."""
        state: _State = self._live().state
        return state

    @property
    def own_index_columns(self) -> dict[str, IndexColumnSpec]:
        """This handle's own index columns (with local ``derive``/``nullable``)."""
        return dict(self._own)

    # -- writing --------------------------------------------------------------------------

    def append(
        self,
        items: Sequence[Incoming],
        own_rows: Sequence[dict[str, Any]],
    ) -> range:
        """Append ``items`` in one transaction; all or nothing. Returns their ordinals."""
        if not self.writable:
            raise ReadOnlyError("the collection was opened read-only (mode='r')", path=self.path)
        handle = self._live()
        with handle.lock:
            new_state = self._commit(handle, items, own_rows)
            _install(handle, new_state)  # only once committed
        return range(new_state.meta.n_records - len(items), new_state.meta.n_records)

    def _commit(
        self, handle: _env.EnvHandle, items: Sequence[Incoming], own_rows: Sequence[dict[str, Any]]
    ) -> _State:
        with handle.env.begin(write=True) as txn:
            self._check_same_file(handle)  # after begin: a compaction holds writers off
            state = _refresh(handle, txn)
            declaration = state.meta.declaration
            if declaration is None and state.meta.n_frames == 0:
                # Chosen: a collection created without a declaration pins the one
                # its first frames imply (collection.md §2.2 "derives").
                declaration = derive_declaration(items)
            base = state.meta.n_records
            prepared = [
                prepare(item, declaration, own_rows[k], f"records[{base + k}]")
                for k, item in enumerate(items)
            ]
            table = state.table.extended(p.row for p in prepared)
            _put_records(txn, base, state.table.total_frames, prepared)
            page_rows = _put_index(txn, state, table)
            collection = state.meta.collection | {"molrec_version": MOLREC_VERSION}
            raw = meta_encoder(collection, declaration, page_rows)(table.n, table.total_frames)
            txn.put(META, raw)  # last (lmdb.md §3)
            meta = MetaValue(collection, declaration, table.n, table.total_frames, page_rows)
            txn_id = txn.id()
        return _state(raw, meta, table, state.forcefield, state.caches, txn_id, state)

    # -- reading --------------------------------------------------------------------------

    def record(self, txn: Any, state: _State, r: int, raw_system: Any = _UNREAD) -> RecordParts:
        """Record ``r`` (``0 <= r < n_records`` of ``state``) read in ``txn``
        (``raw_system``: its ``s`` value, when the caller has read it in ``txn``)."""
        raw_meta = txn.get(record_key(r))
        if raw_meta is None:
            raise InvalidRecord(
                "the record's meta key r‖r is missing (lmdb.md §2)", path=f"records[{r}]"
            )
        try:
            meta = loads(raw_meta)
        except (ValueError, RecursionError) as exc:
            raise InvalidRecord(
                f"the record's meta is not JSON: {exc}", path=f"records[{r}].meta"
            ) from None
        if type(meta) is not dict:
            raise InvalidRecord("a record's meta is a JSON object", path=f"records[{r}].meta")
        known = state.caches.view(r, state.expect)
        if known is not None:
            return RecordParts(meta, *known)
        where = f"records[{r}]"
        system, view = self._parts(txn, state, r, where, raw_system)
        if view is not None:
            state.caches.put_view(r, state.expect, system, view)
        return RecordParts(meta, system, view)

    def record_stored(self, txn: Any, state: _State, r: int) -> tuple[RecordParts, bytes | None]:
        """:meth:`record`, and the record's stored system value (``None``: none),
        read once in ``txn``."""
        raw = txn.get(system_key(r))
        system = None if raw is None else bytes(raw)
        return self.record(txn, state, r, system), system

    def _parts(
        self, txn: Any, state: _State, r: int, where: str, raw_system: Any = _UNREAD
    ) -> tuple[Frame | None, RecordView | None]:
        """Record ``r``'s system and trajectory view, held to the record-level rules."""
        system = state.caches.system(r)
        if system is None:
            if raw_system is _UNREAD:
                raw_system = txn.get(system_key(r))
            if raw_system is not None:
                system = decode_system(raw_system, state.meta.molrec_version, where)
                state.caches.put_system(r, system, len(raw_system))
        first, n_frames, has_trajectory = state.table.row(r)
        if system is None and not has_trajectory:
            raise InvalidRecord(
                "the record has neither system nor trajectory (collection.md §2.5)", path=where
            )
        if not has_trajectory:
            return system, None
        view = RecordView(
            r,
            first,
            n_frames,
            state.declaration,
            system,
            state.meta.molrec_version,
            state.expect,
            state.caches,
        )
        if system is not None:
            check_system_alignment(state.declaration, system.blocks)
            shared_columns(state.declaration, system, where)
        return system, view

    def layout(self, txn: Any, view: RecordView, upto: int | None = None) -> Layout:
        """The record's layout covering frames ``0..upto`` (all when ``None``);
        cached, and scanned in ``txn`` only as far as it is not yet known."""
        upto = view.n_frames - 1 if upto is None else upto
        caches: _Caches = view.caches
        layout = caches.layout(view.r)
        if layout is None or layout.known <= upto:
            layout = scan(txn, view, upto, layout)
            caches.put_layout(view.r, layout)
        return layout

    def frame(
        self,
        txn: Any,
        view: RecordView,
        i: int,
        names: list[str] | None = None,
        layout: Layout | None = None,
    ) -> tuple[Frame, Layout]:
        """Frame ``i`` of the record resolved in ``txn`` (blocks ``names``, all when
        ``None``) and the layout it was resolved with (pass it back next time).

        Only frames ``0..i`` are read: a rule broken by a later frame is refused
        when a read reaches it.
        """
        if layout is None or layout.known <= i:
            layout = self.layout(txn, view, i)
        return resolve(txn, view, layout, i, names), layout

    def frames(self, txn: Any, view: RecordView) -> Sequence[Frame]:
        """Every frame of the record, resolved and checked in one pass (each
        :class:`Frame` is built when first asked for)."""
        known = view.caches.layout(view.r)
        if known is not None and known.walked is not None:
            held = rewalk(txn, view, known)
            if held is not None:
                return held
        layout, frames = walk(txn, view)
        view.caches.put_layout(view.r, layout)
        return frames


_COPY_CHUNK: Final = 64 * 2**20


def _write_compacted(source: _env.EnvHandle, txn: Any, path: str) -> None:
    """The committed collection as ``txn`` sees it, packed into the new file ``path``."""
    state = _refresh(source, txn)  # the copy is of a readable collection
    if state.meta.page_rows is None:
        meta, index = bytes(txn.get(META)), bytes(txn.get(INDEX))
    else:
        meta = meta_encoder(state.meta.collection, state.meta.declaration)(
            state.meta.n_records, state.meta.n_frames
        )
        index = state.table.encode()
    target = _env.acquire(path, create=True)
    try:
        _copy_sorted(txn.cursor(), target.env, index)
        with target.env.begin(write=True) as out:
            out.put(META, meta)  # last (lmdb.md §3)
    finally:
        _env.release(target)


def _is_page(key: Any) -> bool:
    return len(key) == 9 and key[:1] == b"i"


def _copy_sorted(cursor: Any, env: Any, index: bytes) -> None:
    """Every key but ``meta`` and the index, in key order, appended (full leaf
    pages), with ``index`` put at its place in that order."""
    pending: list[tuple[bytes, bytes]] = []
    size = 0
    for key, value in _with_index(cursor, index):
        pending.append((key, value))
        size += len(key) + len(value)
        if size >= _COPY_CHUNK:
            _append(env, pending)
            pending, size = [], 0
    _append(env, pending)


def _with_index(cursor: Any, index: bytes) -> Iterator[tuple[bytes, bytes]]:
    placed = False
    for key, value in cursor:
        if key in (META, INDEX) or _is_page(key):
            continue
        if not placed and bytes(key) > INDEX:
            placed = True
            yield INDEX, index
        yield bytes(key), bytes(value)
    if not placed:
        yield INDEX, index


def _append(env: Any, items: list[tuple[bytes, bytes]]) -> None:
    with env.begin(write=True) as txn:
        txn.cursor().putmulti(items, append=True)


def _put_records(txn: Any, base: int, first: int, prepared: Sequence[Prepared]) -> None:
    items: list[tuple[bytes, bytes]] = []
    j = first
    for k, p in enumerate(prepared):
        items.append((record_key(base + k), p.meta))
        if p.system is not None:
            items.append((system_key(base + k), p.system))
        for value in p.frames:
            items.append((frame_key(j), value))
            j += 1
    items.sort()  # sorted keys make LMDB's page splits cheap
    txn.cursor().putmulti(items)


def _put_index(txn: Any, state: _State, table: IndexTable) -> int | None:
    """Store the index of ``table`` as ``state`` left it stored; return the rows per page
    (``None``: the one ``index`` value).

    The one value while it fits a page; past that, pages, of which a commit
    rewrites only those its new rows fall in. The switch happens in the commit
    that passes one page, ``index`` deleted in the same transaction.
    """
    page_rows = state.meta.page_rows
    if page_rows is None and table.n <= PAGE_ROWS:
        txn.put(INDEX, table.encode())
        return None
    first = 0
    if page_rows is None:
        page_rows = PAGE_ROWS
        txn.delete(INDEX)
    else:
        first = state.table.n // page_rows
    for p in range(first, (table.n - 1) // page_rows + 1):
        txn.put(index_page_key(p), table.encode_page(p, page_rows))
    return page_rows


def _refresh(handle: _env.EnvHandle, txn: Any) -> _State:
    raw = txn.get(META)
    if raw is None:
        raise InvalidRecord(
            "the file has no meta key: not a collection (lmdb.md §3)", path=handle.path
        )
    for state in (handle.state, handle.previous):
        if state is not None and raw == state.raw:
            return state  # type: ignore[no-any-return]
    txn_id = txn.id()
    state = handle.state
    # Decoded outside any lock: two threads may both load; the newer one stays.
    new = _load(bytes(raw), txn, state if state is not None and txn_id > state.txn_id else None)
    _install(handle, new)
    return new


def _table(txn: Any, meta: MetaValue, old: _State | None) -> IndexTable:
    index = txn.get(INDEX)
    if meta.page_rows is None:
        if index is None:
            raise InvalidRecord("the file has no index key (lmdb.md §4)", path="index")
        return decode_index(index, meta.n_records, meta.n_frames)
    if index is not None:
        raise InvalidRecord(
            "meta says the index is paged but an index value exists too: which one holds the"
            " records is ambiguous",
            path="index",
        )
    known = None
    if old is not None and old.meta.page_rows == meta.page_rows:
        known = old.table
    return decode_pages(txn.get, meta.page_rows, meta.n_records, meta.n_frames, known)


def _load(raw: bytes, txn: Any, old: _State | None) -> _State:
    meta = decode_meta(raw)
    compatible = old is not None and _compatible(old, meta)
    table = _table(txn, meta, old if compatible else None)
    if old is not None and compatible:
        return _state(raw, meta, table, old.forcefield, old.caches, txn.id(), old)
    ff_raw = txn.get(FF)
    ff = None if ff_raw is None else _decode_ff(ff_raw, meta.molrec_version)
    return _state(raw, meta, table, ff, _Caches(), txn.id())
