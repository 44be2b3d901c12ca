"""CountingStore: requests and bytes per verb, as benchmarks and cost tests read them."""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator

import pytest

from mrecd.storage import ByteRange, CountingStore, drop_memory_store, memory_store


@pytest.fixture
def counting() -> Iterator[CountingStore]:
    name = uuid.uuid4().hex
    yield CountingStore(memory_store(name))
    drop_memory_store(name)


def test_counts_requests_and_bytes_per_verb(counting: CountingStore) -> None:
    counting.put("a/zarr.json", b"12345")
    counting.put("a/c/0", b"xy")
    assert counting.get("a/c/0", ByteRange(0, 1)) == b"x"
    assert counting.get("absent") is None
    counting.head("a/c/0")
    list(counting.keys("a"))
    counting.delete("a/c/0")
    counts = counting.snapshot()
    assert (counts["put"].requests, counts["put"].bytes) == (2, 7)
    assert (counts["get"].requests, counts["get"].bytes) == (2, 1)
    assert counts["head"].requests == 1 and counts["list"].requests == 1
    assert counts["delete"].requests == 1
    assert counting.requests() == 7 and counting.nbytes() == 8


def test_reset_zeroes_every_counter(counting: CountingStore) -> None:
    counting.put("k", b"v")
    counting.get("k")
    counting.reset()
    assert counting.requests() == 0 and counting.nbytes() == 0
    counting.get("k")
    assert counting.requests("get") == 1 and counting.requests("put") == 0


def test_reader_preads_are_gets(counting: CountingStore) -> None:
    counting.put("shard", bytes(100))
    counting.reset()
    reader = counting.open_reader("shard")
    assert reader is not None
    reader.pread(0, 10)
    reader.pread(90, 50)
    assert counting.requests("head") == 1
    assert (counting.requests("get"), counting.nbytes("get")) == (2, 20)


def test_put_file_counts_the_bytes_sent(counting: CountingStore) -> None:
    counting.put_file("big", io.BytesIO(b"z" * 3000))
    assert (counting.requests("put"), counting.nbytes("put")) == (1, 3000)
    assert counting.inner.get("big") == b"z" * 3000


def test_delete_prefix_counts_the_listing_and_each_delete(counting: CountingStore) -> None:
    for key in ("r/1", "r/2", "r/s/3"):
        counting.put(key, b"x")
    counting.reset()
    counting.delete_prefix("r")
    assert counting.requests("list") == 1 and counting.requests("delete") == 3
    assert list(counting.inner.keys()) == []


def test_a_child_view_counts_into_its_parent(counting: CountingStore) -> None:
    child = counting.child("cat/run.mrec")
    child.put("zarr.json", b"{}")
    child.get("zarr.json")
    assert counting.requests("put") == 1 and counting.requests("get") == 1


def test_positional_writes_are_puts(counting: CountingStore) -> None:
    f = counting.open_positional("arr/c/0")
    f.pwrite(0, b"abcd")
    assert f.pread(0, 2) == b"ab"
    f.close()
    assert counting.nbytes("put") == 4 and counting.nbytes("get") == 2
