"""Exactly once under faults: dropped responses, overtaking batches, 503s, fenced producers.

The faults come from an httpx transport that forwards to the real server and
then misbehaves (drops the answer of a request the server has handled, holds
a request back, answers 503 itself), so every request that does reach the
server is handled by the real code. Every body runs with both clients.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import numpy as np
import pytest

import mrecd
from mrecd_client import Client

from .conftest import collect, make_frame, take, wait

pytestmark = pytest.mark.anyio

Rule = Callable[[httpx.Request, int], str | None]


class Faulty(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Forwards to the server; ``rule(request, n)`` (``n``: how many such requests so far) says

    ``"drop"`` (forward, then raise ``ReadError`` as if the answer were lost),
    ``"cut"`` (forward, then break the body off halfway with a ``ReadError``),
    ``"refuse"`` (``ConnectError``, nothing sent), ``"busy"`` (answer 503 without
    forwarding), ``"hold"`` (forward after 0.3 s), or ``None`` (forward).
    """

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.sync = httpx.HTTPTransport()
        self.async_ = httpx.AsyncHTTPTransport()
        self.counts: dict[str, int] = {}
        self.actions: list[tuple[str, str]] = []
        self.headers: list[httpx.Headers] = []
        self._mutex = threading.Lock()

    def _action(self, request: httpx.Request) -> str | None:
        with self._mutex:
            key = request.method
            self.counts[key] = self.counts.get(key, 0) + 1
            action = self.rule(request, self.counts[key])
            self.headers.append(request.headers)
            if action is not None:
                self.actions.append((request.method, action))
            return action

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        action = self._action(request)
        if action == "refuse":
            raise httpx.ConnectError("refused by the test", request=request)
        if action == "busy":
            return httpx.Response(503, headers={"Retry-After": "0"}, request=request)
        if action == "hold":
            time.sleep(0.3)
        response = self.sync.handle_request(request)
        if action in ("drop", "cut"):
            response.read()
            response.close()
            if action == "cut":
                return _cut(response, request)
            raise httpx.ReadError("answer dropped by the test", request=request)
        return response

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        action = self._action(request)
        if action == "refuse":
            raise httpx.ConnectError("refused by the test", request=request)
        if action == "busy":
            return httpx.Response(503, headers={"Retry-After": "0"}, request=request)
        if action == "hold":
            await asyncio.sleep(0.3)
        response = await self.async_.handle_async_request(request)
        if action in ("drop", "cut"):
            await response.aread()
            await response.aclose()
            if action == "cut":
                return _cut(response, request)
            raise httpx.ReadError("answer dropped by the test", request=request)
        return response


class BrokenBody(httpx.SyncByteStream, httpx.AsyncByteStream):
    """Some bytes of a body, then the connection breaks."""

    def __init__(self, head: bytes, request: httpx.Request) -> None:
        self.head, self.request = head, request

    def __iter__(self) -> Iterator[bytes]:
        yield self.head
        raise httpx.ReadError("body broken off by the test", request=self.request)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.head
        raise httpx.ReadError("body broken off by the test", request=self.request)


def _cut(response: httpx.Response, request: httpx.Request) -> httpx.Response:
    """``response`` with only the first half of its (decoded) body, then a broken connection."""
    skip = {"content-length", "content-encoding", "transfer-encoding"}
    headers = [(k, v) for k, v in response.headers.items() if k.lower() not in skip]
    body = BrokenBody(response.content[: len(response.content) // 2], request)
    return httpx.Response(response.status_code, headers=headers, stream=body, request=request)


def _is_post(request: httpx.Request) -> bool:
    return request.method == "POST"


def assert_exactly_once(store: Any, name: str, frames: list[mrecd.Frame]) -> None:
    """The store holds exactly ``frames``, in order, bit-identical (read by the local API)."""
    traj = mrecd.open(store).record(name).trajectory
    assert traj is not None
    assert len(traj) == len(frames)
    assert traj.steps().tolist() == [f.step for f in frames]
    for i in (0, len(frames) // 2, len(frames) - 1):
        stored, sent = traj[i]["atoms"], frames[i]["atoms"]
        for column in ("x", "y", "z"):
            assert stored[column].values.tobytes() == sent[column].values.tobytes()


async def test_dropped_answers_land_every_frame_once(
    make_client: Callable[..., Any], live_server: str, store_dir: Any
) -> None:
    # the first answer to every other batch is lost after the server committed it, and some
    # reads' too; keyed by the batch (not by a global count, which concurrent batches share,
    # so one batch could lose every answer and exhaust its retries)
    sent: set[str] = set()

    def rule(request: httpx.Request, n: int) -> str | None:
        if request.method == "GET":
            return "drop" if n % 5 == 0 else None
        seq = request.headers.get("producer-seq", "")
        first = seq not in sent
        sent.add(seq)
        return "drop" if first and seq.isdigit() and int(seq) % 2 == 0 else None

    transport = Faulty(rule)
    client = make_client(live_server, transport=transport, batch_frames=8, max_in_flight=4)
    frames = [make_frame(s) for s in range(120)]
    record = await wait(client.create_record("dropped"))
    traj = record.trajectory
    for start in range(0, 120, 10):
        assert await wait(traj.extend(frames[start : start + 10])) == start + 10
    assert await wait(traj.flush()) == 120
    assert len(traj) == 120 and await wait(traj.refresh()) == 120
    assert_exactly_once(store_dir, "dropped", frames)
    assert np.array_equal(await wait(traj.steps()), np.arange(120))
    for i in (0, 7, 64, 119):  # reads resent after a lost answer give the same frames
        assert (await wait(traj.read(i))) == frames[i]
    assert ("POST", "drop") in transport.actions and ("GET", "drop") in transport.actions


async def test_a_batch_overtaken_by_the_next_lands_in_order(
    make_client: Callable[..., Any], live_server: str, store_dir: Any
) -> None:
    # the first batch is held back, so the second reaches the server first (a sequence gap)
    transport = Faulty(lambda r, n: "hold" if _is_post(r) and n == 1 else None)
    client = make_client(live_server, transport=transport, batch_frames=4, max_in_flight=4)
    frames = [make_frame(s) for s in range(16)]
    record = await wait(client.create_record("overtaken"))
    await wait(record.trajectory.extend(frames))
    assert await wait(record.trajectory.flush()) == 16
    assert_exactly_once(store_dir, "overtaken", frames)


async def test_503_and_refused_connections_are_retried(
    make_client: Callable[..., Any], live_server: str, store_dir: Any
) -> None:
    actions = {1: "busy", 2: "refuse", 3: "busy"}
    transport = Faulty(lambda r, n: actions.get(n))
    client = make_client(live_server, transport=transport)
    record = await wait(client.create_record("busy"))
    await wait(record.trajectory.extend([make_frame(s) for s in range(3)]))
    assert await wait(record.trajectory.flush()) == 3
    assert ("PUT", "busy") in transport.actions and ("POST", "busy") in transport.actions


async def test_retries_give_up_with_a_retryable_error(
    make_client: Callable[..., Any], live_server: str
) -> None:
    client = make_client(live_server, transport=Faulty(lambda r, n: "refuse"), retries=2)
    with pytest.raises(mrecd.RetryableError, match="after retries"):
        await wait(client.records())
    busy = make_client(live_server, transport=Faulty(lambda r, n: "busy"), retries=1)
    with pytest.raises(mrecd.RetryableError):
        await wait(busy.records())


async def test_a_create_whose_answer_is_lost_is_not_resent(
    make_client: Callable[..., Any], live_server: str
) -> None:
    # resending would answer 409 for the record this very call created: surface the loss instead
    transport = Faulty(lambda r, n: "drop" if r.method == "PUT" else None)
    client = make_client(live_server, transport=transport)
    with pytest.raises(mrecd.RetryableError):
        await wait(client.create_record("lost"))
    assert transport.counts["PUT"] == 1


async def test_a_restarted_job_fences_the_old_producer(
    make_client: Callable[..., Any], live_server: str, store_dir: Any
) -> None:
    client = make_client(live_server)
    old = (await wait(client.create_record("job"))).trajectory
    old.claim("job-7", 0)
    await wait(old.extend([make_frame(s) for s in range(3)]))
    await wait(old.flush())
    new = (await wait(client.create_record("job", exist_ok=True))).trajectory
    new.claim("job-7", 1)
    await wait(new.append(make_frame(3)))
    assert await wait(new.flush()) == 4
    await wait(old.append(make_frame(4)))
    with pytest.raises(mrecd.ProducerFenced) as caught:
        await wait(old.flush())
    assert caught.value.epoch == 1
    with pytest.raises(mrecd.ProducerFenced):
        await wait(old.append(make_frame(5)))
    assert mrecd.open(store_dir).record("job").trajectory.steps().tolist() == [0, 1, 2, 3]


async def test_producer_headers_travel_with_appends(
    make_client: Callable[..., Any], live_server: str
) -> None:
    transport = Faulty(lambda r, n: None)
    client = make_client(live_server, transport=transport, batch_frames=2)
    traj = (await wait(client.create_record("headers"))).trajectory
    traj.claim("job-1", 5)
    await wait(traj.extend([make_frame(s) for s in range(5)]))
    await wait(traj.flush())
    posts = [h for h in transport.headers if "producer-id" in h]
    assert sorted(int(h["producer-seq"]) for h in posts) == [0, 1, 2]
    assert {(h["producer-id"], h["producer-epoch"]) for h in posts} == {("job-1", "5")}


async def test_follow_sees_frames_another_writer_appends(
    client: Any, live_server: str, store_dir: Any
) -> None:
    record = await wait(client.create_record("live"))
    await wait(record.trajectory.extend([make_frame(s) for s in range(2)]))
    await wait(record.trajectory.flush())
    reader = (await wait(client.record("live"))).trajectory
    assert len(reader) == 2

    def writer() -> None:
        time.sleep(0.2)
        with Client(live_server) as other:
            traj = other.record("live", "r+").trajectory
            assert traj is not None
            for step in range(2, 8):
                traj.append(make_frame(step))
                traj.flush()
                time.sleep(0.02)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        got = await take(reader.follow(), 6)
    finally:
        thread.join(30)
    assert [f.step for f in got] == list(range(2, 8))
    assert len(reader) == 8
    replay = await take(reader.follow(start=0), 8)
    assert [f.step for f in replay] == list(range(8))
    assert [f.step for f in await collect(reader)] == list(range(8))


async def test_follow_resumes_after_a_broken_stream(
    make_client: Callable[..., Any], live_server: str
) -> None:
    # the first events connection is refused: follow() reconnects with Last-Event-ID
    transport = Faulty(lambda r, n: "refuse" if r.url.path.endswith("/events") and n <= 2 else None)
    client = make_client(live_server, transport=transport)
    record = await wait(client.create_record("resume"))
    await wait(record.trajectory.extend([make_frame(s) for s in range(4)]))
    await wait(record.trajectory.flush())
    got = await take(record.trajectory.follow(start=1), 3)
    assert [f.step for f in got] == [1, 2, 3]
    events = [h for h in transport.headers if h.get("accept") == "text/event-stream"]
    assert events and all(h["last-event-id"] == "1" for h in events)


async def test_a_slice_stream_broken_off_resumes_where_it_stopped(
    make_client: Callable[..., Any], live_server: str
) -> None:
    def rule(request: httpx.Request, n: int) -> str | None:
        streamed = request.url.path.endswith("/frames") and request.method == "GET"
        return "cut" if streamed and "start=3" in str(request.url) else None

    transport = Faulty(rule)
    client = make_client(live_server, transport=transport)
    frames = [make_frame(s) for s in range(20)]
    traj = (await wait(client.create_record("cut"))).trajectory
    await wait(traj.extend(frames))
    await wait(traj.flush())
    got = await collect(traj[3:])
    assert [f.step for f in got] == list(range(3, 20)) and got == frames[3:]
    assert ("GET", "cut") in transport.actions
