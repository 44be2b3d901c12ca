"""A record's trajectory: append frames, read frame i, slices, steps, times, series, events."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Annotated, Any, NamedTuple

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from ... import api
from ...errors import InvalidRecord, MrecdError, PreconditionFailed, RecordOutOfRange
from ...model import Frame
from .. import media
from .._examples import APPENDED, DECLARATION, EVENTS, FRAME_JSON, json_example
from ..deps import Append, Read, RunsDep, SettingsDep
from ..problems import HTTPProblem, problem_responses
from ..settings import Settings
from ._common import array_json, blocking

__all__ = ["router"]

router = APIRouter(tags=["trajectory"])

_IMMUTABLE = "public, max-age=31536000, immutable"
NSTEP = "X-Mrecd-Nstep"
Names = Annotated[list[str] | None, Query(description="comma-separated or repeated names")]


class Appended(BaseModel):
    """The answer to a POST of frames, sent after their durable commit.

    ``nstep`` is the frame count right after this request's frames. A
    producer's retry of a committed batch answers as the first time with
    ``duplicate`` true (``first``/``count`` null when that answer is no longer kept).
    """

    nstep: int
    first: int | None
    count: int | None
    duplicate: bool


PRODUCER_HEADERS = ("Producer-Id", "Producer-Epoch", "Producer-Seq")
_COUNTER_DIGITS = 16  # 2**53 has 16 digits


def _producer(values: tuple[str | None, str | None, str | None]) -> api.Producer | None:
    """The producer claim of ``Producer-Id/-Epoch/-Seq`` (all or none), else 422 naming one."""
    if all(v is None for v in values):
        return None
    for header, value in zip(PRODUCER_HEADERS, values, strict=True):
        if value is None:
            raise InvalidRecord(
                f"{header} is missing: Producer-Id, Producer-Epoch and Producer-Seq go together",
                path=header,
            )
    producer_id, epoch, seq = (v.strip() for v in values if v is not None)
    counters = []
    for header, text in zip(PRODUCER_HEADERS[1:], (epoch, seq), strict=True):
        if not text.isascii() or not text.isdigit() or len(text) > _COUNTER_DIGITS:
            raise InvalidRecord(f"{header} must be an integer in [0, 2**53)", path=header)
        counters.append(int(text))
    try:
        return api.Producer(producer_id, counters[0], counters[1])
    except InvalidRecord as exc:
        names = {"id": "Producer-Id", "epoch": "Producer-Epoch", "seq": "Producer-Seq"}
        raise InvalidRecord(exc.message, path=names.get(exc.path or "", "Producer-Id")) from None


AtNstep = Annotated[
    int | None, Query(ge=0, description="read the state of this committed nstep (412 if beyond)")
]


def _at(current: int, nstep: int | None) -> int:
    """The nstep a read is made at: ``nstep`` when given and committed, else the current one."""
    if nstep is None:
        return current
    if nstep > current:
        raise PreconditionFailed(
            f"nstep {nstep} is not committed; the trajectory holds {current} frames",
            path="nstep",
            nstep=current,
        )
    return nstep


def _names(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [n for v in values for n in v.split(",") if n]


def _expected(if_match: str | None) -> int | None:
    """``If-Match: "<nstep>"`` as the expected nstep of a conditional append."""
    if if_match is None:
        return None
    text = if_match.strip().removeprefix("W/").strip('"')
    if not text.isdigit():
        raise InvalidRecord(
            f'If-Match must be a quoted nstep ("12"), not {if_match!r}', path="If-Match"
        )
    return int(text)


async def _body(request: Request, settings: Settings) -> bytes:
    """The request body, refused with 413 past ``max_body_bytes`` (before reading it all)."""
    limit = settings.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(f"the body declares {declared} bytes, above the limit of {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(f"the body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(detail: str) -> HTTPProblem:
    return HTTPProblem(413, "content-too-large", "Content too large", detail)


def _check_limits(frames: list[Frame], settings: Settings) -> None:
    if len(frames) > settings.max_frames_per_request:
        raise _too_large(
            f"{len(frames)} frames in one request, above the limit of"
            f" {settings.max_frames_per_request}"
        )
    for i, frame in enumerate(frames):
        for name, block in frame.items():
            if block.count > settings.max_atoms_per_frame:
                raise InvalidRecord(
                    f"{block.count} rows, above the limit of {settings.max_atoms_per_frame}",
                    path=f"frames/{i}/{name}",
                )


@router.get(
    "/records/{name}/trajectory",
    responses={
        200: json_example({"nstep": 2, "declaration": DECLARATION}),
        **problem_responses(404),
    },
)
async def trajectory_summary(name: str, runs: RunsDep, _: Read, response: Response) -> Any:
    """``nstep`` and the declaration (``sequence_schema``) of the trajectory."""
    traj = await runs.trajectory(name)

    def summary() -> dict[str, Any]:
        declaration = traj.declaration
        return {
            "nstep": len(traj),
            "declaration": None if declaration is None else declaration.to_dict(),
        }

    out = await blocking(summary)
    response.headers[NSTEP] = str(out["nstep"])
    return out


@router.post(
    "/records/{name}/trajectory/frames",
    responses={
        200: json_example(APPENDED),
        **problem_responses(400, 404, 405, 409, 412, 413, 415),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {media.FRAME: {}, media.FRAMES: {}, media.JSON: {}},
        }
    },
)
async def append_frames(
    name: str,
    request: Request,
    runs: RunsDep,
    settings: SettingsDep,
    _: Append,
    content_type: Annotated[str | None, Header()] = None,
    if_match: Annotated[str | None, Header()] = None,
    producer_id: Annotated[str | None, Header(alias="Producer-Id")] = None,
    producer_epoch: Annotated[str | None, Header(alias="Producer-Epoch")] = None,
    producer_seq: Annotated[str | None, Header(alias="Producer-Seq")] = None,
    create: Annotated[
        bool, Query(description="Create the record (a name alone) if absent, then append")
    ] = False,
) -> Appended:
    """Append one frame, a frame stream or JSON frames; answer once they are durable.

    ``?create=true`` starts a run in one request: a missing record is created
    with its name alone (as ``PUT`` with an empty body; append scope
    suffices) and the frames are appended to it; an existing one is appended
    to as without it.

    Concurrent POSTs to one trajectory are committed together in arrival
    order (one durable flush). ``If-Match: "<nstep>"`` makes it conditional
    (412 with the current ``nstep`` otherwise); a repeated or decreasing step
    is 409; a frame the declaration refuses is 422. Nothing of a refused
    request lands. ``Producer-Id``, ``Producer-Epoch`` and ``Producer-Seq``
    (all or none) make it an idempotent producer's batch: a retry answers as
    the first time, a stale epoch is fenced, a gap waits for the missing
    batches and is refused if they do not come.
    """
    expected = _expected(if_match)
    producer = _producer((producer_id, producer_epoch, producer_seq))
    body = await _body(request, settings)
    frames = await blocking(lambda: media.decode_body(body, content_type))
    _check_limits(frames, settings)
    if create:
        api.check_record_name(name)
        await runs.create(name, True)
    answer = await runs.append(
        name, frames, expected_nstep=expected, producer=producer, settings=settings
    )
    return Appended(**answer.to_dict())


def _etag(incarnation: str, i: int, media_type: str, blocks: Any, columns: Any) -> str:
    """A strong ETag of frame ``i``: the record's incarnation, ``i`` and the representation."""
    digest = hashlib.sha256(
        json.dumps([incarnation, media_type, blocks, columns]).encode()
    ).hexdigest()[:20]
    return f'"{i}.{digest}"'


@router.get(
    "/records/{name}/trajectory/frames/{i}",
    responses={
        200: {
            "description": "The frame, MRF1 or JSON by Accept",
            **json_example(FRAME_JSON, media.FRAME),
        },
        304: {"description": "If-None-Match names the frame's ETag"},
        **problem_responses(404, 406),
    },
)
async def read_frame(
    name: str,
    i: int,
    runs: RunsDep,
    _: Read,
    blocks: Names = None,
    columns: Names = None,
    accept: Annotated[str | None, Header()] = None,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    """Resolved frame ``i`` (negative counts from the end), projected to ``blocks``/``columns``.

    A committed frame never changes: the response carries a strong ETag
    (never matched by a re-created record) and is cacheable for a year.
    """
    media_type = media.negotiate(accept, [media.FRAME, media.JSON])
    traj = await runs.trajectory(name, refreshed=False)
    wanted = _Projection(media_type, _names(blocks), _names(columns))
    refresh = traj.refresh if runs.follows(name) else None
    # one hop to a worker thread for the whole read: each hop costs as much as a small read
    status, body, headers = await blocking(
        partial(_frame_answer, runs.catalog, name, traj, i, wanted, if_none_match, refresh)
    )
    return Response(body, status_code=status, media_type=media_type, headers=headers)


class _Projection(NamedTuple):
    """What a frame request asks for: the representation and the projection."""

    media_type: str
    blocks: list[str] | None
    columns: list[str] | None


def _frame_answer(
    catalog: api.Catalog,
    name: str,
    traj: api.Trajectory,
    i: int,
    wanted: _Projection,
    if_none_match: str | None,
    refresh: Callable[[], object] | None,
) -> tuple[int, bytes, dict[str, str]]:
    """Status, body and headers of frame ``i`` (blocking: stats the root, reads, encodes)."""
    if refresh is not None:
        refresh()  # another process writes this record: follow its last commit
    nstep = len(traj)
    j = i + nstep if i < 0 else i
    if not 0 <= j < nstep:
        raise RecordOutOfRange(f"frame {i} is outside the {nstep} frames", path=f"frames/{i}")
    headers = {NSTEP: str(nstep)}
    info = catalog.key_info(name, "zarr.json")
    if info is not None:
        headers["ETag"] = _etag(info.etag, j, wanted.media_type, wanted.blocks, wanted.columns)
        headers["Cache-Control"] = _IMMUTABLE
        if if_none_match is not None and headers["ETag"] in _tags(if_none_match):
            return 304, b"", headers
    frame = traj.read(j, blocks=wanted.blocks, columns=wanted.columns)
    return 200, media.encode_one(frame, wanted.media_type), headers


def _tags(header: str) -> list[str]:
    return [t.strip() for t in header.split(",")]


async def _stream(traj: api.Trajectory, ordinals: range, media_type: str) -> AsyncIterator[bytes]:
    """Encoded frames of ``ordinals``, one read at a time (bounded memory)."""
    if media_type == media.JSON:
        yield b"["
    for n, j in enumerate(ordinals):
        item = await blocking(partial(_stream_item, traj, j, media_type))
        yield (b"," if n and media_type == media.JSON else b"") + item
    if media_type == media.JSON:
        yield b"]"


def _stream_item(traj: api.Trajectory, j: int, media_type: str) -> bytes:
    frame = traj.read(j)
    if media_type == media.JSON:
        return media.encode_one(frame, media.JSON)
    return media.encode_stream_item(frame, media_type)


@router.get(
    "/records/{name}/trajectory/frames",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The frames, streamed, by Accept",
            **json_example([FRAME_JSON], media.FRAMES, media.NDJSON),
        },
        **problem_responses(404, 406, 412, 422),
    },
)
async def read_frames(
    name: str,
    runs: RunsDep,
    _: Read,
    start: int | None = None,
    stop: int | None = None,
    step: Annotated[int | None, Query(description="stride; not 0")] = None,
    nstep: AtNstep = None,
    accept: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """Frames ``[start:stop:step]`` (Python slice rules) at the current nstep, streamed.

    ``application/x-mrec-frames`` (length-prefixed MRF1), ``application/x-ndjson``
    (one JSON frame per line) or ``application/json`` (a JSON array).
    """
    if step == 0:
        raise InvalidRecord("step must not be 0", path="step")
    media_type = media.negotiate(accept, [media.FRAMES, media.NDJSON, media.JSON])
    traj = await runs.trajectory(name)
    at = _at(await blocking(traj.__len__), nstep)  # len waits while a group commits
    ordinals = range(*slice(start, stop, step).indices(at))
    return StreamingResponse(
        _stream(traj, ordinals, media_type),
        media_type=media_type,
        headers={NSTEP: str(at), "X-Mrecd-Count": str(len(ordinals))},
    )


@router.get(
    "/records/{name}/trajectory/steps",
    responses={
        200: json_example({"nstep": 3, "steps": [0, 10, 20]}),
        **problem_responses(404, 412),
    },
)
async def read_steps(
    name: str, runs: RunsDep, _: Read, response: Response, nstep: AtNstep = None
) -> dict[str, Any]:
    """Step numbers of every committed frame (of the first ``nstep`` when given)."""
    traj = await runs.trajectory(name)
    steps = await blocking(traj.steps)
    at = _at(len(steps), nstep)
    response.headers[NSTEP] = str(at)
    return {"nstep": at, "steps": array_json(steps[:at])}


@router.get(
    "/records/{name}/trajectory/times",
    responses={
        200: json_example({"nstep": 3, "times": [0.0, 5.0, 10.0]}),
        **problem_responses(404, 412),
    },
)
async def read_times(
    name: str, runs: RunsDep, _: Read, response: Response, nstep: AtNstep = None
) -> dict[str, Any]:
    """Times of every committed frame (``null`` in a run without times)."""
    traj = await runs.trajectory(name)
    current, times = await blocking(lambda: (len(traj), traj.times()))
    at = _at(current, nstep)
    response.headers[NSTEP] = str(at)
    return {"nstep": at, "times": None if times is None else array_json(times[:at])}


@router.get(
    "/records/{name}/trajectory/series/{key}",
    responses={
        200: json_example(
            {
                "nstep": 2,
                "key": "pe",
                "start": 0,
                "stop": 2,
                "steps": [0, 10],
                "times": [0.0, 5.0],
                "values": [0.0, -10.0],
            }
        ),
        **problem_responses(404, 412),
    },
)
async def read_series(
    name: str,
    key: str,
    runs: RunsDep,
    _: Read,
    response: Response,
    start: Annotated[int, Query(ge=0)] = 0,
    stop: Annotated[int | None, Query(ge=0)] = None,
    nstep: AtNstep = None,
) -> dict[str, Any]:
    """Per-step meta ``key`` over frames ``[start, stop)``, with their steps and times."""
    traj = await runs.trajectory(name)

    def read() -> dict[str, Any]:
        at = _at(len(traj), nstep)
        end = at if stop is None else min(stop, at)
        values = traj.series(key, start, end)
        times = traj.times()
        return {
            "nstep": at,
            "key": key,
            "start": start,
            "stop": end,
            "steps": array_json(traj.steps()[start:end]),
            "times": None if times is None else array_json(times[start:end]),
            "values": array_json(values),
        }

    out = await blocking(read)
    response.headers[NSTEP] = str(out["nstep"])
    return out


def _last_event(header: str | None) -> int | None:
    if header is None:
        return None
    if not header.strip().isdigit():
        raise InvalidRecord("Last-Event-ID must be an nstep", path="Last-Event-ID")
    return int(header.strip())


async def _events(
    request: Request, traj: api.Trajectory, seen: int | None, poll: float
) -> AsyncIterator[bytes]:
    """One ``commit`` event per new nstep; polls ``refresh()`` on a worker thread."""
    yield f"retry: {max(1, int(poll * 1000))}\n\n".encode()
    if seen is None:
        seen = await blocking(traj.refresh)
    idle = 0.0
    while not await request.is_disconnected():
        try:
            nstep = await blocking(traj.refresh)
        except MrecdError:  # the record went away (deleted) or its store failed: end the stream
            return
        if nstep != seen:
            data = json.dumps({"nstep": nstep, "previous": seen})
            yield f"event: commit\nid: {nstep}\ndata: {data}\n\n".encode()
            seen, idle = nstep, 0.0
        elif idle >= 15.0:
            yield b": keep-alive\n\n"
            idle = 0.0
        await asyncio.sleep(poll)
        idle += poll


@router.get(
    "/records/{name}/trajectory/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "One event per commit: event commit, id nstep, data {nstep, previous}",
            "content": {"text/event-stream": {"schema": {"type": "string"}, "example": EVENTS}},
        },
        **problem_responses(404),
    },
)
async def trajectory_events(
    name: str,
    request: Request,
    runs: RunsDep,
    settings: SettingsDep,
    _: Read,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """Server-sent events: ``event: commit``, ``id: <nstep>``, data ``{nstep, previous}``.

    ``Last-Event-ID: <nstep>`` resumes: a commit past it is announced at once.
    Without it the stream starts at the current nstep.
    """
    seen = _last_event(last_event_id)
    traj = await runs.trajectory(name)
    return StreamingResponse(
        _events(request, traj, seen, settings.events_poll_seconds),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
