"""Open collections of one service process: one handle per collection name.

A collection is one LMDB file; its handle stays open between requests (an
environment per file per process). It is opened ``r+`` when the file takes
appends, else ``r``. LMDB serializes writers itself (one write transaction
at a time, across processes), so appends need no queue here: each request
is one write transaction on a worker thread. Creation takes a per-name
lock, so two creates of one name race cleanly (one 201, one 409).

On object storage a collection is a published snapshot read from a local
copy. Its handle is reopened once ``revalidate_seconds`` have passed, which
revalidates the manifest; a newer snapshot's handle replaces the held one,
and the old one is closed only after a grace period, since requests that
began on it may still be reading.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from anyio import to_thread

from .. import api
from ..errors import AlreadyExists, ReadOnlyError

__all__ = ["Collections"]


class Collections:
    """The collections this process holds open, over one :class:`~mrecd.api.Catalog`.

    Parameters
    ----------
    catalog
        The catalog the collections live in.
    revalidate_seconds
        How long a snapshot's handle serves before its manifest is asked again.

    Notes
    -----
    Call from the event loop only; blocking work goes to worker threads.
    """

    #: Seconds a replaced snapshot handle stays open for the requests still reading it.
    RETIRE_GRACE = 300.0

    def __init__(self, catalog: api.Catalog, *, revalidate_seconds: float = 30.0) -> None:
        self.catalog = catalog
        self.revalidate_seconds = revalidate_seconds
        self._open: dict[str, api.Collection] = {}
        self._opened_at: dict[str, float] = {}
        self._retired: list[tuple[float, api.Collection]] = []
        self._locks: dict[str, asyncio.Lock] = {}

    def _lock(self, name: str) -> asyncio.Lock:
        return self._locks.setdefault(name, asyncio.Lock())

    async def create(self, name: str, **content: Any) -> api.Collection:
        """Create collection ``name`` (``content`` as :meth:`~mrecd.api.Catalog.create_collection`).

        Raises
        ------
        AlreadyExists
            A collection of that name exists.
        InvalidRecord
            Bad name, units, declaration, index columns or force field
            (checked before the file is made: nothing is left behind).
        """
        async with self._lock(name):
            if name in self._open:
                raise AlreadyExists(f"collection {name!r} exists", path=name)
            collection = await to_thread.run_sync(
                lambda: self.catalog.create_collection(name, **content)
            )
            self._open[name] = collection
            return collection

    async def get(self, name: str) -> api.Collection:
        """Collection ``name``: the handle held here, else opened (``r+`` when writable).

        Raises
        ------
        NotFound
            No collection of that name.
        """
        held = self._open.get(name)
        if held is not None and not self._due(name, held):
            return held
        async with self._lock(name):
            held = self._open.get(name)
            if held is None or self._due(name, held):
                held = await to_thread.run_sync(self._reopened, name, held)
            return held

    def _due(self, name: str, held: api.Collection) -> bool:
        """Whether snapshot ``name`` has served its revalidation interval."""
        if not isinstance(held, api.SnapshotCollection):
            return False
        return time.monotonic() - self._opened_at.get(name, 0.0) >= self.revalidate_seconds

    def _reopened(self, name: str, held: api.Collection | None) -> api.Collection:
        """``name`` opened anew; the held handle kept when its snapshot is still current."""
        fresh = self._open_file(name)
        self._opened_at[name] = time.monotonic()
        if held is not None and _same_snapshot(held, fresh):
            fresh.close()
            return held
        if held is not None:
            self._retire(held)
        self._open[name] = fresh
        return fresh

    def _retire(self, old: api.Collection) -> None:
        """Keep ``old`` open for in-flight reads; close those retired past the grace period."""
        now = time.monotonic()
        keep = [(at, c) for at, c in self._retired if now - at < self.RETIRE_GRACE]
        for at, collection in self._retired:
            if now - at >= self.RETIRE_GRACE:
                collection.close()
        self._retired = [*keep, (now, old)]

    def _open_file(self, name: str) -> api.Collection:
        try:
            return self.catalog.collection(name, "r+")
        except ReadOnlyError:  # a read-only file or a version-1 collection: serve it read-only
            return self.catalog.collection(name, "r")

    async def aclose(self) -> None:
        """Close every collection held open."""
        held, self._open = list(self._open.values()), {}
        held += [collection for _, collection in self._retired]
        self._retired = []
        for collection in held:
            await to_thread.run_sync(collection.close)


def _same_snapshot(held: api.Collection, fresh: api.Collection) -> bool:
    """Whether two snapshot handles serve the same published file."""
    if not isinstance(held, api.SnapshotCollection):
        return False
    if not isinstance(fresh, api.SnapshotCollection):
        return False
    return bool(held.snapshot["sha256"] == fresh.snapshot["sha256"])
