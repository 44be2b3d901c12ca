"""The force field of a record or a collection by URL: the document, and lookups as routes.

``GET /v1/{records|collections}/{name}/forcefield`` is the URL users share.
Every answer about one force field (the document and every lookup) carries
the same strong ETag, the hash of the document's JSON bytes, so caches
revalidate them together; ``If-None-Match`` naming it (or ``*``) is a 304.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Final
from urllib.parse import unquote

from fastapi import APIRouter, Header, Query, Request, Response

from ...errors import InvalidRecord, NotFound
from ...forcefield import ForceField
from .. import media
from .._examples import json_example
from .._forcefields import ForceFields, Kind, Served
from ..deps import Read, RunsDep, SettingsDep
from ..problems import problem_responses
from ..settings import Settings
from ._common import blocking

__all__ = ["MAX_AGE", "router"]

router = APIRouter(tags=["forcefield"])

#: seconds a cache may reuse an answer before revalidating it (a 304 is cheap)
MAX_AGE: Final = 60
KINDS: Final[tuple[Kind, ...]] = ("records", "collections")

Style = Annotated[str | None, Query(description="only this style (percent-encode it: lj%2Fcut)")]
Param = Annotated[
    str | None,
    Query(description="answer only this parameter of the one row (or style) stating it"),
]
IfNoneMatch = Annotated[str | None, Header(description="ETags seen before, or *")]


def _column(values: list[Any]) -> dict[str, Any]:
    dtype = "string" if isinstance(values[0], str) else "f64"
    return {"dtype": dtype, "shape": [len(values)], "values": values}


#: a small force field whose real answers are the OpenAPI examples
_EXAMPLE: Final = {
    "name": "example",
    "units": {"preset": "real"},
    "styles": [
        {"category": "atom", "style": "full"},
        {"category": "bond", "style": "harmonic"},
        {"category": "pair", "style": "lj/cut", "params": {"mixing": "arithmetic"}},
    ],
    "tables": {
        "atom.full": {
            "count": 2,
            "columns": {
                "name": _column(["CT", "HC"]),
                "mass": _column([12.011, 1.008]),
                "charge": _column([-0.18, 0.06]),
            },
        },
        "bond.harmonic": {
            "count": 1,
            "columns": {
                "name": _column(["CT-HC"]),
                "itom": _column(["CT"]),
                "jtom": _column(["HC"]),
                "k": _column([340.0]),
                "r0": _column([1.09]),
            },
        },
        "pair.lj%2Fcut": {
            "count": 2,
            "columns": {
                "name": _column(["CT", "HC"]),
                "itom": _column(["CT", "HC"]),
                "jtom": _column(["CT", "HC"]),
                "epsilon": _column([0.066, 0.03]),
                "sigma": _column([3.5, 2.5]),
            },
        },
    },
}
_EXAMPLE_FF: Final = ForceField.from_dict(_EXAMPLE)
_EXAMPLES: Final = {
    "atom": _EXAMPLE_FF.atom("CT").to_dict(),
    "term": _EXAMPLE_FF.term("bond", "CT-HC").to_dict(),
    "pair": _EXAMPLE_FF.pair("CT", "HC").to_dict(),
    "match": _EXAMPLE_FF.match("bond", ("HC", "CT")).to_dict(),
}
_HEADERS: Final = {
    "ETag": {"description": "strong: a hash of the force field's JSON document"},
    "Cache-Control": {"description": f"max-age={MAX_AGE}, must-revalidate"},
}


def _forcefields(request: Request) -> ForceFields:
    forcefields: ForceFields = request.app.state.forcefields
    return forcefields


async def _served(kind: Kind, name: str, request: Request, runs: RunsDep) -> Served:
    """The force field of ``name`` (404 when there is no such record/collection or no ff)."""
    forcefields = _forcefields(request)
    if kind == "records":
        record = await runs.record(name)
        held = forcefields.held_for_record(name, record)
        if held is not None:  # served before through this handle: no thread hop
            return held
        return await blocking(lambda: forcefields.of_record(name, record))
    return await blocking(lambda: forcefields.of_collection(name))


def _cache_control(settings: Settings) -> str:
    """``public`` only when anyone may read: shared caches never keep what a token unlocked."""
    audience = "public" if not settings.tokens or settings.anonymous_read else "private"
    return f"{audience}, max-age={MAX_AGE}, must-revalidate"


def _matches(if_none_match: str | None, etag: str) -> bool:
    """Whether ``If-None-Match`` names ``etag`` (weak comparison, RFC 9110 §13.1.2) or is ``*``."""
    if if_none_match is None:
        return False
    for tag in if_none_match.split(","):
        tag = tag.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False


def _headers(etag: str, settings: Settings, *, vary: bool = False) -> dict[str, str]:
    headers = {"ETag": etag, "Cache-Control": _cache_control(settings)}
    if vary:
        headers["Vary"] = "Accept"
    return headers


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), allow_nan=False, ensure_ascii=False).encode()


def _short(answer: Any, param: str) -> dict[str, Any]:
    """``answer[param]`` (the short form), with the force field's units."""
    try:
        value = answer[param]
    except KeyError as exc:
        raise NotFound(f"query.param: {exc.args[0]}", path="param") from None
    return {"param": param, "value": value, "units": dict(answer.units)}


async def _answer(
    served: Served,
    lookup: Callable[[], Any],
    param: str | None,
    if_none_match: str | None,
    settings: Settings,
) -> Response:
    """The JSON answer of ``lookup`` on ``served`` (304 when the client holds it already)."""
    headers = _headers(served.etag, settings)
    if _matches(if_none_match, served.etag):
        return Response(status_code=304, headers=headers)

    def run() -> bytes:
        answer = lookup()
        return _json(answer.to_dict() if param is None else _short(answer, param))

    if served.warm:  # the index is built: a few dictionary probes, no need for a thread
        body = run()
    else:
        body = await blocking(run)
        served.warm = True
    return Response(body, media_type=media.JSON, headers=headers)


def _pair_types(request: Request, types: str) -> tuple[str, str]:
    """``a``, ``b`` of ``…/pairs/{a}/{b}``, split on the raw path so ``%2F`` stays in a name."""
    raw = request.scope.get("raw_path")
    if isinstance(raw, bytes):
        segments = raw.decode("latin-1").split("/")
        for width in range(2, len(segments) + 1):
            tail = segments[-width:]
            if "/".join(unquote(s) for s in tail) == types:
                if width == 2:
                    return unquote(tail[0]), unquote(tail[1])
                break
    else:  # a server that keeps no raw path: only unencoded slashes can split
        parts = types.split("/")
        if len(parts) == 2:
            return parts[0], parts[1]
    raise InvalidRecord(
        f"path: pairs/{{a}}/{{b}} takes two atom types, got {types!r}; percent-encode a"
        " '/' inside a type as %2F",
        path="path.types",
    )


def _types_list(types: list[str]) -> tuple[str, ...]:
    """``?types=a,b,c`` (one value: split on commas) or ``?types=a&types=b`` (one type each)."""
    items = types[0].split(",") if len(types) == 1 else types
    for n, item in enumerate(items):
        if not item:
            raise InvalidRecord(
                f"query.types: type {n + 1} of {len(items)} is empty; list atom types as"
                " types=a,b,c or repeat types= once per type",
                path="query.types",
            )
    return tuple(items)


def _lookup_responses(example: str) -> dict[int | str, Any]:
    """``responses=`` of a lookup route; ``example`` names its answer in :data:`_EXAMPLES`."""
    return {
        200: {
            "description": "The lookup's answer (to_dict form, with units)",
            "headers": _HEADERS,
            **json_example(_EXAMPLES[example]),
        },
        304: {"description": "If-None-Match names the force field's ETag (or is *)"},
        **problem_responses(404),
    }


def _add_routes(kind: Kind) -> None:
    """The document and the four lookups of ``kind`` (records or collections)."""
    base = f"/{kind}/{{name}}/forcefield"
    what = "record" if kind == "records" else "collection"

    @router.head(base, include_in_schema=False)
    @router.get(
        base,
        operation_id=f"read_{what}_forcefield",
        responses={
            200: {
                "description": "The force field: JSON interchange form, or MRF1 by Accept",
                "headers": _HEADERS,
                **json_example(_EXAMPLE, media.FRAME),
            },
            304: {"description": "If-None-Match names the current ETag (or is *)"},
            **problem_responses(404, 406),
        },
    )
    async def read_forcefield(
        name: str,
        request: Request,
        runs: RunsDep,
        settings: SettingsDep,
        _: Read,
        accept: Annotated[str | None, Header()] = None,
        if_none_match: IfNoneMatch = None,
    ) -> Response:
        """The force field as JSON (document + ``tables``) or MRF1 by ``Accept``.

        MRF1 (``application/x-mrec-frame``) carries the document as the header
        ``meta`` and one block per style table (the ``ff`` value of lmdb.md
        §6.1). The ETag is strong, the same for every lookup of this force
        field; ``If-None-Match`` naming it (or ``*``) is a 304.
        """
        media_type = media.negotiate(accept, [media.JSON, media.FRAME])
        served = await _served(kind, name, request, runs)
        etag = served.etag if media_type == media.JSON else served.mrf1_etag
        headers = _headers(etag, settings, vary=True)
        if _matches(if_none_match, etag):
            return Response(status_code=304, headers=headers)
        body = served.body if media_type == media.JSON else await blocking(served.mrf1)
        return Response(body, media_type=media_type, headers=headers)

    @router.get(
        f"{base}/atoms/{{type:path}}",
        operation_id=f"lookup_{what}_atom",
        responses=_lookup_responses("atom"),
    )
    async def lookup_atom(
        name: str,
        type: str,
        request: Request,
        runs: RunsDep,
        settings: SettingsDep,
        _: Read,
        param: Param = None,
        if_none_match: IfNoneMatch = None,
    ) -> Response:
        """Atom type ``type``: its row in every atom table (forcefield.md §13 (a))."""
        served = await _served(kind, name, request, runs)
        ff = served.forcefield
        return await _answer(served, lambda: ff.atom(type), param, if_none_match, settings)

    @router.get(
        f"{base}/terms/{{category}}/{{type:path}}",
        operation_id=f"lookup_{what}_term",
        responses=_lookup_responses("term"),
    )
    async def lookup_term(
        name: str,
        category: str,
        type: str,
        request: Request,
        runs: RunsDep,
        settings: SettingsDep,
        _: Read,
        style: Style = None,
        param: Param = None,
        if_none_match: IfNoneMatch = None,
    ) -> Response:
        """Relation type ``type`` of ``category``: the rows named so (forcefield.md §13 (b))."""
        served = await _served(kind, name, request, runs)
        ff = served.forcefield
        return await _answer(
            served, lambda: ff.term(category, type, style), param, if_none_match, settings
        )

    @router.get(
        f"{base}/pairs/{{types:path}}",
        operation_id=f"lookup_{what}_pair",
        responses=_lookup_responses("pair"),
    )
    async def lookup_pair(
        name: str,
        types: str,
        request: Request,
        runs: RunsDep,
        settings: SettingsDep,
        _: Read,
        style: Style = None,
        is_14: Annotated[bool, Query(description="the pair is 1-4 (lj/charmm epsilon14)")] = False,
        param: Param = None,
        if_none_match: IfNoneMatch = None,
    ) -> Response:
        """Pair parameters of atom types ``a``/``b`` per pair style (forcefield.md §13 (c)).

        The path is ``…/pairs/{a}/{b}``; a ``/`` inside a type is percent-encoded (``%2F``).
        """
        a, b = _pair_types(request, types)
        served = await _served(kind, name, request, runs)
        ff = served.forcefield
        return await _answer(
            served, lambda: ff.pair(a, b, style, is_14=is_14), param, if_none_match, settings
        )

    @router.get(
        f"{base}/match/{{category}}",
        operation_id=f"lookup_{what}_match",
        responses=_lookup_responses("match"),
    )
    async def lookup_match(
        name: str,
        category: str,
        request: Request,
        runs: RunsDep,
        settings: SettingsDep,
        _: Read,
        types: Annotated[
            list[str],
            Query(description="atom types in order: types=a,b,c or types=a&types=b&types=c"),
        ],
        style: Style = None,
        param: Param = None,
        if_none_match: IfNoneMatch = None,
    ) -> Response:
        """The row typing the atom-type tuple ``types``, per table (forcefield.md §13 (d))."""
        query = _types_list(types)
        served = await _served(kind, name, request, runs)
        ff = served.forcefield
        return await _answer(
            served, lambda: ff.match(category, query, style), param, if_none_match, settings
        )


for _kind in KINDS:
    _add_routes(_kind)
