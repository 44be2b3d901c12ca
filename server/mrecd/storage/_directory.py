"""The local directory store: the embedded default, and the one with positional writes.

A key is a file under the root. Whole-object puts write a hidden temporary
sibling and rename it over the key (atomic); ``durable`` fsyncs the file
before the rename and the directory after it. Conditional puts take an
``flock`` on a hidden per-key lock file for the check and the rename, so
they hold across processes. Names starting with ``.`` are the store's own
(temporary files, locks, staging) and are never listed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from ..errors import InvalidRecord, ReadOnlyError, WriterBusy
from ._base import (
    ByteRange,
    ByteRequest,
    IfMatch,
    ObjectInfo,
    Offset,
    PositionalFile,
    PutMode,
    RangeReader,
    Store,
    Suffix,
    WriterLease,
    check_key,
    check_request,
    precondition_failed,
    wait_for_lease,
)

__all__ = ["DirectoryStore", "fsync_directory"]

_MISSING = (FileNotFoundError, NotADirectoryError, IsADirectoryError)


def fsync_directory(path: Path) -> None:
    """fsync a directory so that a rename or creation inside it is on disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _create(path: Path) -> int:
    """A descriptor of ``path`` created empty for writing, its parent directories made as
    needed (only when missing: a put into an existing directory makes no ``mkdir`` call)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    try:
        return os.open(path, flags, 0o644)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, flags, 0o644)


def _etag(st: os.stat_result) -> str:
    # A put renames a fresh file over the key, so the inode alone changes per put;
    # mtime and size catch positional writes.
    return f'"{st.st_ino:x}-{st.st_mtime_ns:x}-{st.st_size:x}"'


class DirectoryStore(Store):
    """Objects as files under ``root`` (created on the first write).

    Parameters
    ----------
    root
        The directory holding the keys.
    read_only
        Refuse every write.
    """

    positional_writes = True
    conditional_put = True
    atomic_rename = True

    def __init__(self, root: str | os.PathLike[str], *, read_only: bool = False) -> None:
        super().__init__(read_only=read_only)
        self.root = Path(root)

    @property
    def url(self) -> str:
        return self.root.absolute().as_uri()

    def child(self, prefix: str) -> Store:
        return DirectoryStore(self._path(prefix), read_only=self.read_only) if prefix else self

    def local_directory(self) -> str | None:
        return str(self.root)

    def _path(self, key: str) -> Path:
        return self.root / check_key(key) if key else self.root

    def _writable(self, key: str) -> Path:
        if self.read_only:
            raise ReadOnlyError("the store is open read-only", path=key)
        if not key:
            raise InvalidRecord("the store root is not an object key", path=key)
        return self._path(key)

    # -- reading -------------------------------------------------------------------------------

    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        check_request(byte_range, key)
        try:
            if byte_range is None:
                return self._path(key).read_bytes()
            with open(self._path(key), "rb") as f:
                return _read_range(f, byte_range)
        except _MISSING:
            return None

    def head(self, key: str) -> ObjectInfo | None:
        try:
            st = self._path(key).stat()
        except _MISSING:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        return ObjectInfo(st.st_size, _etag(st))

    def list_dir(self, prefix: str = "") -> tuple[list[str], list[str]]:
        dirs: list[str] = []
        files: list[str] = []
        try:
            with os.scandir(self._path(prefix)) as entries:
                for entry in entries:
                    if not entry.name.startswith("."):
                        (dirs if entry.is_dir() else files).append(entry.name)
        except (FileNotFoundError, NotADirectoryError):
            pass
        return sorted(dirs), sorted(files)

    def keys(self, prefix: str = "") -> Iterator[str]:
        base = self._path(prefix)
        found: list[str] = []
        for directory, subdirs, files in os.walk(base):
            subdirs[:] = [d for d in subdirs if not d.startswith(".")]
            rel = Path(directory).relative_to(self.root).as_posix()
            rel = "" if rel == "." else rel
            found += [f"{rel}/{f}" if rel else f for f in files if not f.startswith(".")]
        return iter(sorted(found))

    def open_reader(self, key: str) -> RangeReader | None:
        try:
            fd = os.open(self._path(key), os.O_RDONLY)
        except _MISSING:
            return None
        if not _is_regular(fd):
            os.close(fd)
            return None
        return FileRangeReader(fd, 0, os.fstat(fd).st_size, owns=True)

    # -- writing -------------------------------------------------------------------------------

    def put(
        self,
        key: str,
        data: bytes | bytearray | memoryview,
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        path = self._writable(key)
        tmp = self._temporary(path)
        try:
            fd = _create(tmp)
            try:
                os.write(fd, data) if len(data) < (1 << 30) else _write_all(fd, data)
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            return self._publish(tmp, path, key, mode, durable)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def put_file(
        self,
        key: str,
        source: IO[bytes],
        *,
        mode: PutMode = "overwrite",
        durable: bool = False,
    ) -> str:
        path = self._writable(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._temporary(path)
        try:
            with open(tmp, "wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
                if durable:
                    out.flush()
                    os.fsync(out.fileno())
            return self._publish(tmp, path, key, mode, durable)
        finally:
            tmp.unlink(missing_ok=True)

    @staticmethod
    def _temporary(path: Path) -> Path:
        return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")

    def _publish(self, tmp: Path, path: Path, key: str, mode: PutMode, durable: bool) -> str:
        if mode == "create":
            try:
                os.link(tmp, path)  # atomic create-if-absent
            except FileExistsError:
                raise precondition_failed(key, mode) from None
            tmp.unlink()
        elif isinstance(mode, IfMatch):
            with _flocked(path.with_name(f".{path.name}.lock")):
                current = self.head(key)
                if current is None or current.etag != mode.etag:
                    raise precondition_failed(key, mode)
                os.replace(tmp, path)
        else:
            os.replace(tmp, path)
        if durable:
            fsync_directory(path.parent)
        return _etag(path.stat())

    def delete(self, key: str) -> None:
        path = self._writable(key)
        with contextlib.suppress(*_MISSING):
            path.unlink()
        self._prune(path.parent)

    def _prune(self, directory: Path) -> None:
        """Remove emptied directories up to the root: an object store has no empty prefixes."""
        while directory != self.root and self.root in directory.parents:
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent

    def delete_prefix(self, prefix: str) -> None:
        path = self._path(prefix)
        if self.read_only:
            raise ReadOnlyError("the store is open read-only", path=prefix)
        if path == self.root:
            for entry in list(self.root.iterdir()) if self.root.is_dir() else []:
                _remove(entry)
            return
        _remove(path)
        self._prune(path.parent)

    def copy(self, source: str, dest: str) -> None:
        target = self._writable(dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._temporary(target)
        try:
            shutil.copyfile(self._path(source), tmp)
            os.replace(tmp, target)
        except _MISSING:
            pass
        finally:
            tmp.unlink(missing_ok=True)

    def rename(self, source: str, dest: str) -> None:
        target = self._writable(dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(self._path(source), target)
        self._prune(self._path(source).parent)

    def sync(self, keys: Iterable[str]) -> None:
        directories: set[Path] = set()
        for key in keys:
            path = self._path(key)
            with contextlib.suppress(*_MISSING):
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            directories.add(path.parent)
        for directory in directories:
            with contextlib.suppress(*_MISSING):
                fsync_directory(directory)

    def open_positional(self, key: str) -> PositionalFile:
        path = self._writable(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        return _DirectoryFile(path)

    def writer_lease(self, key: str, *, wait: float = 0.0) -> WriterLease:
        return wait_for_lease(lambda: self._take_lease(key), wait)

    def _take_lease(self, key: str) -> WriterLease:
        path = self._writable(key)
        path.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise WriterBusy("another writer holds this trajectory", path=key) from None
        return _FlockLease(fd)


def _is_regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_range(f: IO[bytes], request: ByteRequest) -> bytes:
    if isinstance(request, ByteRange):
        f.seek(request.start)
        return f.read(request.end - request.start)
    if isinstance(request, Offset):
        f.seek(request.offset)
        return f.read()
    assert isinstance(request, Suffix)
    size = os.fstat(f.fileno()).st_size
    f.seek(max(0, size - request.length))
    return f.read() if request.length else b""


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def _flocked(lock_path: Path) -> Iterator[None]:
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock


class FileRangeReader(RangeReader):
    """Positional reads of a byte range of an open file (a file, or a stored zip member)."""

    def __init__(self, fd: int, start: int, size: int, *, owns: bool) -> None:
        self._fd = fd
        self._start = start
        self.size = size
        self._owns = owns

    def pread(self, offset: int, size: int) -> bytes:
        size = self.clip(offset, size)
        return os.pread(self._fd, size, self._start + offset) if size else b""

    def close(self) -> None:
        if self._owns and self._fd >= 0:
            os.close(self._fd)
        self._fd = -1


class _DirectoryFile(PositionalFile):
    def __init__(self, path: Path) -> None:
        self._path = path
        self._created = not path.exists()
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)

    @property
    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def pread(self, offset: int, size: int) -> bytes:
        return os.pread(self._fd, size, offset)

    def pwrite(self, offset: int, data: bytes) -> None:
        os.pwrite(self._fd, data, offset)

    def truncate(self, size: int) -> None:
        os.ftruncate(self._fd, size)

    def sync(self) -> None:
        os.fsync(self._fd)
        if self._created:  # the new file's directory entry must reach the disk too
            fsync_directory(self._path.parent)
            self._created = False

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class _FlockLease(WriterLease):
    def __init__(self, fd: int) -> None:
        self._fd = fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = -1
