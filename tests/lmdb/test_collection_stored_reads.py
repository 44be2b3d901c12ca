"""Records read for sending (``mrecd.api.read_stored``): a first read keeps the
values its checks read and the system's stored bytes; what it returns is what
the file stores, the same as a later read, and it refuses what a reader refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from collection_helpers import X0, atoms, frame, keys, new, raw, system

import mrecd
from mrecd import api
from mrecd.bindings.lmdb import StoredUpdates, frame_key, system_key


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    """Three records: with a system, without one, and one whose frame 1 has no block."""
    path = tmp_path / "stored.mrec.lmdb"
    with new(path) as col:
        col.append(
            {
                "system": system(),
                "trajectory": [frame(k, -1.0 * k, atoms=atoms(X0, k)) for k in range(3)],
            }
        )
        col.append({"trajectory": [frame(k, -2.0, atoms=atoms(X0, k)) for k in range(2)]})
        col.append({"trajectory": [frame(0, 0.0, atoms=atoms(X0)), frame(1, 1.0)]})
    return path


def _expected(path: Path) -> tuple[list[list[bytes]], bytes]:
    """Each record's stored ``f`` values in order, and record 0's ``s`` value."""
    everything = keys(path)
    values = sorted((k, v) for k, v in everything.items() if k[:1] == b"f")
    return [[v for _, v in values[0:3]], [v for _, v in values[3:5]]], everything[system_key(0)]


def test_a_first_read_returns_the_stored_values_and_a_later_read_the_same(stored: Path) -> None:
    updates, system_bytes = _expected(stored)
    with mrecd.open_collection(stored) as col:
        first = api.read_stored(col, [0, 1, 2])
        assert col._binding.cached().caches.layout(0) is not None  # the first read checked them
        again = api.read_stored(col, [0, 1, 2])
    for got in (first, again):
        assert [p.r for p in got] == [0, 1, 2]
        assert got[0].system == system_bytes and got[1].system is None
        for parts, values in zip(got[:2], updates, strict=True):
            assert isinstance(parts.updates, StoredUpdates) and parts.updates.values == values
            assert parts.frames is None
        assert got[2].updates is None and got[2].frames is not None  # a block carries forward
        assert [f.step for f in got[2].frames] == [0, 1]
    assert first[0].updates is not None and again[0].updates is not None
    assert first[0].updates.meta_types == again[0].updates.meta_types == {"pe": "f64"}


def test_record_stored_is_record_with_the_system_bytes(stored: Path) -> None:
    _, system_bytes = _expected(stored)
    with mrecd.open_collection(stored) as col:
        binding = col._binding
        with binding.reading(buffers=False) as txn:
            state = binding.state(txn)
            parts, got = binding.record_stored(txn, state, 0)
            assert got == system_bytes and parts == binding.record(txn, state, 0)
            assert parts.system == col[0].system
            assert binding.record_stored(txn, state, 1)[1] is None


def _damage(path: Path, key: bytes, value: bytes) -> None:
    with raw(path, write=True) as txn:
        txn.put(key, value)


def test_a_damaged_update_is_refused_by_a_first_read_as_read_many_refuses_it(
    stored: Path,
) -> None:
    good = keys(stored)[frame_key(1)]
    _damage(stored, frame_key(1), b"MRF2" + good[4:])
    with mrecd.open_collection(stored) as col, pytest.raises(mrecd.InvalidRecord) as local:
        col.read_many([0])
    with mrecd.open_collection(stored) as col, pytest.raises(mrecd.InvalidRecord) as served:
        api.read_stored(col, [1, 0])
    assert (served.value.message, served.value.path) == (local.value.message, local.value.path)
    assert served.value.path == "records[0].trajectory[1]"


def test_a_damaged_system_is_refused_by_a_first_read_as_read_many_refuses_it(
    stored: Path,
) -> None:
    _damage(stored, system_key(0), b"MRF1\xff\x00\x00\x00{}")
    with mrecd.open_collection(stored) as col, pytest.raises(mrecd.InvalidRecord) as local:
        col.read_many([0])
    with mrecd.open_collection(stored) as col, pytest.raises(mrecd.InvalidRecord) as served:
        api.read_stored(col, [0])
    assert (served.value.message, served.value.path) == (local.value.message, local.value.path)
    assert served.value.path.startswith("records[0].system")


def test_a_missing_update_is_refused_by_a_later_read_as_by_a_first_one(stored: Path) -> None:
    with mrecd.open_collection(stored) as col:
        api.read_stored(col, [1])  # checked: the next read takes the values only
        with col._binding._live().env.begin(write=True) as txn:
            txn.delete(frame_key(4))  # record 1's second update
        with pytest.raises(mrecd.InvalidRecord) as later:
            api.read_stored(col, [1])
    with mrecd.open_collection(stored) as col, pytest.raises(mrecd.InvalidRecord) as first:
        api.read_stored(col, [1])
    assert (later.value.message, later.value.path) == (first.value.message, first.value.path)
    assert later.value.path == "records[1].trajectory[1]" and "missing" in later.value.message
