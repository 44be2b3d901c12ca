"""Records: list, create, summarize, read a section, delete, and raw Zarr keys (read-only)."""

from __future__ import annotations

import contextlib
import math
import os
import time
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ... import api
from ...errors import NotFound
from ...forcefield import ForceField
from ...model import Declaration, Frame
from .. import media
from .._examples import BINARY, SUMMARY, binary, json_example
from .._packs import Packs
from ..deps import Admin, Append, Read, RunsDep, SettingsDep, check_scope
from ..problems import HTTPProblem, problem_responses
from ._common import blocking

__all__ = ["router"]

router = APIRouter(tags=["records"])

ZIP = "application/zip"


def _packs(request: Request) -> Packs:
    packs: Packs = request.app.state.packs
    return packs


PacksDep = Annotated[Packs, Depends(_packs)]

#: ``forcefield`` has its own routes (routes/forcefield.py): ETag, MRF1, lookups
Section = Literal["meta", "system", "frame", "status", "method"]


class RecordBody(BaseModel):
    """The body of ``PUT /v1/records/{name}``: every member optional (a name alone starts a run)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"meta": {"temperature_K": 300}}, {}]},
    )

    meta: dict[str, Any] | None = None
    system: dict[str, Any] | None = Field(default=None, description="a frame, JSON form")
    frame: dict[str, Any] | None = Field(default=None, description="a frame, JSON form")
    declaration: dict[str, Any] | None = Field(default=None, description="sequence_schema")
    forcefield: dict[str, Any] | None = None
    status: dict[str, Any] | None = None
    method: dict[str, Any] | None = None


class RecordList(BaseModel):
    """A page of record names; ``next`` is the cursor of the following page (``None``: last)."""

    records: list[str]
    next: str | None


class Created(BaseModel):
    """The answer to a create: the name and whether it was created now."""

    name: str
    created: bool


def _content(body: RecordBody) -> dict[str, Any]:
    """Keyword arguments of ``create_record`` from the JSON body (blocking: decodes arrays)."""
    out: dict[str, Any] = {"meta": body.meta, "status": body.status, "method": body.method}
    if body.system is not None:
        out["system"] = Frame.from_dict(body.system, path="system")
    if body.frame is not None:
        out["frame"] = Frame.from_dict(body.frame, path="frame")
    if body.declaration is not None:
        out["declaration"] = Declaration.from_dict(body.declaration)
    if body.forcefield is not None:
        out["forcefield"] = ForceField.from_dict(body.forcefield)
    return out


@router.get(
    "/records",
    responses={200: json_example({"records": ["run-1", "run-2"], "next": "run-2"})},
)
async def list_records(
    request: Request,
    runs: RunsDep,
    settings: SettingsDep,
    prefix: str = "",
    limit: Annotated[int | None, Query(gt=0)] = None,
    cursor: str | None = None,
) -> RecordList:
    """Record names starting with ``prefix``, sorted, ``limit`` per page after ``cursor``."""
    check_scope(settings, request, "read", prefix)
    size = min(limit or settings.page_limit, settings.page_limit)
    names = await blocking(lambda: runs.catalog.records(prefix or None))
    after = [n for n in names if cursor is None or n > cursor]
    page = after[:size]
    return RecordList(records=page, next=page[-1] if len(after) > size else None)


@router.put(
    "/records/{name}",
    status_code=201,
    responses={
        201: json_example({"name": "run-1", "created": True}),
        200: {
            "description": "It existed and exist_ok=true",
            "model": Created,
            **json_example({"name": "run-1", "created": False}),
        },
        **problem_responses(400, 409),
    },
)
async def create_record(
    name: str,
    body: RecordBody,
    response: Response,
    runs: RunsDep,
    _: Append,
    exist_ok: bool = False,
) -> Created:
    """Create record ``name``; 409 when it exists (200 with ``exist_ok=true``)."""
    api.check_record_name(name)
    content = await blocking(lambda: _content(body))
    created, _name = await runs.create(name, exist_ok, **content)
    response.status_code = 201 if created else 200
    return Created(name=name, created=created)


_ZIP_EXAMPLE = "PK\u0003\u0004 ... (a stored, uncompressed zip of the record's Zarr keys)"


@router.head("/records/{name}.mrec.zip", include_in_schema=False)
@router.get(
    "/records/{name}.mrec.zip",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The packed record (chunking.md §7), streamed",
            "content": {ZIP: {**BINARY, "example": _ZIP_EXAMPLE}},
            "headers": {"ETag": {"description": "strong; changes with every commit"}},
        },
        206: binary(ZIP, description="The bytes of the one range asked for (Content-Range)"),
        304: {"description": "If-None-Match names the current ETag"},
        **problem_responses(404, 416),
    },
)
async def download_record(
    name: str,
    request: Request,
    packs: PacksDep,
    _: Read,
    wanted: Annotated[
        str | None, Header(alias="Range", description="bytes=<a>-<b>, <a>- or -<n>")
    ] = None,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    """Record ``name`` as one ``.mrec.zip``, streamed; ``Range`` gives 206 (one range).

    A live record is packed at its current commit (the ETag names that state;
    a later Range request with the same ETag reads the same bytes). Open the
    file with ``mrecd.open_record("name.mrec.zip")``. This route wins over
    ``GET /v1/records/{name}`` for a name ending in ``.mrec.zip``.
    """
    packed = await packs.packed(name)
    headers = {
        "ETag": packed.etag,
        "Accept-Ranges": "bytes",
        "Cache-Control": "no-cache",
        "Content-Disposition": f'attachment; filename="{name}.mrec.zip"',
    }
    if if_none_match is not None and packed.etag in _tags(if_none_match):
        return Response(status_code=304, headers=headers)
    byte_range = None if wanted is None else _byte_range(wanted, packed.size)
    start, stop = (0, packed.size) if byte_range is None else _span(byte_range, packed.size)
    headers["Content-Length"] = str(stop - start)
    status = 200
    if byte_range is not None:
        status = 206
        headers["Content-Range"] = f"bytes {start}-{stop - 1}/{packed.size}"
    if request.method == "HEAD":
        return Response(status_code=status, headers=headers, media_type=ZIP)
    body = packs.chunks(packed, start, stop)
    return StreamingResponse(body, status_code=status, headers=headers, media_type=ZIP)


def _tags(header: str) -> list[str]:
    return [t.strip() for t in header.split(",")]


@router.get("/records/{name}", responses={200: json_example(SUMMARY), **problem_responses(404)})
async def record_summary(
    name: str, runs: RunsDep, settings: SettingsDep, _: Read
) -> dict[str, Any]:
    """Sections present, ``nstep``, the trajectory declaration and progress of record ``name``.

    ``last_step`` and ``last_time`` are those of the last committed frame;
    on a file system store, ``size`` is the record's bytes on disk,
    ``updated`` its last write and ``live`` whether that is younger than the
    server's ``live_seconds`` (``null`` on object storage, where they would
    cost a listing).
    """
    record = await runs.record(name)

    def summary() -> dict[str, Any]:
        traj = record.trajectory if record.exists else None
        declaration = None if traj is None else traj.declaration
        nstep = 0 if traj is None else traj.refresh() if record.read_only else len(traj)
        return {
            "name": name,
            "sections": record.sections if record.exists else [],
            "nstep": nstep,
            "declaration": None if declaration is None else declaration.to_dict(),
            "read_only": record.read_only,
            **_last_frame(traj, nstep),
            **_on_disk(record.local_path, settings.live_seconds),
        }

    return await blocking(summary)


def _last_frame(traj: api.Trajectory | None, nstep: int) -> dict[str, Any]:
    """``last_step`` and ``last_time`` of the last committed frame (``None`` before the first)."""
    if traj is None or nstep == 0:
        return {"last_step": None, "last_time": None}
    times = traj.times()
    last_time = None if times is None else float(times[nstep - 1])
    return {
        "last_step": int(traj.steps()[nstep - 1]),
        "last_time": last_time if last_time is None or math.isfinite(last_time) else None,
    }


def _on_disk(path: str | None, live_seconds: float) -> dict[str, Any]:
    """``size`` (bytes), ``updated`` (last write, ISO 8601 UTC) and ``live`` of a local record.

    All three are ``None`` off the file system, where they would cost a listing.
    """
    if path is None or not os.path.exists(path):
        return {"size": None, "updated": None, "live": None}
    if os.path.isfile(path):  # a packed record: closed for good
        stat = os.stat(path)
        return {"size": stat.st_size, "updated": _iso(stat.st_mtime), "live": False}
    size, updated = 0, 0.0
    for root, _, files in os.walk(path):
        for file in files:
            with contextlib.suppress(FileNotFoundError):  # a commit renamed it meanwhile
                stat = os.stat(os.path.join(root, file))
                size += stat.st_size
                updated = max(updated, stat.st_mtime)
    live = time.time() - updated < live_seconds
    return {"size": size, "updated": _iso(updated) if updated else None, "live": live}


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


@router.delete(
    "/records/{name}",
    status_code=204,
    response_class=Response,
    responses={204: {"description": "Deleted"}, **problem_responses(404)},
)
async def delete_record(name: str, runs: RunsDep, _: Admin) -> Response:
    """Delete record ``name`` (its live directory and packed zip)."""
    await runs.delete(name)
    return Response(status_code=204)


def _section(record: api.StoredRecord, section: Section) -> Frame | dict[str, Any]:
    value: Any = getattr(record, section) if record.exists or section == "meta" else None
    if value is None:
        raise NotFound(f"record {record.name!r} has no {section} section", path=section)
    if isinstance(value, Frame):
        return value
    return dict(value)


@router.get(
    "/records/{name}/{section}",
    responses={
        200: {
            "description": "A JSON document, or a frame as MRF1 or JSON by Accept",
            **json_example({"temperature_K": 300, "molrec_version": 2}, media.FRAME),
        },
        **problem_responses(404, 406),
    },
)
async def read_section(
    name: str,
    section: Section,
    runs: RunsDep,
    _: Read,
    accept: Annotated[str | None, Header()] = None,
) -> Response:
    """One section: ``meta``, ``system``, ``frame``, ``status`` or ``method``.

    Frame-shaped sections (``system``, ``frame``) are served as MRF1 or JSON by ``Accept``.
    """
    record = await runs.record(name)
    value = await blocking(lambda: _section(record, section))
    if not isinstance(value, Frame):
        return JSONResponse(value)
    media_type = media.negotiate(accept, [media.JSON, media.FRAME])
    body = await blocking(lambda: media.encode_one(value, media_type))
    return Response(body, media_type=media_type)


def _byte_range(header: str, size: int) -> api.ByteRequest | None:
    """The single range a ``Range`` header asks for (``None``: serve the whole object)."""
    unit, _, spec = header.partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first, sep, last = spec.strip().partition("-")
    try:
        if not sep:
            return None
        if not first:
            return api.Suffix(int(last)) if int(last) > 0 else _unsatisfiable(size)
        start = int(first)
        if start < 0 or start >= size:
            return _unsatisfiable(size)
        if not last:
            return api.Offset(start)
        end = int(last)
    except ValueError:
        return None
    return api.ByteRange(start, min(end, size - 1) + 1) if end >= start else None


def _unsatisfiable(size: int) -> api.ByteRequest:
    raise HTTPProblem(
        416,
        "range-not-satisfiable",
        "Range not satisfiable",
        f"the requested range lies outside the object's {size} bytes",
        headers={"Content-Range": f"bytes */{size}"},
    )


def _span(request: api.ByteRequest, size: int) -> tuple[int, int]:
    """Bytes ``[start, stop)`` of an object of ``size`` bytes that ``request`` asks for."""
    if isinstance(request, api.ByteRange):
        return request.start, min(request.end, size)
    if isinstance(request, api.Offset):
        return request.offset, size
    return max(0, size - request.length), size


@router.head("/records/{name}/zarr/{key:path}", include_in_schema=False)
@router.get(
    "/records/{name}/zarr/{key:path}",
    response_class=Response,
    responses={
        200: {
            "description": "The key's bytes: zarr.json documents as JSON, chunks as bytes",
            **json_example({"zarr_format": 3, "node_type": "group"}, "application/octet-stream"),
        },
        206: binary("application/octet-stream", description="The one range asked for"),
        304: {"description": "If-None-Match names the key's ETag"},
        **problem_responses(404, 416),
    },
)
async def read_zarr_key(
    name: str,
    key: str,
    request: Request,
    runs: RunsDep,
    _: Read,
) -> Response:
    """Raw Zarr key ``key`` of record ``name``, read-only; ``Range`` gives 206 (one range)."""
    info = await blocking(lambda: runs.catalog.key_info(name, key))
    if info is None:
        raise NotFound(f"record {name!r} has no key {key!r}", path=key)
    headers = {"ETag": info.etag, "Accept-Ranges": "bytes", "Cache-Control": "no-cache"}
    if request.headers.get("if-none-match") == info.etag:
        return Response(status_code=304, headers=headers)
    kind = "application/json" if key.endswith("zarr.json") else "application/octet-stream"
    wanted = request.headers.get("range")
    byte_range = None if wanted is None else _byte_range(wanted, info.size)
    if request.method == "HEAD":
        return Response(headers={**headers, "Content-Length": str(info.size)}, media_type=kind)
    data = await blocking(lambda: runs.catalog.read_key(name, key, byte_range))
    if data is None:
        raise NotFound(f"record {name!r} has no key {key!r}", path=key)
    if byte_range is None:
        return Response(data, media_type=kind, headers=headers)
    start, _stop = _span(byte_range, info.size)
    headers["Content-Range"] = f"bytes {start}-{start + len(data) - 1}/{info.size}"
    return Response(data, status_code=206, media_type=kind, headers=headers)
