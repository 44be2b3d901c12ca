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
