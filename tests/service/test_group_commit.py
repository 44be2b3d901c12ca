"""Group commit: concurrent POSTs to one trajectory share one durable flush.

Requests queued while the record's lock is held are admitted in arrival
order and committed together; each answers its own ``{nstep, first, count,
duplicate}``; a refused request changes nothing for the others; the producer
state of every request lands in the group's one marker write.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from fastapi import FastAPI

import mrecd
from _uvicorn import serve_app
from mrecd import api
from mrecd.errors import InvalidRecord, PreconditionFailed, StepOrderError
from mrecd.service import Settings, create_app
from mrecd.service._runs import Runs

from .conftest import FRAMES, make_frame, stream


@contextlib.contextmanager
def serve_in_thread(store_dir: Path, **settings: Any) -> Iterator[tuple[str, FastAPI]]:
    """A real uvicorn serving ``store_dir`` on 127.0.0.1 in a thread: its URL and app."""
    app = create_app(Settings(store=str(store_dir), **settings))
    with serve_app(app) as url:
        yield url, app


def tagged(step: int, tag: float) -> mrecd.Frame:
    return make_frame(step, pe=tag)


# -- at the Runs level: a group formed deterministically behind a held lock ---------------------


def _marker(store_dir: Path, name: str) -> dict[str, Any]:
    doc = json.loads((store_dir / f"{name}.mrec" / "trajectory" / "zarr.json").read_text())
    return dict(doc["attributes"])


def test_one_group_one_flush_refusals_isolated(store_dir: Path) -> None:
    settings = Settings(store=str(store_dir))

    async def scenario() -> list[Any]:
        runs = Runs(api.open(store_dir))
        await runs.create("g", exist_ok=False)
        await runs.append("g", [tagged(0, 0.0)], settings=settings)
        assert runs.group_commits == 1
        undeclared = mrecd.Frame({"atoms": {"x": np.zeros(4)}, "ions": {"q": np.ones(2)}}, step=9)
        calls = [
            runs.append("g", [tagged(10, 1.0), tagged(20, 1.0)], settings=settings),
            runs.append("g", [tagged(30, 2.0), undeclared], settings=settings),  # 422
            runs.append("g", [tagged(30, 3.0)], expected_nstep=1, settings=settings),  # 412
            runs.append(
                "g", [tagged(30, 4.0)], producer=api.Producer("a", 0, 0), settings=settings
            ),
            runs.append("g", [tagged(25, 5.0)], settings=settings),  # 409 step order
            runs.append(
                "g", [tagged(40, 6.0)], producer=api.Producer("b", 2, 0), settings=settings
            ),
            runs.append(
                "g", [tagged(50, 7.0)], producer=api.Producer("a", 0, 1), settings=settings
            ),
            runs.append(  # a retry of a batch admitted earlier in the same group
                "g", [tagged(30, 4.0)], producer=api.Producer("a", 0, 0), settings=settings
            ),
        ]
        async with runs.lock("g"):  # a commit in progress: everything queues behind it
            tasks = [asyncio.create_task(c) for c in calls]
            await asyncio.sleep(0.05)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert runs.group_commits == 2  # the eight requests: one flush
        await runs.aclose()
        return results

    results = asyncio.run(scenario())
    assert results[0] == api.Appended(3, 1, 2)
    assert isinstance(results[1], InvalidRecord)
    assert isinstance(results[2], PreconditionFailed) and results[2].nstep == 3
    assert results[3] == api.Appended(4, 3, 1)
    assert isinstance(results[4], StepOrderError)
    assert results[5] == api.Appended(5, 4, 1)
    assert results[6] == api.Appended(6, 5, 1)
    assert results[7] == api.Appended(4, 3, 1, duplicate=True)
    with mrecd.open(store_dir).record("g") as record:
        assert record.trajectory is not None
        assert [f.step for f in record.trajectory] == [0, 10, 20, 30, 40, 50]
        assert [f.meta["pe"] for f in record.trajectory] == [0, 1, 1, 4, 6, 7]
    producers = _marker(store_dir, "g")["mrecd_producers"]
    assert {p["id"]: (p["epoch"], p["seq"]) for p in producers} == {"a": (0, 1), "b": (2, 0)}


def test_a_group_whose_requests_are_all_refused_writes_nothing(store_dir: Path) -> None:
    settings = Settings(store=str(store_dir))

    async def scenario() -> None:
        runs = Runs(api.open(store_dir))
        await runs.create("g", exist_ok=False)
        await runs.append("g", [tagged(0, 0.0)], settings=settings)
        with pytest.raises(StepOrderError):
            await runs.append("g", [tagged(0, 1.0)], settings=settings)
        assert runs.group_commits == 1
        await runs.aclose()

    asyncio.run(scenario())


# -- over HTTP: many posters at once ------------------------------------------------------------


POSTERS = 12
BATCHES = 6


async def _poster(client: httpx.AsyncClient, who: int, clock: list[int]) -> list[dict[str, Any]]:
    """Post BATCHES two-frame batches as producer ``p<who>``; re-step on a step-order 409."""
    answers = []
    for seq in range(BATCHES):
        while True:
            clock[0] += 10  # steps from one counter: later-taken steps may still arrive first
            step = clock[0]
            frames = [tagged(step, who * 1000 + seq * 10 + k) for k in range(2)]
            frames[1] = tagged(step + 5, who * 1000 + seq * 10 + 1)
            r = await client.post(
                "/v1/records/many/trajectory/frames",
                content=stream(frames),
                headers={
                    "Content-Type": FRAMES,
                    "Producer-Id": f"p{who}",
                    "Producer-Epoch": "0",
                    "Producer-Seq": str(seq),
                },
            )
            if r.status_code == 409 and r.json()["type"].endswith("step-order"):
                continue
            assert r.status_code == 200, r.text
            answers.append(r.json())
            break
    return answers


def test_concurrent_posters_land_exactly_once_in_fewer_flushes(store_dir: Path) -> None:
    with serve_in_thread(store_dir) as (url, app):

        async def scenario() -> list[list[dict[str, Any]]]:
            async with httpx.AsyncClient(base_url=url, timeout=60) as client:
                assert (await client.put("/v1/records/many", json={})).status_code == 201
                clock = [0]
                r = await client.post(
                    "/v1/records/many/trajectory/frames",
                    content=stream([tagged(0, -1.0)]),
                    headers={"Content-Type": FRAMES},
                )
                assert r.status_code == 200
                return list(
                    await asyncio.gather(*(_poster(client, w, clock) for w in range(POSTERS)))
                )

        answers = asyncio.run(scenario())
        runs: Runs = app.state.runs
        flushes = runs.group_commits
    with mrecd.open(store_dir).record("many") as record:
        traj = record.trajectory
        assert traj is not None
        tags = [f.meta["pe"] for f in traj]
        steps = list(traj.steps())
    expected = {
        w * 1000 + s * 10 + k for w in range(POSTERS) for s in range(BATCHES) for k in (0, 1)
    }
    assert len(tags) == 1 + 2 * POSTERS * BATCHES and set(tags[1:]) == expected
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    for who, mine in enumerate(answers):
        for seq, answer in enumerate(mine):
            assert answer["count"] == 2 and not answer["duplicate"]
            landed = tags[answer["first"] : answer["first"] + 2]
            assert landed == [who * 1000 + seq * 10, who * 1000 + seq * 10 + 1]
    requests = POSTERS * BATCHES + 1
    assert flushes < requests, f"{flushes} flushes for {requests} requests"
