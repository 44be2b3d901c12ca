"""One conformance suite for every store: directory, memory, obstore memory, S3 (moto).

Each test runs against each implementation (the ``store`` fixture is
parametrized), so the implementations cannot drift apart.
"""

from __future__ import annotations

import threading

import pytest

from mrecd.errors import InvalidRecord, PreconditionFailed, ReadOnlyError, WriterBusy
from mrecd.storage import ByteRange, IfMatch, Offset, Store, Suffix


class TestStoreConformance:
    def test_absent_key_reads_none(self, store: Store) -> None:
        assert store.get("nothing/here") is None
        assert store.head("nothing/here") is None
        assert not store.exists("nothing/here")
        assert store.open_reader("nothing/here") is None

    def test_put_get_roundtrip_and_etag(self, store: Store) -> None:
        etag = store.put("a/b/zarr.json", b"hello world")
        assert store.get("a/b/zarr.json") == b"hello world"
        info = store.head("a/b/zarr.json")
        assert info is not None and info.size == 11 and info.etag == etag
        second = store.put("a/b/zarr.json", b"other")
        assert second != etag
        assert store.get("a/b/zarr.json") == b"other"

    def test_byte_ranges(self, store: Store) -> None:
        store.put("k", bytes(range(100)))
        assert store.get("k", ByteRange(10, 20)) == bytes(range(10, 20))
        assert store.get("k", ByteRange(90, 200)) == bytes(range(90, 100))
        assert store.get("k", Offset(95)) == bytes(range(95, 100))
        assert store.get("k", Suffix(3)) == bytes([97, 98, 99])
        assert store.get("k", ByteRange(5, 5)) == b""
        assert store.get("absent", ByteRange(0, 4)) is None

    def test_negative_range_refused(self, store: Store) -> None:
        store.put("k", b"abc")
        with pytest.raises(InvalidRecord, match="negative or inverted"):
            store.get("k", ByteRange(5, 2))

    def test_range_reader(self, store: Store) -> None:
        store.put("shard", bytes(range(256)))
        reader = store.open_reader("shard")
        assert reader is not None and reader.size == 256
        assert reader.pread(250, 100) == bytes(range(250, 256))
        assert reader.pread(0, 4) == bytes(range(4))
        reader.close()

    def test_create_only(self, store: Store) -> None:
        store.put("marker", b"1", mode="create")
        with pytest.raises(PreconditionFailed, match="the key exists"):
            store.put("marker", b"2", mode="create")
        assert store.get("marker") == b"1"

    def test_replace_if_etag_matches(self, store: Store) -> None:
        etag = store.put("trajectory/zarr.json", b"nstep 0")
        new = store.put("trajectory/zarr.json", b"nstep 1", mode=IfMatch(etag))
        with pytest.raises(PreconditionFailed, match="ETag changed"):
            store.put("trajectory/zarr.json", b"nstep 1 again", mode=IfMatch(etag))
        assert store.get("trajectory/zarr.json") == b"nstep 1"
        store.put("trajectory/zarr.json", b"nstep 2", mode=IfMatch(new))
        assert store.get("trajectory/zarr.json") == b"nstep 2"

    def test_if_match_on_absent_key_fails(self, store: Store) -> None:
        with pytest.raises(PreconditionFailed):
            store.put("absent", b"x", mode=IfMatch('"whatever"'))
        assert store.get("absent") is None

    def test_racing_conditional_puts_one_wins(self, store: Store) -> None:
        if store.url.startswith("s3://"):
            pytest.skip("moto checks If-Match without a lock: racing PUTs can both win (S3 cannot)")
        etag = store.put("m", b"0")
        wins: list[int] = []
        losses: list[int] = []

        def racer(i: int) -> None:
            try:
                store.put("m", str(i).encode(), mode=IfMatch(etag))
                wins.append(i)
            except PreconditionFailed:
                losses.append(i)

        threads = [threading.Thread(target=racer, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(wins) == 1 and len(losses) == 7
        assert store.get("m") == str(wins[0]).encode()

    def test_list_dir_and_keys(self, store: Store) -> None:
        for key in ("r/zarr.json", "r/meta/zarr.json", "r/trajectory/atoms/x/c/0/0", "top"):
            store.put(key, b"x")
        assert store.list_dir("") == (["r"], ["top"])
        assert store.list_dir("r") == (["meta", "trajectory"], ["zarr.json"])
        assert store.list_dir("missing") == ([], [])
        assert list(store.keys("r")) == [
            "r/meta/zarr.json",
            "r/trajectory/atoms/x/c/0/0",
            "r/zarr.json",
        ]
        assert store.is_prefix("r/trajectory") and not store.is_prefix("nope")

    def test_delete_and_delete_prefix(self, store: Store) -> None:
        for key in ("a/1", "a/b/2", "c"):
            store.put(key, b"x")
        store.delete("c")
        store.delete("c")  # absent is fine
        assert store.get("c") is None
        store.delete_prefix("a")
        assert list(store.keys()) == []
        assert store.list_dir("") == ([], [])

    def test_rename_prefix(self, store: Store) -> None:
        store.put("stage/zarr.json", b"root")
        store.put("stage/meta/zarr.json", b"meta")
        store.rename("stage", "run.mrec")
        assert store.get("run.mrec/meta/zarr.json") == b"meta"
        assert store.get("stage/zarr.json") is None
        assert store.list_dir("") == (["run.mrec"], [])

    def test_copy(self, store: Store) -> None:
        store.put("src", b"bytes")
        store.copy("src", "dst/inner")
        assert store.get("dst/inner") == b"bytes" and store.get("src") == b"bytes"

    def test_child_views_a_prefix(self, store: Store) -> None:
        child = store.child("cat/run.mrec")
        child.put("zarr.json", b"{}")
        assert store.get("cat/run.mrec/zarr.json") == b"{}"
        assert child.list_dir("") == ([], ["zarr.json"])
        assert list(child.keys()) == ["zarr.json"]
        assert child.url.endswith("cat/run.mrec")

    def test_bad_keys_refused(self, store: Store) -> None:
        for key in ("../escape", "a//b", "/abs", "a/./b", "trailing/"):
            with pytest.raises(InvalidRecord, match="component"):
                store.put(key, b"x")

    def test_positional_writes_when_capable(self, store: Store) -> None:
        if not store.positional_writes:
            with pytest.raises(NotImplementedError):
                store.open_positional("shard")
            return
        f = store.open_positional("arr/c/0")
        f.pwrite(0, b"\xff" * 8)
        f.pwrite(8, b"tail")
        f.pwrite(0, b"\x00" * 4)
        f.sync()
        assert f.size == 12
        assert store.get("arr/c/0") == b"\x00" * 4 + b"\xff" * 4 + b"tail"
        f.truncate(8)
        assert f.pread(0, 100) == b"\x00" * 4 + b"\xff" * 4
        f.close()
        store.sync(["arr/c/0"])

    def test_writer_lease_is_exclusive_where_held(self, store: Store) -> None:
        store.put("run/trajectory/zarr.json", b"{}")
        lease = store.writer_lease("run/trajectory")
        if store.positional_writes:  # directory and memory hold real leases
            with pytest.raises(WriterBusy):
                store.writer_lease("run/trajectory")
        lease.release()
        store.writer_lease("run/trajectory").release()

    def test_read_only_refuses_writes(self, store: Store) -> None:
        from mrecd.storage import open_store

        store.put("k", b"v")
        if store.url.startswith("memory-obstore"):
            pytest.skip("obstore's own MemoryStore has no URL to reopen")
        ro = open_store(store.url, read_only=True)
        assert ro.get("k") == b"v"
        with pytest.raises(ReadOnlyError):
            ro.put("k", b"w")
        with pytest.raises(ReadOnlyError):
            ro.delete("k")
