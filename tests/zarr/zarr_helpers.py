"""Helpers for the Zarr record binding tests: sample frames and plain-zarr store surgery.

The surgery helpers use zarr-python and the JSON module only, never mrecd's
writer, so a refusal test exercises the reader against a store another tool
could have written.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import zarr

import mrecd

#: One value list per column dtype (13 dtypes), three rows each.
DTYPE_VALUES: dict[str, Any] = {
    "f64": np.array([0.5, -0.0, np.nan]),
    "i8": np.array([-128, 0, 127], dtype=np.int8),
    "i16": np.array([-32768, 1, 32767], dtype=np.int16),
    "i32": np.array([-(2**31), 2, 2**31 - 1], dtype=np.int32),
    "i64": np.array([-(2**63), 3, 2**63 - 1], dtype=np.int64),
    "u8": np.array([0, 1, 255], dtype=np.uint8),
    "u16": np.array([0, 1, 65535], dtype=np.uint16),
    "u32": np.array([0, 1, 2**32 - 1], dtype=np.uint32),
    "u64": np.array([0, 1, 2**64 - 1], dtype=np.uint64),
    "bool": np.array([True, False, True]),
    "string": np.array(["O", "", "héllo wörld"], dtype=np.dtypes.StringDType()),
    "c64": np.array([1 + 2j, -0.5j, 3], dtype=np.complex64),
    "c128": np.array([1 + 2j, np.inf * 1j, -3], dtype=np.complex128),
}


def water_frame(n: int = 3, *, seed: int = 0) -> mrecd.Frame:
    """A small frame: atoms (coordinates at p = 1e-3, a masked column), bonds, box, meta."""
    rng = np.random.default_rng(seed)
    elements = np.array((["O", "H", "H"] * n)[:n], dtype=np.dtypes.StringDType())
    atoms = {
        "x": mrecd.Column(rng.random(n) * 10, precision=1e-3),
        "y": mrecd.Column(rng.random(n) * 10, precision=1e-3),
        "z": mrecd.Column(rng.random(n) * 10, precision=1e-3),
        "element": elements,
        "mass": rng.random(n) + 1,
        "b_factor": mrecd.Column(rng.random(n), validity=[i % 2 == 0 for i in range(n)]),
    }
    bonds = {
        "atomi": np.arange(n - 1, dtype=np.uint64),
        "atomj": np.arange(1, n, dtype=np.uint64),
    }
    return mrecd.Frame(
        {"atoms": atoms, "bonds": bonds},
        meta={"smiles": "O", "total_charge": 0, "units": {"length": "angstrom"}},
        box=mrecd.Box(np.eye(3) * 20),
    )


def every_dtype_frame() -> mrecd.Frame:
    """One block holding a column of every dtype, plus a trailing-axes column."""
    columns: dict[str, Any] = {f"c_{d}": mrecd.Column(v, d) for d, v in DTYPE_VALUES.items()}
    columns["vec"] = np.arange(9, dtype=np.float64).reshape(3, 3)
    columns["grid"] = np.arange(24, dtype=np.int32).reshape(3, 2, 4)
    return mrecd.Frame({"table": columns})


def zarr_json(path: Path) -> dict[str, Any]:
    """The parsed ``zarr.json`` of the node directory ``path``."""
    doc: dict[str, Any] = json.loads((path / "zarr.json").read_text())
    return doc


def set_attributes(path: Path, attributes: dict[str, Any] | str) -> None:
    """Replace a node's attributes; a ``str`` is spliced in raw (to write bare NaN tokens)."""
    doc = zarr_json(path)
    if isinstance(attributes, str):
        doc["attributes"] = "@@"
        text = json.dumps(doc).replace('"@@"', attributes)
    else:
        doc["attributes"] = attributes
        text = json.dumps(doc)
    (path / "zarr.json").write_text(text)


def update_attributes(path: Path, **changes: Any) -> None:
    """Merge ``changes`` into a node's attributes (a value ``...`` deletes the key)."""
    attrs = zarr_json(path)["attributes"]
    for key, value in changes.items():
        if value is ...:
            attrs.pop(key, None)
        else:
            attrs[key] = value
    set_attributes(path, attrs)


def put_array(group: Path, name: str, data: Any, **kwargs: Any) -> zarr.Array:
    """Create (or replace) array ``name`` in the group directory ``group`` (plain zarr-python)."""
    g = zarr.open_group(group, mode="r+")
    array = g.create_array(name, data=np.asarray(data), overwrite=True, **kwargs)
    return array


def plain_group(path: Path, attributes: dict[str, Any] | None = None) -> zarr.Group:
    """Create a group at ``path`` with plain zarr-python."""
    return zarr.open_group(path, mode="w", attributes=attributes or {})


def all_arrays(root: Path) -> Iterator[tuple[str, zarr.Array]]:
    """Every array under ``root`` as ``(path, array)``, opened by plain zarr-python."""
    group = zarr.open_group(root, mode="r")
    for path, node in group.members(max_depth=None):
        if isinstance(node, zarr.Array):
            yield path, node


def file_bytes(root: Path) -> dict[str, bytes]:
    """``{relative path: bytes}`` of every file under ``root``."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
