"""Copy a closed record between stores: :func:`push` to a bucket, :func:`pull` back to disk.

A record is visible exactly when its root ``zarr.json`` exists (storage.md
§1). :func:`push` therefore copies every other object first, checks the
sizes the destination lists against the source, and writes the root last
with a create-only put: a push that dies midway leaves objects no reader
takes for a record, and of two pushes of one name the second loses with
:class:`~mrecd.errors.AlreadyExists`. A packed ``*.mrec.zip`` is one object
and is pushed as one. :func:`pull` builds the local directory in a hidden
sibling and renames it into place.

Object PUTs and GETs are latency-bound, so objects travel on a small thread
pool. Sizes are compared, not ETags: a multipart upload's ETag is no MD5.
"""

from __future__ import annotations

import io
import os
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Final, Literal

from ..errors import AlreadyExists, InvalidRecord, NotFound, PreconditionFailed, StoreUnavailable
from ._base import NoLease, ObjectInfo, PutMode, RangeReader, Store, WriterLease, check_key
from ._directory import DirectoryStore, fsync_directory
from ._url import open_store
from ._zip import ZipStore

__all__ = ["DEFAULT_WORKERS", "pull", "push"]

#: Objects in flight at once.
DEFAULT_WORKERS: Final = 8
RECORD_SUFFIX: Final = ".mrec"
ZIP_SUFFIX: Final = ".mrec.zip"
ROOT: Final = "zarr.json"
# Objects up to this size travel as one GET and one PUT; larger ones stream in
# blocks this size (one ranged GET each; parts of a multipart upload).
_BLOCK: Final = 8 << 20
# A zip up to this size is pushed with a create-only PUT, which has no
# multipart form and so holds the whole archive in memory.
_WHOLE_PUT_LIMIT: Final = 256 << 20

Form = Literal["directory", "zip"]
Tick = Callable[[int], None]


def push(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str] | Store,
    *,
    name: str | None = None,
    progress: bool = False,
    overwrite: bool = False,
    workers: int = DEFAULT_WORKERS,
) -> str:
    """Copy the closed record ``source`` to ``<dest>/<name>.mrec`` (or ``<name>.mrec.zip``).

    Parameters
    ----------
    source
        A ``*.mrec`` directory or ``*.mrec.zip`` file: a local path, or a
        store URL (``memory://lab/run-42.mrec``, ``s3://bucket/run-42.mrec.zip``).
    dest
        Where records live: a URL (``s3://bucket/lab``), a path or a store.
    name
        The record's name there (default: the source's stem; a ``.mrec``
        or ``.mrec.zip`` suffix of the source's form is accepted).
    progress
        Show a progress bar (bytes, rate, ETA) on standard error.
    overwrite
        Replace a record of that name (either form). Not safe against a
        concurrent push of the same name.
    workers
        Objects in flight at once.

    Returns
    -------
    str
        The URL of the pushed record.

    Raises
    ------
    NotFound
        ``source`` does not exist.
    InvalidRecord
        ``source`` is not a record (no ``.mrec``/``.mrec.zip`` brand, no root
        ``zarr.json``) or ``name`` is not one plain path component.
    AlreadyExists
        A record of that name exists (or appeared during the push) and
        ``overwrite`` is false. Objects of the losing push may remain; no
        reader sees them.
    WriterBusy
        A writer holds the source's trajectory: the record is not closed.
    StoreUnavailable
        A store failed, or the destination lists other sizes than were sent.

    Notes
    -----
    The name is checked before any upload and the root is created last, so
    of two racing pushes one gets :class:`~mrecd.errors.AlreadyExists`; but
    the loser's chunk objects, uploaded while the winner's were, can replace
    the winner's ones of the same key. Push distinct records under distinct
    names. A zip larger than 256 MiB is uploaded in parts, which object
    storage cannot make create-only: two such pushes end with the last one's.
    """
    parent, key = _locate(source)
    form = _form(key)
    stem = _stem(name if name is not None else key, form)
    target = open_store(dest)
    with ExitStack() as stack:
        bar = stack.enter_context(_Progress(f"push {stem}", progress))
        if form == "zip":
            return _push_zip(parent, key, target, stem, bar, overwrite=overwrite)
        record = parent.child(key)
        stack.enter_context(_trajectory_lease(record))
        files = _record_files(record, os.fspath(source), InvalidRecord)
        _clear_for_push(target, stem, files, overwrite=overwrite)
        bar.add_total(sum(info.size for info in files.values()))
        dest_record = target.child(stem + RECORD_SUFFIX)
        _copy_all(record, dest_record, files, bar, workers, root_mode="create")
        if overwrite:
            target.delete(stem + ZIP_SUFFIX)  # the name now means the directory
        return dest_record.url


def pull(
    url: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    progress: bool = False,
    overwrite: bool = False,
    workers: int = DEFAULT_WORKERS,
) -> Path:
    """Copy the record at ``url`` into the local path ``dest``.

    ``dest`` names the record when it ends in ``.mrec`` (a directory; a
    zipped source is unpacked) or ``.mrec.zip`` (the archive, from a zipped
    source); otherwise it is a directory that receives the record under its
    own name. The copy is built in a hidden sibling and renamed into place,
    so ``dest`` is never a partial record.

    Parameters
    ----------
    url
        The record: ``s3://bucket/lab/run-42.mrec`` (or ``….mrec.zip``), any
        store URL or a local path.
    dest
        The local path (see above).
    progress
        Show a progress bar (bytes, rate, ETA) on standard error.
    overwrite
        Replace an existing ``dest``.
    workers
        Objects in flight at once.

    Returns
    -------
    Path
        The record written.

    Raises
    ------
    NotFound
        No record at ``url`` (absent, or a push that did not finish).
    InvalidRecord
        ``url`` or ``dest`` has no ``.mrec``/``.mrec.zip`` brand, or a
        directory record is to become a ``.mrec.zip``.
    AlreadyExists
        ``dest`` exists and ``overwrite`` is false.
    StoreUnavailable
        A store failed, or the copy's sizes differ from the source's.
    """
    parent, key = _locate(url)
    form = _form(key)
    target = _pull_target(Path(dest), key, form)
    if (target.exists() or target.is_symlink()) and not overwrite:
        raise AlreadyExists("the destination exists (overwrite to replace it)", path=str(target))
    local = DirectoryStore(target.parent)
    with ExitStack() as stack:
        bar = stack.enter_context(_Progress(f"pull {target.name}", progress))
        if form == "zip" and target.name.endswith(ZIP_SUFFIX):
            _pull_zip(parent, key, local, target.name, bar, overwrite=overwrite)
            return target
        record = _source_record(parent, key, form)
        stack.callback(record.close)
        files = _record_files(record, os.fspath(url), NotFound)
        bar.add_total(sum(info.size for info in files.values()))
        _pull_directory(record, files, local, target.name, bar, workers, overwrite=overwrite)
    return target


# -- locating records ------------------------------------------------------------------------


def _locate(source: str | os.PathLike[str]) -> tuple[Store, str]:
    """The store holding ``source`` and its key there (the record's own name)."""
    text = os.fspath(source)
    if "://" in text:
        base, _, key = text.rstrip("/").rpartition("/")
        if not key or base.endswith(":/"):
            raise InvalidRecord("the URL names no record inside a store", path=text)
        return open_store(base), key
    path = Path(text).absolute()
    if not path.exists():
        raise NotFound("no such record", path=text)
    return DirectoryStore(path.parent), path.name


def _form(key: str) -> Form:
    if key.endswith(ZIP_SUFFIX):
        return "zip"
    if key.endswith(RECORD_SUFFIX):
        return "directory"
    raise InvalidRecord(
        f"not a record: the name must end in {RECORD_SUFFIX} or {ZIP_SUFFIX} (storage.md §1)",
        path=key,
    )


def _stem(name: str, form: Form) -> str:
    suffix = ZIP_SUFFIX if form == "zip" else RECORD_SUFFIX
    stem = name.removesuffix(suffix)
    other = RECORD_SUFFIX if form == "zip" else ZIP_SUFFIX
    if not stem or "/" in stem or stem.startswith(".") or stem.endswith(other):
        raise InvalidRecord(
            f"a record name is one path component, not hidden, without the other "
            f"form's suffix (a {form} record is pushed as <name>{suffix})",
            path=name,
        )
    return check_key(stem)


def _pull_target(dest: Path, key: str, form: Form) -> Path:
    name = dest.name
    if name.endswith(ZIP_SUFFIX):
        if form != "zip":
            raise InvalidRecord(
                "a directory record pulls into a .mrec path (pack it after: mrecd pack)",
                path=str(dest),
            )
        return dest.absolute()
    if name.endswith(RECORD_SUFFIX):
        return dest.absolute()
    return (dest / key).absolute()


def _visible(key: str) -> bool:
    return not any(part.startswith(".") for part in key.split("/"))


def _record_files(
    record: Store, where: str, not_a_record: type[InvalidRecord] | type[NotFound]
) -> dict[str, ObjectInfo]:
    """The record's objects (hidden names skipped), refusing one without a root ``zarr.json``."""
    files = {k: v for k, v in record.list_info().items() if _visible(k)}
    if not files:
        raise NotFound("no such record", path=where)
    if ROOT not in files:
        raise not_a_record(
            "not a record: no root zarr.json (storage.md §1; or a push that did not finish)",
            path=where,
        )
    return files


def _trajectory_lease(record: Store) -> WriterLease:
    """The source trajectory's writer lease, held for the push (a live writer refuses it)."""
    if record.read_only or not record.exists("trajectory/zarr.json"):
        return NoLease()
    return record.writer_lease("trajectory")  # WriterBusy: the record is not closed


def _source_record(parent: Store, key: str, form: Form) -> Store:
    """A record to read object by object: its prefix, or the members of its zip."""
    if form == "directory":
        return parent.child(key)
    if parent.head(key) is None:
        raise NotFound("no such record", path=f"{parent.url.rstrip('/')}/{key}")
    return ZipStore(parent, key)


# -- push ------------------------------------------------------------------------------------


def _clear_for_push(
    target: Store, stem: str, files: Mapping[str, ObjectInfo], *, overwrite: bool
) -> None:
    """Refuse a taken name, or (``overwrite``) unpublish it; drop leftovers of a dead push."""
    dest_record = target.child(stem + RECORD_SUFFIX)
    existing = dest_record.list_info()
    taken = ROOT in existing or target.exists(stem + ZIP_SUFFIX)
    if taken and not overwrite:
        raise AlreadyExists(
            "a record of this name exists (overwrite to replace it)", path=dest_record.url
        )
    dest_record.delete(ROOT)  # first: the old record stops being one before it changes
    for key in existing:
        if key != ROOT and key not in files:  # a stale chunk would read as data
            dest_record.delete(key)


def _push_zip(
    parent: Store, source_key: str, target: Store, stem: str, bar: _Progress, *, overwrite: bool
) -> str:
    info = parent.head(source_key)
    if info is None:
        raise NotFound("no such record", path=f"{parent.url.rstrip('/')}/{source_key}")
    key = stem + ZIP_SUFFIX
    taken = target.exists(key) or target.exists(f"{stem}{RECORD_SUFFIX}/{ROOT}")
    if taken and not overwrite:
        raise AlreadyExists(
            "a record of this name exists (overwrite to replace it)",
            path=f"{target.url.rstrip('/')}/{key}",
        )
    bar.add_total(info.size)
    mode: PutMode = "create" if not overwrite and info.size <= _WHOLE_PUT_LIMIT else "overwrite"
    with _lost_race(target, key):
        _copy_object(parent, target, source_key, info.size, bar.advance, mode=mode, dest_key=key)
    _check_sizes(target, {key: info})
    if overwrite:  # the name now means the archive; unpublish the directory first
        target.delete(f"{stem}{RECORD_SUFFIX}/{ROOT}")
        target.child(stem + RECORD_SUFFIX).delete_prefix("")
    return f"{target.url.rstrip('/')}/{key}"


def _copy_all(
    source: Store,
    dest: Store,
    files: Mapping[str, ObjectInfo],
    bar: _Progress,
    workers: int,
    *,
    root_mode: PutMode,
) -> None:
    """Every object but the root in parallel, sizes checked, then the root with ``root_mode``."""
    data = sorted((k for k in files if k != ROOT), key=lambda k: -files[k].size)
    _parallel(
        workers, (partial(_copy_object, source, dest, k, files[k].size, bar.advance) for k in data)
    )
    _check_sizes(dest, {k: files[k] for k in data})
    with _lost_race(dest, ROOT):
        _copy_object(source, dest, ROOT, files[ROOT].size, bar.advance, mode=root_mode)


@contextmanager
def _lost_race(dest: Store, key: str) -> Iterator[None]:
    """A create-only put of a record that another push published first: the name is taken."""
    try:
        yield
    except PreconditionFailed:
        raise AlreadyExists(
            "a record of this name exists: another push published it first",
            path=f"{dest.url.rstrip('/')}/{key}",
        ) from None


def _copy_object(
    source: Store,
    dest: Store,
    key: str,
    size: int,
    tick: Tick,
    *,
    mode: PutMode = "overwrite",
    dest_key: str | None = None,
) -> None:
    """One object: one GET and PUT when small, streamed in blocks when large."""
    out = key if dest_key is None else dest_key
    if size <= _BLOCK:
        data = source.get(key)
        if data is None or len(data) != size:
            raise _changed(source, key)
        dest.put(out, data, mode=mode)
        tick(size)
        return
    reader = source.open_reader(key)
    if reader is None or reader.size != size:
        raise _changed(source, key)
    raw = _ReaderFile(reader, tick)
    try:
        dest.put_file(out, io.BufferedReader(raw, _BLOCK), mode=mode)
    finally:
        reader.close()
    if raw.position != size:
        raise _changed(source, key)


def _changed(source: Store, key: str) -> StoreUnavailable:
    return StoreUnavailable(
        "the source object vanished or changed size while it was copied",
        path=f"{source.url.rstrip('/')}/{key}",
    )


def _check_sizes(dest: Store, expected: Mapping[str, ObjectInfo]) -> None:
    """Compare what ``dest`` lists with what was sent (ETags of multipart uploads are no MD5)."""
    if not expected:
        return
    listed = dest.list_info()
    wrong = sorted(k for k, v in expected.items() if k not in listed or listed[k].size != v.size)
    if wrong:
        raise StoreUnavailable(
            f"{len(wrong)} object(s) missing or of another size after the copy, e.g. {wrong[0]!r}",
            path=dest.url,
        )


# -- pull ------------------------------------------------------------------------------------


def _pull_directory(
    record: Store,
    files: Mapping[str, ObjectInfo],
    local: DirectoryStore,
    name: str,
    bar: _Progress,
    workers: int,
    *,
    overwrite: bool,
) -> None:
    """Copy into a hidden sibling, make it durable, then rename it over ``name``."""
    stage = f".{name}.pull-{uuid.uuid4().hex[:12]}"
    staged = local.child(stage)
    try:
        _copy_all(record, staged, files, bar, workers, root_mode="overwrite")
        staged.sync(files)
        _replace(local, stage, name, overwrite=overwrite)
    finally:
        local.delete_prefix(stage)


def _replace(local: DirectoryStore, stage: str, name: str, *, overwrite: bool) -> None:
    """Rename ``stage`` to ``name``, moving an existing ``name`` aside first and removing it."""
    old = f".{name}.old-{uuid.uuid4().hex[:12]}"
    present = (local.root / name).exists() or (local.root / name).is_symlink()
    if present and not overwrite:  # appeared while we copied
        raise AlreadyExists("the destination exists (overwrite to replace it)", path=name)
    if present:
        os.rename(local.root / name, local.root / old)
    os.rename(local.root / stage, local.root / name)
    fsync_directory(local.root)
    if present:
        local.delete_prefix(old)


def _pull_zip(
    parent: Store, key: str, local: DirectoryStore, name: str, bar: _Progress, *, overwrite: bool
) -> None:
    info = parent.head(key)
    if info is None:
        raise NotFound("no record here", path=f"{parent.url.rstrip('/')}/{key}")
    bar.add_total(info.size)
    mode: PutMode = "overwrite" if overwrite else "create"
    with _lost_race(local, name):
        _copy_object(parent, local, key, info.size, bar.advance, mode=mode, dest_key=name)
    local.sync([name])
    _check_sizes_of(local, name, info.size)


def _check_sizes_of(local: Store, key: str, size: int) -> None:
    info = local.head(key)
    if info is None or info.size != size:
        raise StoreUnavailable("the copy is not the size of the source", path=key)


# -- machinery -------------------------------------------------------------------------------


def _parallel(workers: int, tasks: Iterable[Callable[[], None]]) -> None:
    """Run ``tasks`` on ``workers`` threads; the first failure cancels the rest and is raised."""
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="mrecd-xfer") as pool:
        futures: list[Future[None]] = [pool.submit(task) for task in tasks]
        done, _ = wait(futures, return_when="FIRST_EXCEPTION")
        errors = [e for e in (f.exception() for f in done) if e is not None]
        if errors:
            for future in futures:
                future.cancel()
            raise errors[0]


class _ReaderFile(io.RawIOBase):
    """A :class:`RangeReader` read front to back as a file, each block reported to ``tick``."""

    def __init__(self, reader: RangeReader, tick: Tick) -> None:
        self._reader = reader
        self._tick = tick
        self.position = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._reader.pread(self.position, len(buffer))
        buffer[: len(data)] = data
        self.position += len(data)
        self._tick(len(data))
        return len(data)


class _Progress(AbstractContextManager["_Progress"]):
    """A tqdm bar in bytes (rate, ETA) on standard error, or nothing when disabled."""

    def __init__(self, label: str, enabled: bool) -> None:
        self._label = label
        self._enabled = enabled
        self._lock = threading.Lock()
        self._bar: Any = None

    def add_total(self, nbytes: int) -> None:
        """Announce ``nbytes`` more to move (the bar appears on the first call)."""
        if not self._enabled:
            return
        with self._lock:
            if self._bar is None:
                try:
                    from tqdm import tqdm
                except ImportError:  # the bar is an extra (mrecd[server]); the copy is not
                    self._enabled = False
                    return
                self._bar = tqdm(
                    total=nbytes,
                    desc=self._label,
                    unit="B",
                    unit_scale=True,
                    unit_divisor=1024,
                    file=sys.stderr,
                    dynamic_ncols=True,
                )
            else:
                self._bar.total += nbytes
                self._bar.refresh()

    def advance(self, nbytes: int) -> None:
        """Report ``nbytes`` moved (thread-safe)."""
        if self._bar is not None:
            with self._lock:
                self._bar.update(nbytes)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()
