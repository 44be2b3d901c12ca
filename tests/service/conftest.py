"""Fixtures for the service: the app in-process (TestClient) and a real uvicorn on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

import mrecd
from _uvicorn import free_port, serve_app
from mrecd.codecs import encode_frame
from mrecd.service import Settings, create_app

FRAME = "application/x-mrec-frame"
FRAMES = "application/x-mrec-frames"
PROBLEM = "application/problem+json"


def make_frame(step: int, n: int = 4, *, pe: float | None = None) -> mrecd.Frame:
    """A trajectory frame: ``n`` atoms with positions, meta ``pe``, ``step`` and ``time``."""
    rng = np.random.default_rng(step)
    xyz = {c: rng.uniform(0, 20, n) for c in "xyz"}
    return mrecd.Frame(
        {"atoms": xyz},
        meta={"pe": float(-step) if pe is None else pe},
        step=step,
        time=0.5 * step,
    )


def mrf1(frame: mrecd.Frame) -> bytes:
    """The wire bytes of one frame."""
    return encode_frame(frame, meta_types=True)


def stream(frames: list[mrecd.Frame]) -> bytes:
    """``application/x-mrec-frames``: each frame preceded by its u64 LE length."""
    out = b""
    for frame in frames:
        data = mrf1(frame)
        out += len(data).to_bytes(8, "little") + data
    return out


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def make_client(store_dir: Path) -> Iterator[Callable[..., TestClient]]:
    """``make_client(**settings)``: a TestClient of an app on ``store_dir`` (lifespan run)."""
    clients: list[TestClient] = []

    def factory(**settings: Any) -> TestClient:
        client = TestClient(create_app(Settings(store=str(store_dir), **settings)))
        client.__enter__()
        clients.append(client)
        return client

    yield factory
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client()


@pytest.fixture
def run(client: TestClient) -> str:
    """A record ``run-1`` created with a name only, then 3 frames posted (steps 0, 10, 20)."""
    assert client.put("/v1/records/run-1", json={}).status_code == 201
    body = stream([make_frame(s) for s in (0, 10, 20)])
    r = client.post(
        "/v1/records/run-1/trajectory/frames", content=body, headers={"Content-Type": FRAMES}
    )
    assert r.status_code == 200, r.text
    return "run-1"


_free_port = free_port  # the name the service tests import


@pytest.fixture
def live_server(store_dir: Path) -> Iterator[str]:
    """A real uvicorn serving ``store_dir`` on 127.0.0.1 in a thread; its base URL."""
    settings = Settings(store=str(store_dir), events_poll_seconds=0.05)
    with serve_app(create_app(settings)) as url:
        yield url
