"""The asyncio client: ``AsyncClient``, ``AsyncRemoteRecord``, ``AsyncRemoteTrajectory``.

The twin of :mod:`mrecd_client._sync`: the same sans-I/O core builds every
request and parses every answer; this module only awaits the sending (over
one :class:`httpx.AsyncClient`). Appends travel in batches as asyncio tasks,
several in flight. Use from one event loop (asyncio).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping
from types import TracebackType
from typing import Any, Literal, overload

import httpx
import numpy as np
import numpy.typing as npt
from httpx_sse import EventSource

from mrecd.errors import InvalidRecord, NotFound, ReadOnlyError, SequenceGap
from mrecd.forcefield import ForceField
from mrecd.model import Declaration, Frame

from ._async_collections import AsyncCollectionsMixin
from ._core import (
    Appended,
    Batch,
    Core,
    Pipeline,
    Producer,
    RetryPolicy,
    Summary,
    check_expected,
    check_index,
    check_mode,
    frames_list,
    meta_tag,
    resolve,
    transport_failure,
)
from ._forcefield import afetch_forcefield
from ._sync import GAP_RETRIES, _policy
from ._wire import FrameStreamDecoder, Wire

__all__ = ["AsyncClient", "AsyncRemoteFrameSlice", "AsyncRemoteRecord", "AsyncRemoteTrajectory"]

Mode = Literal["r", "r+"]


class AsyncClient(AsyncCollectionsMixin):
    """The asyncio twin of :class:`~mrecd_client.Client`: the same names, awaited.

    Parameters are those of :class:`~mrecd_client.Client` (``transport`` is an
    ``httpx.AsyncBaseTransport``). Call from one asyncio event loop; close
    with :meth:`aclose` (or ``async with``).
    """

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int | RetryPolicy = 5,
        wire: Wire = "mrf1",
        batch_frames: int = 64,
        max_in_flight: int = 4,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._core = Core(url, token, timeout, wire)
        self._policy = _policy(retries)
        if batch_frames < 1 or max_in_flight < 1:
            raise InvalidRecord("batch_frames and max_in_flight are at least 1")
        self._batch_frames, self._max_in_flight = batch_frames, max_in_flight
        self._http = httpx.AsyncClient(timeout=timeout, transport=transport)

    # -- sending -------------------------------------------------------------------------------

    async def _send(self, request: httpx.Request, *, safe: bool = True) -> httpx.Response:
        """Send ``request`` with the retry policy; the (read) final response."""
        response = await self._open(request, safe=safe)
        try:
            await response.aread()
        finally:
            await response.aclose()
        return response

    async def _open(self, request: httpx.Request, *, safe: bool = True) -> httpx.Response:
        """Send ``request`` with retries; a streaming response (the caller closes it)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._http.send(request, stream=True)
            except httpx.TransportError as exc:
                delay = self._policy.retry_exception(exc, attempt, safe=safe)
                if delay is None:
                    raise transport_failure(request, exc) from exc
            else:
                delay = self._policy.retry_response(response, attempt, safe=safe)
                if delay is None:
                    return response
                await response.aclose()
            await asyncio.sleep(delay)

    # -- the catalog ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The service's base URL."""
        return self._core.url

    @property
    def local_path(self) -> str | None:
        """Always ``None``: a served catalog has no local directory."""
        return None

    async def create_record(
        self,
        name: str,
        *,
        meta: Mapping[str, Any] | None = None,
        system: Frame | None = None,
        frame: Frame | None = None,
        forcefield: ForceField | None = None,
        declaration: Declaration | None = None,
        status: Mapping[str, Any] | None = None,
        method: Mapping[str, Any] | None = None,
        exist_ok: bool = False,
    ) -> AsyncRemoteRecord:
        """Create record ``name`` and open it ``r+`` (as :meth:`Client.create_record`)."""
        content = {
            "meta": meta,
            "system": system,
            "frame": frame,
            "forcefield": forcefield,
            "declaration": declaration,
            "status": status,
            "method": method,
        }
        request = self._core.create_record(name, content, exist_ok=exist_ok)
        self._core.created(await self._send(request, safe=exist_ok))
        return await self.record(name, "r+")

    async def record(self, name: str, mode: Mode = "r") -> AsyncRemoteRecord:
        """Open record ``name``: its summary, ``meta``, ``status`` and ``method`` are read now.

        Raises
        ------
        NotFound
            No record of that name.
        """
        summary = self._core.record_summary(await self._send(self._core.summary(name)))
        check_mode(mode)
        record = AsyncRemoteRecord(self, name, summary, read_only=mode == "r")
        await asyncio.gather(*(record._load(s) for s in ("meta", "status", "method")))
        return record

    async def records(self, prefix: str | None = None) -> list[str]:
        """Sorted names of the records that start with ``prefix`` (every page)."""
        names: list[str] = []
        cursor: str | None = None
        while True:
            response = await self._send(self._core.list_records(prefix, cursor))
            page, cursor = self._core.record_page(response)
            names += page
            if cursor is None:
                return names

    async def contains(self, name: str) -> bool:
        """Whether record ``name`` exists (``name in client`` of the sync client)."""
        try:
            self._core.check(await self._send(self._core.summary(name)))
        except (NotFound, InvalidRecord):
            return False
        return True

    async def delete_record(self, name: str) -> None:
        """Delete record ``name`` (needs the ``admin`` scope)."""
        self._core.check(await self._send(self._core.delete_record(name), safe=False))

    async def check(self) -> None:
        """Ask the server whether its store is reachable."""
        self._core.check(await self._send(self._core.ready()))

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncClient({self.url!r})"


class AsyncRemoteRecord:
    """The asyncio twin of :class:`~mrecd_client.RemoteRecord`.

    ``meta``, ``status`` and ``method`` are read at open (as locally) and
    are properties; ``system()``, ``frame()``, ``forcefield()`` and
    ``sections()`` are awaited (read on first call, then cached).
    """

    def __init__(
        self, client: AsyncClient, name: str, summary: Summary, *, read_only: bool
    ) -> None:
        self._client = client
        self._name = name
        self._summary = summary
        self._read_only = read_only
        self._cache: dict[str, Any] = {}
        self._trajectory: AsyncRemoteTrajectory | None = None

    async def _load(self, section: str) -> Any:
        if section not in self._cache:
            core = self._client._core
            response = await self._client._send(core.section(self._name, section))
            self._cache[section] = core.section_value(section, response)
        return self._cache[section]

    @property
    def url(self) -> str:
        """The record's URL on the service."""
        return f"{self._client.url}/v1{Core.record_path(self._name)}"

    @property
    def name(self) -> str:
        """The record's name."""
        return self._name

    @property
    def local_path(self) -> str | None:
        """Always ``None``: a served record has no local directory."""
        return None

    @property
    def exists(self) -> bool:
        """Whether the record is on the store (as last seen; a landed frame makes it so)."""
        landed = self._trajectory is not None and self._trajectory._pipeline.nstep > 0
        return bool(self._summary.sections) or landed

    async def refresh(self) -> bool:
        """Ask the server again whether the run is born (its first write landed); ``exists``."""
        await self.sections()
        return self.exists

    @property
    def read_only(self) -> bool:
        """Whether appends are refused (mode ``"r"``, or a packed record)."""
        return self._read_only or self._summary.read_only

    async def sections(self) -> list[str]:
        """Names of the root's sections, sorted (asked of the server)."""
        core = self._client._core
        self._summary = core.record_summary(await self._client._send(core.summary(self._name)))
        return sorted(self._summary.sections)

    @property
    def meta(self) -> dict[str, Any]:
        """The ``meta`` document as stored (read at open)."""
        return dict(self._cache["meta"])

    @property
    def molrec_version(self) -> int | None:
        """The stored ``molrec_version`` (1 or 2), or ``None`` for an unstamped record."""
        value = self._cache["meta"].get("molrec_version")
        return None if value is None else int(value)

    async def system(self) -> Frame | None:
        """The ``system`` section, or ``None``."""
        value: Frame | None = await self._load("system")
        return value

    async def frame(self) -> Frame | None:
        """The ``frame`` section, or ``None``."""
        value: Frame | None = await self._load("frame")
        return value

    async def forcefield(self) -> ForceField | None:
        """The ``forcefield`` section, or ``None``: fetched once, then revalidated by ETag
        on each call (a 304 returns the object held, lookups run locally)."""
        client = self._client
        return await afetch_forcefield(client._core, client._send, "records", self._name)

    @property
    def status(self) -> dict[str, Any] | None:
        """The ``status`` document (read at open), or ``None``."""
        value = self._cache["status"]
        return None if value is None else dict(value)

    @property
    def method(self) -> dict[str, Any] | None:
        """The ``method`` document (read at open), or ``None``."""
        value = self._cache["method"]
        return None if value is None else dict(value)

    @property
    def trajectory(self) -> AsyncRemoteTrajectory | None:
        """The trajectory handle (as :attr:`RemoteRecord.trajectory`)."""
        if self._trajectory is None:
            has = "trajectory" in self._summary.sections or self._summary.declaration is not None
            if self.read_only and not has:
                return None
            self._trajectory = AsyncRemoteTrajectory(self, self._summary)
        return self._trajectory

    async def aclose(self) -> None:
        """Flush the trajectory's queued frames; the object is unusable afterwards."""
        try:
            if self._trajectory is not None:
                await self._trajectory.aclose()
        finally:
            self._trajectory = None

    async def __aenter__(self) -> AsyncRemoteRecord:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        mode = "r" if self._read_only else "r+"
        return f"AsyncRemoteRecord({self.url!r}, mode={mode!r})"


class AsyncRemoteTrajectory:
    """The asyncio twin of :class:`~mrecd_client.RemoteTrajectory`.

    ``len(traj)`` and ``traj[i:j:k]`` need no I/O; ``await traj[i]``,
    ``await traj.read(i)``, ``await traj.append(frame)``, ``async for frame
    in traj``, ``async for frame in traj.follow()``; :meth:`aclose` flushes.
    """

    def __init__(self, record: AsyncRemoteRecord, summary: Summary) -> None:
        self._record = record
        self._client = record._client
        self._core = record._client._core
        self._name = record.name
        self._declaration = summary.declaration
        self._pipeline = Pipeline(
            Producer.random(), self._core.wire, self._client._batch_frames, nstep=summary.nstep
        )
        self._changed = asyncio.Condition()
        self._tasks: set[asyncio.Task[None]] = set()

    # -- state ---------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Where the trajectory lives: ``<record url>/trajectory``."""
        return f"{self._record.url}/trajectory"

    @property
    def producer(self) -> Producer:
        """The producer this handle appends as (a random id at epoch 0 unless claimed)."""
        return self._pipeline.producer

    def claim(self, producer_id: str, epoch: int = 0) -> None:
        """Append as producer ``producer_id`` at ``epoch`` (as :meth:`RemoteTrajectory.claim`)."""
        self._pipeline.claim(Producer(producer_id, epoch))

    @property
    def declaration(self) -> Declaration | None:
        """The pinned ``sequence_schema`` as last seen (``None`` before the first frame)."""
        return self._declaration

    async def _ask(self) -> int:
        try:
            response = await self._client._send(self._core.trajectory(self._name))
            nstep, declaration = self._core.trajectory_state(response)
        except NotFound:
            return 0
        self._declaration = declaration or self._declaration
        if not self._pipeline.in_flight:
            self._pipeline.nstep = nstep
        return nstep

    async def nstep(self) -> int:
        """Frames committed on the server (after the batches in flight have landed)."""
        await self._wait_in_flight()
        return await self._ask()

    def __len__(self) -> int:
        return len(self._pipeline)

    async def refresh(self) -> int:
        """Ask the server for its frame count; ``len``."""
        await self._ask()
        return len(self)

    # -- reading -------------------------------------------------------------------------------

    async def _committed(self) -> None:
        if len(self) != self._pipeline.nstep:
            await self.flush()

    @overload
    def __getitem__(self, i: int) -> Awaitable[Frame]: ...
    @overload
    def __getitem__(self, i: slice) -> AsyncRemoteFrameSlice: ...
    def __getitem__(self, i: int | slice) -> Awaitable[Frame] | AsyncRemoteFrameSlice:
        if isinstance(i, slice):
            n = len(self)
            return AsyncRemoteFrameSlice(self, range(*i.indices(n)), n)
        return self.read(i)

    async def read(
        self, i: int, *, blocks: Iterable[str] | None = None, columns: Iterable[str] | None = None
    ) -> Frame:
        """Frame ``i`` (negative counts from the end), projected (as ``RemoteTrajectory.read``)."""
        i = check_index(i)
        await self._committed()
        j = resolve(i, len(self))
        response = await self._client._send(self._core.frame(self._name, j, blocks, columns))
        return self._core.one_frame(response)

    def __aiter__(self) -> AsyncIterator[Frame]:
        return aiter(self[:])

    async def _stream(self, ordinals: range, at: int) -> AsyncIterator[Frame]:
        """Frames of ``ordinals`` as they arrive; resumed after a broken stream."""
        await self._committed()
        done, attempt = 0, 0
        while done < len(ordinals):
            request = self._core.frames(self._name, ordinals[done:], at)
            response = await self._client._open(request)
            try:
                if not response.is_success:
                    await response.aread()
                    self._core.check(response)
                kind = response.headers.get("content-type", "").split(";")[0].strip()
                decoder = FrameStreamDecoder(kind)
                async for chunk in response.aiter_bytes():
                    for frame in decoder.feed(chunk):
                        done += 1
                        yield frame
                decoder.close()
                return
            except httpx.TransportError as exc:
                attempt += 1
                delay = self._client._policy.retry_exception(exc, attempt, safe=True)
                if delay is None:
                    raise transport_failure(request, exc) from exc
                await asyncio.sleep(delay)
            finally:
                await response.aclose()

    async def steps(self) -> npt.NDArray[np.int64]:
        """Step numbers of every frame, ``i64[nstep]``."""
        await self._committed()
        if not len(self):
            return np.empty(0, dtype=np.int64)
        response = await self._client._send(self._core.steps(self._name))
        return self._core.int_array(response, "steps")

    async def times(self) -> npt.NDArray[np.float64] | None:
        """Times of every frame, ``f64[nstep]``, or ``None`` in a run without times."""
        await self._committed()
        if not len(self):
            return None
        return self._core.times_array(await self._client._send(self._core.times(self._name)))

    async def series(self, key: str, start: int = 0, stop: int | None = None) -> npt.NDArray[Any]:
        """Per-step values of ``key`` over frames ``[start, stop)``; vector tags give ``[n, w]``."""
        await self._committed()
        if self._declaration is None:
            await self._ask()
        response = await self._client._send(self._core.series(self._name, key, start, stop))
        return self._core.series_array(response, meta_tag(self._declaration, key))

    async def follow(self, start: int | None = None) -> AsyncIterator[Frame]:
        """Every frame from ordinal ``start`` on, as they are committed (see ``Client``'s twin)."""
        seen = len(self) if start is None else start
        attempt = 0
        while True:
            request = self._core.events(self._name, seen)
            response = await self._client._open(request)
            try:
                if not response.is_success:
                    await response.aread()
                    self._core.check(response)
                async for event in EventSource(response).aiter_sse():
                    if event.event != "commit":
                        continue
                    nstep = int(json.loads(event.data)["nstep"])
                    async for frame in self._stream(range(seen, nstep), nstep):
                        seen += 1
                        self._pipeline.nstep = max(self._pipeline.nstep, seen)  # len() follows
                        yield frame
                    attempt = 0
            except httpx.TransportError as exc:
                attempt += 1
                delay = self._client._policy.retry_exception(exc, attempt, safe=True)
                if delay is None:
                    raise transport_failure(request, exc) from exc
                await asyncio.sleep(delay)
            finally:
                await response.aclose()

    # -- writing -------------------------------------------------------------------------------

    def _writable(self) -> None:
        if self._record.read_only:
            raise ReadOnlyError(
                "the record is open read-only; open it with mode='r+'", path=self._record.url
            )

    async def append(self, frame: Frame, *, expected_nstep: int | None = None) -> int:
        """Queue one frame; returns ``len`` (as :meth:`RemoteTrajectory.append`)."""
        return await self.extend([frame], expected_nstep=expected_nstep)

    async def extend(self, frames: Iterable[Frame], *, expected_nstep: int | None = None) -> int:
        """Queue many frames; returns ``len`` (as :meth:`RemoteTrajectory.extend`)."""
        self._writable()
        expected = check_expected(expected_nstep)
        items = frames_list(frames)
        if expected is not None:
            return await self._conditional(items, expected)
        await self._raise_failed()
        self._pipeline.add(items)
        while self._pipeline.full():
            await self._dispatch(self._pipeline.batch_frames)
        return len(self._pipeline)

    async def _conditional(self, frames: list[Frame], expected: int) -> int:
        await self.flush()
        if not frames:
            return len(self)
        self._pipeline.add(frames)
        await self._deliver(self._pipeline.cut(expected_nstep=expected))
        await self._raise_failed()
        return len(self)

    async def _dispatch(self, size: int | None) -> None:
        """Start the next batch as a task, waiting while ``max_in_flight`` are out."""
        async with self._changed:
            limit = self._client._max_in_flight
            await self._changed.wait_for(lambda: len(self._pipeline.in_flight) < limit)
        if not self._pipeline.pending:
            return
        task = asyncio.create_task(self._deliver(self._pipeline.cut(size)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver(self, batch: Batch) -> None:
        """Send ``batch`` until it lands or fails for good; report to the pipeline."""
        try:
            answer = await self._post(batch)
        except Exception as exc:
            self._pipeline.failed(batch, exc)
        except BaseException as exc:  # cancelled: the batch's fate is unknown
            self._pipeline.failed(batch, exc)
            raise
        else:
            self._pipeline.landed(batch, answer)
        finally:
            async with self._changed:
                self._changed.notify_all()

    async def _post(self, batch: Batch) -> Appended:
        gaps = 0
        while True:
            response = await self._client._send(self._core.append(self._name, batch))
            try:
                return self._core.appended(response)
            except SequenceGap:
                previous = batch.previous
                if previous is None or gaps >= GAP_RETRIES:
                    raise
                await self._landed(previous)
                if previous.error is not None:
                    raise
                gaps += 1  # it overtook the batch before it: resend now that that one landed

    async def _landed(self, batch: Batch) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: batch.done)

    async def _wait_in_flight(self) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: not self._pipeline.in_flight)

    async def _raise_failed(self) -> None:
        if self._pipeline.error is not None:
            await self._wait_in_flight()
        error = self._pipeline.take_error()
        if error is not None:
            raise error

    async def flush(self) -> int:
        """Send queued frames and wait until every batch has landed; the committed ``nstep``.

        Raises
        ------
        MrecdError
            The first error of a batch.
        """
        while self._pipeline.pending:
            await self._dispatch(None)
        await self._wait_in_flight()
        await self._raise_failed()
        if self._declaration is None:
            await self._ask()
        return self._pipeline.nstep

    async def aclose(self) -> None:
        """Flush (and wait for every batch)."""
        await self.flush()

    async def __aenter__(self) -> AsyncRemoteTrajectory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncRemoteTrajectory({self._record.url!r}, frames={len(self)})"


class AsyncRemoteFrameSlice:
    """A lazy view ``traj[i:j:k]``: ``len`` now, ``await s[i]``, ``async for`` streams it."""

    __slots__ = ("_at", "_ordinals", "_source")

    def __init__(self, source: AsyncRemoteTrajectory, ordinals: range, at: int) -> None:
        self._source = source
        self._ordinals = ordinals
        self._at = at

    def __len__(self) -> int:
        return len(self._ordinals)

    @overload
    def __getitem__(self, i: int) -> Awaitable[Frame]: ...
    @overload
    def __getitem__(self, i: slice) -> AsyncRemoteFrameSlice: ...
    def __getitem__(self, i: int | slice) -> Awaitable[Frame] | AsyncRemoteFrameSlice:
        if isinstance(i, slice):
            return AsyncRemoteFrameSlice(self._source, self._ordinals[i], self._at)
        i = check_index(i)
        try:
            j = self._ordinals[i]
        except IndexError:
            raise IndexError(f"frame {i} is outside the {len(self)} frames of the slice") from None
        return self._source.read(j)

    def __aiter__(self) -> AsyncIterator[Frame]:
        return self._source._stream(self._ordinals, self._at)

    def __repr__(self) -> str:
        return f"AsyncRemoteFrameSlice({self._ordinals})"
