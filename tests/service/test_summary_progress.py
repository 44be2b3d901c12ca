"""The record summary's progress fields (what the page's records list shows)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

import pydantic
import pytest
from fastapi.testclient import TestClient

from mrecd.service import Settings, create_app

from .conftest import FRAMES, make_frame, stream


def test_summary_names_the_last_frame_size_and_liveness(client: TestClient, run: str) -> None:
    summary = client.get(f"/v1/records/{run}").json()
    assert (summary["nstep"], summary["last_step"], summary["last_time"]) == (3, 20, 10.0)
    assert summary["size"] > 0
    assert datetime.fromisoformat(summary["updated"]).tzinfo is not None
    assert summary["live"] is True


def test_summary_grows_with_each_commit(client: TestClient, run: str) -> None:
    before = client.get(f"/v1/records/{run}").json()
    body = stream([make_frame(s, n=400) for s in (30, 40)])
    r = client.post(
        f"/v1/records/{run}/trajectory/frames", content=body, headers={"Content-Type": FRAMES}
    )
    assert r.status_code == 200
    after = client.get(f"/v1/records/{run}").json()
    assert (after["nstep"], after["last_step"], after["last_time"]) == (5, 40, 20.0)
    assert after["size"] >= before["size"]


def test_a_record_without_frames_has_no_last_frame(client: TestClient) -> None:
    assert client.put("/v1/records/empty", json={}).status_code == 201
    summary = client.get("/v1/records/empty").json()
    assert summary["nstep"] == 0
    assert summary["last_step"] is None and summary["last_time"] is None


def test_an_idle_record_is_closed(make_client: Callable[..., TestClient]) -> None:
    client = make_client(live_seconds=0.2)
    assert client.put("/v1/records/idle", json={}).status_code == 201
    body = stream([make_frame(0)])
    client.post(
        "/v1/records/idle/trajectory/frames", content=body, headers={"Content-Type": FRAMES}
    )
    time.sleep(0.3)
    assert client.get("/v1/records/idle").json()["live"] is False


def test_off_the_file_system_size_and_liveness_are_unknown() -> None:
    with TestClient(create_app(Settings(store="memory://progress"))) as client:
        assert client.put("/v1/records/m", json={}).status_code == 201
        body = stream([make_frame(0), make_frame(10)])
        client.post(
            "/v1/records/m/trajectory/frames", content=body, headers={"Content-Type": FRAMES}
        )
        summary = client.get("/v1/records/m").json()
    assert summary["last_step"] == 10
    assert (summary["size"], summary["updated"], summary["live"]) == (None, None, None)


def test_live_seconds_must_be_positive(make_client: Callable[..., TestClient]) -> None:
    with pytest.raises(pydantic.ValidationError, match="live_seconds"):
        make_client(live_seconds=0)
