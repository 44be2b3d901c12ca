"""Store fixtures: every implementation of the seam, one parametrized ``store``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mrecd.storage import CountingStore, DirectoryStore, Store, drop_memory_store, memory_store
from mrecd.storage._object import ObjectStore


@pytest.fixture(params=["directory", "memory", "memory-prefix", "counting", "obstore-memory", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh, empty, writable store of each kind (``s3`` is moto on 127.0.0.1)."""
    kind = request.param
    name = uuid.uuid4().hex
    if kind == "directory":
        yield DirectoryStore(tmp_path / "store")
    elif kind in ("memory", "memory-prefix", "counting"):
        base = memory_store(name)
        if kind == "memory-prefix":
            yield base.child("some/prefix")
        else:
            yield CountingStore(base) if kind == "counting" else base
        drop_memory_store(name)
    elif kind == "obstore-memory":
        from obstore.store import MemoryStore

        yield ObjectStore(MemoryStore(), "memory-obstore://test", "lab")
    else:
        s3_url = request.getfixturevalue("s3_bucket")
        yield ObjectStore.from_url(f"{s3_url}/{name}")
