"""The sans-I/O core: every request is built here and every response parsed here.

:class:`Core` turns calls into :class:`httpx.Request` objects and
:class:`httpx.Response` objects into model values or :mod:`mrecd.errors`
exceptions; :class:`RetryPolicy` decides whether and when to send again;
:class:`Pipeline` keeps an idempotent producer's batches. ``Client`` and
``AsyncClient`` add only the sending path (httpx's own ``BaseClient``
pattern), so the two cannot drift. Nothing here does I/O or sleeps.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Final
from urllib.parse import quote

import httpx
import numpy as np
import numpy.typing as npt

from mrecd.errors import (
    InvalidRecord,
    MrecdError,
    NotFound,
    PermissionDenied,
    ProducerFenced,
    RetryableError,
)
from mrecd.forcefield import ForceField
from mrecd.model import TAG_LAYOUT, Declaration, Frame, numpy_dtype

from ._forcefield import ForceFieldCache
from ._wire import FRAME, FRAMES, JSON, NDJSON, Wire, decode_one, encode_frames

__all__ = ["Appended", "Batch", "Core", "Pipeline", "Producer", "RetryPolicy", "Summary"]

API: Final = "/v1"
NSTEP_HEADER: Final = "X-Mrecd-Nstep"
_PRODUCER_ID: Final = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_MAX_COUNTER: Final = 2**53
#: Sections served as documents (JSON); the frame-shaped ones come as MRF1 or JSON.
DOCUMENTS: Final = ("meta", "status", "method")
#: Statuses worth sending again: the server was overloaded, restarting or unreachable.
RETRY_STATUSES: Final = frozenset({429, 500, 502, 503, 504})
#: Transport failures where the request never reached the server: always safe to resend.
_NOT_SENT: Final = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


# -- values ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Appended:
    """The server's answer to a POST of frames.

    Attributes
    ----------
    nstep
        The trajectory's frame count after the commit.
    first, count
        Ordinal of the first frame of the batch and how many landed
        (``None`` for a duplicate whose first answer the server no longer keeps).
    duplicate
        The batch had landed before (a retry); nothing landed now.
    """

    nstep: int
    first: int | None
    count: int | None
    duplicate: bool


@dataclass(frozen=True)
class Summary:
    """A record's summary: sections, ``nstep``, the trajectory declaration, read-only-ness."""

    name: str
    sections: list[str]
    nstep: int
    declaration: Declaration | None
    read_only: bool


@dataclass(frozen=True)
class Producer:
    """An idempotent producer's identity: an id and an epoch (the service's producer contract).

    Every trajectory handle appends as a producer: by default a random id at
    epoch 0. A job restarted after a crash claims its old id with a higher
    epoch (``traj.claim("job-42", epoch=1)``), which fences whatever the old
    process still has in flight.

    Attributes
    ----------
    id
        1-128 characters of ``[A-Za-z0-9._:-]``.
    epoch
        ``0 <= epoch < 2**53``.
    """

    id: str
    epoch: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _PRODUCER_ID.match(self.id):
            raise InvalidRecord(
                f"a producer id is 1-128 characters of [A-Za-z0-9._:-], not {self.id!r}",
                path="Producer-Id",
            )
        if _bad_counter(self.epoch):
            raise InvalidRecord(
                f"a producer epoch is an integer in [0, 2**53), not {self.epoch!r}",
                path="Producer-Epoch",
            )

    @classmethod
    def random(cls) -> Producer:
        """A fresh producer: a random id at epoch 0."""
        return cls(uuid.uuid4().hex)


def _bad_counter(value: object) -> bool:
    return isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _MAX_COUNTER


@dataclass(frozen=True)
class RetryPolicy:
    """When to send a request again: how many times, and after how long.

    Connection errors, timeouts and 429/500/502/503/504 answers are retried
    with full-jitter exponential backoff (``Retry-After`` honoured, capped
    at ``max_delay``). A request the server may have handled is resent only
    when resending is safe: reads, and appends (made idempotent by the
    producer headers); a create or delete is resent only when it never left.

    Attributes
    ----------
    attempts
        Sends in all, the first included (1: never retry).
    base_delay, max_delay
        Seconds: the first backoff ceiling, and the cap of any wait.
    """

    attempts: int = 6
    base_delay: float = 0.05
    max_delay: float = 5.0

    def delay(
        self, attempt: int, *, retry_after: float | None = None, rng: random.Random | None = None
    ) -> float:
        """Seconds to wait before send number ``attempt + 1`` (``attempt`` counts from 1)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return (rng or random).uniform(0, ceiling)

    def retry_exception(self, exc: Exception, attempt: int, *, safe: bool) -> float | None:
        """Seconds to wait before resending after transport failure ``exc``; ``None``: give up."""
        if attempt >= self.attempts or not isinstance(exc, httpx.TransportError):
            return None
        if not safe and not isinstance(exc, _NOT_SENT):
            return None
        return self.delay(attempt)

    def retry_response(self, response: httpx.Response, attempt: int, *, safe: bool) -> float | None:
        """Seconds to wait before resending after ``response``; ``None``: it is the answer.

        A request that is not safe to repeat is resent only after 429 and 503
        (the server refused it before doing anything).
        """
        status = response.status_code
        if attempt >= self.attempts or status not in RETRY_STATUSES:
            return None
        if not safe and status not in (429, 503):
            return None
        return self.delay(attempt, retry_after=_retry_after(response))


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    date = response.headers.get("date")
    now = parsedate_to_datetime(date) if date else None
    return None if now is None else (when - now).total_seconds()


def transport_failure(request: httpx.Request, exc: Exception) -> RetryableError:
    """The error a caller sees when the transport failed after every retry."""
    return RetryableError(
        f"{type(exc).__name__} on {request.method} {request.url.path} after retries: {exc}",
        path=str(request.url),
    )


# -- the producer's batches ---------------------------------------------------------------------


@dataclass(eq=False)
class Batch:
    """Frames sent in one POST under one producer sequence number.

    ``body`` is encoded once, so every resend carries the same bytes.
    ``previous`` is the batch sent before it (a ``SequenceGap`` is retried
    once that one has landed).
    """

    producer: Producer
    seq: int
    frames: list[Frame]
    body: bytes
    content_type: str
    expected_nstep: int | None = None
    previous: Batch | None = None
    answer: Appended | None = None
    error: BaseException | None = None
    done: bool = False

    def headers(self) -> dict[str, str]:
        """Producer headers (and ``If-Match`` for a conditional append)."""
        out = {
            "Producer-Id": self.producer.id,
            "Producer-Epoch": str(self.producer.epoch),
            "Producer-Seq": str(self.seq),
            "Content-Type": self.content_type,
        }
        if self.expected_nstep is not None:
            out["If-Match"] = f'"{self.expected_nstep}"'
        return out


@dataclass(eq=False)
class Pipeline:
    """An idempotent producer's queue: frames wait here, then travel as numbered batches.

    Sans-I/O bookkeeping shared by the sync and async trajectories; they
    only send the batches it cuts and report back with :meth:`landed` /
    :meth:`failed`.

    After a batch fails (a refusal, or the transport after every retry) the
    producer moves to the next epoch at sequence 0: batches still in flight
    under the old epoch are fenced by the server, so none of them lands
    after the error the caller sees.
    """

    producer: Producer
    wire: Wire
    batch_frames: int
    pending: list[Frame] = field(default_factory=list)
    in_flight: list[Batch] = field(default_factory=list)
    next_seq: int = 0
    nstep: int = 0
    error: BaseException | None = None
    last: Batch | None = None
    fenced: ProducerFenced | None = None
    acked_seq: int = -1

    def queued(self) -> int:
        """Frames not yet on the server as far as known: pending here, and in flight.

        Batches land in sequence order, so an answer to sequence ``s`` (whose
        ``nstep`` counts every batch before it) means the batches before ``s``
        have landed too, even while their own answers are still on the way.
        """
        unanswered = sum(
            len(b.frames)
            for b in self.in_flight
            if b.producer == self.producer and b.seq > self.acked_seq
        )
        return len(self.pending) + unanswered

    def __len__(self) -> int:
        return self.nstep + self.queued()

    def add(self, frames: Iterable[Frame]) -> None:
        """Queue ``frames`` (refused once the producer is fenced)."""
        if self.fenced is not None:
            raise self.fenced
        self.pending.extend(frames)

    def full(self) -> bool:
        """Whether a whole batch is pending."""
        return len(self.pending) >= self.batch_frames

    def cut(self, size: int | None = None, *, expected_nstep: int | None = None) -> Batch:
        """Make the next batch of the pending frames (all of them when ``size`` is ``None``)."""
        frames = self.pending[: size or len(self.pending)]
        del self.pending[: len(frames)]
        body, content_type = encode_frames(frames, self.wire)
        batch = Batch(
            self.producer,
            self.next_seq,
            frames,
            body,
            content_type,
            expected_nstep=expected_nstep,
            previous=self.last,
        )
        self.next_seq += 1
        self.last = batch
        self.in_flight.append(batch)
        return batch

    def landed(self, batch: Batch, answer: Appended) -> None:
        """Record the server's answer to ``batch``."""
        batch.answer, batch.done = answer, True
        self.nstep = max(self.nstep, answer.nstep)
        if batch.producer == self.producer:
            self.acked_seq = max(self.acked_seq, batch.seq)
        self._forget(batch)

    def failed(self, batch: Batch, error: BaseException) -> None:
        """Record that ``batch`` will never land (or may not have); the first error is kept."""
        batch.error, batch.done = error, True
        self._forget(batch)
        if batch.producer != self.producer:
            return  # a straggler of an epoch already abandoned
        if self.error is None:
            self.error = error
        if isinstance(error, ProducerFenced):
            self.fenced = error  # another process holds the id now: never take it back
            self.pending.clear()
            return
        self.producer = Producer(self.producer.id, self.producer.epoch + 1)
        self.next_seq, self.last, self.acked_seq = 0, None, -1
        self.pending.clear()

    def take_error(self) -> BaseException | None:
        """The first error since the last call, cleared once every batch is done."""
        if self.in_flight:
            return None
        error, self.error = self.error, None
        return error

    def _forget(self, batch: Batch) -> None:
        if batch in self.in_flight:
            self.in_flight.remove(batch)
        # a done batch is only waited on; dropping its links keeps memory flat over a long run
        batch.previous, batch.frames, batch.body = None, [], b""

    def claim(self, producer: Producer) -> None:
        """Append as ``producer`` from now on, from sequence 0 (nothing may be queued)."""
        if self.queued():
            raise InvalidRecord(
                "claim a producer before appending, or after flush(): frames are queued",
                path="producer",
            )
        self.producer, self.next_seq, self.last, self.acked_seq = producer, 0, None, -1


# -- requests and responses --------------------------------------------------------------------


def _names(values: Iterable[str] | None) -> str | None:
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    return ",".join(values)


@dataclass
class Core:
    """Builds the service's requests and parses its responses (no I/O).

    Parameters
    ----------
    url
        The service's base URL (``http://host:8000``); ``/v1`` is added.
    token
        A bearer token sent with every request, or ``None``.
    timeout
        Seconds for connecting, reading and writing (``httpx.Timeout``).
    wire
        How frames travel: ``"mrf1"`` (default) or ``"json"``.
    """

    url: str
    token: str | None = None
    timeout: float = 30.0
    wire: Wire = "mrf1"
    #: force fields fetched so far, revalidated by ETag (see ``_forcefield``)
    forcefields: ForceFieldCache = field(default_factory=ForceFieldCache, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.url = self.url.rstrip("/")
        if self.wire not in ("mrf1", "json"):
            raise InvalidRecord(f"wire is 'mrf1' or 'json', not {self.wire!r}", path="wire")

    # -- building ------------------------------------------------------------------------------

    def headers(self) -> dict[str, str]:
        """Headers of every request: the bearer token when there is one."""
        return {} if self.token is None else {"Authorization": f"Bearer {self.token}"}

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        json_body: Any = None,
    ) -> httpx.Request:
        """A request to ``/v1`` + ``path`` (``None`` parameters are left out)."""
        query = {k: v for k, v in (params or {}).items() if v is not None}
        extra: dict[str, Any] = {}
        if json_body is not None:
            extra["content"] = json.dumps(json_body, allow_nan=False).encode()
            headers = {"Content-Type": JSON, **(headers or {})}
        elif content is not None:
            extra["content"] = content
        request = httpx.Request(
            method,
            f"{self.url}{API}{path}",
            params=query,
            headers={**self.headers(), **(headers or {})},
            **extra,
        )
        request.extensions["timeout"] = httpx.Timeout(self.timeout).as_dict()
        return request

    @staticmethod
    def record_path(name: str) -> str:
        """``/records/{name}`` with ``name`` escaped (the server validates it)."""
        return f"/records/{quote(name, safe='')}"

    def list_records(self, prefix: str | None, cursor: str | None) -> httpx.Request:
        """A page of record names."""
        return self.request("GET", "/records", params={"prefix": prefix, "cursor": cursor})

    def create_record(
        self, name: str, content: Mapping[str, Any], *, exist_ok: bool
    ) -> httpx.Request:
        """``PUT /records/{name}`` with the sections of ``content`` in JSON form."""
        body: dict[str, Any] = {}
        for key, value in content.items():
            if value is None:
                continue
            if isinstance(value, (Frame, Declaration, ForceField)):
                value = value.to_dict()
            body[key] = dict(value)
        params = {"exist_ok": "true"} if exist_ok else None
        return self.request("PUT", self.record_path(name), params=params, json_body=body)

    def summary(self, name: str) -> httpx.Request:
        """The record summary."""
        return self.request("GET", self.record_path(name))

    def section(self, name: str, section: str) -> httpx.Request:
        """One section; frame-shaped ones in the client's wire format."""
        accept = JSON if section in DOCUMENTS or self.wire == "json" else f"{FRAME}, {JSON};q=0.5"
        return self.request(
            "GET", f"{self.record_path(name)}/{section}", headers={"Accept": accept}
        )

    def delete_record(self, name: str) -> httpx.Request:
        """Delete a record (admin scope)."""
        return self.request("DELETE", self.record_path(name))

    def ready(self) -> httpx.Request:
        """The readiness probe (the store is reachable)."""
        request = httpx.Request("GET", f"{self.url}/readyz", headers=self.headers())
        request.extensions["timeout"] = httpx.Timeout(self.timeout).as_dict()
        return request

    def trajectory(self, name: str) -> httpx.Request:
        """The trajectory summary: ``nstep`` and the declaration."""
        return self.request("GET", f"{self.record_path(name)}/trajectory")

    def append(self, name: str, batch: Batch) -> httpx.Request:
        """``POST`` one producer batch."""
        return self.request(
            "POST",
            f"{self.record_path(name)}/trajectory/frames",
            headers=batch.headers(),
            content=batch.body,
        )

    def frame(
        self, name: str, i: int, blocks: Iterable[str] | None, columns: Iterable[str] | None
    ) -> httpx.Request:
        """Frame ``i``, projected."""
        accept = JSON if self.wire == "json" else FRAME
        return self.request(
            "GET",
            f"{self.record_path(name)}/trajectory/frames/{i}",
            params={"blocks": _names(blocks), "columns": _names(columns)},
            headers={"Accept": accept},
        )

    def frames(self, name: str, ordinals: range, nstep: int | None) -> httpx.Request:
        """A streamed slice: the frames of ``ordinals`` (non-negative, from a range)."""
        accept = NDJSON if self.wire == "json" else FRAMES
        stop: int | None = ordinals.stop
        if stop is not None and stop < 0:
            stop = None  # a descending range down to frame 0
        return self.request(
            "GET",
            f"{self.record_path(name)}/trajectory/frames",
            params={"start": ordinals.start, "stop": stop, "step": ordinals.step, "nstep": nstep},
            headers={"Accept": accept},
        )

    def steps(self, name: str) -> httpx.Request:
        """Step numbers of every committed frame."""
        return self.request("GET", f"{self.record_path(name)}/trajectory/steps")

    def times(self, name: str) -> httpx.Request:
        """Times of every committed frame."""
        return self.request("GET", f"{self.record_path(name)}/trajectory/times")

    def series(self, name: str, key: str, start: int, stop: int | None) -> httpx.Request:
        """Per-step meta ``key`` over ``[start, stop)``."""
        return self.request(
            "GET",
            f"{self.record_path(name)}/trajectory/series/{quote(key, safe='')}",
            params={"start": max(0, start), "stop": None if stop is None else max(0, stop)},
        )

    def events(self, name: str, last_event_id: int) -> httpx.Request:
        """The server-sent events of commits after nstep ``last_event_id``."""
        request = self.request(
            "GET",
            f"{self.record_path(name)}/trajectory/events",
            headers={
                "Accept": "text/event-stream",
                "Cache-Control": "no-store",
                "Last-Event-ID": str(last_event_id),
            },
        )
        # the server sends a keep-alive every 15 s: only a longer silence is a failure
        timeout = httpx.Timeout(self.timeout, read=max(60.0, self.timeout))
        request.extensions["timeout"] = timeout.as_dict()
        return request

    # -- parsing -------------------------------------------------------------------------------

    @staticmethod
    def error(response: httpx.Response) -> MrecdError:
        """The :mod:`mrecd.errors` exception a non-2xx ``response`` stands for."""
        try:
            document = json.loads(response.content)
        except (ValueError, UnicodeDecodeError):
            document = None
        if isinstance(document, Mapping) and isinstance(document.get("type"), str):
            try:
                error = MrecdError.from_problem(document)
            except TypeError:
                error = MrecdError(str(document.get("detail")))
            if type(error) is not MrecdError:
                return error
            message, path = error.message, error.path
        else:
            message, path = response.text[:500] or response.reason_phrase, None
        status = response.status_code
        message = f"HTTP {status}: {message}"
        if status in (401, 403):
            return PermissionDenied(message, path=path)
        if status in (429, 502, 503, 504):
            return RetryableError(message, path=path)
        if status == 404:
            return NotFound(message, path=path)
        if 400 <= status < 500:
            return InvalidRecord(message, path=path)
        return MrecdError(message, path=path)

    def check(self, response: httpx.Response) -> httpx.Response:
        """``response`` when it is a success; else raise its error."""
        if response.is_success:
            return response
        raise self.error(response)

    def json(self, response: httpx.Response) -> Any:
        """The JSON body of a successful ``response``."""
        return json.loads(self.check(response).content)

    def record_page(self, response: httpx.Response) -> tuple[list[str], str | None]:
        """The names of one page and the cursor of the next (``None``: last page)."""
        page = self.json(response)
        return list(page["records"]), page.get("next")

    def created(self, response: httpx.Response) -> bool:
        """Whether a create made the record now (``False``: it existed, ``exist_ok``)."""
        return bool(self.json(response)["created"])

    def record_summary(self, response: httpx.Response) -> Summary:
        """The record summary."""
        doc = self.json(response)
        raw = doc.get("declaration")
        return Summary(
            name=doc["name"],
            sections=list(doc["sections"]),
            nstep=int(doc["nstep"]),
            declaration=None if raw is None else Declaration.from_dict(raw),
            read_only=bool(doc.get("read_only", False)),
        )

    def section_value(self, section: str, response: httpx.Response) -> Any:
        """A section's value; ``None`` when the record has no such section."""
        if response.status_code == 404:
            error = self.error(response)
            if error.path == section:
                return None
            raise error
        self.check(response)
        if section in DOCUMENTS:
            return dict(self.json(response))
        return self.one_frame(response)

    def trajectory_state(self, response: httpx.Response) -> tuple[int, Declaration | None]:
        """``(nstep, declaration)`` of a trajectory summary."""
        doc = self.json(response)
        raw = doc.get("declaration")
        return int(doc["nstep"]), None if raw is None else Declaration.from_dict(raw)

    def appended(self, response: httpx.Response) -> Appended:
        """The answer to a POST of frames."""
        doc = self.json(response)
        return Appended(
            nstep=int(doc["nstep"]),
            first=doc.get("first"),
            count=doc.get("count"),
            duplicate=bool(doc.get("duplicate", False)),
        )

    def one_frame(self, response: httpx.Response) -> Frame:
        """The frame a successful ``response`` carries (MRF1 or JSON)."""
        self.check(response)
        content_type = response.headers.get("content-type", FRAME).split(";")[0].strip()
        return decode_one(response.content, content_type)

    def int_array(self, response: httpx.Response, member: str) -> npt.NDArray[np.int64]:
        """``steps``: an ``i64[n]`` array."""
        return np.asarray(self.json(response)[member], dtype=np.int64).reshape(-1)

    def times_array(self, response: httpx.Response) -> npt.NDArray[np.float64] | None:
        """``times``: ``f64[n]``, or ``None`` for a run without times."""
        values = self.json(response)["times"]
        return None if values is None else np.asarray(values, dtype=np.float64).reshape(-1)

    def series_array(self, response: httpx.Response, tag: str | None) -> npt.NDArray[Any]:
        """Series values as the local API returns them (the tag's dtype and width)."""
        values = self.json(response)["values"]
        if tag is None:
            return np.asarray(values)
        element, width = TAG_LAYOUT[tag]
        dtype = numpy_dtype("string" if element == "json" else element)
        array = np.array(values, dtype=dtype)
        return array.reshape((-1,) if width is None else (-1, width))


def meta_tag(declaration: Declaration | None, key: str) -> str | None:
    """The declared tag of per-step key ``key`` (``None`` when unknown here)."""
    if declaration is None or key not in declaration.meta:
        return None
    tag: str = declaration.meta[key].dtype
    return tag


def check_index(i: object) -> int:
    """``i`` as a frame index; ``TypeError`` for anything but an integer (bool included)."""
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise TypeError(f"frame indices are integers, not {type(i).__name__}")
    return int(i)


def resolve(i: int, n: int) -> int:
    """Ordinal ``i`` of ``n`` frames (negative counts from the end); ``IndexError`` outside.

    ``n`` is the handle's ``len``: as locally, frames another writer added
    since are read after :meth:`refresh`.
    """
    j = i + n if i < 0 else i
    if not 0 <= j < n:
        raise IndexError(f"frame {i} is outside the {n} frames")
    return j


def check_mode(mode: str) -> str:
    """``mode`` when it is ``"r"`` or ``"r+"`` (``ValueError`` otherwise, as locally)."""
    if mode not in ("r", "r+"):
        raise ValueError(f"mode must be 'r' or 'r+', not {mode!r}")
    return mode


def check_expected(expected: object) -> int | None:
    """``expected_nstep`` checked as locally: ``None`` or a non-negative integer."""
    if expected is None:
        return None
    if isinstance(expected, bool) or not isinstance(expected, int) or expected < 0:
        raise InvalidRecord(
            f"expected_nstep must be a non-negative integer, not {expected!r}",
            path="expected_nstep",
        )
    return expected


def frames_list(frames: Iterable[Frame]) -> list[Frame]:
    """``frames`` as a list of :class:`~mrecd.Frame` (``InvalidRecord`` for anything else)."""
    out = list(frames)
    for n, frame in enumerate(out):
        if not isinstance(frame, Frame):
            raise InvalidRecord(
                f"frames are mrecd.Frame objects, not {type(frame).__name__}", path=f"frames/{n}"
            )
    return out
