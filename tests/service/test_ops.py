"""Operations: Prometheus metrics (per app, with their access policy) and the access log."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from mrecd.service import Settings, create_app
from mrecd.service.deps import get_runs

from .conftest import FRAMES, PROBLEM, make_frame, stream

POST = "/v1/records/{name}/trajectory/frames"
ROOT = Path(__file__).parents[2]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'server'}:{ROOT / 'client'}"}


def _samples(
    client: TestClient, **headers: str
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = client.get("/metrics", headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    out = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _post(client: TestClient, name: str, steps: list[int]) -> None:
    r = client.post(
        f"/v1/records/{name}/trajectory/frames",
        content=stream([make_frame(s) for s in steps]),
        headers={"Content-Type": FRAMES},
    )
    assert r.status_code == 200, r.text


def test_metrics_count_requests_frames_commits_and_writers(client: TestClient, run: str) -> None:
    _post(client, run, [30, 40])
    assert client.get(f"/v1/records/{run}/trajectory/frames/0").status_code == 200
    assert client.get("/v1/records/nope/trajectory/frames/0").status_code == 404
    samples = _samples(client)
    requests = "mrecd_http_requests_total"
    assert samples[(requests, (("method", "POST"), ("route", POST), ("status", "200")))] == 2
    frame_route = "/v1/records/{name}/trajectory/frames/{i}"
    assert samples[(requests, (("method", "GET"), ("route", frame_route), ("status", "200")))] == 1
    assert samples[(requests, (("method", "GET"), ("route", frame_route), ("status", "404")))] == 1
    assert samples[("mrecd_frames_appended_total", ())] == 5  # 3 from the fixture, then 2
    assert samples[("mrecd_commit_frames_count", ())] == 2
    assert samples[("mrecd_commit_frames_sum", ())] == 5
    assert samples[("mrecd_commit_frames_bucket", (("le", "4.0"),))] == 2
    assert samples[("mrecd_commit_requests_sum", ())] == 2
    assert samples[("mrecd_open_writers", ())] == 1
    latency = "mrecd_http_request_duration_seconds_count"
    assert samples[(latency, (("method", "POST"), ("route", POST)))] == 2


def test_unrouted_paths_share_one_label(client: TestClient) -> None:
    for i in range(3):
        assert client.get(f"/no/such/{i}").status_code == 404
    samples = _samples(client)
    key = (
        "mrecd_http_requests_total",
        (("method", "GET"), ("route", "unmatched"), ("status", "404")),
    )
    assert samples[key] == 3


def test_each_app_counts_alone(make_client: Callable[..., TestClient]) -> None:
    first, second = make_client(), make_client()
    for _ in range(2):
        first.get("/healthz")
    second.get("/healthz")
    key = (
        "mrecd_http_requests_total",
        (("method", "GET"), ("route", "/healthz"), ("status", "200")),
    )
    assert _samples(first)[key] == 2
    assert _samples(second)[key] == 1


@pytest.fixture
def guarded(store_dir: Path) -> Iterator[Callable[..., TestClient]]:
    """``guarded(policy, client_host)``: an app with tokens, seen from ``client_host``."""
    clients: list[TestClient] = []

    def factory(policy: str, host: str) -> TestClient:
        settings = Settings(
            store=str(store_dir),
            tokens=[
                {"token": "reader", "scope": "read"},
                {"token": "narrow", "scope": "read", "prefix": "run-"},
            ],
            metrics_anonymous=policy,
        )
        c = TestClient(create_app(settings), client=(host, 40000))
        c.__enter__()
        clients.append(c)
        return c

    yield factory
    for c in clients:
        c.__exit__(None, None, None)


@pytest.mark.parametrize(
    ("policy", "host", "status"),
    [
        ("loopback", "127.0.0.1", 200),
        ("loopback", "::1", 200),
        ("loopback", "10.1.2.3", 401),
        ("always", "10.1.2.3", 200),
        ("never", "127.0.0.1", 401),
    ],
)
def test_anonymous_scrapes_follow_the_policy(
    guarded: Callable[..., TestClient], policy: str, host: str, status: int
) -> None:
    r = guarded(policy, host).get("/metrics")
    assert r.status_code == status
    if status != 200:
        assert r.headers["content-type"] == PROBLEM
        assert r.json()["status"] == status


def test_a_scrape_with_a_token_needs_read_on_every_name(guarded: Callable[..., TestClient]) -> None:
    c = guarded("never", "10.1.2.3")
    assert c.get("/metrics", headers={"Authorization": "Bearer reader"}).status_code == 200
    narrow = c.get("/metrics", headers={"Authorization": "Bearer narrow"})
    assert narrow.status_code == 403
    assert narrow.headers["content-type"] == PROBLEM
    assert c.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401


def _access_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [json.loads(r.getMessage()) for r in caplog.records if r.name == "mrecd.access"]


def test_one_access_line_per_request(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mrecd.access")
    assert client.put("/v1/records/log-1", json={}).status_code == 201
    _post(client, "log-1", [0, 1])
    r = client.get("/v1/records/log-1/trajectory")
    assert client.get("/v1/records/log-1/meta").status_code == 200
    assert client.get("/v1/records/none/trajectory").status_code == 404
    lines = _access_lines(caplog)
    assert [(x["method"], x["status"]) for x in lines] == [
        ("PUT", 201),
        ("POST", 200),
        ("GET", 200),
        ("GET", 200),
        ("GET", 404),
    ]
    summary = lines[2]
    assert summary["path"] == "/v1/records/log-1/trajectory"
    assert summary["route"] == "/v1/records/{name}/trajectory"
    assert summary["nstep"] == 2
    assert summary["bytes"] == len(r.content)
    assert summary["client"] == "testclient:50000"
    assert summary["duration_ms"] >= 0
    assert lines[3]["nstep"] is None  # a section read names no nstep
    assert set(lines[4]) == {
        "method", "path", "route", "status", "duration_ms", "bytes", "nstep", "client"
    }  # fmt: skip
    record = next(r for r in caplog.records if r.name == "mrecd.access")
    assert record.access["method"] == "PUT"  # type: ignore[attr-defined]


def test_serve_writes_access_lines_and_opens_metrics_to_loopback(tmp_path: Path) -> None:
    """``mrecd serve`` with tokens: JSON access lines on stdout; a local scraper needs none."""
    port = _free_port()
    env = {**ENV, "MRECD_TOKENS": json.dumps([{"token": "s3cret", "scope": "admin"}])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mrecd.cli", "serve", str(tmp_path / "d"), "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(proc, base)
        assert httpx.get(f"{base}/v1/records").status_code == 401
        r = httpx.get(f"{base}/metrics")
        assert r.status_code == 200 and "mrecd_http_requests_total" in r.text
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert {(x["route"], x["status"]) for x in lines} >= {("/v1/records", 401), ("/metrics", 200)}
    assert all(x["client"].startswith("127.0.0.1:") for x in lines)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(proc: subprocess.Popen[str], base: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert proc.poll() is None, "mrecd serve exited"
        assert time.monotonic() < deadline, "mrecd serve did not answer"
        time.sleep(0.1)


def test_a_failure_is_counted_and_logged_as_500(
    store_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(Settings(store=str(store_dir)))

    def broken() -> None:
        raise RuntimeError("the store fell over")

    app.dependency_overrides[get_runs] = broken
    caplog.set_level(logging.INFO, logger="mrecd.access")
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/v1/records/x")
        assert r.status_code == 500 and r.headers["content-type"] == PROBLEM
    text = app.state.metrics.render().decode()  # /metrics itself needs the broken dependency
    counted = {
        (s.labels["route"], s.labels["status"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "mrecd_http_requests_total"
    }
    assert counted == {("/v1/records/{name}", "500"): 1}
    assert [x["status"] for x in _access_lines(caplog)] == [500]
