"""The force field by URL (issue 13): the document with a strong ETag and cache headers,
the lookup routes with percent-encoded names, every refusal as problem+json, and the
client's cached ``ForceField`` answering exactly as the routes do on the public fixtures.

One real uvicorn serves a store holding, as records and as collections, the public
force fields (the spec fixtures, the force-field package record, the GROMACS topology
of tests/forcefield/data) and one whose names need percent-encoding.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

import mrecd
from _uvicorn import serve_app
from mrecd.codecs import decode_blocks, plain_document
from mrecd.errors import MrecdError, NotFound
from mrecd.forcefield import ForceField, from_gromacs_top
from mrecd.service import Settings, create_app
from mrecd_client import AsyncClient, Client
from mrecd_client._forcefield import fetch_forcefield

TESTS = Path(__file__).parents[1]
SCHEMA = TESTS / "fixtures" / "schema" / "core"
FRAME = "application/x-mrec-frame"
PROBLEM = "application/problem+json"
CACHE = "public, max-age=60, must-revalidate"
KINDS = ("records", "collections")
ENDPOINTS = ("itom", "jtom", "ktom", "ltom", "mtom")


def _s(values: list[str]) -> dict[str, Any]:
    return {"dtype": "string", "shape": [len(values)], "values": values}


def _f(values: list[float]) -> dict[str, Any]:
    return {"dtype": "f64", "shape": [len(values)], "values": values}


#: atom types that need percent-encoding in a path (or look like wildcards)
ODD_TYPES = ["C/1", "X", "*", "N%2F", "H A", "Ω"]


def _odd_names() -> dict[str, Any]:
    """A force field whose type and style names need percent-encoding."""
    t = ODD_TYPES
    return {
        "name": "odd names",
        "units": {"preset": "real"},
        "styles": [
            {"category": "atom", "style": "full"},
            {"category": "bond", "style": "harmonic"},
            {"category": "dihedral", "style": "charmm"},
            {"category": "pair", "style": "lj/charmm", "params": {"mixing": "arithmetic"}},
            {"category": "pair", "style": "lj/cut", "params": {"mixing": "geometric"}},
        ],
        "tables": {
            "atom.full": {
                "count": 6,
                "columns": {
                    "name": _s(t),
                    "mass": _f([12.0, 1.0, 2.0, 14.0, 1.5, 3.0]),
                    "charge": _f([0.1, -0.1, 0.0, 0.2, 0.3, -0.5]),
                },
            },
            "bond.harmonic": {
                "count": 2,
                "columns": {
                    "name": _s(["C/1-X", "*-N%2F"]),
                    "itom": _s(["C/1", "*"]),
                    "jtom": _s(["X", "N%2F"]),
                    "k": _f([300.0, 200.0]),
                    "r0": _f([1.1, 1.3]),
                },
            },
            "dihedral.charmm": {
                "count": 2,
                "columns": {
                    "name": _s(["X-C/1-*-X", "-C/1-*-"]),
                    "itom": _s(["X", ""]),
                    "jtom": _s(["C/1", "C/1"]),
                    "ktom": _s(["*", "*"]),
                    "ltom": _s(["X", ""]),
                    "k": _f([0.2, 0.1]),
                    "periodicity": _f([3.0, 2.0]),
                    "phase": _f([0.0, 180.0]),
                    "w": _f([1.0, 1.0]),
                },
            },
            "pair.lj%2Fcharmm": {
                "count": 6,
                "columns": {
                    "name": _s(t),
                    "itom": _s(t),
                    "jtom": _s(t),
                    "epsilon": _f([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]),
                    "sigma": _f([3.0, 2.0, 2.5, 3.5, 1.5, 2.2]),
                },
            },
            "pair.lj%2Fcut": {
                "count": 2,
                "columns": {
                    "name": _s(["C/1", "C/1:X"]),
                    "itom": _s(["C/1", "C/1"]),
                    "jtom": _s(["C/1", "X"]),
                    "epsilon": _f([0.15, 0.25]),
                    "sigma": _f([3.1, 2.9]),
                },
            },
        },
    }


def _public() -> dict[str, ForceField]:
    """Every public force field, by a name usable as a record name."""
    out = {p.stem: ForceField.from_dict(json.loads(p.read_text())) for p in _valid_fixtures()}
    package = json.loads((SCHEMA / "record" / "valid-forcefield-package.json").read_text())
    out["package"] = ForceField.from_dict(
        package["forcefield"], molrec_version=package["meta"]["molrec_version"]
    )
    out["butanamide"] = from_gromacs_top(TESTS / "forcefield" / "data" / "butanamide.top")
    out["odd"] = ForceField.from_dict(_odd_names())
    return out


def _valid_fixtures() -> list[Path]:
    return sorted((SCHEMA / "forcefield").glob("valid-*.json"))


FORCEFIELDS = _public()


@dataclass(frozen=True)
class Served:
    url: str
    store: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Each force field as record ``<name>`` and collection ``<name>``, and ``bare``
    (a record and a collection without one), served by a real uvicorn."""
    store = tmp_path_factory.mktemp("ff") / "data"
    catalog = mrecd.open(store)
    for name, ff in FORCEFIELDS.items():
        catalog.create_record(name, forcefield=ff).close()
        catalog.create_collection(
            name, meta={"units": {"length": "angstrom"}}, forcefield=ff
        ).close()
    catalog.create_record("bare", meta={"title": "no ff"}, status={"state": "done"}).close()
    catalog.create_collection("bare", meta={"units": {"length": "angstrom"}}).close()
    with serve_app(create_app(Settings(store=str(store))), timeout_graceful_shutdown=2) as url:
        yield Served(url, store)


@pytest.fixture(scope="module")
def http(served: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{served.url}/v1") as client:
        yield client


def _plain(value: Any) -> Any:
    """``value`` as the JSON a route sends (tuples as lists, keys as strings)."""
    return json.loads(json.dumps(value))


def _problem(response: httpx.Response, status: int, path: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    problem: dict[str, Any] = response.json()
    assert problem["status"] == status and problem["detail"]
    if path is not None:
        assert problem["path"] == path, problem
    return problem


# -- the document ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(FORCEFIELDS))
def test_the_document_comes_as_json_and_mrf1_with_a_content_hash_etag(
    http: httpx.Client, kind: str, name: str
) -> None:
    ff = FORCEFIELDS[name]
    as_json = http.get(f"/{kind}/{name}/forcefield")
    assert as_json.status_code == 200 and as_json.headers["content-type"] == "application/json"
    assert ForceField.from_dict(as_json.json()) == ff
    etag = as_json.headers["etag"]
    assert re.fullmatch(r'"[0-9a-f]{32}"', etag)
    assert etag == f'"{hashlib.sha256(as_json.content).hexdigest()[:32]}"'
    assert as_json.headers["cache-control"] == CACHE
    assert "Accept" in as_json.headers["vary"]

    raw = http.get(f"/{kind}/{name}/forcefield", headers={"Accept": FRAME})
    assert raw.status_code == 200 and raw.headers["content-type"] == FRAME
    tables, header = decode_blocks(raw.content, copy=True)
    assert ForceField.from_section(plain_document(header), tables) == ff
    assert raw.headers["etag"] == etag[:-1] + '-mrf1"'  # another representation, another tag


def test_one_force_field_has_one_etag_wherever_it_is_served(http: httpx.Client) -> None:
    tags = {
        kind: {name: http.get(f"/{kind}/{name}/forcefield").headers["etag"] for name in FORCEFIELDS}
        for kind in KINDS
    }
    assert tags["records"] == tags["collections"]
    assert len(set(tags["records"].values())) == len(FORCEFIELDS)  # different content, tags


@pytest.mark.parametrize("kind", KINDS)
def test_if_none_match_gives_304_for_the_tag_a_list_holding_it_a_weak_form_and_star(
    http: httpx.Client, kind: str
) -> None:
    url = f"/{kind}/odd/forcefield"
    etag = http.get(url).headers["etag"]
    for header in (etag, f'"other", {etag}', f"W/{etag}", "*"):
        r = http.get(url, headers={"If-None-Match": header})
        assert r.status_code == 304 and r.content == b"", header
        assert r.headers["etag"] == etag and r.headers["cache-control"] == CACHE
    assert http.get(url, headers={"If-None-Match": '"stale"'}).status_code == 200
    mrf1 = http.get(url, headers={"Accept": FRAME}).headers["etag"]
    assert http.get(url, headers={"If-None-Match": mrf1}).status_code == 200  # JSON's tag differs
    again = http.get(url, headers={"Accept": FRAME, "If-None-Match": mrf1})
    assert again.status_code == 304 and again.headers["etag"] == mrf1


def test_head_answers_the_headers_of_get_without_the_body(http: httpx.Client) -> None:
    got = http.get("/collections/valid-tip3p/forcefield")
    head = http.head("/collections/valid-tip3p/forcefield")
    assert head.status_code == 200 and head.content == b""
    for header in ("etag", "cache-control", "content-type"):
        assert head.headers[header] == got.headers[header]


def test_a_store_without_a_local_disk_has_no_collections(tmp_path: Path) -> None:
    app = create_app(Settings(store="memory://ff-no-disk"))
    with serve_app(app) as url:
        r = httpx.get(f"{url}/v1/collections/odd/forcefield")
    assert _problem(r, 404, "odd")["detail"].endswith("has none")


def test_a_lookup_carries_the_document_etag_and_revalidates_with_it(http: httpx.Client) -> None:
    etag = http.get("/records/odd/forcefield").headers["etag"]
    lookups = [
        "/records/odd/forcefield/atoms/X",
        f"/records/odd/forcefield/terms/bond/{quote('C/1-X', safe='')}",
        "/records/odd/forcefield/pairs/X/X",
        "/records/odd/forcefield/match/bond?types=X,C/1",
    ]
    for url in lookups:
        r = http.get(url)
        assert r.status_code == 200, (url, r.text)
        assert r.headers["etag"] == etag and r.headers["cache-control"] == CACHE
        cached = http.get(url, headers={"If-None-Match": etag})
        assert cached.status_code == 304 and cached.headers["etag"] == etag


def test_with_tokens_the_answers_are_private_to_the_browser_cache(tmp_path: Path) -> None:
    store = tmp_path / "data"
    mrecd.open(store).create_record("odd", forcefield=FORCEFIELDS["odd"]).close()
    grant = {"token": "t0ken", "scope": "read", "prefix": ""}
    app = create_app(Settings(store=str(store), tokens=[grant]))  # type: ignore[list-item]
    with serve_app(app) as url, httpx.Client(base_url=f"{url}/v1") as http:
        assert http.get("/records/odd/forcefield").status_code == 401
        auth = {"Authorization": "Bearer t0ken"}
        for path in ("/records/odd/forcefield", "/records/odd/forcefield/atoms/X"):
            r = http.get(path, headers=auth)
            assert r.headers["cache-control"] == "private, max-age=60, must-revalidate"


# -- lookups with names that need percent-encoding --------------------------------------------


def _get(http: httpx.Client, kind: str, name: str, path: str, **params: Any) -> httpx.Response:
    return http.get(f"/{kind}/{name}/forcefield/{path}", params=params)


@pytest.mark.parametrize("kind", KINDS)
def test_every_lookup_route_round_trips_encoded_names(http: httpx.Client, kind: str) -> None:
    ff = FORCEFIELDS["odd"]

    def same(path: str, expected: Any, **params: Any) -> None:
        r = _get(http, kind, "odd", path, **params)
        assert r.status_code == 200, (path, r.text)
        assert r.json() == _plain(expected.to_dict()), path

    for t in ODD_TYPES:
        same(f"atoms/{quote(t, safe='')}", ff.atom(t))
    same(f"terms/bond/{quote('C/1-X', safe='')}", ff.term("bond", "C/1-X"))
    same(
        f"terms/bond/{quote('*-N%2F', safe='')}",
        ff.term("bond", "*-N%2F", "harmonic"),
        style="harmonic",
    )
    same(f"terms/dihedral/{quote('-C/1-*-', safe='')}", ff.term("dihedral", "-C/1-*-"))
    for a in ODD_TYPES:
        for b in ODD_TYPES:
            pair = f"pairs/{quote(a, safe='')}/{quote(b, safe='')}"
            same(pair, ff.pair(a, b))
            same(pair, ff.pair(a, b, "lj/charmm", is_14=True), style="lj/charmm", is_14="true")
    same(
        "match/dihedral", ff.match("dihedral", ("N%2F", "C/1", "*", "H A")), types="N%2F,C/1,*,H A"
    )
    # repeated types= carry one type each (a type may hold a comma)
    r = http.get(f"/{kind}/odd/forcefield/match/bond", params=[("types", "X"), ("types", "C/1")])
    assert r.json() == _plain(ff.match("bond", ("X", "C/1")).to_dict())


def test_an_unencoded_slash_in_a_type_is_read_by_the_one_segment_routes(http: httpx.Client) -> None:
    assert http.get("/records/odd/forcefield/atoms/C/1").json()["type"] == "C/1"
    r = http.get("/records/odd/forcefield/terms/bond/C/1-X")
    assert r.json()["type"] == "C/1-X"


def test_param_answers_the_short_form_with_units(http: httpx.Client) -> None:
    ff = FORCEFIELDS["odd"]
    r = _get(http, "records", "odd", f"atoms/{quote('C/1', safe='')}", param="mass")
    assert r.json() == {"param": "mass", "value": 12.0, "units": ff.units}
    r = _get(http, "collections", "odd", "pairs/X/C%2F1", style="lj/cut", param="epsilon")
    assert r.json()["value"] == ff.pair("X", "C/1", "lj/cut")["epsilon"] == 0.25
    r = _get(http, "records", "odd", "match/bond", types="X,C/1", param="k")
    assert r.json()["value"] == 300.0


# -- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_no_such_record_or_collection_and_none_without_a_force_field(
    http: httpx.Client, kind: str
) -> None:
    _problem(http.get(f"/{kind}/nothing-here/forcefield"), 404, "nothing-here")
    _problem(http.get(f"/{kind}/nothing-here/forcefield/atoms/X"), 404, "nothing-here")
    problem = _problem(http.get(f"/{kind}/bare/forcefield"), 404, "forcefield")
    assert "no force field" in problem["detail"]
    _problem(http.get(f"/{kind}/bare/forcefield/pairs/X/X"), 404, "forcefield")


@pytest.mark.parametrize("kind", KINDS)
def test_every_bad_lookup_is_a_4xx_problem_naming_the_field(http: httpx.Client, kind: str) -> None:
    base = f"/{kind}/odd/forcefield"
    assert "'nope'" in _problem(http.get(f"{base}/atoms/nope"), 404, "forcefield")["detail"]
    assert (
        "(bond, morse)"
        in _problem(http.get(f"{base}/terms/bond/C%2F1-X", params={"style": "morse"}), 404)[
            "detail"
        ]
    )
    _problem(http.get(f"{base}/terms/bond/nope"), 404, "forcefield")
    assert "by their two atom types" in _problem(http.get(f"{base}/terms/pair/X"), 422)["detail"]
    assert "'nope'" in _problem(http.get(f"{base}/pairs/X/nope"), 404)["detail"]
    _problem(http.get(f"{base}/pairs/X", params={"style": "lj/cut"}), 422, "path.types")
    _problem(http.get(f"{base}/pairs/X/X/X"), 422, "path.types")
    _problem(http.get(f"{base}/pairs/X/X", params={"is_14": "maybe"}), 422, "query.is_14")
    _problem(http.get(f"{base}/pairs/X/X", params={"style": "lj/nope"}), 404, "forcefield")
    _problem(http.get(f"{base}/match/bond"), 422, "query.types")
    _problem(http.get(f"{base}/match/bond", params={"types": "X,"}), 422, "query.types")
    _problem(http.get(f"{base}/match/bond", params={"types": ""}), 422, "query.types")
    arity = _problem(http.get(f"{base}/match/bond", params={"types": "X,X,X"}), 422)
    assert arity["path"] == "forcefield.match.types" and "arity [2]" in arity["detail"]
    _problem(http.get(f"{base}/match/bond", params={"types": "Ω,Ω"}), 404, "forcefield")
    _problem(http.get(f"{base}/match/angle", params={"types": "X,X,X"}), 404, "forcefield")
    _problem(http.get(f"{base}/atoms/X", params={"param": "k"}), 404, "param")
    ambiguous = _problem(http.get(f"{base}/pairs/C%2F1/X", params={"param": "epsilon"}), 422)
    assert ambiguous["type"].endswith("ambiguous-lookup") and ambiguous["path"] == "epsilon"
    offered = _problem(http.get(base, headers={"Accept": "text/csv"}), 406)["offered"]
    assert set(offered) == {"application/json", FRAME}


def test_a_bad_name_is_refused_before_the_store_is_touched(http: httpx.Client) -> None:
    for kind in KINDS:
        r = http.get(f"/{kind}/.hidden/forcefield")
        assert 400 <= r.status_code < 500 and r.headers["content-type"] == PROBLEM


# -- the client: one ForceField, answering as the routes do ------------------------------------


@dataclass(frozen=True)
class Query:
    """One lookup: the route (path under …/forcefield, query) and the same call in Python."""

    path: str
    params: tuple[tuple[str, str], ...]
    call: Callable[[ForceField], Any]


def _names(ff: ForceField, category: str) -> list[tuple[str, str]]:
    """``(style, row name)`` of every table of ``category``."""
    out = []
    for style in ff.styles:
        if style.category == category and "name" in ff.tables[style.block]:
            out += [(style.style, n) for n in ff.tables[style.block]["name"].values.tolist()]
    return out


def _rows(ff: ForceField, category: str) -> list[tuple[str, ...]]:
    """The endpoint tuples of every type-keyed row of ``category``."""
    out: list[tuple[str, ...]] = []
    for style in ff.styles:
        block = ff.tables[style.block]
        ends = [c for c in ENDPOINTS if c in block]
        if style.category == category and ends and style.endpoint_key != "smirks":
            out += list(zip(*(block[c].values.tolist() for c in ends), strict=True))
    return out


def _queries(ff: ForceField) -> list[Query]:
    """A broad sample: every atom type, relation row, pair among the first types, and
    every typed row matched (wildcards filled), both ways; some that must fail."""
    types = [n for _, n in _names(ff, "atom")] or [n for _, n in _names(ff, "pair")]
    q = [Query(f"atoms/{quote(t, safe='')}", (), lambda f, t=t: f.atom(t)) for t in types]
    q.append(Query("atoms/no-such-type", (), lambda f: f.atom("no-such-type")))
    categories = {s.category for s in ff.styles} - {"atom", "pair"}
    for category in sorted(categories):
        for style, name in _names(ff, category)[:40]:
            path = f"terms/{quote(category, safe='')}/{quote(name, safe='')}"
            q.append(Query(path, (), lambda f, c=category, n=name: f.term(c, n)))
            q.append(
                Query(
                    path,
                    (("style", style),),
                    lambda f, c=category, n=name, s=style: f.term(c, n, s),
                )
            )
        for row in _rows(ff, category)[:40]:
            filled = tuple(e or types[0] for e in row)
            for ordered in (filled, filled[::-1]):
                q.append(
                    Query(
                        f"match/{quote(category, safe='')}",
                        (("types", ",".join(ordered)),),
                        lambda f, c=category, o=ordered: f.match(c, o),
                    )
                )
    some = types[:8]
    for i, a in enumerate(some):
        for b in some[i:]:
            path = f"pairs/{quote(a, safe='')}/{quote(b, safe='')}"
            for is_14 in (False, True):
                q.append(
                    Query(
                        path,
                        (("is_14", str(is_14).lower()),),
                        lambda f, a=a, b=b, x=is_14: f.pair(a, b, is_14=x),
                    )
                )
    q.append(
        Query(
            "pairs/no-such-type/no-such-type", (), lambda f: f.pair("no-such-type", "no-such-type")
        )
    )
    return q


def _local(ff: ForceField, query: Query) -> tuple[int, Any]:
    """``(200, to_dict())`` of the call on ``ff``, or ``(status, problem type)`` of its error."""
    try:
        return 200, _plain(query.call(ff).to_dict())
    except MrecdError as exc:
        return exc.status, exc.problem_type()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(FORCEFIELDS))
def test_the_cached_client_answers_exactly_as_the_lookup_routes(
    served: Served, http: httpx.Client, kind: str, name: str
) -> None:
    with Client(served.url) as client:
        if kind == "records":
            remote = client.record(name).forcefield
        else:
            remote = fetch_forcefield(client._core, client._send, "collections", name)
    assert isinstance(remote, ForceField) and remote == FORCEFIELDS[name]
    queries = _queries(remote)
    assert len(queries) >= len(FORCEFIELDS[name].styles)
    failures = 0
    for query in queries:
        r = http.get(f"/{kind}/{name}/forcefield/{query.path}", params=query.params)
        status, expected = _local(remote, query)
        assert r.status_code == status, (query.path, r.text)
        if status == 200:
            assert r.json() == expected, query.path
        else:
            failures += 1
            assert r.json()["type"] == expected, query.path
    assert failures >= 2  # the unknown types were refused both ways


# -- the client's revalidation ---------------------------------------------------------------


class Recording(httpx.HTTPTransport):
    """A real transport that notes each force-field request's If-None-Match and status."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str | None, int]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.url.path.endswith("/forcefield"):
            self.seen.append((request.headers.get("if-none-match"), response.status_code))
        return response


class AsyncRecording(httpx.AsyncHTTPTransport):
    """The asyncio twin of :class:`Recording`."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str | None, int]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        if request.url.path.endswith("/forcefield"):
            self.seen.append((request.headers.get("if-none-match"), response.status_code))
        return response


@pytest.mark.parametrize("wire", ["mrf1", "json"])
def test_the_second_access_revalidates_and_a_304_returns_the_object_held(
    served: Served, wire: str
) -> None:
    transport = Recording()
    with Client(served.url, wire=wire, transport=transport) as client:  # type: ignore[arg-type]
        record = client.record("butanamide")
        first = record.forcefield
        second = record.forcefield
        third = client.record("butanamide").forcefield  # another handle shares the cache
        assert first is second is third and first == FORCEFIELDS["butanamide"]
        collection = fetch_forcefield(client._core, client._send, "collections", "butanamide")
        again = fetch_forcefield(client._core, client._send, "collections", "butanamide")
        assert collection is again and collection is not first
    etag = transport.seen[0][0]
    assert etag is None and transport.seen[0][1] == 200
    tags = [tag for tag, _ in transport.seen]
    assert [status for _, status in transport.seen] == [200, 304, 304, 200, 304]
    assert tags[1] == tags[2] and tags[1] is not None and tags[4] is not None
    assert tags[1].endswith('-mrf1"') == (wire == "mrf1")


@pytest.mark.anyio
async def test_the_async_client_revalidates_too(served: Served) -> None:
    transport = AsyncRecording()
    async with AsyncClient(served.url, transport=transport) as client:
        record = await client.record("odd")
        first = await record.forcefield()
        second = await record.forcefield()
        assert first is second and first == FORCEFIELDS["odd"]
        assert first is not None and first.atom("C/1")["mass"] == 12.0
    assert [status for _, status in transport.seen] == [200, 304]
    assert transport.seen[1][0] is not None


def test_a_remote_collection_forcefield_is_the_cached_one_revalidated(served: Served) -> None:
    transport = Recording()
    with Client(served.url, transport=transport) as client:
        collection = client.collection("butanamide")
        first = collection.forcefield
        second = client.collection("butanamide").forcefield  # another handle, one cache
        assert first is second and first == FORCEFIELDS["butanamide"]
        assert client.collection("bare").forcefield is None  # the summary says none: no request
    assert [status for _, status in transport.seen] == [200, 304]
    assert transport.seen[1][0] is not None


@pytest.mark.anyio
async def test_an_async_remote_collection_forcefield_revalidates(served: Served) -> None:
    transport = AsyncRecording()
    async with AsyncClient(served.url, transport=transport) as client:
        collection = await client.collection("odd")
        first = await collection.forcefield()
        assert first is not None and first is await collection.forcefield()
        assert first.atom("C/1")["mass"] == 12.0
    assert [status for _, status in transport.seen] == [200, 304]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_a_replaced_force_field_is_fetched_again_and_a_missing_one_is_none(
    tmp_path: Path,
) -> None:
    store = tmp_path / "data"
    mrecd.open(store).create_record("run", forcefield=FORCEFIELDS["odd"]).close()
    transport = Recording()
    app = create_app(Settings(store=str(store)))
    with serve_app(app) as url, Client(url, transport=transport) as client:
        old = client.record("run").forcefield
        client.delete_record("run")
        client.create_record("run", forcefield=FORCEFIELDS["valid-tip3p"])
        new = client.record("run").forcefield
        assert old == FORCEFIELDS["odd"] and new == FORCEFIELDS["valid-tip3p"]
        client.delete_record("run")
        client.create_record("run", meta={"title": "none"}, status={"state": "done"})
        assert client.record("run").forcefield is None
        with pytest.raises(NotFound):
            fetch_forcefield(client._core, client._send, "records", "gone")
    assert [status for _, status in transport.seen] == [200, 200, 404, 404]
    assert transport.seen[1][0] is not None  # it asked with the old tag, got the new one


def test_the_readme_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (TESTS.parent / "README.md").read_text(), re.DOTALL)
    example = next(b for b in blocks if 'store.record("charmm-run").forcefield' in b)
    store = tmp_path / "data"
    mrecd.open(store).create_record("charmm-run", forcefield=FORCEFIELDS["valid-charmm"]).close()
    with serve_app(create_app(Settings(store=str(store)))) as url:
        exec(compile(example.replace("http://127.0.0.1:8000", url), "README.md", "exec"), {})
    expected = FORCEFIELDS["valid-charmm"].pair("CT1", "HA", "lj/charmm", is_14=True)["epsilon14"]
    assert capsys.readouterr().out.split() == ["12.011", str(expected)]
