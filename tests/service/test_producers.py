"""Idempotent producers over HTTP: ``Producer-Id``, ``Producer-Epoch``, ``Producer-Seq``.

One test per rule of the wire contract: a duplicate answers as the first
time, a gap is refused after waiting (and admitted when the missing batch
comes within the wait), a stale epoch is fenced, a new epoch takes over,
malformed headers are 422 naming the header, refused frames do not advance
the sequence, and the state survives a restart of the service.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

import mrecd

from .conftest import FRAMES, PROBLEM, make_frame, stream

POST = "/v1/records/{}/trajectory/frames"


def producer(pid: str, epoch: int | str, seq: int | str) -> dict[str, str]:
    return {"Producer-Id": pid, "Producer-Epoch": str(epoch), "Producer-Seq": str(seq)}


def post(
    client: TestClient | httpx.Client, name: str, steps: list[int], **headers: str
) -> httpx.Response:
    body = stream([make_frame(s) for s in steps])
    return client.post(POST.format(name), content=body, headers={"Content-Type": FRAMES, **headers})


def steps_of(client: TestClient | httpx.Client, name: str) -> list[int]:
    return list(client.get(f"/v1/records/{name}/trajectory/steps").json()["steps"])


@pytest.fixture
def gap_client(make_client: Callable[..., TestClient]) -> TestClient:
    """A client of an app that waits only 0.3 s for a missing batch."""
    client = make_client(producer_gap_wait_seconds=0.3)
    assert client.put("/v1/records/p", json={}).status_code == 201
    return client


def test_a_batch_answers_with_duplicate_false(gap_client: TestClient) -> None:
    r = post(gap_client, "p", [0, 10], **producer("job", 0, 0))
    assert r.status_code == 200
    assert r.json() == {"nstep": 2, "first": 0, "count": 2, "duplicate": False}


def test_a_retry_answers_as_the_first_time_and_lands_nothing(gap_client: TestClient) -> None:
    first = post(gap_client, "p", [0, 10], **producer("job", 0, 0)).json()
    post(gap_client, "p", [20], **producer("job", 0, 1))
    post(gap_client, "p", [30])  # a plain POST: nstep moves on
    again = post(gap_client, "p", [0, 10], **producer("job", 0, 0), **{"If-Match": '"0"'})
    assert again.status_code == 200
    assert again.json() == {**first, "duplicate": True}
    assert steps_of(gap_client, "p") == [0, 10, 20, 30]


def test_a_gap_waits_then_is_refused(gap_client: TestClient) -> None:
    post(gap_client, "p", [0], **producer("job", 0, 0))
    started = time.monotonic()
    r = post(gap_client, "p", [20], **producer("job", 0, 2))
    assert time.monotonic() - started >= 0.25  # it waited for sequence 1
    assert r.status_code == 409 and r.headers["content-type"] == PROBLEM
    problem = r.json()
    assert problem["type"].endswith("sequence-gap") and problem["expected"] == 1
    assert steps_of(gap_client, "p") == [0]


def test_an_unknown_producer_starts_at_zero(gap_client: TestClient) -> None:
    post(gap_client, "p", [0])
    r = post(gap_client, "p", [10], **producer("new", 3, 4))
    assert r.status_code == 409 and r.json()["expected"] == 0
    assert steps_of(gap_client, "p") == [0]


def test_a_stale_epoch_is_fenced_and_a_new_one_takes_over(gap_client: TestClient) -> None:
    post(gap_client, "p", [0], **producer("job", 1, 0))
    post(gap_client, "p", [10], **producer("job", 1, 1))
    restart = post(gap_client, "p", [20], **producer("job", 2, 0))
    assert restart.json() == {"nstep": 3, "first": 2, "count": 1, "duplicate": False}
    zombie = post(gap_client, "p", [30], **producer("job", 1, 2))
    assert zombie.status_code == 409 and zombie.headers["content-type"] == PROBLEM
    assert zombie.json()["type"].endswith("producer-fenced") and zombie.json()["epoch"] == 2
    assert post(gap_client, "p", [10], **producer("job", 1, 1)).status_code == 409
    assert steps_of(gap_client, "p") == [0, 10, 20]


@pytest.mark.parametrize(
    ("headers", "path"),
    [
        ({"Producer-Id": "job"}, "Producer-Epoch"),
        ({"Producer-Id": "job", "Producer-Epoch": "0"}, "Producer-Seq"),
        ({"Producer-Epoch": "0", "Producer-Seq": "0"}, "Producer-Id"),
        (producer("a b", 0, 0), "Producer-Id"),
        (producer("x" * 129, 0, 0), "Producer-Id"),
        (producer("job", -1, 0), "Producer-Epoch"),
        (producer("job", "1.0", 0), "Producer-Epoch"),
        (producer("job", 2**53, 0), "Producer-Epoch"),
        (producer("job", 0, "seven"), "Producer-Seq"),
        (producer("job", 0, 10**30), "Producer-Seq"),
    ],
)
def test_malformed_producer_headers_are_422_naming_the_header(
    gap_client: TestClient, headers: dict[str, str], path: str
) -> None:
    r = post(gap_client, "p", [0], **headers)
    assert r.status_code == 422 and r.headers["content-type"] == PROBLEM
    assert r.json()["path"] == path and r.json()["type"].endswith("invalid-record")
    assert gap_client.get("/v1/records/p/trajectory").json()["nstep"] == 0  # nothing landed


def test_refused_batches_do_not_advance_the_sequence(gap_client: TestClient) -> None:
    post(gap_client, "p", [0], **producer("job", 0, 0))
    bad = mrecd.Frame({"atoms": {"x": np.zeros(4)}}, step=20)  # declared columns missing
    body = stream([make_frame(10), bad])
    r = gap_client.post(
        POST.format("p"), content=body, headers={"Content-Type": FRAMES, **producer("job", 0, 1)}
    )
    assert r.status_code == 422
    assert post(gap_client, "p", [0], **producer("job", 0, 1)).status_code == 409  # step order
    stale = post(gap_client, "p", [10], **producer("job", 0, 1), **{"If-Match": '"7"'})
    assert stale.status_code == 412
    ok = post(gap_client, "p", [10], **producer("job", 0, 1))
    assert ok.json() == {"nstep": 2, "first": 1, "count": 1, "duplicate": False}


def test_the_state_survives_a_restart(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    client.put("/v1/records/p", json={})
    first = post(client, "p", [0, 10], **producer("job", 5, 0)).json()
    client.__exit__(None, None, None)  # the app shuts down (lease released, files closed)
    again = make_client()
    assert post(again, "p", [0, 10], **producer("job", 5, 0)).json() == {
        **first,
        "duplicate": True,
    }
    assert post(again, "p", [20], **producer("job", 5, 1)).json()["first"] == 2


@pytest.fixture
def live(store_dir: Path) -> Iterator[str]:
    """The app under a real uvicorn on loopback with a 5 s gap wait (the default)."""
    from .test_group_commit import serve_in_thread

    with serve_in_thread(store_dir) as (url, _):
        yield url


def test_a_gap_filled_within_the_wait_lands_both_in_order(live: str) -> None:
    async def scenario() -> tuple[httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(base_url=live, timeout=30) as client:
            assert (await client.put("/v1/records/p", json={})).status_code == 201
            await client.post(
                POST.format("p"),
                content=stream([make_frame(0)]),
                headers={"Content-Type": FRAMES, **producer("job", 0, 0)},
            )
            later = asyncio.create_task(
                client.post(
                    POST.format("p"),
                    content=stream([make_frame(20)]),
                    headers={"Content-Type": FRAMES, **producer("job", 0, 2)},
                )
            )
            await asyncio.sleep(0.3)  # sequence 2 is queued, waiting for 1
            earlier = await client.post(
                POST.format("p"),
                content=stream([make_frame(10)]),
                headers={"Content-Type": FRAMES, **producer("job", 0, 1)},
            )
            return earlier, await later

    earlier, later = asyncio.run(scenario())
    assert earlier.json() == {"nstep": 2, "first": 1, "count": 1, "duplicate": False}
    assert later.json() == {"nstep": 3, "first": 2, "count": 1, "duplicate": False}
    assert steps_of(httpx.Client(base_url=live), "p") == [0, 10, 20]
