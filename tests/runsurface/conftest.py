"""Where run-surface records live: a directory and a memory store (both through the seam)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mrecd.storage import Location, drop_memory_store, location_of, memory_store


@pytest.fixture(params=["directory", "memory"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Location]:
    """The location of a not-yet-existing record ``r.mrec`` on a directory or in memory."""
    if request.param == "directory":
        yield location_of(tmp_path / "r.mrec")
        return
    name = uuid.uuid4().hex
    yield Location(memory_store(name), "r.mrec")
    drop_memory_store(name)
