"""Records over HTTP: create, list, summary, sections, delete; every error problem+json."""

from __future__ import annotations

from typing import Any

import numpy as np
from fastapi.testclient import TestClient

import mrecd

from .conftest import FRAME, PROBLEM


def system_json() -> dict[str, Any]:
    return mrecd.Frame({"atoms": {"charge": np.array([1.0, 2.0, 3.0])}}).to_dict()


def test_create_with_a_name_only_is_an_unborn_run(client: TestClient) -> None:
    r = client.put("/v1/records/a", json={})
    assert r.status_code == 201 and r.json() == {"name": "a", "created": True}
    summary = client.get("/v1/records/a").json()
    assert summary["nstep"] == 0 and summary["declaration"] is None
    assert client.get("/v1/records").json()["records"] == ["a"]


def test_create_twice_is_409_unless_exist_ok(client: TestClient) -> None:
    assert client.put("/v1/records/a", json={"system": system_json()}).status_code == 201
    again = client.put("/v1/records/a", json={})
    assert again.status_code == 409
    assert again.headers["content-type"] == PROBLEM
    assert again.json()["type"] == "urn:mrecd:problem:already-exists"
    ok = client.put("/v1/records/a", params={"exist_ok": "true"}, json={})
    assert ok.status_code == 200 and ok.json()["created"] is False


def test_sections_as_json_and_mrf1(client: TestClient) -> None:
    client.put("/v1/records/a", json={"meta": {"title": "t"}, "system": system_json()})
    assert client.get("/v1/records/a/meta").json()["title"] == "t"
    summary = client.get("/v1/records/a").json()
    assert "system" in summary["sections"]
    as_json = client.get("/v1/records/a/system").json()
    assert as_json["blocks"]["atoms"]["columns"]["charge"]["values"] == [1.0, 2.0, 3.0]
    raw = client.get("/v1/records/a/system", headers={"Accept": FRAME})
    assert raw.headers["content-type"] == FRAME
    decoded = mrecd.codecs.decode_frame(raw.content)
    np.testing.assert_array_equal(decoded["atoms"]["charge"].values, [1.0, 2.0, 3.0])
    missing = client.get("/v1/records/a/forcefield")
    assert missing.status_code == 404 and missing.headers["content-type"] == PROBLEM


def test_406_lists_what_is_offered(client: TestClient) -> None:
    client.put("/v1/records/a", json={"system": system_json()})
    r = client.get("/v1/records/a/system", headers={"Accept": "text/csv"})
    assert r.status_code == 406 and r.headers["content-type"] == PROBLEM
    assert set(r.json()["offered"]) == {"application/json", FRAME}


def test_listing_pages_with_a_prefix(client: TestClient) -> None:
    for name in ("b-1", "b-2", "b-3", "c-1"):
        client.put(f"/v1/records/{name}", json={"system": system_json()})
    first = client.get("/v1/records", params={"prefix": "b-", "limit": 2}).json()
    assert first == {"records": ["b-1", "b-2"], "next": "b-2"}
    rest = client.get("/v1/records", params={"prefix": "b-", "limit": 2, "cursor": "b-2"}).json()
    assert rest == {"records": ["b-3"], "next": None}


def test_delete_then_404(client: TestClient) -> None:
    client.put("/v1/records/a", json={"system": system_json()})
    assert client.delete("/v1/records/a").status_code == 204
    gone = client.get("/v1/records/a")
    assert gone.status_code == 404 and gone.json()["type"] == "urn:mrecd:problem:not-found"
    assert client.delete("/v1/records/a").status_code == 404


def test_bad_names_and_bodies_are_4xx_problems(client: TestClient) -> None:
    bad_name = client.put("/v1/records/..x", json={})
    assert bad_name.status_code == 422 and bad_name.json()["path"] == "name"
    unknown = client.put("/v1/records/a", json={"colour": 1})
    assert unknown.status_code == 422 and unknown.headers["content-type"] == PROBLEM
    assert "colour" in unknown.json()["detail"]
    bad_frame = client.put("/v1/records/a", json={"system": {"blocks": 3}})
    assert bad_frame.status_code == 422 and bad_frame.headers["content-type"] == PROBLEM
    assert client.get("/v1/records", params={"limit": 0}).status_code == 422


def test_health_and_readiness(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json()["status"] == "ready"
