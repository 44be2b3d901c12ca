"""The client against a real uvicorn: round trips, reads, errors (same classes as local), auth.

Every body runs twice, through ``Client`` and ``AsyncClient`` (the ``kind`` fixture).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

import mrecd
from mrecd_client import AsyncClient, Client, Producer

from .conftest import collect, contains, make_frame, section, serve, wait

pytestmark = pytest.mark.anyio

SYSTEM = mrecd.Frame(
    {"atoms": {"name": np.array(["O", "H", "H", "C"]), "mass": [16.0, 1.0, 1.0, 12.0]}},
    meta={"title": "water and a carbon"},
)
FRAME = mrecd.Frame({"atoms": {"x": [0.0, 1.5, -2.25, 3.0]}}, meta={"label": "start"})
FORCEFIELD = mrecd.ForceField(
    {
        "name": "tip3p-ish",
        "units": {"preset": "real"},
        "styles": [
            {"category": "atom", "style": "full"},
            {"category": "bond", "style": "harmonic"},
        ],
    },
    {
        "bond.harmonic": mrecd.Block(
            {"name": ["OW-HW"], "itom": ["OW"], "jtom": ["HW"], "k": [450.0], "r0": [0.9572]}
        ),
        "atom.full": mrecd.Block({"name": ["OW", "HW"], "mass": [15.9994, 1.008]}),
    },
)


def same_frame(a: mrecd.Frame, b: mrecd.Frame) -> bool:
    """Equal frames whose numeric columns are bit-identical (column order aside)."""
    if a != b or a.meta_types != b.meta_types or (a.step, a.time) != (b.step, b.time):
        return False
    for name, block in a.items():
        for column, values in block.items():
            mine, theirs = values.values, b[name][column].values
            if mine.dtype.kind in "biuf" and (
                mine.dtype != theirs.dtype or mine.tobytes() != theirs.tobytes()
            ):
                return False
    return True


async def open_run(client: Any, name: str, steps: range) -> Any:
    """Record ``name`` created with a name only, then frames of ``steps`` appended and flushed."""
    record = await wait(client.create_record(name))
    traj = record.trajectory
    await wait(traj.extend([make_frame(s) for s in steps]))
    await wait(traj.flush())
    return record


async def test_sections_round_trip_bit_identical(client: Any) -> None:
    meta = {"project": "water", "n": 3, "nested": {"ok": True}}
    status = {"state": "running", "progress": 0.5}
    method = {"type": "md", "description": "NVT", "engine": {"name": "openmm"}}
    await wait(
        client.create_record(
            "full",
            meta=meta,
            system=SYSTEM,
            frame=FRAME,
            forcefield=FORCEFIELD,
            status=status,
            method=method,
        )
    )
    record = await wait(client.record("full"))
    assert {k: record.meta[k] for k in meta} == meta
    assert record.meta["molrec_version"] == 2 and record.molrec_version == 2
    assert record.status == status and record.method == method
    assert same_frame(await section(record, "system"), SYSTEM)
    assert same_frame(await section(record, "frame"), FRAME)
    assert await section(record, "forcefield") == FORCEFIELD
    assert await section(record, "sections") == [
        "forcefield", "frame", "meta", "method", "status", "system"
    ]  # fmt: skip
    assert record.name == "full" and record.url.endswith("/v1/records/full")
    assert record.read_only and record.local_path is None and record.exists
    assert record.trajectory is None  # read-only, no trajectory: as locally


async def test_absent_sections_are_none(client: Any) -> None:
    await wait(client.create_record("bare", status={"state": "queued"}))
    record = await wait(client.record("bare"))
    for name in ("system", "frame", "forcefield"):
        assert await section(record, name) is None
    assert record.method is None


async def test_frames_round_trip_bit_identical_and_projections(client: Any) -> None:
    frames = [make_frame(s) for s in range(0, 50, 5)]
    record = await wait(client.create_record("run"))
    traj = record.trajectory
    assert traj.declaration is None and len(traj) == 0
    assert await wait(traj.extend(frames[:3])) == 3
    assert await wait(traj.append(frames[3])) == 4
    assert await wait(traj.extend(frames[4:])) == 10
    assert await wait(traj.flush()) == 10
    assert traj.declaration is not None and set(traj.declaration.blocks) == {"atoms"}
    for i in (0, 3, 9, -1, -10):
        assert same_frame(await wait(traj[i]), frames[i])
    projected = await wait(traj.read(2, blocks=["atoms"], columns=["x", "id"]))
    assert set(projected["atoms"].columns) == {"x", "id"}
    assert np.array_equal(projected["atoms"]["x"].values, frames[2]["atoms"]["x"].values)
    everything = await collect(traj)
    assert len(everything) == 10 and all(map(same_frame, everything, frames))


async def test_slices_are_lazy_and_stream(client: Any) -> None:
    frames = [make_frame(s) for s in range(12)]
    record = await open_run(client, "sliced", range(12))
    traj = record.trajectory
    for spec in (slice(2, 9, 3), slice(None, None, -1), slice(-4, None), slice(5, 2), slice(None)):
        view = traj[spec]
        expected = frames[spec]
        assert len(view) == len(expected)
        got = await collect(view)
        assert [f.step for f in got] == [f.step for f in expected]
        assert all(map(same_frame, got, expected))
    view = traj[1:10:2]
    assert same_frame(await wait(view[-1]), frames[9])
    assert [f.step for f in await collect(view[1:3])] == [3, 5]
    with pytest.raises(IndexError):
        await wait(view[5])


async def test_steps_times_series_as_local(client: Any, tmp_path: Path) -> None:
    frames = [
        mrecd.Frame(
            {"atoms": {"x": [float(s), 1.0]}},
            meta={
                "pe": float("nan") if s == 2 else -float(s),
                "tag": f"s{s}",
                "doc": {"k": s},
                "v": np.array([s, 2.0 * s, 3.0]),
                "n": s * 7,
                "ok": s % 2 == 0,
            },
            step=10 * s,
            time=0.25 * s,
        )
        for s in range(5)
    ]
    local = mrecd.open(tmp_path / "local").create_record("run").trajectory
    assert local is not None
    local.extend(frames)
    local.flush()
    record = await wait(client.create_record("series"))
    remote = record.trajectory
    await wait(remote.extend(frames))
    assert np.array_equal(await wait(remote.steps()), local.steps())
    assert (await wait(remote.steps())).dtype == np.int64
    assert np.array_equal(await wait(remote.times()), local.times())
    for key in ("pe", "tag", "doc", "v", "n", "ok"):
        for start, stop in ((0, None), (1, 4), (3, 99)):
            mine = await wait(remote.series(key, start, stop))
            theirs = local.series(key, start, stop)
            assert mine.dtype == theirs.dtype and mine.shape == theirs.shape, key
            assert np.array_equal(mine, theirs, equal_nan=mine.dtype.kind == "f"), key
    with pytest.raises(mrecd.InvalidRecord):
        local.series("nope")
    with pytest.raises(mrecd.InvalidRecord):
        await wait(remote.series("nope"))


async def test_empty_trajectory_reads_as_local(client: Any) -> None:
    record = await wait(client.create_record("empty"))
    traj = record.trajectory
    assert len(traj) == 0
    assert (await wait(traj.steps())).shape == (0,)
    assert await wait(traj.times()) is None
    with pytest.raises(IndexError):
        await wait(traj[0])
    assert await collect(traj[:]) == []


async def test_catalog_listing_contains_delete(client: Any, store_dir: Path) -> None:
    for name in ("a-1", "a-2", "b-1"):
        await open_run(client, name, range(2))
    assert await wait(client.records()) == ["a-1", "a-2", "b-1"]
    assert await wait(client.records("a-")) == ["a-1", "a-2"]
    assert await contains(client, "a-1") and not await contains(client, "zzz")
    assert not await contains(client, "../etc")
    await wait(client.delete_record("a-1"))
    assert await wait(client.records()) == ["a-2", "b-1"]
    assert sorted(mrecd.open(store_dir).records()) == ["a-2", "b-1"]
    with pytest.raises(mrecd.NotFound):
        await wait(client.delete_record("a-1"))


async def test_listing_follows_every_page(make_client: Callable[..., Any], tmp_path: Path) -> None:
    with serve(tmp_path / "paged", page_limit=2) as url:
        client = make_client(url)
        names = [f"r{i}" for i in range(5)]
        for name in names:
            await wait(client.create_record(name, status={"state": "queued"}))
        assert await wait(client.records()) == names


# -- errors: the same classes as local -----------------------------------------------------------


async def test_missing_record_is_not_found(client: Any) -> None:
    with pytest.raises(mrecd.NotFound) as caught:
        await wait(client.record("nothing-here"))
    assert isinstance(caught.value, KeyError)
    await wait(client.create_record("here", status={"state": "queued"}))
    with pytest.raises(ValueError, match="mode"):
        await wait(client.record("here", "w"))


async def test_frame_out_of_range_is_an_index_error(client: Any) -> None:
    record = await open_run(client, "short", range(3))
    traj = record.trajectory
    for i in (3, 100, -4):
        with pytest.raises(IndexError):
            await wait(traj[i])
    with pytest.raises(IndexError, match="outside the 3 frames"):
        await wait(traj.read(3))
    with pytest.raises(TypeError):
        await wait(traj.read(True))
    with pytest.raises(TypeError):
        await wait(traj.read(1.5))


async def test_refused_frame_is_422_and_nothing_lands(client: Any) -> None:
    record = await open_run(client, "strict", range(3))
    traj = record.trajectory
    bad = mrecd.Frame({"ions": {"x": [1.0]}}, meta={"pe": 0.0}, step=100, time=50.0)
    await wait(traj.append(bad))
    with pytest.raises(mrecd.InvalidRecord) as caught:
        await wait(traj.flush())
    assert "ions" in str(caught.value)
    assert len(traj) == 3 and await wait(traj.refresh()) == 3
    # the handle goes on: the next frames land after the refusal
    assert await wait(traj.append(make_frame(3))) == 4
    assert await wait(traj.flush()) == 4


async def test_repeated_step_is_step_order_409(client: Any) -> None:
    record = await open_run(client, "ordered", range(3))
    traj = record.trajectory
    await wait(traj.append(make_frame(1)))
    with pytest.raises(mrecd.StepOrderError):
        await wait(traj.flush())
    assert await wait(traj.refresh()) == 3


async def test_conditional_append_412_carries_nstep(client: Any) -> None:
    record = await open_run(client, "cond", range(3))
    traj = record.trajectory
    with pytest.raises(mrecd.PreconditionFailed) as caught:
        await wait(traj.append(make_frame(3), expected_nstep=2))
    assert caught.value.nstep == 3
    assert await wait(traj.append(make_frame(3), expected_nstep=3)) == 4
    with pytest.raises(mrecd.InvalidRecord, match="expected_nstep"):
        await wait(traj.append(make_frame(4), expected_nstep=-1))


async def test_read_only_record_refuses_appends(client: Any) -> None:
    await open_run(client, "ro", range(2))
    record = await wait(client.record("ro"))
    with pytest.raises(mrecd.ReadOnlyError):
        await wait(record.trajectory.append(make_frame(5)))


async def test_existing_record(client: Any) -> None:
    await open_run(client, "twice", range(2))
    with pytest.raises(mrecd.AlreadyExists):
        await wait(client.create_record("twice"))
    again = await wait(client.create_record("twice", exist_ok=True))
    assert len(again.trajectory) == 2
    with pytest.raises(mrecd.InvalidRecord):
        await wait(client.create_record("../bad"))


async def test_producer_claim_checks_its_arguments(client: Any) -> None:
    record = await wait(client.create_record("claims"))
    traj = record.trajectory
    assert traj.producer.epoch == 0 and len(traj.producer.id) == 32
    with pytest.raises(mrecd.InvalidRecord, match="Producer-Id"):
        traj.claim("no spaces allowed")
    with pytest.raises(mrecd.InvalidRecord, match="Producer-Epoch"):
        traj.claim("job", -1)
    traj.claim("job-42", 3)
    assert traj.producer == Producer("job-42", 3)
    await wait(traj.append(make_frame(0)))
    with pytest.raises(mrecd.InvalidRecord, match="queued"):
        traj.claim("job-43")
    await wait(traj.flush())


# -- auth -----------------------------------------------------------------------------------------


async def test_bearer_token_is_sent(make_client: Callable[..., Any], tmp_path: Path) -> None:
    grants = [{"token": "s3cret", "scope": "admin"}]
    with serve(tmp_path / "auth", tokens=grants) as url:
        anonymous, wrong = make_client(url), make_client(url, token="nope")
        for client in (anonymous, wrong):
            with pytest.raises(mrecd.PermissionDenied):
                await wait(client.records())
        client = make_client(url, token="s3cret")
        await open_run(client, "secured", range(2))
        assert await wait(client.records()) == ["secured"]


async def test_token_lacking_a_scope_is_permission_denied(
    make_client: Callable[..., Any], tmp_path: Path
) -> None:
    grants = [{"token": "reader", "scope": "read"}, {"token": "writer", "scope": "append"}]
    with serve(tmp_path / "scoped", tokens=grants) as url:
        await open_run(make_client(url, token="writer"), "run", range(1))
        with pytest.raises(mrecd.PermissionDenied):
            await wait(make_client(url, token="reader").create_record("other"))
        with pytest.raises(mrecd.PermissionDenied):
            await wait(make_client(url, token="writer").delete_record("run"))


# -- wire formats -------------------------------------------------------------------------------


async def test_json_wire_gives_the_same_frames(
    make_client: Callable[..., Any], live_server: str
) -> None:
    frames = [make_frame(s) for s in range(5)]
    client = make_client(live_server, wire="json")
    record = await wait(client.create_record("json-run", system=SYSTEM))
    traj = record.trajectory
    await wait(traj.extend(frames))
    assert all(map(same_frame, await collect(traj), frames))
    assert same_frame(await wait(traj[2]), frames[2])
    assert same_frame(await section(record, "system"), SYSTEM)


async def test_mrf1_is_the_default_wire(make_client: Callable[..., Any], live_server: str) -> None:
    seen: list[tuple[str, str]] = []

    def spy(request: httpx.Request) -> None:
        kind = request.headers.get("content-type") or request.headers.get("accept", "")
        seen.append((request.method, kind))

    client = make_client(live_server)
    client._http.event_hooks["request"] = [_hook(spy, client)]
    record = await wait(client.create_record("wire"))
    await wait(record.trajectory.extend([make_frame(s) for s in range(3)]))
    await wait(record.trajectory.read(0))
    assert ("POST", "application/x-mrec-frames") in seen
    assert ("GET", "application/x-mrec-frame") in seen


def _hook(spy: Callable[[httpx.Request], None], client: Any) -> Callable[..., Any]:
    if isinstance(client, AsyncClient):

        async def async_hook(request: httpx.Request) -> None:
            spy(request)

        return async_hook
    return spy


def test_wire_and_retries_are_checked() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="wire"):
        Client("http://127.0.0.1:9", wire="xml")  # type: ignore[arg-type]
    with pytest.raises(mrecd.InvalidRecord, match="retries"):
        Client("http://127.0.0.1:9", retries=-1)


def test_unknown_problem_and_plain_errors_map_to_the_tree() -> None:
    from mrecd_client._core import Core

    core = Core("http://x")

    def response(status: int, body: Any, kind: str = "application/problem+json") -> httpx.Response:
        content = json.dumps(body).encode()
        return httpx.Response(status, content=content, headers={"content-type": kind})

    gone = core.error(response(404, mrecd.NotFound("no run", path="r").to_problem()))
    assert type(gone) is mrecd.NotFound and gone.path == "r"
    fenced = core.error(response(409, mrecd.ProducerFenced("old", epoch=4).to_problem()))
    assert isinstance(fenced, mrecd.ProducerFenced) and fenced.epoch == 4
    teapot = {"type": "urn:mrecd:problem:forbidden", "status": 403, "detail": "no"}
    assert isinstance(core.error(response(403, teapot)), mrecd.PermissionDenied)
    assert isinstance(core.error(response(429, {"x": 1}, "text/plain")), mrecd.RetryableError)
    assert isinstance(core.error(response(415, {"type": "urn:x"})), mrecd.InvalidRecord)
    assert type(core.error(response(500, "boom", "text/plain"))) is mrecd.MrecdError
