"""Against a real uvicorn on loopback: server-sent events, raw Zarr keys, zarr-python over HTTP."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import zarr
from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, Store
from zarr.core.buffer import Buffer, BufferPrototype

from .conftest import FRAME, PROBLEM, make_frame, mrf1


def _start_run(base: str, steps: Iterable[int] = (0, 10, 20)) -> None:
    assert httpx.put(f"{base}/v1/records/live", json={}).status_code == 201
    for step in steps:
        post(base, step)


def post(base: str, step: int) -> httpx.Response:
    r = httpx.post(
        f"{base}/v1/records/live/trajectory/frames",
        content=mrf1(make_frame(step)),
        headers={"Content-Type": FRAME},
    )
    assert r.status_code == 200, r.text
    return r


def _events(base: str, headers: dict[str, str], want: int) -> list[dict[str, str]]:
    """The first ``want`` events of the stream (fields of each)."""
    events: list[dict[str, str]] = []
    current: dict[str, str] = {}
    url = f"{base}/v1/records/live/trajectory/events"
    with httpx.stream("GET", url, headers=headers, timeout=10) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if not line:
                if "event" in current:
                    events.append(current)
                current = {}
                if len(events) == want:
                    break
                continue
            field, _, value = line.partition(":")
            current[field] = value.strip()
    return events


def test_events_one_per_commit_and_resume(live_server: str) -> None:
    _start_run(live_server)
    timer = threading.Timer(0.3, post, (live_server, 30))
    timer.start()
    events = _events(live_server, {}, 1)
    timer.join()
    assert events[0]["event"] == "commit" and events[0]["id"] == "4"
    resumed = _events(live_server, {"Last-Event-ID": "2"}, 1)
    assert resumed[0]["id"] == "4" and '"previous": 2' in resumed[0]["data"]


def test_raw_keys_with_ranges(live_server: str) -> None:
    _start_run(live_server)
    url = f"{live_server}/v1/records/live/zarr/trajectory/atoms/x/c/0"
    whole = httpx.get(url)
    assert whole.status_code == 200 and whole.headers["accept-ranges"] == "bytes"
    size = len(whole.content)
    part = httpx.get(url, headers={"Range": "bytes=2-5"})
    assert part.status_code == 206 and part.content == whole.content[2:6]
    assert part.headers["content-range"] == f"bytes 2-5/{size}"
    suffix = httpx.get(url, headers={"Range": "bytes=-4"})
    assert suffix.status_code == 206 and suffix.content == whole.content[-4:]
    tail = httpx.get(url, headers={"Range": "bytes=3-"})
    assert tail.content == whole.content[3:]
    beyond = httpx.get(url, headers={"Range": f"bytes={size}-"})
    assert beyond.status_code == 416 and beyond.headers["content-range"] == f"bytes */{size}"
    assert beyond.headers["content-type"] == PROBLEM
    etag = whole.headers["etag"]
    assert httpx.get(url, headers={"If-None-Match": etag}).status_code == 304
    missing = httpx.get(f"{live_server}/v1/records/live/zarr/nope/zarr.json")
    assert missing.status_code == 404 and missing.headers["content-type"] == PROBLEM
    escape = httpx.get(f"{live_server}/v1/records/live/zarr/a/%2E%2E/%2E%2E/zarr.json")
    assert escape.status_code in (404, 422)


class HTTPStore(Store):
    """A minimal read-only zarr store over ``GET .../zarr/{key}`` with Range requests."""

    supports_writes = False
    supports_deletes = False
    supports_partial_writes = False
    supports_listing = False

    def __init__(self, base: str) -> None:
        super().__init__(read_only=True)
        self.base = base

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HTTPStore) and other.base == self.base

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        headers = {}
        if isinstance(byte_range, RangeByteRequest):
            headers["Range"] = f"bytes={byte_range.start}-{byte_range.end - 1}"
        elif isinstance(byte_range, OffsetByteRequest):
            headers["Range"] = f"bytes={byte_range.offset}-"
        elif byte_range is not None:
            headers["Range"] = f"bytes=-{byte_range.suffix}"
        async with httpx.AsyncClient() as client:
            r = await client.get(f"{self.base}/{key}", headers=headers)
        if r.status_code == 404:
            return None
        r.raise_for_status()
        return prototype.buffer.from_bytes(r.content)

    async def get_partial_values(
        self, prototype: BufferPrototype, key_ranges: Iterable[tuple[str, ByteRequest | None]]
    ) -> list[Buffer | None]:
        return [await self.get(k, prototype, r) for k, r in key_ranges]

    async def exists(self, key: str) -> bool:
        async with httpx.AsyncClient() as client:
            return (await client.head(f"{self.base}/{key}")).status_code == 200

    async def set(self, key: str, value: Buffer) -> None:
        raise NotImplementedError

    async def delete(self, key: str) -> None:
        raise NotImplementedError

    def list(self) -> Any:
        raise NotImplementedError

    def list_prefix(self, prefix: str) -> Any:
        raise NotImplementedError

    def list_dir(self, prefix: str) -> Any:
        raise NotImplementedError


@pytest.mark.parametrize("array", ["trajectory/atoms/x", "trajectory/meta/pe"])
def test_zarr_python_reads_the_served_record(live_server: str, store_dir: Path, array: str) -> None:
    _start_run(live_server)
    remote = zarr.open_array(HTTPStore(f"{live_server}/v1/records/live/zarr"), path=array, mode="r")
    local = zarr.open_array(store_dir / "live.mrec", path=array, mode="r")
    got, want = remote[...], local[...]
    assert got.dtype == want.dtype and got.shape == want.shape and got.size > 0
    assert got.tobytes() == want.tobytes()
    if array.endswith("pe"):
        np.testing.assert_array_equal(got[:3], [0.0, -10.0, -20.0])


def test_concurrent_conditional_posts_land_once(live_server: str) -> None:
    """Eight POSTs with the same ``If-Match`` at once: one lands, seven get 412 with nstep 4."""
    _start_run(live_server)
    barrier = threading.Barrier(8)
    statuses: list[tuple[int, Any]] = []

    def attempt(step: int) -> None:
        barrier.wait()
        r = httpx.post(
            f"{live_server}/v1/records/live/trajectory/frames",
            content=mrf1(make_frame(step)),
            headers={"Content-Type": FRAME, "If-Match": '"3"'},
            timeout=30,
        )
        statuses.append((r.status_code, r.json()))

    threads = [threading.Thread(target=attempt, args=(100 + i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = sorted(code for code, _ in statuses)
    assert codes == [200] + [412] * 7
    assert all(body["nstep"] == 4 for _, body in statuses)
    assert httpx.get(f"{live_server}/v1/records/live/trajectory").json()["nstep"] == 4


def test_hidden_store_files_are_not_served(tmp_path: Path) -> None:
    import mrecd

    catalog = mrecd.open(tmp_path)
    catalog.create_record("r", system=mrecd.Frame({"atoms": {"x": [0.0]}})).close()
    (tmp_path / "r.mrec" / ".zarr.json.lock").write_text("")
    assert catalog.key_info("r", ".zarr.json.lock") is None
    assert catalog.read_key("r", ".zarr.json.lock") is None
    assert catalog.read_key("r", "zarr.json") is not None
