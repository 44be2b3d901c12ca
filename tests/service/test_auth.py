"""Bearer tokens with scopes per name prefix: the matrix of who may do what."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from .conftest import FRAME, PROBLEM, make_frame, mrf1

TOKENS = [
    {"token": "r-lab", "scope": "read", "prefix": "lab-"},
    {"token": "a-lab", "scope": "append", "prefix": "lab-"},
    {"token": "admin-all", "scope": "admin"},
]


def bearer(token: str | None) -> dict[str, str]:
    return {} if token is None else {"Authorization": f"Bearer {token}"}


@pytest.fixture
def secured(make_client: Callable[..., TestClient]) -> TestClient:
    client = make_client(tokens=TOKENS)
    for name in ("lab-1", "other-1"):
        assert client.put(f"/v1/records/{name}", json={}, headers=bearer("admin-all")).is_success
        r = client.post(
            f"/v1/records/{name}/trajectory/frames",
            content=mrf1(make_frame(0)),
            headers={"Content-Type": FRAME, **bearer("admin-all")},
        )
        assert r.status_code == 200
    return client


READ = ("GET", "/v1/records/{}/trajectory/frames/0")
APPEND = ("POST", "/v1/records/{}/trajectory/frames")
DELETE = ("DELETE", "/v1/records/{}")


def call(client: TestClient, what: tuple[str, str], name: str, token: str | None) -> int:
    method, path = what
    extra = {"content": mrf1(make_frame(100)), "headers": {"Content-Type": FRAME}}
    kwargs = extra if method == "POST" else {"headers": {}}
    kwargs["headers"] = {**kwargs["headers"], **bearer(token)}  # type: ignore[dict-item]
    r = client.request(method, path.format(name), **kwargs)  # type: ignore[arg-type]
    if r.status_code >= 400:
        assert r.headers["content-type"] == PROBLEM
    return r.status_code


@pytest.mark.parametrize(
    ("token", "what", "name", "status"),
    [
        (None, READ, "lab-1", 401),
        ("wrong", READ, "lab-1", 401),
        ("r-lab", READ, "lab-1", 200),
        ("r-lab", READ, "other-1", 403),
        ("r-lab", APPEND, "lab-1", 403),
        ("a-lab", APPEND, "lab-1", 200),
        ("a-lab", APPEND, "other-1", 403),
        ("a-lab", READ, "lab-1", 200),
        ("a-lab", DELETE, "lab-1", 403),
        ("admin-all", DELETE, "other-1", 204),
        ("admin-all", APPEND, "other-1", 200),
    ],
)
def test_scope_matrix(
    secured: TestClient, token: str | None, what: tuple[str, str], name: str, status: int
) -> None:
    assert call(secured, what, name, token) == status


def test_401_names_the_scheme(secured: TestClient) -> None:
    r = secured.get("/v1/records/lab-1", headers={"Authorization": "Basic abc"})
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"


def test_anonymous_read_only_when_configured(make_client: Callable[..., TestClient]) -> None:
    client = make_client(tokens=TOKENS, anonymous_read=True)
    client.put("/v1/records/lab-2", json={}, headers=bearer("a-lab"))
    assert client.get("/v1/records/lab-2").status_code == 200
    assert client.put("/v1/records/lab-3", json={}).status_code == 401


def test_no_tokens_is_open(client: TestClient) -> None:
    assert client.put("/v1/records/x", json={}).status_code == 201


# -- every /v1 route, from the app itself: a route added later joins the matrix --------------

#: placeholder values for path parameters other than the record name
FILLS = {"i": "0", "r": "0", "key": "zarr.json", "section": "meta"}
#: the scope each method needs
NEEDS = {"GET": "read", "HEAD": "read", "PUT": "append", "POST": "append", "DELETE": "admin"}
#: the scopes each token holds on its prefix ("lab-"), in the order read < append < admin
HOLDS = {"r-lab": {"read"}, "a-lab": {"read", "append"}, "admin-all": set(NEEDS.values())}


def v1_routes(client: TestClient) -> list[tuple[str, str]]:
    """(method, path template) of every /v1 operation, from the app's OpenAPI document."""
    paths = client.app.openapi()["paths"]  # type: ignore[attr-defined]
    return [
        (method.upper(), path)
        for path, operations in paths.items()
        if path.startswith("/v1/")
        for method in operations
    ]


def concrete(path: str, name: str) -> str:
    """``path`` with its parameters filled; a listing asks for the ``name`` prefix instead."""
    if "{name}" not in path:
        return f"{path}?prefix={name}"
    for param, value in FILLS.items():
        path = path.replace(f"{{{param}}}", value).replace(f"{{{param}:path}}", value)
    return path.replace("{name}", name)


def send(client: TestClient, method: str, path: str, token: str | None) -> int:
    r = client.request(method, path, headers=bearer(token), json={} if method == "PUT" else None)
    assert r.status_code < 500, (method, path, r.text)
    if r.status_code >= 400 and method != "HEAD":
        assert r.headers["content-type"] == PROBLEM, (method, path)
    return r.status_code


def test_every_route_refuses_no_token_and_a_wrong_one(secured: TestClient) -> None:
    routes = v1_routes(secured)
    assert len(routes) >= 15  # the whole /v1 surface, not an empty loop
    for method, template in routes:
        path = concrete(template, "lab-1")
        assert send(secured, method, path, None) == 401, (method, path)
        assert send(secured, method, path, "wrong") == 401, (method, path)


def test_every_route_grants_each_scope_exactly_on_its_prefix(secured: TestClient) -> None:
    for method, template in v1_routes(secured):
        if method == "DELETE":
            continue  # the delete row below, so the record stays for the other routes
        for token, scopes in HOLDS.items():
            allowed = NEEDS[method] in scopes
            # a granted event stream never ends; its grants are test_live's
            if not (allowed and template.endswith("/events")):
                status = send(secured, method, concrete(template, "lab-1"), token)
                assert (status not in (401, 403)) == allowed, (token, method, template, status)
            if token != "admin-all":  # the admin grant covers every prefix
                other = send(secured, method, concrete(template, "other-1"), token)
                assert other == 403, (token, method, template, other)


def test_delete_needs_admin_on_the_prefix(secured: TestClient) -> None:
    path = "/v1/records/lab-1"
    assert send(secured, "DELETE", path, "r-lab") == 403
    assert send(secured, "DELETE", path, "a-lab") == 403
    assert send(secured, "DELETE", path, "admin-all") == 204
