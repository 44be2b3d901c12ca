"""Open collections of one service process: one handle per collection name.

A collection is one LMDB file; its handle stays open between requests (an
environment per file per process). It is opened ``r+`` when the file takes
appends, else ``r``. LMDB serializes writers itself (one write transaction
at a time, across processes), so appends need no queue here: each request
is one write transaction on a worker thread. Creation takes a per-name
lock, so two creates of one name race cleanly (one 201, one 409).
"""

from __future__ import annotations

import asyncio
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

    Notes
    -----
    Call from the event loop only; blocking work goes to worker threads.
    """

    def __init__(self, catalog: api.Catalog) -> None:
        self.catalog = catalog
        self._open: dict[str, api.Collection] = {}
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
        if held is not None:
            return held
        async with self._lock(name):
            held = self._open.get(name)
            if held is None:
                held = await to_thread.run_sync(self._open_file, name)
                self._open[name] = held
            return held

    def _open_file(self, name: str) -> api.Collection:
        try:
            return self.catalog.collection(name, "r+")
        except ReadOnlyError:  # a read-only file or a version-1 collection: serve it read-only
            return self.catalog.collection(name, "r")

    async def aclose(self) -> None:
        """Close every collection held open."""
        held, self._open = list(self._open.values()), {}
        for collection in held:
            await to_thread.run_sync(collection.close)
