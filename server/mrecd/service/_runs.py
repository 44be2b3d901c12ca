"""Open records of one service process: one ``r+`` handle (and writer) per record name.

A record's :class:`~mrecd.api.Trajectory` stays open between requests, so it
keeps its writer lease; an :class:`asyncio.Lock` per name serializes appends
in arrival order. Unborn records (created with a name and meta only) live
here until their first frames put them on the store. Every method that
touches the store runs on a worker thread.
"""

from __future__ import annotations

import asyncio
from typing import Any

from anyio import to_thread

from .. import api
from ..errors import AlreadyExists, NotFound
from ..model import Frame
from ._metrics import observe_commit

__all__ = ["Runs"]


class Runs:
    """The records this process holds open, over one :class:`~mrecd.api.Catalog`.

    Parameters
    ----------
    catalog
        The catalog every record lives in.

    Notes
    -----
    Call from the event loop only; blocking work goes to worker threads.
    """

    def __init__(self, catalog: api.Catalog) -> None:
        self.catalog = catalog
        self._open: dict[str, api.StoredRecord] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        #: handles replaced by a writable one; requests may still read through them
        self._retired: list[api.StoredRecord] = []

    def lock(self, name: str) -> asyncio.Lock:
        """The lock that serializes writes to record ``name``."""
        return self._locks.setdefault(name, asyncio.Lock())

    def is_unborn(self, name: str) -> bool:
        """Whether ``name`` is held here but not yet on the store."""
        record = self._open.get(name)
        return record is not None and not record.exists

    def unborn(self) -> list[str]:
        """Names of the records held here that are not on the store yet."""
        return [n for n, r in self._open.items() if not r.exists]

    async def create(self, name: str, exist_ok: bool, **content: Any) -> tuple[bool, str]:
        """Create record ``name`` (``content`` as :meth:`~mrecd.api.Catalog.create_record`).

        Returns
        -------
        (bool, str)
            Whether it was created (``False``: it existed and ``exist_ok``),
            and its name.
        """
        async with self.lock(name):
            held = self._open.get(name)
            if (held is not None and not held.exists) or await self._exists(name):
                if not exist_ok:
                    raise AlreadyExists(f"record {name!r} exists", path=name)
                return False, name
            record = await to_thread.run_sync(lambda: self.catalog.create_record(name, **content))
            self._remember(name, record)
            return True, name

    async def _exists(self, name: str) -> bool:
        return await to_thread.run_sync(self.catalog.__contains__, name)

    def _remember(self, name: str, record: api.StoredRecord) -> None:
        old = self._open.pop(name, None)
        if old is not None and old is not record:
            self._retired.append(old)  # closed at shutdown: a read may be using it now
        self._open[name] = record

    async def record(self, name: str, *, write: bool = False) -> api.StoredRecord:
        """Record ``name``: the handle held open here, else opened (``r+`` when ``write``).

        Raises
        ------
        NotFound
            No record of that name.
        """
        held = self._open.get(name)
        if held is not None and (not write or not held.read_only):
            return held
        record = await to_thread.run_sync(lambda: self.catalog.record(name, "r+" if write else "r"))
        current = self._open.get(name)
        if current is not None and (not write or not current.read_only):
            await to_thread.run_sync(record.close)  # another request opened it meanwhile
            return current
        self._remember(name, record)
        return record

    async def trajectory(self, name: str) -> api.Trajectory:
        """The trajectory of record ``name`` for reading, refreshed to its last commit.

        Raises
        ------
        NotFound
            No record of that name, or it has no trajectory.
        """
        record = await self.record(name)
        traj = record.trajectory
        if traj is None:
            raise NotFound(f"record {name!r} has no trajectory", path=f"{name}/trajectory")
        if record.read_only:
            await to_thread.run_sync(traj.refresh)
        return traj

    async def append(
        self, name: str, frames: list[Frame], expected_nstep: int | None
    ) -> tuple[int, int]:
        """Append ``frames`` to record ``name`` in one durable commit.

        Returns
        -------
        (int, int)
            The ``nstep`` after the commit, and the ordinal of the first frame appended.
        """
        async with self.lock(name):
            record = await self.record(name, write=True)
            traj = record.trajectory
            assert traj is not None  # a writable record always has one (created on append)

            def commit() -> tuple[int, int]:
                first = len(traj)
                traj.extend(frames, expected_nstep=expected_nstep)
                return traj.flush(), first

            committed = await to_thread.run_sync(commit)
            observe_commit(frames=len(frames), requests=1)  # metrics: one commit completed
            return committed

    async def delete(self, name: str) -> None:
        """Delete record ``name``, closing this process's handle first."""
        async with self.lock(name):
            held = self._open.pop(name, None)
            if held is not None:
                await to_thread.run_sync(held.close)
                if not held.exists:
                    return
            await to_thread.run_sync(self.catalog.delete_record, name)

    async def aclose(self) -> None:
        """Close every held record (commits durably, releases writer leases)."""
        records, self._open = [*self._open.values(), *self._retired], {}
        self._retired = []
        for record in records:
            await to_thread.run_sync(record.close)
