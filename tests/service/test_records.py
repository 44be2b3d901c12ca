"""Records over HTTP: create, list, summary, sections, delete; every error problem+json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import numpy as np
from fastapi.testclient import TestClient

import mrecd

from .conftest import FRAME, PROBLEM, make_frame, mrf1


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


def _post_one(client: TestClient, name: str, step: int, **params: str) -> httpx.Response:
    return client.post(
        f"/v1/records/{name}/trajectory/frames",
        params=params,
        content=mrf1(make_frame(step)),
        headers={"Content-Type": FRAME},
    )


def test_create_true_starts_a_run_in_one_request(client: TestClient, store_dir: Path) -> None:
    absent = _post_one(client, "solo", 0)
    assert absent.status_code == 404 and absent.headers["content-type"] == PROBLEM
    r = _post_one(client, "solo", 0, create="true")
    assert r.status_code == 200 and r.json() == {
        "nstep": 1,
        "first": 0,
        "count": 1,
        "duplicate": False,
    }
    with mrecd.open(store_dir).record("solo") as record:
        assert record.exists and record.trajectory is not None and len(record.trajectory) == 1
    assert client.get("/v1/records").json()["records"] == ["solo"]


def test_create_true_on_an_existing_record_appends(client: TestClient) -> None:
    assert client.put("/v1/records/a", json={"meta": {"title": "kept"}}).status_code == 201
    assert _post_one(client, "a", 0, create="true").json()["nstep"] == 1
    assert _post_one(client, "a", 10, create="true").json() == {
        "nstep": 2,
        "first": 1,
        "count": 1,
        "duplicate": False,
    }
    assert client.get("/v1/records/a/meta").json()["title"] == "kept"
    refused = _post_one(client, "a", 10, create="true")  # a repeated step, as without create
    assert refused.status_code == 409 and refused.json()["type"].endswith("step-order")
    bad = _post_one(client, ".hidden", 0, create="true")
    assert bad.status_code in (400, 404, 422) and bad.headers["content-type"] == PROBLEM


def test_create_true_needs_append_scope(make_client: Any) -> None:
    tokens = [
        {"token": "reader", "scope": "read"},
        {"token": "appender", "scope": "append", "prefix": "lab-"},
    ]
    client = make_client(tokens=tokens)
    for token, name in (("reader", "lab-1"), ("appender", "other-1")):
        r = client.post(
            f"/v1/records/{name}/trajectory/frames",
            params={"create": "true"},
            content=mrf1(make_frame(0)),
            headers={"Content-Type": FRAME, "Authorization": f"Bearer {token}"},
        )
        assert r.status_code == 403 and r.headers["content-type"] == PROBLEM
        assert "append" in r.json()["detail"]
    appender = {"Authorization": "Bearer appender"}
    ok = client.post(
        "/v1/records/lab-1/trajectory/frames",
        params={"create": "true"},
        content=mrf1(make_frame(0)),
        headers={"Content-Type": FRAME, **appender},
    )
    assert ok.status_code == 200 and ok.json()["nstep"] == 1
    reader = {"Authorization": "Bearer reader"}
    assert client.get("/v1/records", headers=reader).json()["records"] == ["lab-1"]


def test_an_unborn_run_made_over_http_is_the_stores(client: TestClient, store_dir: Path) -> None:
    assert client.put("/v1/records/u", json={"meta": {"title": "t"}}).status_code == 201
    catalog = mrecd.open(store_dir)  # another process's view: the marker, not this app's memory
    assert catalog.records() == ["u"] and not catalog.record("u").exists
    assert catalog.record("u").meta["title"] == "t"
    assert client.delete("/v1/records/u").status_code == 204
    assert catalog.records() == [] and client.get("/v1/records/u").status_code == 404
