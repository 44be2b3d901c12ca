"""Collections past one machine: published to a bucket (moto), served read-only by replicas."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from collection_helpers import UNITS, X0, atoms, frame, new, system

import mrecd
from mrecd import api
from mrecd.cli import main
from mrecd.storage import open_store

PART = 4096
REPLICA = Path(__file__).with_name("snapshot_replica.py")


def grow(path: Path, tags: list[str]) -> None:
    """Append one record per tag to the collection at ``path`` (created when absent)."""
    col = mrecd.open_collection(path, "r+") if path.exists() else new(path)
    with col:
        for k, tag in enumerate(tags):
            col.append(
                {
                    "meta": {"tag": tag},
                    "system": system(),
                    "trajectory": [frame(s, float(s), atoms=atoms(X0, k)) for s in range(3)],
                }
            )


@pytest.fixture
def live(tmp_path: Path) -> Path:
    """The owning replica's live collection file, two records."""
    path = tmp_path / "owner" / "ala.mrec.lmdb"
    path.parent.mkdir()
    grow(path, ["a", "b"])
    return path


def test_publish_then_open_from_another_cache(live: Path, s3_bucket: str, tmp_path: Path) -> None:
    url = api.publish_collection(live, f"{s3_bucket}/lab", part_size=PART)
    assert url == f"{s3_bucket}/lab/ala.mrec.lmdb"
    catalog = mrecd.open(f"{s3_bucket}/lab", cache_dir=tmp_path / "cache")
    assert catalog.collections() == ["ala"] and catalog.collections("z") == []
    with catalog.collection("ala") as served, mrecd.open_collection(live) as source:
        assert isinstance(served, api.SnapshotCollection)
        assert served.to_dict() == source.to_dict()
        assert Path(served.path).is_relative_to(tmp_path / "cache")
        summary = served.snapshot["summary"]
        assert summary["n_records"] == 2 and summary["n_frames"] == 6
        assert summary["meta"]["units"] == UNITS["units"]
    manifest = json.loads(open_store(f"{s3_bucket}/lab").get("ala.mrec.lmdb.manifest.json") or b"")
    assert manifest["summary"]["kind"] == "collection"
    assert manifest["size"] <= live.stat().st_size  # compacted


def test_appends_to_a_published_collection_are_refused(
    live: Path, s3_bucket: str, tmp_path: Path
) -> None:
    api.publish_collection(live, s3_bucket, part_size=PART)
    catalog = mrecd.open(s3_bucket, cache_dir=tmp_path / "cache")
    rule = "appends stay on the replica that owns the live"
    with pytest.raises(mrecd.ReadOnlyError, match=rule):
        catalog.collection("ala", "r+")
    with catalog.collection("ala") as served:
        with pytest.raises(mrecd.ReadOnlyError, match=rule):
            served.append({"meta": {"tag": "c"}})
        with pytest.raises(mrecd.ReadOnlyError, match=rule):
            served.extend([{"meta": {"tag": "c"}}])
        with pytest.raises(mrecd.ReadOnlyError):
            served.compact()
        assert len(served) == 2
    with pytest.raises(mrecd.ReadOnlyError, match=rule):
        catalog.create_collection("new", meta=UNITS)
    with pytest.raises(mrecd.ReadOnlyError, match=rule):
        catalog.delete_collection("ala")
    with pytest.raises(mrecd.InvalidRecord, match="record name"):
        catalog.collection("../ala")


def test_object_storage_without_a_cache_dir_says_so(
    live: Path, s3_bucket: str, tmp_path: Path
) -> None:
    api.publish_collection(live, s3_bucket, part_size=PART)
    catalog = mrecd.open(s3_bucket)
    assert catalog.collections() == ["ala"]
    with pytest.raises(mrecd.ReadOnlyError, match="MRECD_CACHE_DIR"):
        catalog.collection("ala")
    with pytest.raises(mrecd.NotFound):
        mrecd.open(s3_bucket, cache_dir=tmp_path / "c").collection("other")


def test_publish_refuses_what_is_not_a_collection(
    live: Path, s3_bucket: str, tmp_path: Path
) -> None:
    with pytest.raises(mrecd.InvalidRecord, match=r"\*.mrec.lmdb"):
        api.publish_collection(tmp_path / "x.mrec", s3_bucket)
    with pytest.raises(mrecd.NotFound):
        api.publish_collection(tmp_path / "absent.mrec.lmdb", s3_bucket)
    with pytest.raises(mrecd.InvalidRecord, match="record name"):
        api.publish_collection(live, s3_bucket, name=".hidden")
    assert open_store(s3_bucket).list_info() == {}  # nothing half-published


def test_cli_push_publishes_and_replaces_with_overwrite(
    live: Path, s3_bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["push", str(live), f"{s3_bucket}/lab", "--quiet"]) == 0
    assert capsys.readouterr().out.strip() == f"{s3_bucket}/lab/ala.mrec.lmdb"
    assert main(["push", str(live), f"{s3_bucket}/lab", "--quiet"]) == 2
    assert "overwrite" in capsys.readouterr().err
    grow(live, ["c"])
    argv = ["push", str(live), f"{s3_bucket}/lab", "--name", "ala2", "--overwrite", "--quiet"]
    assert main(argv) == 0
    assert mrecd.open(f"{s3_bucket}/lab").collections() == ["ala", "ala2"]


class Replica:
    """A catalog serving the bucket in another process, with its own cache directory."""

    def __init__(self, url: str, cache_dir: Path) -> None:
        self.cache_dir = cache_dir
        self.process = subprocess.Popen(
            [sys.executable, str(REPLICA), url, str(cache_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def read(self, name: str) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(name + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.fixture
def replicas(s3_bucket: str, tmp_path: Path) -> Iterator[list[Replica]]:
    pair = [Replica(f"{s3_bucket}/lab", tmp_path / f"cache-{k}") for k in range(2)]
    yield pair
    for replica in pair:
        replica.close()


def test_two_replicas_serve_one_snapshot_and_pick_up_a_newer_one(
    live: Path, s3_bucket: str, replicas: list[Replica]
) -> None:
    for replica in replicas:
        assert replica.read("ala")["error"] == "NotFound"
    api.publish_collection(live, f"{s3_bucket}/lab", part_size=PART)
    first = [replica.read("ala") for replica in replicas]
    assert [a["records"] for a in first] == [["a", "b"], ["a", "b"]]
    assert first[0]["sha256"] == first[1]["sha256"]
    assert first[0]["path"] != first[1]["path"]  # each replica its own copy
    grow(live, ["c"])  # on the owning replica
    api.publish_collection(live, f"{s3_bucket}/lab", overwrite=True, part_size=PART)
    time.sleep(0.3)  # past revalidate_seconds
    second = [replica.read("ala") for replica in replicas]
    assert [a["records"] for a in second] == [["a", "b", "c"], ["a", "b", "c"]]
    assert second[0]["sha256"] != first[0]["sha256"]
    for replica, answer in zip(replicas, second, strict=True):
        copies = [p for p in replica.cache_dir.rglob("*-ala.mrec.lmdb")]
        assert Path(answer["path"]) in copies and len(copies) == 2  # the new one, and the old


def test_worker_processes_of_one_replica_share_one_cache(
    live: Path, s3_bucket: str, tmp_path: Path
) -> None:
    api.publish_collection(live, f"{s3_bucket}/lab", part_size=PART)
    workers = [Replica(f"{s3_bucket}/lab", tmp_path / "shared") for _ in range(2)]
    try:
        for worker in workers:  # both ask before either answers: the downloads race
            assert worker.process.stdin is not None
            worker.process.stdin.write("ala\n")
            worker.process.stdin.flush()
        answers = []
        for worker in workers:
            assert worker.process.stdout is not None
            answers.append(json.loads(worker.process.stdout.readline()))
    finally:
        for worker in workers:
            worker.close()
    assert [a["records"] for a in answers] == [["a", "b"], ["a", "b"]]
    assert answers[0]["path"] == answers[1]["path"]
    assert len(list((tmp_path / "shared").rglob("*-ala.mrec.lmdb"))) == 1
    assert not list((tmp_path / "shared").rglob("*.part"))
