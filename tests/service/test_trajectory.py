"""Trajectory over HTTP: appends (MRF1, stream, JSON), conditions, refusals, reads, caching."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

import mrecd
from mrecd.codecs import decode_frame

from .conftest import FRAME, FRAMES, PROBLEM, make_frame, mrf1, stream

POST = "/v1/records/{}/trajectory/frames"


def post(
    client: TestClient, name: str, body: bytes, kind: str = FRAME, **headers: str
) -> httpx.Response:
    return client.post(POST.format(name), content=body, headers={"Content-Type": kind, **headers})


def nstep(client: TestClient, name: str) -> int:
    return int(client.get(f"/v1/records/{name}/trajectory").json()["nstep"])


def assert_same(a: mrecd.Frame, b: mrecd.Frame) -> None:
    assert a.step == b.step and a.time == b.time and dict(a.meta) == dict(b.meta)
    assert set(a) == set(b)
    for name in a:
        for col in a[name].columns:
            left, right = a[name][col].values, b[name][col].values
            assert left.dtype == right.dtype and left.tobytes() == right.tobytes()


def test_post_answers_nstep_first_count(client: TestClient, run: str) -> None:
    r = post(client, run, mrf1(make_frame(30)))
    assert r.json() == {"nstep": 4, "first": 3, "count": 1, "duplicate": False}
    as_json = json.dumps([make_frame(40).to_dict(), make_frame(50).to_dict()])
    r = post(client, run, as_json.encode(), "application/json")
    assert r.json() == {"nstep": 6, "first": 4, "count": 2, "duplicate": False}
    declared = client.get(f"/v1/records/{run}/trajectory").json()["declaration"]
    assert set(declared["blocks"]["atoms"]["columns"]) == {"x", "y", "z"}


def test_if_match_lands_only_at_that_nstep(client: TestClient, run: str) -> None:
    stale = post(client, run, mrf1(make_frame(30)), **{"If-Match": '"2"'})
    assert stale.status_code == 412 and stale.headers["content-type"] == PROBLEM
    assert stale.json()["nstep"] == 3 and stale.json()["type"].endswith("precondition-failed")
    assert nstep(client, run) == 3
    ok = post(client, run, mrf1(make_frame(30)), **{"If-Match": '"3"'})
    assert ok.status_code == 200 and ok.json()["nstep"] == 4
    garbage = post(client, run, mrf1(make_frame(40)), **{"If-Match": "soon"})
    assert garbage.status_code == 422 and garbage.json()["path"] == "If-Match"


def test_repeated_step_is_409_and_nothing_lands(client: TestClient, run: str) -> None:
    r = post(client, run, stream([make_frame(30), make_frame(20)]), FRAMES)
    assert r.status_code == 409 and r.json()["type"] == "urn:mrecd:problem:step-order"
    assert nstep(client, run) == 3


def test_refused_frame_is_422_and_nothing_lands(client: TestClient, run: str) -> None:
    undeclared = mrecd.Frame({"atoms": {"x": np.zeros(4)}, "ions": {"q": np.ones(2)}}, step=40)
    r = post(client, run, stream([make_frame(30), undeclared]), FRAMES)
    assert r.status_code == 422 and r.headers["content-type"] == PROBLEM
    assert nstep(client, run) == 3
    assert post(client, run, b"MRF1 not really").status_code == 400
    assert post(client, run, b"{", "application/json").status_code == 422
    assert post(client, run, b"x", "text/plain").status_code == 415
    assert nstep(client, run) == 3


def test_limits_are_413_and_422(make_client: Callable[..., TestClient], run: str) -> None:
    small = make_client(max_body_bytes=64, max_frames_per_request=2, max_atoms_per_frame=3)
    big = post(small, run, mrf1(make_frame(30)))
    assert big.status_code == 413 and big.headers["content-type"] == PROBLEM
    roomy = make_client(max_frames_per_request=1, max_atoms_per_frame=3)
    many = post(roomy, run, stream([make_frame(30, n=2), make_frame(40, n=2)]), FRAMES)
    assert many.status_code == 413
    wide = post(roomy, run, mrf1(make_frame(30)))
    assert wide.status_code == 422 and wide.json()["path"] == "frames/0/atoms"


@pytest.mark.parametrize("kind", [FRAME, "application/json"])
def test_frame_i_is_bit_identical_to_the_local_read(
    client: TestClient, run: str, store_dir: Path, kind: str
) -> None:
    r = client.get(f"/v1/records/{run}/trajectory/frames/1", headers={"Accept": kind})
    assert r.status_code == 200 and r.headers["content-type"] == kind
    assert r.headers["x-mrecd-nstep"] == "3"
    got = decode_frame(r.content) if kind == FRAME else mrecd.Frame.from_dict(r.json())
    with mrecd.open(store_dir).record(run) as record:
        assert record.trajectory is not None
        assert_same(got, record.trajectory.read(1))
    last = client.get(f"/v1/records/{run}/trajectory/frames/-1", headers={"Accept": kind})
    assert last.status_code == 200
    out = client.get(f"/v1/records/{run}/trajectory/frames/3")
    assert out.status_code == 404 and out.headers["content-type"] == PROBLEM


def test_projection(client: TestClient, run: str) -> None:
    r = client.get(f"/v1/records/{run}/trajectory/frames/0", params={"columns": "x,y"})
    assert set(decode_frame(r.content)["atoms"].columns) == {"x", "y"}


def test_etag_and_304_and_a_recreated_record_never_matches(client: TestClient, run: str) -> None:
    url = f"/v1/records/{run}/trajectory/frames/0"
    first = client.get(url)
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert etag.startswith('"') and not etag.startswith("W/")
    again = client.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    other = client.get(url, headers={"Accept": "application/json"}).headers["etag"]
    assert other != etag
    client.delete(f"/v1/records/{run}")
    client.put(f"/v1/records/{run}", json={})
    post(client, run, mrf1(make_frame(0)))
    fresh = client.get(url, headers={"If-None-Match": etag})
    assert fresh.status_code == 200 and fresh.headers["etag"] != etag


def test_slices_stream_every_kind(client: TestClient, run: str) -> None:
    url = f"/v1/records/{run}/trajectory/frames"
    r = client.get(url, params={"start": 0, "step": 2}, headers={"Accept": FRAMES})
    assert r.headers["content-type"] == FRAMES and r.headers["x-mrecd-count"] == "2"
    body, steps = r.content, []
    while body:
        size = int.from_bytes(body[:8], "little")
        steps.append(decode_frame(body[8 : 8 + size]).step)
        body = body[8 + size :]
    assert steps == [0, 20]
    lines = client.get(url, params={"start": 1}, headers={"Accept": "application/x-ndjson"})
    assert [json.loads(x)["step"] for x in lines.text.splitlines()] == [10, 20]
    array = client.get(url, params={"stop": -1}, headers={"Accept": "application/json"}).json()
    assert [f["step"] for f in array] == [0, 10]
    assert client.get(url, params={"step": 0}).status_code == 422


def test_steps_times_series(client: TestClient, run: str) -> None:
    base = f"/v1/records/{run}/trajectory"
    assert client.get(f"{base}/steps").json() == {"nstep": 3, "steps": [0, 10, 20]}
    assert client.get(f"{base}/times").json()["times"] == [0.0, 5.0, 10.0]
    series = client.get(f"{base}/series/pe", params={"start": 1}).json()
    assert series["values"] == [-10.0, -20.0] and series["steps"] == [10, 20]
    assert series["times"] == [5.0, 10.0] and series["nstep"] == 3
    unknown = client.get(f"{base}/series/colour")
    assert 400 <= unknown.status_code < 500 and unknown.headers["content-type"] == PROBLEM


def test_no_trajectory_yet_is_404(client: TestClient) -> None:
    client.put("/v1/records/a", json={})
    r = client.get("/v1/records/a/trajectory/frames/0")
    assert r.status_code == 404 and r.headers["content-type"] == PROBLEM


def test_reads_at_a_committed_nstep(client: TestClient, run: str) -> None:
    post(client, run, mrf1(make_frame(30)))
    base = f"/v1/records/{run}/trajectory"
    assert client.get(f"{base}/steps", params={"nstep": 2}).json()["steps"] == [0, 10]
    assert client.get(f"{base}/series/pe", params={"nstep": 3}).json()["values"] == [
        0.0,
        -10.0,
        -20.0,
    ]
    lines = client.get(
        f"{base}/frames", params={"nstep": 1}, headers={"Accept": "application/x-ndjson"}
    )
    assert lines.headers["x-mrecd-nstep"] == "1" and len(lines.text.splitlines()) == 1
    beyond = client.get(f"{base}/times", params={"nstep": 9})
    assert beyond.status_code == 412 and beyond.json()["nstep"] == 4
