"""``GET /v1/records/{name}.mrec.zip``: the packed record, streamed, with Range and ETag."""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import mrecd
from mrecd.codecs import encode_frame

from .conftest import FRAMES, PROBLEM, make_frame, stream

ZIP = "application/zip"


def _frames_bytes(record: mrecd.StoredRecord) -> list[bytes]:
    traj = record.trajectory
    assert traj is not None
    return [encode_frame(traj[i], meta_types=True) for i in range(len(traj))]


def _download(client: TestClient, name: str, dest: Path, **headers: str) -> Path:
    r = client.get(f"/v1/records/{name}.mrec.zip", headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == ZIP
    assert int(r.headers["content-length"]) == len(r.content)
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / f"{name}.mrec.zip"
    path.write_bytes(r.content)
    return path


def test_download_opens_with_the_same_frames(
    client: TestClient, run: str, store_dir: Path, tmp_path: Path
) -> None:
    path = _download(client, run, tmp_path / "got")
    assert "trajectory/zarr.json" in zipfile.ZipFile(path).namelist()
    with mrecd.open_record(path) as packed, mrecd.open(store_dir).record(run) as live:
        assert _frames_bytes(packed) == _frames_bytes(live)
        assert len(_frames_bytes(packed)) == 3
        assert packed.meta == live.meta


def test_ranges_return_those_bytes(client: TestClient, run: str) -> None:
    url = f"/v1/records/{run}.mrec.zip"
    whole = client.get(url)
    data, etag, size = whole.content, whole.headers["etag"], len(whole.content)
    cases = {"bytes=10-99": (10, 100), "bytes=-50": (size - 50, size), "bytes=100-": (100, size)}
    for header, (start, stop) in cases.items():
        r = client.get(url, headers={"Range": header})
        assert r.status_code == 206, header
        assert r.content == data[start:stop], header
        assert r.headers["content-range"] == f"bytes {start}-{stop - 1}/{size}"
        assert r.headers["etag"] == etag  # the same state: the same pack
    past = client.get(url, headers={"Range": f"bytes={size}-"})
    assert past.status_code == 416
    assert past.headers["content-type"] == PROBLEM
    assert past.headers["content-range"] == f"bytes */{size}"
    assert client.get(url, headers={"Range": "lines=1-2"}).content == data  # ignored: whole


def test_etag_names_the_committed_state(client: TestClient, run: str, tmp_path: Path) -> None:
    url = f"/v1/records/{run}.mrec.zip"
    first = client.get(url)
    again = client.get(url, headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    r = client.post(
        f"/v1/records/{run}/trajectory/frames",
        content=stream([make_frame(30)]),
        headers={"Content-Type": FRAMES},
    )
    assert r.status_code == 200
    after = client.get(url, headers={"If-None-Match": first.headers["etag"]})
    assert after.status_code == 200 and after.headers["etag"] != first.headers["etag"]
    path = tmp_path / f"{run}.mrec.zip"
    path.write_bytes(after.content)
    with mrecd.open_record(path) as packed:
        assert packed.trajectory is not None and len(packed.trajectory) == 4


def test_a_packed_record_is_served_as_stored(
    store_dir: Path, make_client: Callable[..., TestClient]
) -> None:
    catalog = mrecd.open(store_dir)
    with catalog.create_record("kept", meta={"k": 1}) as record:
        assert record.trajectory is not None
        record.trajectory.extend([make_frame(s) for s in (0, 1)])
    catalog.pack("kept")
    shutil.rmtree(store_dir / "kept.mrec")
    client = make_client()
    r = client.get("/v1/records/kept.mrec.zip")
    assert r.status_code == 200
    assert r.content == (store_dir / "kept.mrec.zip").read_bytes()
    tail = client.get("/v1/records/kept.mrec.zip", headers={"Range": "bytes=-22"})
    assert tail.status_code == 206 and tail.content == r.content[-22:]


def test_the_route_does_not_shadow_the_summary(client: TestClient, run: str) -> None:
    summary = client.get(f"/v1/records/{run}")
    assert summary.status_code == 200 and summary.json()["nstep"] == 3
    head = client.head(f"/v1/records/{run}.mrec.zip")
    assert head.status_code == 200 and int(head.headers["content-length"]) > 0


@pytest.mark.parametrize("name", ["nope", "unborn"])
def test_absent_or_unborn_records_are_404(client: TestClient, name: str) -> None:
    assert client.put("/v1/records/unborn", json={}).status_code == 201
    r = client.get(f"/v1/records/{name}.mrec.zip")
    assert r.status_code == 404
    assert r.headers["content-type"] == PROBLEM
    assert name in r.json()["detail"]


def test_bad_names_are_422(client: TestClient) -> None:
    r = client.get("/v1/records/.hidden.mrec.zip")
    assert r.status_code == 422 and r.headers["content-type"] == PROBLEM


def test_download_needs_read(make_client: Callable[..., TestClient]) -> None:
    client = make_client(tokens=[{"token": "t", "scope": "read", "prefix": "run-"}])
    assert client.get("/v1/records/run-1.mrec.zip").status_code == 401
    other = client.get("/v1/records/other.mrec.zip", headers={"Authorization": "Bearer t"})
    assert other.status_code == 403
