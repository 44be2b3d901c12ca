"""The collection client, sync and async, against a real uvicorn: requests per batch, both wires."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import numpy as np
import pytest

import mrecd
from mrecd_client import AsyncRemoteCollection, RemoteCollection

from .conftest import collect, wait

pytestmark = pytest.mark.anyio

UNITS = {"length": "angstrom"}


def record(k: int) -> mrecd.Record:
    frames = [mrecd.Frame({"atoms": {"x": np.full(2, float(k + s))}}, step=s) for s in range(2)]
    return mrecd.Record({"k": k}, trajectory=frames)


class Counting(httpx.HTTPTransport):
    """The default transport, counting the requests it sends by (method, path)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, str]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append((request.method, request.url.path))
        return super().handle_request(request)


class AsyncCounting(httpx.AsyncHTTPTransport):
    """The async default transport, counting the requests it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, str]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append((request.method, request.url.path))
        return await super().handle_async_request(request)


async def batches(col: Any, *args: Any, **kwargs: Any) -> list[list[mrecd.Record]]:
    return await collect(col.batches(*args, **kwargs))


@pytest.mark.parametrize("wire", ["mrf1", "json"])
async def test_one_request_per_batch(
    live_server: str, make_client: Callable[..., Any], kind: str, wire: str
) -> None:
    transport = Counting() if kind == "sync" else AsyncCounting()
    client = make_client(live_server, wire=wire, transport=transport)
    col = await wait(client.create_collection("loader", meta={"units": UNITS}))
    assert isinstance(col, RemoteCollection if kind == "sync" else AsyncRemoteCollection)
    assert await wait(col.extend([record(k) for k in range(20)])) == range(20)
    transport.sent.clear()
    epoch = await batches(col, 6, seed=3)
    reads = [s for s in transport.sent if s == ("GET", "/v1/collections/loader/records")]
    assert len(reads) == 4 and len(epoch) == 4
    order = np.random.default_rng(3).permutation(20).tolist()
    assert [r.meta["k"] for b in epoch for r in b] == order
    assert all(r.trajectory == record(r.meta["k"]).trajectory for b in epoch for r in b)
    one = await wait(col[7])
    assert one.meta == {"k": 7} and one.trajectory == record(7).trajectory
    assert (await wait(col.index() if kind == "async" else col.index)).count == 20


async def test_a_read_many_past_the_request_size_is_cut(
    live_server: str, make_client: Callable[..., Any], kind: str
) -> None:
    transport = Counting() if kind == "sync" else AsyncCounting()
    client = make_client(live_server, transport=transport)
    col = await wait(client.create_collection("big", meta={"units": UNITS}))
    await wait(col.extend([record(k) for k in range(3)]))
    transport.sent.clear()
    wanted = [k % 3 for k in range(2500)]  # 1024 + 1024 + 452
    got = await wait(col.read_many(wanted))
    assert [r.meta["k"] for r in got] == wanted
    assert transport.sent.count(("GET", "/v1/collections/big/records")) == 3
    assert await wait(col.read_many([])) == []


async def test_the_async_count_is_the_one_last_seen(
    live_server: str, make_client: Callable[..., Any], kind: str
) -> None:
    writer = make_client(live_server)
    reader = make_client(live_server)
    col = await wait(writer.create_collection("grow", meta={"units": UNITS}))
    await wait(col.append(record(0)))
    seen = await wait(reader.collection("grow"))
    assert len(seen) == 1
    await wait(col.append(record(1)))
    if kind == "async":
        assert len(seen) == 1 and await seen.refresh() == 2 and await seen.n_frames() == 4
    else:
        assert len(seen) == 2 and seen.n_frames == 4
    assert [r.meta["k"] for r in await collect(seen)] == [0, 1]
    assert [r.meta["k"] for r in await wait(seen[0:2])] == [0, 1]
    assert await wait(writer.collections()) == ["grow"]


async def test_remote_refusals_raise_the_local_classes(
    live_server: str, make_client: Callable[..., Any]
) -> None:
    client = make_client(live_server)
    with pytest.raises(mrecd.InvalidRecord, match="derive"):
        await wait(
            client.create_collection(
                "d", meta={"units": UNITS}, index_columns={"n": {"dtype": "i64", "derive": len}}
            )
        )
    col = await wait(client.create_collection("c", meta={"units": UNITS}))
    with pytest.raises(mrecd.InvalidRecord, match="index has 2 rows"):
        await wait(col.extend([record(0)], index=[None, None]))
    with pytest.raises(mrecd.InvalidRecord, match="needs 1 values"):
        await wait(col.extend([record(0)], index={"n": [1, 2]}))
    with pytest.raises(mrecd.InvalidRecord, match="a record is"):
        await wait(col.append(3))
    with pytest.raises(mrecd.RecordOutOfRange):
        await wait(col[0])
    with pytest.raises(TypeError):
        await wait(col[True])
    assert await wait(col.extend([])) == range(0, 0)


async def test_a_record_read_again_shares_its_decoded_system(
    live_server: str, make_client: Callable[..., Any], kind: str
) -> None:
    client = make_client(live_server)
    col = await wait(client.create_collection("systems", meta={"units": UNITS}))
    made = [
        mrecd.Record(
            {"k": k},
            system=mrecd.Frame({"atoms": {"element": np.array([["O", "H"], ["H", "C"]][k % 2])}}),
            trajectory=record(k).trajectory,
        )
        for k in range(3)
    ]
    await wait(col.extend(made))
    first = await wait(col.read_many([0, 1, 2, 1]))
    again = await wait(col.read_many([2]))
    assert [r.system for r in first] == [m.system for m in made] + [made[1].system]
    assert first[1].system is first[3].system and first[0].system is not first[1].system
    assert again[0].system is first[2].system is first[0].system  # equal bytes: one frame
    assert again[0].trajectory == made[2].trajectory
