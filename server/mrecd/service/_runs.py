"""Open records of one service process: one ``r+`` handle (and writer) per record name.

A record's :class:`~mrecd.api.Trajectory` stays open between requests, so it
keeps its writer lease (with several workers: only while it has appends
queued). Appends queue per record and one task per record commits them in
groups, in arrival order, under an :class:`asyncio.Lock` per name (also taken
by create and delete): every request queued when a commit starts is admitted
and all of them made durable by one flush. Unborn records (created with a
name and meta only) are the store's, as any record: a hidden marker any
worker sees, born by their first frames wherever those arrive. Every method
that touches the store runs on a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from anyio import to_thread

from .. import api
from ..errors import AlreadyExists, MrecdError, NotFound, SequenceGap, WriterBusy
from ..model import Frame
from ._metrics import observe_commit
from .settings import Settings

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
        self._queues: dict[str, _Queue] = {}
        #: records whose writer lease is given up after each commit (several workers)
        self._released: set[str] = set()
        #: durable group commits made (each answers one or more POSTs)
        self.group_commits = 0

    def lock(self, name: str) -> asyncio.Lock:
        """The lock that serializes writes to record ``name``."""
        return self._locks.setdefault(name, asyncio.Lock())

    async def create(self, name: str, exist_ok: bool, **content: Any) -> tuple[bool, str]:
        """Create record ``name`` (``content`` as :meth:`~mrecd.api.Catalog.create_record`).

        Returns
        -------
        (bool, str)
            Whether it was created (``False``: it existed and ``exist_ok``),
            and its name.
        """
        async with self.lock(name):
            if await self._exists(name):
                if not exist_ok:
                    raise AlreadyExists(f"record {name!r} exists", path=name)
                return False, name
            try:
                record = await to_thread.run_sync(
                    lambda: self.catalog.create_record(name, **content)
                )
            except AlreadyExists:  # another process created it since we looked
                if not exist_ok:
                    raise
                return False, name
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
            if not held.exists:  # unborn here: its first frames may have landed through another
                await to_thread.run_sync(held.refresh)
            return held
        record = await to_thread.run_sync(lambda: self.catalog.record(name, "r+" if write else "r"))
        current = self._open.get(name)
        if current is not None and (not write or not current.read_only):
            await to_thread.run_sync(record.close)  # another request opened it meanwhile
            return current
        self._remember(name, record)
        return record

    async def trajectory(self, name: str, *, refreshed: bool = True) -> api.Trajectory:
        """The trajectory of record ``name`` for reading, refreshed to its last commit.

        With ``refreshed=False`` the caller refreshes it (on the worker thread
        it reads on) when :meth:`follows` says another writer may have committed.

        Raises
        ------
        NotFound
            No record of that name, or it has no trajectory.
        """
        record = await self.record(name)
        traj = record.trajectory
        if traj is None:
            raise NotFound(f"record {name!r} has no trajectory", path=f"{name}/trajectory")
        if refreshed and self.follows(name):
            await to_thread.run_sync(traj.refresh)
        return traj

    def follows(self, name: str) -> bool:
        """Whether reads of ``name`` must refresh: this process does not hold its writer."""
        if self.catalog.lease_free_writes:  # another replica may commit at any time
            return True
        record = self._open.get(name)
        return record is None or record.read_only or name in self._released

    async def append(
        self,
        name: str,
        frames: list[Frame],
        *,
        expected_nstep: int | None = None,
        producer: api.Producer | None = None,
        settings: Settings,
    ) -> api.Appended:
        """Append ``frames`` to record ``name``; answer once they are durable.

        The request joins the record's queue; every request queued while a
        commit runs is admitted in arrival order and committed with the others
        in one durable flush (a group commit). A refused request changes
        nothing and does not affect the others. A producer batch that arrives
        before an earlier one of its producer waits for it, up to
        ``settings.producer_gap_wait_seconds``.

        Raises
        ------
        MrecdError
            This request's refusal (422, 409, 412, ``ProducerFenced``, ``SequenceGap``).
        """
        loop = asyncio.get_running_loop()
        queue = self._queues.setdefault(name, _Queue())
        request = _Request(
            frames,
            expected_nstep,
            producer,
            loop.time() + settings.producer_gap_wait_seconds,
            loop.create_future(),
        )
        # an answer nobody awaits any more (the client went away) is not an unretrieved error
        request.future.add_done_callback(lambda f: f.cancelled() or f.exception())
        queue.waiting.append(request)
        queue.wake.set()
        if queue.task is None or queue.task.done():
            queue.task = asyncio.create_task(self._commit_loop(name, queue, settings))
        # shielded: a client gone away does not take its admitted frames out of a group
        return await asyncio.shield(request.future)

    async def _commit_loop(self, name: str, queue: _Queue, settings: Settings) -> None:
        """Commit groups of ``name``'s queue until it is empty (one task per record)."""
        loop = asyncio.get_running_loop()
        held_since: float | None = None
        try:
            while queue.waiting or queue.parked:
                if not queue.waiting and not await self._gap_wait(queue, settings):
                    continue
                queue.parked = await self._commit_group(name, queue, settings)
                if settings.workers == 1:
                    continue  # one process: the writer and its lease stay, nobody waits on them
                held_since = loop.time() if held_since is None else held_since
                handover = loop.time() - held_since >= settings.writer_lease_hold_seconds
                if queue.waiting and not handover:
                    continue  # busy: the next group commits on the writer still open
                await self._release_writer(name)
                held_since = None
                if queue.waiting:  # let a waiting worker take the lease before retaking it
                    await asyncio.sleep(_HANDOVER_SECONDS)
        except BaseException as exc:  # never leave a request without an answer
            for request in [*queue.parked, *queue.waiting]:
                request.resolve(exc)
            queue.parked, queue.waiting = [], []
            raise
        finally:
            if self._queues.get(name) is queue:  # the next request starts a new queue
                del self._queues[name]

    async def _gap_wait(self, queue: _Queue, settings: Settings) -> bool:
        """Wait while only gapped requests are queued; whether to try them again now.

        They are tried again when a request arrives (it may be the missing
        batch), at their deadline, and, with several workers, every 50 ms (the
        missing batch may land through another process).
        """
        loop = asyncio.get_running_loop()
        queue.wake.clear()
        soonest = min(r.deadline for r in queue.parked) - loop.time()
        if settings.workers > 1:
            soonest = min(soonest, _SHARED_GAP_POLL)
        if soonest > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(queue.wake.wait(), soonest)
        if queue.waiting or settings.workers > 1:
            return True
        now = loop.time()
        return any(r.deadline <= now for r in queue.parked)

    async def _commit_group(self, name: str, queue: _Queue, settings: Settings) -> list[_Request]:
        """Commit every request queued once the lock is ours; answer each. Returns the gapped.

        The group is taken after the lock, so that requests arriving while
        another commit (or a create, a delete) holds it join one group.
        """
        shared = settings.workers > 1 or self.catalog.lease_free_writes
        retry = settings.writer_lease_wait_seconds if self.catalog.lease_free_writes else None
        group: list[_Request] = []
        try:
            async with self.lock(name):
                group = sorted([*queue.parked, *queue.waiting], key=lambda r: r.order)
                queue.parked, queue.waiting = [], []
                record = await self.record(name, write=True)
                traj = record.trajectory
                assert traj is not None  # a writable record always has one (created on append)
                if shared:
                    self._released.add(name)
                outcome = await to_thread.run_sync(
                    partial(_commit, traj, group, shared, settings.writer_lease_wait_seconds, retry)
                )
        except Exception as exc:  # the record is gone, the lease never came, a commit failed
            for request in group:
                request.resolve(exc)
            await self._release_writer(name)
            return []
        if outcome.flushed:
            self._group_committed(name, frames=outcome.frames, requests=outcome.requests)
        now = asyncio.get_running_loop().time()
        waiting = []
        for request in group:
            answer = outcome.answers[id(request)]
            if isinstance(answer, SequenceGap) and request.deadline > now:
                waiting.append(request)
            else:
                request.resolve(answer)
        return waiting

    async def _release_writer(self, name: str) -> None:
        """Commit and give ``name``'s writer lease up; the next write re-reads the store.

        After every busy spell with several workers, and after a failed commit.
        """
        held = self._open.get(name)
        if held is None:
            return

        def release() -> None:
            traj = held.trajectory if held.exists else None
            if traj is not None:
                traj.release_writer()

        async with self.lock(name):
            with contextlib.suppress(Exception):  # a failed commit's error went to its requests
                await to_thread.run_sync(release)

    def _group_committed(self, name: str, *, frames: int, requests: int) -> None:
        """One group commit of record ``name`` is durable: ``frames`` from ``requests`` POSTs.

        The one place a group commit completes.
        """
        self.group_commits += 1
        observe_commit(frames=frames, requests=requests)

    async def delete(self, name: str) -> None:
        """Delete record ``name``, closing this process's handle first."""
        async with self.lock(name):
            held = self._open.pop(name, None)
            if held is not None:
                await to_thread.run_sync(held.close)
            await to_thread.run_sync(self.catalog.delete_record, name)

    async def aclose(self) -> None:
        """Close every held record (commits durably, releases writer leases)."""
        records, self._open = [*self._open.values(), *self._retired], {}
        self._retired = []
        for record in records:
            await to_thread.run_sync(record.close)


#: how often requests waiting on a gap look again when another process may fill it
_SHARED_GAP_POLL = 0.05
#: a pause after handing the lease over while busy: longer than a waiting worker's poll (10 ms)
_HANDOVER_SECONDS = 0.015
_arrivals = itertools.count()


@dataclass(eq=False)
class _Request:
    """One POST waiting in a record's queue."""

    frames: list[Frame]
    expected: int | None
    producer: api.Producer | None
    #: event-loop time after which a gap is answered instead of waited on
    deadline: float
    future: asyncio.Future[api.Appended]
    order: int = field(default_factory=lambda: next(_arrivals))

    def resolve(self, answer: api.Appended | BaseException) -> None:
        if self.future.done():
            return
        if isinstance(answer, asyncio.CancelledError):
            self.future.cancel()
        elif isinstance(answer, BaseException):
            self.future.set_exception(answer)
        else:
            self.future.set_result(answer)


@dataclass(eq=False)
class _Queue:
    """A record's requests: arrived and not tried yet, and waiting on a producer gap."""

    waiting: list[_Request] = field(default_factory=list)
    parked: list[_Request] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


@dataclass
class _Outcome:
    """What one group commit did: an answer or refusal per request (by ``id``)."""

    answers: dict[int, api.Appended | BaseException]
    flushed: bool = False
    frames: int = 0
    requests: int = 0


def _commit(
    traj: api.Trajectory,
    group: list[_Request],
    shared: bool,
    wait: float,
    retry: float | None = None,
) -> _Outcome:
    """On a worker thread: admit ``group`` in order, then one durable flush.

    ``shared`` (several processes write this store): hold the writer lease
    first, waiting up to ``wait`` s; taking it re-reads what others committed.
    ``retry`` (object storage, no lease): a commit that lost the race to
    another process's (a conditional PUT refused) reopens the writer, which
    re-reads the store, and admits the whole group again, for up to
    ``retry`` s; a request whose ``If-Match`` no longer holds is then
    refused with 412 as any.
    """
    deadline = None if retry is None else time.monotonic() + retry
    pause = 0.005
    while True:
        try:
            return _commit_once(traj, group, shared, wait, lost_is_error=retry is not None)
        except WriterBusy:
            if deadline is None or time.monotonic() >= deadline:
                raise
            with contextlib.suppress(MrecdError):  # the lost writer cannot commit: drop it
                traj.release_writer()
            time.sleep(random.uniform(pause / 2, pause))
            pause = min(2 * pause, 0.25)


def _commit_once(
    traj: api.Trajectory, group: list[_Request], shared: bool, wait: float, *, lost_is_error: bool
) -> _Outcome:
    if shared:  # the lease is waited for first: reads in this process go on meanwhile
        traj.acquire_writer(wait)
    # held from admission to the durable flush: a read in this process never sees a frame
    # that is only queued (a kill then would lose what a GET had reported)
    with traj.exclusive():
        try:
            if shared:
                traj.acquire_writer(wait)
            outcome = _admit_all(traj, group)
            if lost_is_error:  # a race lost while admitting is the group's, not one request's
                lost = [a for a in outcome.answers.values() if isinstance(a, WriterBusy)]
                if lost:
                    raise lost[0]
            if outcome.requests:
                traj.flush()
                outcome.flushed = True
        except WriterBusy:
            # the lost writer counts the group's frames it could not commit: drop it before
            # a read can see that count (a read would then go back to the committed nstep)
            with contextlib.suppress(MrecdError):
                traj.release_writer()
            raise
    return outcome


def _admit_all(traj: api.Trajectory, group: list[_Request]) -> _Outcome:
    """Admit every request it can; a gapped batch is retried after a producer's batch lands."""
    outcome = _Outcome({})
    todo = group
    while todo:
        gapped, progressed = [], False
        for request in todo:
            try:
                answer = _admit(traj, request)
            except SequenceGap as gap:
                gapped.append(request)
                outcome.answers[id(request)] = gap
                continue
            except Exception as refusal:  # this request's alone, not the group's
                outcome.answers[id(request)] = refusal
                continue
            outcome.answers[id(request)] = answer
            if not answer.duplicate:
                outcome.requests += 1
                outcome.frames += len(request.frames)
                progressed = progressed or request.producer is not None
        todo = gapped if progressed else []
    return outcome


def _admit(traj: api.Trajectory, request: _Request) -> api.Appended:
    if request.producer is not None:
        return traj.extend_once(request.frames, request.producer, expected_nstep=request.expected)
    first = len(traj)
    traj.extend(request.frames, expected_nstep=request.expected)
    return api.Appended(first + len(request.frames), first, len(request.frames))
