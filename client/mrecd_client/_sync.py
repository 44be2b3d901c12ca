"""The blocking client: :class:`Client`, :class:`RemoteRecord`, :class:`RemoteTrajectory`.

Requests are built and answers parsed by :mod:`mrecd_client._core`; this
module only sends them (with retries) over one :class:`httpx.Client`.
Appends travel in batches on a small thread pool, several in flight.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, Literal, overload

import httpx
import numpy as np
import numpy.typing as npt
from httpx_sse import EventSource

from mrecd.errors import InvalidRecord, NotFound, ReadOnlyError, SequenceGap
from mrecd.forcefield import ForceField
from mrecd.model import Declaration, Frame

from ._core import (
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
from ._forcefield import fetch_forcefield
from ._sync_collections import CollectionsMixin
from ._wire import FrameStreamDecoder, Wire

__all__ = ["Client", "RemoteFrameSlice", "RemoteRecord", "RemoteTrajectory"]

Mode = Literal["r", "r+"]
#: How often a batch refused with SequenceGap is resent once the batch before it is done.
GAP_RETRIES = 3


def _policy(retries: int | RetryPolicy) -> RetryPolicy:
    if isinstance(retries, RetryPolicy):
        return retries
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise InvalidRecord(f"retries is a count >= 0 or a RetryPolicy, not {retries!r}")
    return RetryPolicy(attempts=retries + 1)


class Client(CollectionsMixin):
    """A catalog of records served by ``mrecd serve``: the remote twin of :class:`mrecd.Catalog`.

    Parameters
    ----------
    url
        The service's base URL, e.g. ``http://127.0.0.1:8000``.
    token
        Bearer token sent with every request (``None``: anonymous).
    timeout
        Seconds for connecting, and for each read and write.
    retries
        Resends after connection errors, timeouts, 429 and 5xx (a count, or a
        :class:`RetryPolicy`); afterwards :class:`~mrecd.RetryableError`.
    wire
        ``"mrf1"`` (MRF1 frame bytes, the default) or ``"json"``.
    batch_frames, max_in_flight
        Appends travel in batches of ``batch_frames`` frames, up to
        ``max_in_flight`` batches at once.
    transport
        An httpx transport (tests inject faults here).

    Notes
    -----
    Thread-safe; use one client per process (it pools connections) and
    close it (or use ``with``).
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
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._core = Core(url, token, timeout, wire)
        self._policy = _policy(retries)
        if batch_frames < 1 or max_in_flight < 1:
            raise InvalidRecord("batch_frames and max_in_flight are at least 1")
        self._batch_frames, self._max_in_flight = batch_frames, max_in_flight
        self._http = httpx.Client(timeout=timeout, transport=transport)

    # -- sending -------------------------------------------------------------------------------

    def _send(self, request: httpx.Request, *, safe: bool = True) -> httpx.Response:
        """Send ``request`` with the retry policy; the (read) final response."""
        response = self._open(request, safe=safe)
        try:
            response.read()
        finally:
            response.close()
        return response

    def _open(self, request: httpx.Request, *, safe: bool = True) -> httpx.Response:
        """Send ``request`` with retries; a streaming response (the caller closes it)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._http.send(request, stream=True)
            except httpx.TransportError as exc:
                delay = self._policy.retry_exception(exc, attempt, safe=safe)
                if delay is None:
                    raise transport_failure(request, exc) from exc
            else:
                delay = self._policy.retry_response(response, attempt, safe=safe)
                if delay is None:
                    return response
                response.close()
            time.sleep(delay)

    # -- the catalog ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The service's base URL."""
        return self._core.url

    @property
    def local_path(self) -> str | None:
        """Always ``None``: a served catalog has no local directory."""
        return None

    def create_record(
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
    ) -> RemoteRecord:
        """Create record ``name`` on the server and open it ``r+``.

        ``create_record(name)`` alone starts a run whose first appended frames
        declare the trajectory; ``exist_ok=True`` opens the record if it exists
        (a restarted job continues its run).

        Raises
        ------
        InvalidRecord
            Unsafe name or invalid content.
        AlreadyExists
            A record of that name exists (unless ``exist_ok``).
        """
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
        self._core.created(self._send(request, safe=exist_ok))
        return self.record(name, "r+")

    def record(self, name: str, mode: Mode = "r") -> RemoteRecord:
        """Open record ``name`` (``"r+"`` to append to its trajectory).

        Raises
        ------
        NotFound
            No record of that name.
        """
        summary = self._core.record_summary(self._send(self._core.summary(name)))
        check_mode(mode)
        return RemoteRecord(self, name, summary, read_only=mode == "r")

    def records(self, prefix: str | None = None) -> list[str]:
        """Sorted names of the records that start with ``prefix`` (every page)."""
        names: list[str] = []
        cursor: str | None = None
        while True:
            page, cursor = self._core.record_page(
                self._send(self._core.list_records(prefix, cursor))
            )
            names += page
            if cursor is None:
                return names

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            self._core.check(self._send(self._core.summary(name)))
        except (NotFound, InvalidRecord):
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self.records())

    def delete_record(self, name: str) -> None:
        """Delete record ``name`` (needs the ``admin`` scope).

        Raises
        ------
        NotFound
            No record of that name.
        """
        self._core.check(self._send(self._core.delete_record(name), safe=False))

    def check(self) -> None:
        """Ask the server whether its store is reachable.

        Raises
        ------
        RetryableError
            The server or its store could not be reached.
        """
        self._core.check(self._send(self._core.ready()))

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.url!r})"


class RemoteRecord:
    """A record on the server: the remote twin of :class:`mrecd.api.StoredRecord`.

    Obtain one from :meth:`Client.record` or :meth:`Client.create_record`.
    ``meta``, ``status`` and ``method`` are read when first asked and cached
    (as locally); ``system``, ``frame`` and ``forcefield`` too. Sections are
    written when the record is created; only the trajectory grows.
    """

    def __init__(self, client: Client, name: str, summary: Summary, *, read_only: bool) -> None:
        self._client = client
        self._name = name
        self._summary = summary
        self._read_only = read_only
        self._cache: dict[str, Any] = {}
        self._trajectory: RemoteTrajectory | None = None

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
        """Whether the record is on the server's store (``False`` until a new run's first frame)."""
        return bool(self.sections)

    def refresh(self) -> bool:
        """Ask the server again whether the run is born (its first write landed); ``exists``."""
        return bool(self.sections)

    @property
    def read_only(self) -> bool:
        """Whether appends are refused (mode ``"r"``, or a packed record)."""
        return self._read_only or self._summary.read_only

    @property
    def sections(self) -> list[str]:
        """Names of the root's sections, sorted (asked of the server each time)."""
        core = self._client._core
        self._summary = core.record_summary(self._client._send(core.summary(self._name)))
        return sorted(self._summary.sections)

    def _section(self, section: str) -> Any:
        if section not in self._cache:
            core = self._client._core
            response = self._client._send(core.section(self._name, section))
            self._cache[section] = core.section_value(section, response)
        return self._cache[section]

    @property
    def meta(self) -> dict[str, Any]:
        """The ``meta`` document as stored."""
        return dict(self._section("meta"))

    @property
    def molrec_version(self) -> int | None:
        """The stored ``molrec_version`` (1 or 2), or ``None`` for an unstamped record."""
        value = self._section("meta").get("molrec_version")
        return None if value is None else int(value)

    @property
    def system(self) -> Frame | None:
        """The ``system`` section, or ``None``."""
        value: Frame | None = self._section("system")
        return value

    @property
    def frame(self) -> Frame | None:
        """The ``frame`` section, or ``None``."""
        value: Frame | None = self._section("frame")
        return value

    @property
    def forcefield(self) -> ForceField | None:
        """The ``forcefield`` section, or ``None``: fetched once, then revalidated by ETag
        on each access (a 304 returns the object held, lookups run locally)."""
        client = self._client
        return fetch_forcefield(client._core, client._send, "records", self._name)

    @property
    def status(self) -> dict[str, Any] | None:
        """The ``status`` document, or ``None``."""
        value = self._section("status")
        return None if value is None else dict(value)

    @property
    def method(self) -> dict[str, Any] | None:
        """The ``method`` document, or ``None``."""
        value = self._section("method")
        return None if value is None else dict(value)

    @property
    def trajectory(self) -> RemoteTrajectory | None:
        """The trajectory, one handle per open record (it holds the producer and its queue).

        ``None`` on a read-only record without one; on a writable record the
        first ``append`` creates it, declaring what that frame presents.
        """
        if self._trajectory is None:
            has = "trajectory" in self._summary.sections or self._summary.declaration is not None
            if self.read_only and not has:
                return None
            self._trajectory = RemoteTrajectory(self, self._summary)
        return self._trajectory

    def close(self) -> None:
        """Flush the trajectory's queued frames; the object is unusable afterwards."""
        try:
            if self._trajectory is not None:
                self._trajectory.close()
        finally:
            self._trajectory = None
            self._cache.clear()

    def __enter__(self) -> RemoteRecord:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "r" if self._read_only else "r+"
        return f"RemoteRecord({self.url!r}, mode={mode!r})"


class RemoteTrajectory(Sequence[Frame]):
    """A record's trajectory on the server: the remote twin of :class:`mrecd.api.Trajectory`.

    Reading: ``len``, ``[i]``, ``[i:j:k]`` (a lazy :class:`RemoteFrameSlice`,
    fetched through the streamed slice route), iteration, :meth:`read`,
    :meth:`steps`, :meth:`times`, :meth:`series`, :meth:`follow`. ``len`` is
    the frame count last seen (:meth:`refresh` asks again) plus the frames
    queued on this handle, as locally.

    Writing: :meth:`append` / :meth:`extend` queue frames; batches of
    ``batch_frames`` go out as an idempotent producer (:attr:`producer`),
    several in flight; :meth:`flush` waits for all of them and raises the
    first error. Reads flush first, so they see queued frames. A resent
    batch never lands twice.

    Notes
    -----
    Thread-safe. After a refused batch the queued frames behind it are
    dropped (they may not land out of order) and the producer moves to its
    next epoch, which fences any batch of the old one still in flight.
    """

    def __init__(self, record: RemoteRecord, summary: Summary) -> None:
        self._record = record
        self._client = record._client
        self._core = record._client._core
        self._name = record.name
        self._declaration = summary.declaration
        self._pipeline = Pipeline(
            Producer.random(), self._core.wire, self._client._batch_frames, nstep=summary.nstep
        )
        self._lock = threading.Condition()
        self._pool: ThreadPoolExecutor | None = None

    # -- state ---------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Where the trajectory lives: ``<record url>/trajectory``."""
        return f"{self._record.url}/trajectory"

    @property
    def producer(self) -> Producer:
        """The producer this handle appends as (a random id at epoch 0 unless claimed)."""
        with self._lock:
            return self._pipeline.producer

    def claim(self, producer_id: str, epoch: int = 0) -> None:
        """Append as producer ``producer_id`` at ``epoch`` from now on (a restarted job).

        A job that restarts after a crash claims the id it used before with a
        higher epoch: from then on the server fences the old epoch, so a batch
        the dead process still had in flight can never land after the new
        ones. Call before appending (or after :meth:`flush`).

        Raises
        ------
        InvalidRecord
            A malformed id or epoch, or frames are queued on this handle.
        """
        with self._lock:
            self._pipeline.claim(Producer(producer_id, epoch))

    @property
    def declaration(self) -> Declaration | None:
        """The pinned ``sequence_schema`` (``None`` before the first frame)."""
        if self._declaration is None:
            self._ask()
        return self._declaration

    def _ask(self) -> int:
        """Ask the server for ``nstep`` and the declaration; the committed ``nstep``."""
        try:
            response = self._client._send(self._core.trajectory(self._name))
            nstep, declaration = self._core.trajectory_state(response)
        except NotFound:
            return 0
        with self._lock:
            self._declaration = declaration or self._declaration
            if not self._pipeline.in_flight:
                self._pipeline.nstep = nstep
            return nstep

    @property
    def nstep(self) -> int:
        """Frames committed on the server (after the batches in flight have landed)."""
        self._wait_in_flight()
        return self._ask()

    def __len__(self) -> int:
        with self._lock:
            return len(self._pipeline)

    def refresh(self) -> int:
        """Ask the server for its frame count (another writer may have appended); ``len``."""
        self._ask()
        return len(self)

    # -- reading -------------------------------------------------------------------------------

    def _committed(self) -> None:
        """Flush queued frames so that a read sees them."""
        if len(self) != self._pipeline.nstep:
            self.flush()

    @overload
    def __getitem__(self, i: int) -> Frame: ...
    @overload
    def __getitem__(self, i: slice) -> RemoteFrameSlice: ...
    def __getitem__(self, i: int | slice) -> Frame | RemoteFrameSlice:
        if isinstance(i, slice):
            self._committed()
            n = len(self)
            return RemoteFrameSlice(self, range(*i.indices(n)), n)
        return self.read(i)

    def read(
        self, i: int, *, blocks: Iterable[str] | None = None, columns: Iterable[str] | None = None
    ) -> Frame:
        """Frame ``i`` (negative counts from the end), projected to ``blocks``/``columns``.

        Only the selected blocks and columns travel.

        Raises
        ------
        IndexError
            ``i`` is out of range (:class:`~mrecd.RecordOutOfRange` from the server).
        TypeError
            ``i`` is not an integer.
        InvalidRecord
            A block in ``blocks`` is not declared.
        """
        i = check_index(i)
        self._committed()
        j = resolve(i, len(self))
        response = self._client._send(self._core.frame(self._name, j, blocks, columns))
        return self._core.one_frame(response)

    def __iter__(self) -> Iterator[Frame]:
        return iter(self[:])

    def _stream(self, ordinals: range, at: int) -> Iterator[Frame]:
        """Frames of ``ordinals`` as they arrive; resumed after a broken stream."""
        done, attempt = 0, 0
        while done < len(ordinals):
            rest = ordinals[done:]
            request = self._core.frames(self._name, rest, at)
            response = self._client._open(request)
            try:
                if not response.is_success:
                    response.read()
                    self._core.check(response)
                kind = response.headers.get("content-type", "").split(";")[0].strip()
                decoder = FrameStreamDecoder(kind)
                for chunk in response.iter_bytes():
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
                time.sleep(delay)
            finally:
                response.close()

    def steps(self) -> npt.NDArray[np.int64]:
        """Step numbers of every frame, ``i64[nstep]``."""
        self._committed()
        if not len(self):
            return np.empty(0, dtype=np.int64)
        return self._core.int_array(self._client._send(self._core.steps(self._name)), "steps")

    def times(self) -> npt.NDArray[np.float64] | None:
        """Times of every frame, ``f64[nstep]``, or ``None`` in a run without times."""
        self._committed()
        if not len(self):
            return None
        return self._core.times_array(self._client._send(self._core.times(self._name)))

    def series(self, key: str, start: int = 0, stop: int | None = None) -> npt.NDArray[Any]:
        """Per-step values of ``key`` over frames ``[start, stop)``; vector tags give ``[n, w]``.

        Raises
        ------
        InvalidRecord
            ``key`` is not declared.
        """
        self._committed()
        response = self._client._send(self._core.series(self._name, key, start, stop))
        return self._core.series_array(response, meta_tag(self.declaration, key))

    def follow(self, start: int | None = None) -> Iterator[Frame]:
        """Every frame from ordinal ``start`` on, waiting for new ones as they are committed.

        Listens to the trajectory's server-sent events and fetches the frames
        of each commit; a broken connection resumes (``Last-Event-ID``) where
        it left off. Runs until the caller stops iterating.

        Parameters
        ----------
        start
            The first frame to yield (default: ``len`` now, i.e. only new frames).

        Raises
        ------
        NotFound
            The record is gone.
        """
        seen = len(self) if start is None else start
        attempt = 0
        while True:
            request = self._core.events(self._name, seen)
            response = self._client._open(request)
            try:
                if not response.is_success:
                    response.read()
                    self._core.check(response)
                for event in EventSource(response).iter_sse():
                    if event.event != "commit":
                        continue
                    nstep = int(json.loads(event.data)["nstep"])
                    for frame in self._stream(range(seen, nstep), nstep):
                        seen += 1
                        with self._lock:  # len() follows what was seen
                            self._pipeline.nstep = max(self._pipeline.nstep, seen)
                        yield frame
                    attempt = 0
            except httpx.TransportError as exc:
                attempt += 1
                delay = self._client._policy.retry_exception(exc, attempt, safe=True)
                if delay is None:
                    raise transport_failure(request, exc) from exc
                time.sleep(delay)
            finally:
                response.close()

    # -- writing -------------------------------------------------------------------------------

    def _writable(self) -> None:
        if self._record.read_only:
            raise ReadOnlyError(
                "the record is open read-only; open it with mode='r+'", path=self._record.url
            )

    def append(self, frame: Frame, *, expected_nstep: int | None = None) -> int:
        """Queue one frame (with its ``step``); returns ``len`` (queued frames included).

        The first frame of a record without a trajectory creates it, declaring
        what that frame presents.

        Raises
        ------
        PreconditionFailed
            ``expected_nstep`` is given and the trajectory is not at that
            length (``.nstep`` on the error says where it is); nothing lands.
        """
        return self.extend([frame], expected_nstep=expected_nstep)

    def extend(self, frames: Iterable[Frame], *, expected_nstep: int | None = None) -> int:
        """Queue many frames; returns ``len``.

        With ``expected_nstep`` the frames travel at once, in one request, all
        or nothing, and only if the trajectory holds exactly that many frames
        (else :class:`~mrecd.PreconditionFailed`); the call waits for the answer.
        """
        self._writable()
        expected = check_expected(expected_nstep)
        items = frames_list(frames)
        if expected is not None:
            return self._conditional(items, expected)
        self._raise_failed()
        with self._lock:
            self._pipeline.add(items)
            while self._pipeline.full():
                self._dispatch(self._pipeline.batch_frames)
            return len(self._pipeline)

    def _conditional(self, frames: list[Frame], expected: int) -> int:
        self.flush()
        if not frames:
            return len(self)
        with self._lock:
            self._pipeline.add(frames)
            batch = self._pipeline.cut(expected_nstep=expected)
        self._deliver(batch)
        self._wait_in_flight()
        self._raise_failed()
        return len(self)

    def _dispatch(self, size: int | None) -> None:
        """Send the next batch on the pool, waiting while ``max_in_flight`` are out (locked)."""
        while len(self._pipeline.in_flight) >= self._client._max_in_flight:
            self._lock.wait()
        if not self._pipeline.pending:
            return
        batch = self._pipeline.cut(size)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                self._client._max_in_flight, thread_name_prefix="mrecd-append"
            )
        self._pool.submit(self._deliver, batch)

    def _deliver(self, batch: Batch) -> None:
        """Send ``batch`` until it lands or fails for good; report to the pipeline."""
        try:
            answer = self._post(batch)
        except BaseException as exc:
            with self._lock:
                self._pipeline.failed(batch, exc)
                self._lock.notify_all()
            if not isinstance(exc, Exception):
                raise
        else:
            with self._lock:
                self._pipeline.landed(batch, answer)
                self._lock.notify_all()

    def _post(self, batch: Batch) -> Any:
        gaps = 0
        while True:
            response = self._client._send(self._core.append(self._name, batch))
            try:
                return self._core.appended(response)
            except SequenceGap:
                previous = batch.previous
                if previous is None or gaps >= GAP_RETRIES:
                    raise
                with self._lock:
                    while not previous.done:
                        self._lock.wait()
                if previous.error is not None:
                    raise
                gaps += 1  # it overtook the batch before it: resend now that that one landed

    def _wait_in_flight(self) -> None:
        with self._lock:
            while self._pipeline.in_flight:
                self._lock.wait()

    def _raise_failed(self) -> None:
        self._wait_in_flight_if_failed()
        with self._lock:
            error = self._pipeline.take_error()
        if error is not None:
            raise error

    def _wait_in_flight_if_failed(self) -> None:
        with self._lock:
            failed = self._pipeline.error is not None
        if failed:
            self._wait_in_flight()

    def flush(self) -> int:
        """Send queued frames and wait until every batch has landed; the committed ``nstep``.

        Raises
        ------
        MrecdError
            The first error of a batch (a refused frame, a repeated step, a
            fenced producer, or the transport after every retry).
        """
        with self._lock:
            while self._pipeline.pending:
                self._dispatch(None)
        self._wait_in_flight()
        self._raise_failed()
        if self._declaration is None:
            self._ask()
        return self._pipeline.nstep

    def close(self) -> None:
        """Flush, then stop the sending threads."""
        try:
            self.flush()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None

    def __enter__(self) -> RemoteTrajectory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RemoteTrajectory({self._record.url!r}, frames={len(self)})"


class RemoteFrameSlice(Sequence[Frame]):
    """A lazy view of frames ``traj[i:j:k]`` on the server.

    Indexing reads one frame; iterating streams the whole view in one
    request (``application/x-mrec-frames``) pinned to the ``nstep`` it was
    made at. Compares equal to any list, tuple or slice of equal frames.
    """

    __slots__ = ("_at", "_ordinals", "_source")

    def __init__(self, source: RemoteTrajectory, ordinals: range, at: int) -> None:
        self._source = source
        self._ordinals = ordinals
        self._at = at

    def __len__(self) -> int:
        return len(self._ordinals)

    @overload
    def __getitem__(self, i: int) -> Frame: ...
    @overload
    def __getitem__(self, i: slice) -> RemoteFrameSlice: ...
    def __getitem__(self, i: int | slice) -> Frame | RemoteFrameSlice:
        if isinstance(i, slice):
            return RemoteFrameSlice(self._source, self._ordinals[i], self._at)
        i = check_index(i)
        try:
            j = self._ordinals[i]
        except IndexError:
            raise IndexError(f"frame {i} is outside the {len(self)} frames of the slice") from None
        return self._source.read(j)

    def __iter__(self) -> Iterator[Frame]:
        return self._source._stream(self._ordinals, self._at)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (RemoteFrameSlice, list, tuple)) or _is_frame_slice(other):
            assert isinstance(other, Sequence)
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RemoteFrameSlice({self._ordinals})"


def _is_frame_slice(value: object) -> bool:
    """Whether ``value`` is the local API's FrameSlice (checked by name: no server import)."""
    return type(value).__name__ == "FrameSlice" and isinstance(value, Sequence)
