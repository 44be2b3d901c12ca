"""Published snapshots on a real S3 server (moto): publish, fetch, resume, verify, revalidate."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from mrecd.errors import AlreadyExists, InvalidRecord, NotFound, StoreUnavailable
from mrecd.storage import (
    ByteRequest,
    CountingStore,
    SnapshotCache,
    Store,
    open_store,
    publish_snapshot,
    published_snapshots,
)
from mrecd.storage._snapshot import FETCH_ATTEMPTS, MANIFEST_SUFFIX

PART = 4096
KEY = "ala.mrec.lmdb"


class FaultyStore(CountingStore):
    """The real store, but GETs of the data object fail or corrupt as told."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.cut_after: int | None = None  # data GETs that succeed before the link drops
        self.corrupt: int = 0  # data GETs still to corrupt (one flipped byte)
        self.data_gets = 0
        self.data_bytes = 0
        self.down = False

    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        if ".snapshots/" not in key:
            return super().get(key, byte_range)
        if self.cut_after is not None and self.data_gets >= self.cut_after:
            raise StoreUnavailable("connection reset (injected)", path=key)
        data = super().get(key, byte_range)
        self.data_gets += 1
        self.data_bytes += 0 if data is None else len(data)
        if data and self.corrupt:
            self.corrupt -= 1
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        return data

    def get_if_none_match(self, key: str, etag: str | None):  # type: ignore[no-untyped-def]
        if self.down:
            raise StoreUnavailable("the store is down (injected)", path=key)
        return super().get_if_none_match(key, etag)


def payload(tmp_path: Path, seed: int, size: int = 5 * PART + 123) -> Path:
    """A file of ``size`` pseudo-random bytes (``seed`` picks them)."""
    path = tmp_path / f"src-{seed}" / KEY
    path.parent.mkdir(parents=True, exist_ok=True)
    block = hashlib.sha256(str(seed).encode()).digest()
    path.write_bytes((block * (size // len(block) + 1))[:size])
    return path


@pytest.fixture
def bucket(s3_bucket: str) -> Store:
    return open_store(f"{s3_bucket}/lab")


def test_publish_writes_a_content_addressed_object_and_a_manifest(
    bucket: Store, tmp_path: Path
) -> None:
    source = payload(tmp_path, 1)
    manifest = publish_snapshot(bucket, KEY, source, summary={"n": 3}, part_size=PART)
    raw = bucket.get(KEY + MANIFEST_SUFFIX)
    assert raw is not None
    doc = json.loads(raw)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    assert doc["format"] == "mrecd-snapshot" and doc["format_version"] == 1
    assert doc["sha256"] == digest and doc["size"] == source.stat().st_size
    assert doc["object"] == f"{KEY}.snapshots/{digest}" == manifest.object
    assert len(doc["parts"]) == 6 and doc["parts"][-1]["size"] == 123
    assert (
        doc["parts"][1]["sha256"]
        == hashlib.sha256(source.read_bytes()[PART : 2 * PART]).hexdigest()
    )
    assert doc["summary"] == {"n": 3} and doc["created"].endswith("Z")
    assert bucket.get(manifest.object) == source.read_bytes()
    assert published_snapshots(bucket) == [KEY]


def test_a_second_publish_needs_overwrite_and_keeps_only_two_objects(
    bucket: Store, tmp_path: Path
) -> None:
    publish_snapshot(bucket, KEY, payload(tmp_path, 1), part_size=PART)
    with pytest.raises(AlreadyExists, match="overwrite"):
        publish_snapshot(bucket, KEY, payload(tmp_path, 2), part_size=PART)
    second = publish_snapshot(bucket, KEY, payload(tmp_path, 2), overwrite=True, part_size=PART)
    third = publish_snapshot(bucket, KEY, payload(tmp_path, 3), overwrite=True, part_size=PART)
    objects = sorted(bucket.keys(f"{KEY}.snapshots"))
    assert objects == sorted([second.object, third.object])  # the one before stays for readers


def test_publish_refuses_a_nested_key(bucket: Store, tmp_path: Path) -> None:
    with pytest.raises(InvalidRecord, match="one path component"):
        publish_snapshot(bucket, "a/b.mrec.lmdb", payload(tmp_path, 1))


def test_a_replica_fetches_once_and_revalidates_with_a_conditional_get(
    bucket: Store, tmp_path: Path
) -> None:
    source = payload(tmp_path, 1)
    publish_snapshot(bucket, KEY, source, part_size=PART)
    counting = CountingStore(bucket)
    cache = SnapshotCache(counting, tmp_path / "cache", revalidate_seconds=0)
    first = cache.get(KEY)
    assert first.path.read_bytes() == source.read_bytes()
    assert counting.requests("get") == 1 + 6  # the manifest, then one ranged GET per part
    counting.reset()
    again = cache.get(KEY)
    assert again.path == first.path
    assert counting.requests("get") == 1 and counting.nbytes("get") == 0  # 304 Not Modified
    lazy = SnapshotCache(counting, tmp_path / "cache", revalidate_seconds=3600)
    lazy.get(KEY)
    counting.reset()
    lazy.get(KEY)
    assert counting.requests() == 0  # within revalidate_seconds: no request at all


def test_a_newer_publish_replaces_the_cached_copy(bucket: Store, tmp_path: Path) -> None:
    publish_snapshot(bucket, KEY, payload(tmp_path, 1), part_size=PART)
    cache = SnapshotCache(bucket, tmp_path / "cache", revalidate_seconds=0)
    old = cache.get(KEY)
    newer = payload(tmp_path, 2, size=3 * PART)
    publish_snapshot(bucket, KEY, newer, overwrite=True, part_size=PART)
    new = cache.get(KEY)
    assert new.path != old.path and new.path.read_bytes() == newer.read_bytes()
    assert old.path.exists()  # kept one round for processes that still read it
    publish_snapshot(bucket, KEY, payload(tmp_path, 3), overwrite=True, part_size=PART)
    cache.get(KEY)
    assert not old.path.exists()
    fresh = SnapshotCache(bucket, tmp_path / "cache", revalidate_seconds=0)
    assert fresh.get(KEY).path.read_bytes() == payload(tmp_path, 3).read_bytes()


def test_a_cut_download_resumes_from_the_last_good_part(bucket: Store, tmp_path: Path) -> None:
    source = payload(tmp_path, 1)
    publish_snapshot(bucket, KEY, source, part_size=PART)
    faulty = FaultyStore(bucket)
    faulty.cut_after = 2
    cache_dir = tmp_path / "cache"
    with pytest.raises(StoreUnavailable, match="injected"):
        SnapshotCache(faulty, cache_dir).get(KEY)
    (partial,) = cache_dir.rglob("*.part")
    assert partial.stat().st_size == 2 * PART
    assert not list(cache_dir.rglob("current.json"))  # nothing is served from a partial file
    resumed = FaultyStore(bucket)
    copy = SnapshotCache(resumed, cache_dir).get(KEY)
    assert copy.path.read_bytes() == source.read_bytes()
    assert resumed.data_bytes == source.stat().st_size - 2 * PART
    assert resumed.data_gets == 4 and not partial.exists()


def test_a_damaged_partial_file_is_refetched_from_the_damage(bucket: Store, tmp_path: Path) -> None:
    source = payload(tmp_path, 1)
    publish_snapshot(bucket, KEY, source, part_size=PART)
    faulty = FaultyStore(bucket)
    faulty.cut_after = 4
    cache_dir = tmp_path / "cache"
    with pytest.raises(StoreUnavailable):
        SnapshotCache(faulty, cache_dir).get(KEY)
    (partial,) = cache_dir.rglob("*.part")
    with partial.open("r+b") as damaged:  # a torn write in part 1
        damaged.seek(PART + 7)
        damaged.write(b"\x00\x01")
    resumed = FaultyStore(bucket)
    copy = SnapshotCache(resumed, cache_dir).get(KEY)
    assert copy.path.read_bytes() == source.read_bytes()
    assert resumed.data_gets == 5  # parts 1..5: part 0 was kept


def test_a_corrupt_part_is_fetched_again(bucket: Store, tmp_path: Path) -> None:
    source = payload(tmp_path, 1)
    publish_snapshot(bucket, KEY, source, part_size=PART)
    faulty = FaultyStore(bucket)
    faulty.corrupt = 1
    copy = SnapshotCache(faulty, tmp_path / "cache").get(KEY)
    assert copy.path.read_bytes() == source.read_bytes()
    assert faulty.data_gets == 6 + 1


def test_a_download_that_keeps_failing_its_checksum_is_refused(
    bucket: Store, tmp_path: Path
) -> None:
    publish_snapshot(bucket, KEY, payload(tmp_path, 1), part_size=PART)
    faulty = FaultyStore(bucket)
    faulty.corrupt = FETCH_ATTEMPTS
    cache_dir = tmp_path / "cache"
    with pytest.raises(StoreUnavailable, match="sha256"):
        SnapshotCache(faulty, cache_dir).get(KEY)
    served = [p for p in cache_dir.rglob("*.mrec.lmdb") if p.is_file()]
    assert served == [] and not list(cache_dir.rglob("current.json"))


def test_an_object_that_is_not_what_its_manifest_says_is_refused(
    bucket: Store, tmp_path: Path
) -> None:
    manifest = publish_snapshot(bucket, KEY, payload(tmp_path, 1), part_size=PART)
    bucket.put(manifest.object, payload(tmp_path, 9).read_bytes())  # same size, other bytes
    with pytest.raises(StoreUnavailable, match="sha256"):
        SnapshotCache(bucket, tmp_path / "cache").get(KEY)


def test_a_corrupt_newer_snapshot_leaves_the_old_copy_served(
    bucket: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = payload(tmp_path, 1)
    publish_snapshot(bucket, KEY, source, part_size=PART)
    faulty = FaultyStore(bucket)
    cache = SnapshotCache(faulty, tmp_path / "cache", revalidate_seconds=0)
    old = cache.get(KEY)
    newer = payload(tmp_path, 2)
    publish_snapshot(bucket, KEY, newer, overwrite=True, part_size=PART)
    faulty.corrupt = 10 * FETCH_ATTEMPTS
    with caplog.at_level("WARNING", logger="mrecd.snapshots"):
        assert cache.get(KEY).path.read_bytes() == source.read_bytes()
    assert "sha256" in caplog.text
    faulty.down = True  # the store unreachable: the copy held is served
    assert cache.get(KEY) == old
    faulty.down = False
    faulty.corrupt = 0
    assert cache.get(KEY).path.read_bytes() == newer.read_bytes()  # resumed, verified


def test_a_malformed_manifest_is_refused(bucket: Store, tmp_path: Path) -> None:
    publish_snapshot(bucket, KEY, payload(tmp_path, 1), part_size=PART)
    raw = json.loads(bucket.get(KEY + MANIFEST_SUFFIX) or b"")
    raw["parts"][1]["offset"] += 1
    bucket.put(KEY + MANIFEST_SUFFIX, json.dumps(raw).encode())
    with pytest.raises(InvalidRecord, match="tile"):
        SnapshotCache(bucket, tmp_path / "cache").get(KEY)
    bucket.put(KEY + MANIFEST_SUFFIX, b"{not json")
    with pytest.raises(InvalidRecord, match="not a snapshot manifest"):
        SnapshotCache(bucket, tmp_path / "cache").get(KEY)


def test_an_unpublished_key_is_not_found(bucket: Store, tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        SnapshotCache(bucket, tmp_path / "cache").get(KEY)
    publish_snapshot(bucket, KEY, payload(tmp_path, 1), part_size=PART)
    cache = SnapshotCache(bucket, tmp_path / "cache", revalidate_seconds=0)
    cache.get(KEY)
    bucket.delete(KEY + MANIFEST_SUFFIX)
    with pytest.raises(NotFound):
        cache.get(KEY)


def test_every_store_answers_a_conditional_get(store: Store) -> None:
    assert store.get_if_none_match("m.json", None) is None
    etag = store.put("m.json", b"one")
    fresh = store.get_if_none_match("m.json", None)
    assert fresh is not None and fresh.data == b"one" and fresh.etag == etag
    unchanged = store.get_if_none_match("m.json", etag)
    assert unchanged is not None and unchanged.data is None and unchanged.etag == etag
    newer = store.put("m.json", b"two")
    changed = store.get_if_none_match("m.json", etag)
    assert changed is not None and changed.data == b"two" and changed.etag == newer


def test_every_store_carries_a_snapshot(store: Store, tmp_path: Path) -> None:
    source = payload(tmp_path, 4)
    publish_snapshot(store, KEY, source, part_size=PART)
    copy = SnapshotCache(store, tmp_path / "cache").get(KEY)
    assert copy.path.read_bytes() == source.read_bytes()
