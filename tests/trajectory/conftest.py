"""Fixtures for trajectory tests: a bare record root on disk and frame factories."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.api._trajectory import Trajectory, create_trajectory, open_trajectory
from mrecd.storage import Location, Store, drop_memory_store, memory_store
from mrecd.storage._object import ObjectStore


def make_root(path: Any) -> Any:
    """A minimal record root (root group + stamped meta) to hang a trajectory on.

    ``path`` is a :class:`~pathlib.Path` or a :class:`~mrecd.storage.Location`
    (both take the same calls).
    """
    path.mkdir(parents=True)
    (path / "zarr.json").write_text('{"zarr_format":3,"node_type":"group","attributes":{}}')
    (path / "meta").mkdir()
    (path / "meta" / "zarr.json").write_text(
        '{"zarr_format":3,"node_type":"group","attributes":{"molrec_version":2}}'
    )
    return path


@pytest.fixture(params=["directory", "memory", "object", "s3"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A record root on a directory (a Path), in a memory store, and on object storage.

    ``object`` is obstore's in-memory object store, ``s3`` a moto bucket: both
    take mrecd's live object layout (unsharded chunks, conditional PUTs).
    """
    if request.param == "directory" or request.node.get_closest_marker("directory_only"):
        if request.param != "directory":
            pytest.skip("inspects or damages files directly: directory only")
        yield make_root(tmp_path / "run.mrec")
        return
    if request.param in ("object", "s3"):
        if request.node.get_closest_marker("positional_only"):
            pytest.skip("inspects the sharded positional layout: not object storage")
        yield make_root(Location(object_store(request), "run.mrec"))
        return
    name = uuid.uuid4().hex
    yield make_root(Location(memory_store(name), "run.mrec"))
    drop_memory_store(name)


def object_store(request: pytest.FixtureRequest) -> Store:
    """A fresh object store: obstore's in-memory one, or a prefix of a moto bucket."""
    if request.param == "object":
        from obstore.store import MemoryStore

        return ObjectStore(MemoryStore(), "memory-obstore://test", "lab")
    bucket = request.getfixturevalue("s3_bucket")
    return ObjectStore.from_url(f"{bucket}/lab")


@pytest.fixture
def new_trajectory(root: Path) -> Callable[..., Trajectory]:
    def factory(declaration: dict[str, Any] | None = None, **kwargs: Any) -> Trajectory:
        if declaration is None:
            return open_trajectory(root, **kwargs)
        create_trajectory(root, declaration)
        return open_trajectory(root, **kwargs)

    return factory


def attrs(path: Path) -> dict[str, Any]:
    """The attributes of the Zarr node at ``path``."""
    return json.loads((path / "zarr.json").read_text())["attributes"]


def write_attrs(path: Path, attributes: dict[str, Any]) -> None:
    document = json.loads((path / "zarr.json").read_text())
    document["attributes"] = attributes
    (path / "zarr.json").write_text(json.dumps(document))


def u64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.uint64)


def atoms(n: int, shift: float = 0.0) -> dict[str, np.ndarray]:
    base = np.arange(n, dtype=np.float64) + shift
    return {"x": base, "y": base + 0.5, "z": base + 0.25}


def xyz_declaration(precision: float | None = None, **meta: Any) -> dict[str, Any]:
    column: dict[str, Any] = {"dtype": "f64", "trailing": []}
    if precision is not None:
        column["precision"] = precision
    return {"blocks": {"atoms": {"columns": {c: dict(column) for c in "xyz"}}}, "meta": meta}


def frame(step: int, **kwargs: Any) -> mrecd.Frame:
    blocks = kwargs.pop("blocks", {})
    return mrecd.Frame(blocks, step=step, **kwargs)


def zs(path: Any) -> Any:
    """What zarr-python opens for ``path``: the path string, or an adapter over a Location."""
    if isinstance(path, Location):
        from mrecd.bindings.zarr._zarr_store import ZarrAdapter

        return ZarrAdapter(path.as_store())
    return str(path)
