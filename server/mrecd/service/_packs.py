"""Packed records for download: ``<name>.mrec.zip`` files the service streams by range.

A packed record in the catalog's own directory is served as it is. A live
record is packed (with :meth:`~mrecd.api.Catalog.pack`) into a temporary
directory of this process, once per committed state: the state is named by
the ETags of the record's metadata documents (root, sections and the
trajectory's commit marker), so a Range request after a full download reads
the same file, and an append makes the next request pack anew. Packing is
deterministic (fixed timestamps, sorted entries), so the same state always
gives the same bytes. The most recent :data:`KEEP` packs are kept.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from anyio import to_thread

from .. import api
from ..errors import NotFound
from ._runs import Runs

__all__ = ["KEEP", "Packed", "Packs"]

#: packs kept in the temporary directory (older ones are deleted; open downloads go on)
KEEP: Final = 8
_CHUNK: Final = 1 << 20
_ATTEMPTS: Final = 3


@dataclass(frozen=True)
class Packed:
    """One packed record ready to stream: its file, size and strong ETag."""

    path: Path
    size: int
    etag: str


class Packs:
    """The packed records one service process serves, over the open records ``runs``.

    Parameters
    ----------
    runs
        The records the process holds open (their writer locks keep a pack consistent).

    Notes
    -----
    Call from the event loop only; packing and reading run on worker threads.
    """

    def __init__(self, runs: Runs) -> None:
        self._runs = runs
        self._dir = Path(tempfile.mkdtemp(prefix="mrecd-packs-"))
        self._made: OrderedDict[str, Packed] = OrderedDict()
        self._packing: dict[str, asyncio.Lock] = {}

    async def packed(self, name: str) -> Packed:
        """Record ``name`` packed: the catalog's own zip, or a pack of the live record.

        Raises
        ------
        NotFound
            No such record, a record with no frames and no sections yet (not on
            the store), or a packed record on a store without a local directory.
        """
        api.check_record_name(name)
        record = await self._runs.record(name)
        if not record.exists:
            raise NotFound(f"record {name!r} has nothing on the store yet", path=name)
        if record.url.endswith(".mrec.zip"):
            return await to_thread.run_sync(self._stored, name, record)
        for attempt in range(_ATTEMPTS):
            state = await to_thread.run_sync(self._state, name, record)
            if attempt == _ATTEMPTS - 1:  # appends keep changing it: pack between two of them
                async with self._runs.lock(name):
                    return await self._pack(name, record, state)
            packed = await self._pack(name, record, state)
            if await to_thread.run_sync(self._state, name, record) == state:
                return packed
            self._forget(state)
        raise AssertionError("unreachable")  # pragma: no cover

    def _stored(self, name: str, record: api.StoredRecord) -> Packed:
        root = self._runs.catalog.local_path
        if root is None:
            raise NotFound(
                f"record {name!r} is packed on {self._runs.catalog.url}; read it from there",
                path=name,
            )
        path = Path(root) / f"{name}.mrec.zip"
        st = path.stat()
        token = f"{st.st_ino}-{st.st_mtime_ns}-{st.st_size}"
        return Packed(path, st.st_size, _etag(token))

    def _state(self, name: str, record: api.StoredRecord) -> str:
        """The committed state of live record ``name``: the ETags of its metadata documents."""
        keys = ["zarr.json", *(f"{s}/zarr.json" for s in record.sections)]
        catalog = self._runs.catalog
        return "\n".join(
            f"{key} {getattr(catalog.key_info(name, key), 'etag', '-')}" for key in keys
        )

    async def _pack(self, name: str, record: api.StoredRecord, state: str) -> Packed:
        lock = self._packing.setdefault(state, asyncio.Lock())
        async with lock:
            made = self._made.get(state)
            if made is not None and made.path.is_file():
                self._made.move_to_end(state)
                return made
            packed = await to_thread.run_sync(self._pack_now, name, state)
            self._made[state] = packed
            self._evict()
            return packed

    def _pack_now(self, name: str, state: str) -> Packed:
        tag = _etag(state)
        dest = self._dir / tag.strip('"') / f"{name}.mrec.zip"
        dest.parent.mkdir(exist_ok=True)
        self._runs.catalog.pack(name, dest, overwrite=True)
        return Packed(dest, dest.stat().st_size, tag)

    def _forget(self, state: str) -> None:
        made = self._made.pop(state, None)
        self._packing.pop(state, None)
        if made is not None:
            shutil.rmtree(made.path.parent, ignore_errors=True)

    def _evict(self) -> None:
        while len(self._made) > KEEP:
            oldest = next(iter(self._made))
            self._forget(oldest)  # a download reading it keeps its open file

    async def chunks(self, packed: Packed, start: int, stop: int) -> AsyncIterator[bytes]:
        """Bytes ``[start, stop)`` of ``packed``, :data:`_CHUNK` at a time (bounded memory)."""
        fd = await to_thread.run_sync(os.open, packed.path, os.O_RDONLY)
        try:
            at = start
            while at < stop:
                data = await to_thread.run_sync(os.pread, fd, min(_CHUNK, stop - at), at)
                if not data:
                    return
                at += len(data)
                yield data
        finally:
            os.close(fd)

    def close(self) -> None:
        """Delete every pack made (downloads in progress keep their open files)."""
        self._made.clear()
        shutil.rmtree(self._dir, ignore_errors=True)


def _etag(token: str) -> str:
    return '"zip-' + hashlib.sha256(token.encode()).hexdigest()[:32] + '"'
