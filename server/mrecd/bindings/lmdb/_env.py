"""One LMDB environment per path per process (style.md anti-pattern 4).

An environment maps the file once; opening the same file twice in one
process breaks LMDB's advisory locking, so every :class:`Collection` on a
path shares one :class:`EnvHandle`, reference counted and closed with the
last user. Handles are per process: a forked child never reuses its
parent's environment (LMDB forbids it) and opens its own.

Thread rule (anti-pattern 3): a write transaction is begun, used and
committed inside one call on the calling thread; none outlives the call.
py-lmdb opens environments with ``MDB_NOTLS``, so read transactions are not
tied to a thread either.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any, Final

import lmdb

from ...errors import InvalidRecord

__all__ = ["MAP_SIZE", "EnvHandle", "acquire", "file_identity", "is_open", "open_env", "release"]

#: Address space reserved for the map (lmdb.md §1, reference): not disk space.
MAP_SIZE: Final = 2**40
#: Reader slots: a data loader with many workers each holds one per thread.
_MAX_READERS: Final = 1024


@dataclass(eq=False)
class EnvHandle:
    """A shared environment and the per-process state kept beside it."""

    path: str
    env: Any
    writable: bool
    pid: int
    refs: int = 0
    #: Serializes the writers of this process.
    lock: threading.RLock = field(default_factory=threading.RLock)
    #: Guards swapping ``state``/``previous`` (never held during I/O).
    state_lock: threading.Lock = field(default_factory=threading.Lock)
    #: The collection module's cache of committed state (meta, index, layouts):
    #: the newest seen, and the one it replaced (a reader's older snapshot).
    state: Any = None
    previous: Any = None
    #: ``(data file, lock file)`` identities as opened: a writer refuses to commit
    #: once the path names other files (compacted in place by another process).
    identity: tuple[Any, Any] = (None, None)
    #: Environments replaced by an in-place compaction, closed with the handle
    #: (transactions begun on them before the swap finish on the old file).
    retired: list[Any] = field(default_factory=list)

    def replaced(self) -> bool:
        """Whether the path now names another file than the one this handle opened."""
        return file_identity(self.path) != self.identity


_HANDLES: dict[tuple[int, str], EnvHandle] = {}
_HANDLES_LOCK = threading.Lock()


def file_identity(path: str) -> tuple[Any, Any]:
    """``(device, inode)`` of the data file and of its lock file (``None`` if absent)."""

    def one(name: str) -> Any:
        try:
            stat = os.stat(name)
        except FileNotFoundError:
            return None
        return stat.st_dev, stat.st_ino

    return one(path), one(path + "-lock")


def open_env(path: str, *, writable: bool, create: bool = False) -> Any:
    """The LMDB environment of a collection file (lmdb.md §1's options)."""
    try:
        env = lmdb.open(
            path,
            subdir=False,
            map_size=MAP_SIZE,
            max_dbs=0,  # one unnamed database (lmdb.md §1)
            readonly=not writable,
            create=create,
            lock=True,
            readahead=False,  # random reads: don't drag neighbouring pages in
            max_readers=_MAX_READERS,
        )
    except (lmdb.InvalidError, lmdb.VersionMismatchError, lmdb.CorruptedError) as exc:
        raise InvalidRecord(f"not a readable LMDB file: {exc}", path=path) from None
    return env


def _open(path: str, *, create: bool) -> EnvHandle:
    writable = create or os.access(path, os.W_OK)
    env = open_env(path, writable=writable, create=create)
    handle = EnvHandle(path=path, env=env, writable=writable, pid=os.getpid())
    handle.identity = file_identity(path)
    return handle


def acquire(path: str, *, create: bool = False) -> EnvHandle:
    """The process's handle on ``path`` (opened on first use); pair with :func:`release`."""
    key = (os.getpid(), os.path.realpath(path))
    with _HANDLES_LOCK:
        handle = _HANDLES.get(key)
        if handle is None:
            handle = _open(path, create=create)
            _HANDLES[key] = handle
        handle.refs += 1
        return handle


def release(handle: EnvHandle) -> None:
    """Drop one reference; the environment closes with the last one."""
    key = (handle.pid, os.path.realpath(handle.path))
    with _HANDLES_LOCK:
        handle.refs -= 1
        if handle.refs > 0 or handle.pid != os.getpid():
            return
        if _HANDLES.get(key) is handle:
            del _HANDLES[key]
        handle.env.close()
        for env in handle.retired:
            env.close()


def is_open(path: str) -> bool:
    """Whether this process holds ``path`` open."""
    with _HANDLES_LOCK:
        return (os.getpid(), os.path.realpath(path)) in _HANDLES
