"""Response compression: gzip and zstd when asked, identity otherwise, SSE never buffered."""

from __future__ import annotations

import gzip
import time

import httpx
import pytest
import zstandard
from fastapi.testclient import TestClient

from .conftest import FRAME, FRAMES, PROBLEM, make_frame, mrf1, stream


def _decode(encoding: str, raw: bytes) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(raw)
    return zstandard.ZstdDecompressor().decompressobj().decompress(raw)


def _raw(client: TestClient, url: str, headers: dict[str, str]) -> tuple[httpx.Headers, bytes]:
    """The response headers and body bytes as sent (not decoded by the client)."""
    with client.stream("GET", url, headers=headers) as r:
        assert r.status_code < 500
        return r.headers, b"".join(r.iter_raw())


URLS = [
    "/v1/records/{run}/trajectory/frames?start=0",  # a streamed slice, x-mrec-frames
    "/v1/records/{run}/trajectory/frames/-1",  # one frame, MRF1
    "/v1/records/{run}/trajectory/frames/-1?columns=x",  # a projection
]


@pytest.mark.parametrize("encoding", ["gzip", "zstd"])
@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("accept", ["*/*", "application/json"])
def test_compressed_bodies_decode_to_the_same_bytes(
    client: TestClient, run: str, encoding: str, url: str, accept: str
) -> None:
    body = stream([make_frame(s, n=400) for s in (30, 40)])
    client.post(
        f"/v1/records/{run}/trajectory/frames", content=body, headers={"Content-Type": FRAMES}
    )
    url = url.format(run=run)
    plain_headers, plain = _raw(client, url, {"Accept-Encoding": "identity", "Accept": accept})
    asked = {"Accept-Encoding": f"{encoding}, identity;q=0.1", "Accept": accept}
    headers, raw = _raw(client, url, asked)
    assert "content-encoding" not in plain_headers
    assert headers["content-encoding"] == encoding
    assert "accept-encoding" in headers["vary"].lower()
    assert raw != plain
    assert _decode(encoding, raw) == plain
    assert headers["content-type"] == plain_headers["content-type"]


def test_problems_are_compressed_too(client: TestClient) -> None:
    headers, raw = _raw(client, "/v1/records/" + "x" * 600, {"Accept-Encoding": "gzip"})
    assert headers["content-type"] == PROBLEM and headers["content-encoding"] == "gzip"
    assert b'"status":404' in gzip.decompress(raw) or b'"status":422' in gzip.decompress(raw)


@pytest.mark.parametrize("asked", ["identity", "br", "gzip;q=0, zstd;q=0", "compress"])
def test_no_compression_unless_asked(client: TestClient, run: str, asked: str) -> None:
    url = f"/v1/records/{run}/trajectory/frames?start=0"
    headers, raw = _raw(client, url, {"Accept-Encoding": asked})
    assert "content-encoding" not in headers
    assert raw.startswith(len(mrf1(make_frame(0))).to_bytes(8, "little"))


def test_without_accept_encoding_nothing_is_compressed(client: TestClient, run: str) -> None:
    url = f"/v1/records/{run}/trajectory/frames/0"
    _, plain = _raw(client, url, {"Accept-Encoding": "identity"})
    request = client.build_request("GET", url)
    del request.headers["accept-encoding"]  # httpx asks for gzip unless told otherwise
    r = client.send(request)
    assert r.status_code == 200 and "content-encoding" not in r.headers
    assert r.content == plain


@pytest.mark.parametrize("encoding", ["gzip", "zstd"])
def test_events_arrive_promptly_when_compressed(live_server: str, encoding: str) -> None:
    """A commit event reaches a client asking for compression within a poll or two."""
    with httpx.Client(base_url=live_server, timeout=10) as http:
        assert http.put("/v1/records/sse", json={}).status_code == 201
        post = http.post(
            "/v1/records/sse/trajectory/frames",
            content=mrf1(make_frame(0)),
            headers={"Content-Type": FRAME},
        )
        assert post.status_code == 200
        with (
            httpx.Client(base_url=live_server, timeout=5) as follower,
            follower.stream(
                "GET", "/v1/records/sse/trajectory/events", headers={"Accept-Encoding": encoding}
            ) as events,
        ):
            assert events.headers["content-encoding"] == encoding
            chunks = events.iter_bytes()
            assert next(chunks).startswith(b"retry:")  # flushed before any commit
            sent = time.monotonic()
            r = http.post(
                "/v1/records/sse/trajectory/frames",
                content=mrf1(make_frame(1)),
                headers={"Content-Type": FRAME},
            )
            assert r.status_code == 200
            seen = b""
            while b"event: commit" not in seen:
                seen += next(chunks)  # a buffered stream would time out here
            assert time.monotonic() - sent < 2.0
            assert b"id: 2" in seen
