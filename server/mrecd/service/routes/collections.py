"""Collections: create, append records, summary, the index, record r, frame i, batch reads.

A collection is one LMDB file of many small records (collection.md,
lmdb.md), read at random by training loaders. Records travel as
``application/x-mrec-records`` (a JSON header then MRF1 frames per record,
:mod:`mrecd.codecs`) or as JSON. Records are append-only: a committed record
never changes, so record and frame responses carry a strong ETag (a digest of
the bytes served) and are cacheable; every response names the number of
records it was read at (``X-Mrecd-Records``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Sequence
from functools import partial
from typing import Annotated, Any, Final, cast

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ... import api
from ..._record import Record
from ...codecs import (
    RECORDS,
    decode_records,
    encode_record,
    stored_record_parts,
)
from ...errors import InvalidRecord, PreconditionFailed, RecordOutOfRange
from ...model import Block, Frame
from .. import media
from .._collections import Collections
from .._examples import DECLARATION, FRAME_JSON, json_example
from ..deps import Append, Read, SettingsDep, check_scope
from ..problems import HTTPProblem, problem_responses
from ..settings import Settings
from ._arrow import ARROW, arrow_available, arrow_stream
from ._common import blocking
from .trajectory import _body, _names

__all__ = ["router"]

router = APIRouter(tags=["collections"])

RECORDS_HEADER: Final = "X-Mrecd-Records"
_IMMUTABLE: Final = "public, max-age=31536000, immutable"
#: records read per worker-thread hop of a streamed batch (bounds the memory of one response)
_GROUP: Final = 32
#: most ordinals one batch read may name (a query string of 4096 ordinals stays under 40 kB)
MAX_BATCH: Final = 4096

_UNITS: Final[dict[str, Any]] = {"length": "angstrom", "energy": "kcal/mol"}
_RECORD_JSON: Final = {
    "r": 0,
    "meta": {"smiles": "O"},
    "system": None,
    "trajectory": [FRAME_JSON],
}


def _collections(request: Request) -> Collections:
    collections: Collections = request.app.state.collections
    return collections


class CollectionBody(BaseModel):
    """The body of ``PUT /v1/collections/{name}``."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "meta": {"units": _UNITS},
                    "declaration": DECLARATION,
                    "index_columns": {"n_heavy": {"dtype": "i64"}},
                }
            ]
        },
    )

    meta: dict[str, Any] = Field(description="the collection document; units is required")
    declaration: dict[str, Any] | None = Field(
        default=None, description="sequence_schema (null: pinned by the first records)"
    )
    index_columns: dict[str, dict[str, Any]] | None = Field(
        default=None, description="own index columns {name: {dtype, trailing, precision, nullable}}"
    )
    forcefield: dict[str, Any] | None = Field(default=None, description="force-field document")


class CollectionCreated(BaseModel):
    """The answer to a create."""

    name: str
    created: bool


class RecordsAppended(BaseModel):
    """The answer to a POST of records, sent after their commit (one transaction)."""

    first: int = Field(description="ordinal of the first record appended")
    count: int = Field(description="records appended")
    n_records: int = Field(description="records in the collection after this commit")


def _index_columns(raw: dict[str, dict[str, Any]] | None) -> dict[str, dict[str, Any]] | None:
    """The own index columns of a create: ``derive`` is a Python callable and cannot travel."""
    for name, entry in (raw or {}).items():
        if "derive" in entry:
            raise InvalidRecord(
                "derive is a Python callable and cannot travel over HTTP; send each record's"
                " index values with it instead",
                path=f"index_columns.{name}.derive",
            )
    return raw


@router.get(
    "/collections",
    responses={200: json_example({"collections": ["qm-set"]})},
)
async def list_collections(
    request: Request, settings: SettingsDep, prefix: str = ""
) -> dict[str, list[str]]:
    """Collection names starting with ``prefix``, sorted."""
    check_scope(settings, request, "read", prefix)
    collections = _collections(request)
    names = await blocking(lambda: collections.catalog.collections(prefix or None))
    return {"collections": names}


@router.put(
    "/collections/{name:path}",  # so that a name with "/" reaches the name check (422), not 404
    status_code=201,
    responses={
        201: json_example({"name": "qm-set", "created": True}),
        **problem_responses(409),
    },
)
async def create_collection(
    name: str, body: CollectionBody, request: Request, _: Append
) -> CollectionCreated:
    """Create collection ``name`` (meta with ``units``, declaration, index columns, force field).

    409 when it exists. Everything is checked before the file is made, so a
    refused create (422 naming the field) leaves nothing behind.
    """
    api.check_record_name(name)
    await _collections(request).create(
        name,
        meta=body.meta,
        declaration=body.declaration,
        index_columns=_index_columns(body.index_columns),
        forcefield=body.forcefield,
    )
    return CollectionCreated(name=name, created=True)


def _summary(name: str, collection: api.Collection) -> dict[str, Any]:
    declaration = collection.declaration
    return {
        "name": name,
        "n_records": len(collection),
        "n_frames": collection.n_frames,
        "meta": collection.meta,
        "declaration": None if declaration is None else declaration.to_dict(),
        "index_columns": collection.index_columns,
        "forcefield": collection.forcefield is not None,
        "read_only": collection.mode == "r",
    }


@router.get(
    "/collections/{name}",
    responses={
        200: json_example(
            {
                "name": "qm-set",
                "n_records": 2,
                "n_frames": 3,
                "meta": {"units": _UNITS, "molrec_version": 2},
                "declaration": DECLARATION,
                "index_columns": {"n_heavy": {"dtype": "i64", "trailing": []}},
                "forcefield": False,
                "read_only": False,
            }
        ),
        **problem_responses(404),
    },
)
async def collection_summary(
    name: str, request: Request, response: Response, _: Read
) -> dict[str, Any]:
    """Records and frames held, the collection document, declaration and index columns."""
    collection = await _collections(request).get(name)
    out = await blocking(lambda: _summary(name, collection))
    response.headers[RECORDS_HEADER] = str(out["n_records"])
    return out


# -- appending ---------------------------------------------------------------------------------


def _json_records(body: bytes) -> tuple[list[dict[str, Any]], list[Any]]:
    try:
        data: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRecord(f"the body is not JSON ({exc})", path="body") from None
    items = data if isinstance(data, list) else [data]
    records, rows = [], []
    for k, item in enumerate(items):
        where = f"records[{k}]"
        if not isinstance(item, dict):
            raise InvalidRecord("a record is a JSON object", path=where)
        item = dict(item)
        rows.append(item.pop("index", None))
        for key in ("system",):
            if item.get(key) is not None:
                item[key] = Frame.from_dict(item[key], path=f"{where}.{key}")
        trajectory = item.get("trajectory")
        if isinstance(trajectory, list):
            item["trajectory"] = [
                Frame.from_dict(f, path=f"{where}.trajectory[{j}]")
                for j, f in enumerate(trajectory)
            ]
        records.append(item)
    return records, rows


def _stream_records(body: bytes) -> tuple[list[dict[str, Any]], list[Any]]:
    records, rows = [], []
    for item in decode_records(body):
        frames = None if item.frames is None else list(item.frames)
        records.append({"meta": item.meta, "system": item.system, "trajectory": frames})
        rows.append(item.extra.get("index"))
    return records, rows


def _decode_records(
    body: bytes, content_type: str | None
) -> tuple[list[dict[str, Any]], list[Any]]:
    """Records and their own index rows from a POST body, by ``Content-Type`` (blocking)."""
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind == RECORDS:
        return _stream_records(body)
    if kind == media.JSON:
        return _json_records(body)
    raise HTTPProblem(
        415,
        "unsupported-media-type",
        "Unsupported media type",
        f"Content-Type {content_type!r} carries no records; send {RECORDS} or {media.JSON}",
        extensions={"offered": [RECORDS, media.JSON]},
    )


def _sized(trajectory: Any) -> Sequence[Any]:
    """A trajectory's frames when it is a list (anything else is refused by the append)."""
    return trajectory if isinstance(trajectory, list) else ()


def _check_limits(records: list[dict[str, Any]], settings: Settings) -> None:
    frames = sum(len(_sized(r.get("trajectory"))) + 1 for r in records)
    if frames > settings.max_frames_per_request:
        raise HTTPProblem(
            413,
            "content-too-large",
            "Content too large",
            f"{len(records)} records of {frames} frames and systems in one request, above the"
            f" limit of {settings.max_frames_per_request}",
        )


@router.post(
    "/collections/{name}/records",
    responses={
        200: json_example({"first": 2, "count": 1, "n_records": 3}),
        **problem_responses(400, 404, 405, 413, 415),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                RECORDS: {"schema": {"type": "string", "format": "binary"}},
                media.JSON: {"example": [{**_RECORD_JSON, "index": {"n_heavy": 1}}]},
            },
        }
    },
)
async def append_records(
    name: str,
    request: Request,
    settings: SettingsDep,
    _: Append,
    content_type: Annotated[str | None, Header()] = None,
) -> RecordsAppended:
    """Append one or many records in one transaction: all land, or none (422 naming the field).

    The body is ``application/x-mrec-records`` (each record's header may carry
    its ``index`` values) or JSON: one record object or an array of them,
    ``{"meta", "system", "trajectory", "index"}`` with frames in their JSON form.
    """
    collection = await _collections(request).get(name)
    body = await _body(request, settings)
    records, rows = await blocking(lambda: _decode_records(body, content_type))
    _check_limits(records, settings)
    added = await blocking(lambda: collection.extend(records, index=rows))
    n_records = added.stop if len(added) else await blocking(collection.__len__)
    return RecordsAppended(first=added.start, count=len(added), n_records=n_records)


# -- reading -----------------------------------------------------------------------------------


def _etag(prefix: object, body: bytes) -> str:
    """A strong ETag: the ordinal and a digest of the exact bytes served."""
    return f'"{prefix}.{hashlib.blake2b(body, digest_size=12).hexdigest()}"'


def _tags(header: str | None) -> list[str]:
    return [] if header is None else [t.strip() for t in header.split(",")]


def _ordinal(r: int, n: int, what: str = "record") -> int:
    k = r + n if r < 0 else r
    if not 0 <= k < n:
        raise RecordOutOfRange(f"{what} {r} is out of range (there are {n})", path=f"{what}s/{r}")
    return k


def _frames(record: Record) -> list[Frame] | None:
    return None if record.trajectory is None else list(record.trajectory)


def _record_json(r: int, record: Record) -> dict[str, Any]:
    frames = _frames(record)
    return {
        "r": r,
        "meta": record.meta,
        "system": None if record.system is None else record.system.to_dict(),
        "trajectory": None if frames is None else [f.to_dict() for f in frames],
    }


def _encode_record(r: int, record: Record, media_type: str) -> bytes:
    """One record as ``media_type``: the record stream's bytes, or its JSON object."""
    if media_type == RECORDS:
        return encode_record(record.meta, record.system, _frames(record), {"r": r})
    return json.dumps(_record_json(r, record), separators=(",", ":"), allow_nan=False).encode()


def _one_record(
    collection: api.Collection, r: int, media_type: str, if_none_match: str | None
) -> tuple[int, bytes, dict[str, str]]:
    """Status, body and headers of record ``r`` (blocking: one read transaction)."""
    n = len(collection)
    k = _ordinal(r, n)
    body = _encode_record(k, collection.read_many([k])[0], media_type)
    headers = {RECORDS_HEADER: str(n), "ETag": _etag(k, body), "Cache-Control": _IMMUTABLE}
    if headers["ETag"] in _tags(if_none_match):
        return 304, b"", headers
    return 200, body, headers


_RECORD_CONTENT = json_example(_RECORD_JSON, RECORDS)


@router.get(
    "/collections/{name}/records/{r}",
    responses={
        200: {"description": "Record r: x-mrec-records or JSON by Accept", **_RECORD_CONTENT},
        304: {"description": "If-None-Match names the record's ETag"},
        **problem_responses(404, 406),
    },
)
async def read_record(
    name: str,
    r: int,
    request: Request,
    _: Read,
    accept: Annotated[str | None, Header()] = None,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    """Record ``r`` (negative counts from the end): meta, system and resolved trajectory frames.

    A committed record never changes: a strong ETag, cacheable for a year.
    """
    media_type = media.negotiate(accept, [RECORDS, media.JSON])
    collection = await _collections(request).get(name)
    status, body, headers = await blocking(
        partial(_one_record, collection, r, media_type, if_none_match)
    )
    return Response(body, status_code=status, media_type=media_type, headers=headers)


def _one_frame(
    collection: api.Collection,
    r: int,
    i: int,
    wanted: tuple[str, list[str] | None, list[str] | None],
    if_none_match: str | None,
) -> tuple[int, bytes, dict[str, str]]:
    """Status, body and headers of frame ``i`` of record ``r`` (blocking)."""
    media_type, blocks, columns = wanted
    n = len(collection)
    k = _ordinal(r, n)
    traj = cast(api.CollectionTrajectory | None, collection[k].trajectory)
    if traj is None:
        raise RecordOutOfRange(f"record {k} has no trajectory", path=f"records/{k}/frames/{i}")
    j = _ordinal(i, len(traj), "frame")
    frame = traj.read(j, blocks=blocks, columns=columns)
    body = media.encode_one(frame, media_type)
    headers = {
        RECORDS_HEADER: str(n),
        "ETag": _etag(f"{k}.{j}", body),
        "Cache-Control": _IMMUTABLE,
    }
    if headers["ETag"] in _tags(if_none_match):
        return 304, b"", headers
    return 200, body, headers


Names = Annotated[list[str] | None, Query(description="comma-separated or repeated names")]


@router.get(
    "/collections/{name}/records/{r}/frames/{i}",
    responses={
        200: {
            "description": "The resolved frame, MRF1 or JSON by Accept",
            **json_example(FRAME_JSON, media.FRAME),
        },
        304: {"description": "If-None-Match names the frame's ETag"},
        **problem_responses(404, 406),
    },
)
async def read_record_frame(
    name: str,
    r: int,
    i: int,
    request: Request,
    _: Read,
    blocks: Names = None,
    columns: Names = None,
    accept: Annotated[str | None, Header()] = None,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    """Resolved frame ``i`` of record ``r`` (negative counts from the end), projected."""
    media_type = media.negotiate(accept, [media.FRAME, media.JSON])
    collection = await _collections(request).get(name)
    wanted = (media_type, _names(blocks), _names(columns))
    status, body, headers = await blocking(
        partial(_one_frame, collection, r, i, wanted, if_none_match)
    )
    return Response(body, status_code=status, media_type=media_type, headers=headers)


# -- batch reads -------------------------------------------------------------------------------


def _wanted_ordinals(
    r: list[str] | None, start: int | None, stop: int | None, step: int | None
) -> tuple[list[int] | None, slice]:
    """The ordinals ``?r=`` names (``None``: a slice ``start:stop:step`` instead)."""
    if step == 0:
        raise InvalidRecord("step must not be 0", path="step")
    if r is None:
        return None, slice(start, stop, step)
    if start is not None or stop is not None or step is not None:
        raise InvalidRecord("give either r= or start/stop/step, not both", path="r")
    out = []
    for text in (t.strip() for v in r for t in v.split(",")):
        if not text:
            continue
        try:
            out.append(int(text))
        except ValueError:
            raise InvalidRecord(f"record ordinals are integers, not {text!r}", path="r") from None
    return out, slice(None)


def _resolve(
    collection: api.Collection, ordinals: list[int] | None, rows: slice
) -> tuple[int, list[int]]:
    """The committed record count and the ordinals resolved against it (one state)."""
    n = len(collection)
    if ordinals is None:
        return n, list(range(*rows.indices(n)))
    return n, [_ordinal(r, n) for r in ordinals]


def _resolve_first(
    collection: api.Collection, ordinals: list[int] | None, rows: slice, media_type: str
) -> tuple[int, list[int], bytes | Exception]:
    """:func:`_resolve`, and the first group encoded in the same worker-thread
    hop (one hand-off less per batch); an error of that encoding is returned,
    for the stream to raise where it raised it before (after the headers)."""
    n, chosen = _resolve(collection, ordinals, rows)
    if not chosen or len(chosen) > MAX_BATCH:
        return n, chosen, b""
    try:
        first = _encode_group(collection, chosen[:_GROUP], media_type, 0)
    except Exception as exc:  # raised by the stream, in its place
        return n, chosen, exc
    return n, chosen, first


async def _batch_stream(
    collection: api.Collection, ordinals: Sequence[int], media_type: str, first: bytes | Exception
) -> AsyncIterator[bytes]:
    """Encoded records, ``_GROUP`` per worker-thread hop (bounded memory), the
    first group as :func:`_resolve_first` encoded it."""
    if media_type == media.JSON:
        yield b"["
    if isinstance(first, Exception):
        raise first
    if ordinals:
        yield first
    for start in range(_GROUP, len(ordinals), _GROUP):
        group = ordinals[start : start + _GROUP]
        chunk = await blocking(partial(_encode_group, collection, group, media_type, start))
        yield chunk
    if media_type == media.JSON:
        yield b"]"


def _encode_stored(out: list[Any], parts: api.StoredParts) -> None:
    """Append one record of a batch to ``out``: its updates as stored when no
    block carries forward (no decode and re-encode), else its resolved frames
    stacked."""
    updates, extra = parts.updates, {"r": parts.r}
    if updates is not None:
        out += stored_record_parts(
            parts.meta,
            parts.system,
            updates.values,
            meta_types=updates.meta_types,
            boxes=updates.boxes,
            extra=extra,
        )
        return
    frames = None if parts.frames is None else list(parts.frames)
    out.append(encode_record(parts.meta, parts.system, frames, extra))


def _encode_group(
    collection: api.Collection, group: Sequence[int], media_type: str, offset: int
) -> bytes:
    if media_type == RECORDS:
        out: list[Any] = []  # joined once: each stored value is copied once
        for parts in api.read_stored(collection, group):
            _encode_stored(out, parts)
        return b"".join(out)
    pairs = zip(group, collection.read_many(group), strict=True)
    items = [_encode_record(r, rec, media.JSON) for r, rec in pairs]
    if media_type == media.NDJSON:
        return b"".join(item + b"\n" for item in items)
    return (b"," if offset else b"") + b",".join(items)


@router.get(
    "/collections/{name}/records",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The records, streamed, by Accept",
            **json_example([_RECORD_JSON], RECORDS, media.NDJSON),
        },
        **problem_responses(404, 406, 413, 422),
    },
)
async def read_records(
    name: str,
    request: Request,
    _: Read,
    r: Annotated[
        list[str] | None, Query(description="ordinals, comma-separated or repeated: r=3,9,27")
    ] = None,
    start: int | None = None,
    stop: int | None = None,
    step: Annotated[int | None, Query(description="stride; not 0")] = None,
    accept: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """Many records in one request, streamed: ``?r=3,9,27`` (in that order) or a slice.

    The batch read of a training loader: ``r=`` names up to 4096 ordinals
    (negative count from the end, repeats allowed), or ``start``/``stop``/``step``
    take a slice (Python rules). Every ordinal is checked before the first
    byte is sent (404 naming it). ``application/x-mrec-records`` (default),
    ``application/x-ndjson`` or ``application/json`` (an array).
    """
    ordinals, rows = _wanted_ordinals(r, start, stop, step)
    media_type = media.negotiate(accept, [RECORDS, media.NDJSON, media.JSON])
    collection = await _collections(request).get(name)
    n, chosen, first = await blocking(
        lambda: _resolve_first(collection, ordinals, rows, media_type)
    )
    if len(chosen) > MAX_BATCH:
        raise HTTPProblem(
            413,
            "content-too-large",
            "Content too large",
            f"{len(chosen)} records in one batch read, above the limit of {MAX_BATCH}",
        )
    return StreamingResponse(
        _batch_stream(collection, chosen, media_type, first),
        media_type=media_type,
        headers={RECORDS_HEADER: str(n), "X-Mrecd-Count": str(len(chosen))},
    )


# -- the index ---------------------------------------------------------------------------------


def _index_at(collection: api.Collection, records: int | None) -> Block:
    block = collection.index
    if records is None:
        return block
    if records > block.count:
        raise PreconditionFailed(
            f"records={records} is not committed; the collection holds {block.count}",
            path="records",
        )
    return block.rows(0, records)


def _index_body(block: Block, media_type: str) -> bytes:
    if media_type == ARROW:
        return arrow_stream(block)
    if media_type == media.FRAME:
        return media.encode_one(Frame({"records": block}), media.FRAME)
    return json.dumps(block.to_dict(), separators=(",", ":"), allow_nan=False).encode()


@router.get(
    "/collections/{name}/index",
    responses={
        200: {
            "description": "The index block records: JSON, MRF1 or Arrow IPC stream by Accept",
            **json_example(
                {
                    "count": 1,
                    "columns": {
                        "first_frame": {"dtype": "u64", "shape": [1], "values": [0]},
                        "n_frames": {"dtype": "u64", "shape": [1], "values": [2]},
                        "n_atoms": {"dtype": "u64", "shape": [1], "values": [3]},
                        "has_trajectory": {"dtype": "bool", "shape": [1], "values": [True]},
                    },
                },
                media.FRAME,
                ARROW,
            ),
        },
        304: {"description": "If-None-Match names the index's ETag"},
        **problem_responses(404, 406, 412),
    },
)
async def read_index(
    name: str,
    request: Request,
    _: Read,
    records: Annotated[
        int | None, Query(ge=0, description="the index of the first R records (412 if beyond)")
    ] = None,
    accept: Annotated[str | None, Header()] = None,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    """The index block ``records``: one row per record (``first_frame``, ``n_frames``,
    ``n_atoms``, ``has_trajectory``, then the collection's own columns).

    ``Accept: application/json`` (default, the block's JSON form),
    ``application/x-mrec-frame`` (MRF1: a frame with the one block ``records``)
    or ``application/vnd.apache.arrow.stream`` (Arrow IPC for pandas and
    polars, when the server has pyarrow). ``?records=R`` reads the index as
    it was at ``R`` records.
    """
    offered = [media.JSON, media.FRAME, *([ARROW] if arrow_available() else [])]
    media_type = media.negotiate(accept, offered)
    collection = await _collections(request).get(name)

    def answer() -> tuple[int, bytes, dict[str, str]]:
        block = _index_at(collection, records)
        body = _index_body(block, media_type)
        headers = {RECORDS_HEADER: str(block.count), "ETag": _etag(block.count, body)}
        headers["Cache-Control"] = "no-cache"
        if headers["ETag"] in _tags(if_none_match):
            return 304, b"", headers
        return 200, body, headers

    status, body, headers = await blocking(answer)
    return Response(body, status_code=status, media_type=media_type, headers=headers)
