"""Builders shared by the collection tests: H2O2 frames, declarations, raw LMDB access."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

import lmdb
import mrecd
from mrecd.codecs import decode_blocks, encode_blocks

UNITS = {"units": {"length": "angstrom", "energy": "kcal/mol"}}
XYZ = {c: {"dtype": "f64", "trailing": []} for c in "xyz"}
#: The H2O2 declaration of lmdb.md §5: atoms{x,y,z}, per-step pe.
H2O2 = {"blocks": {"atoms": {"columns": XYZ}}, "meta": {"pe": {"dtype": "f64"}}}
#: The worked x column of lmdb.md §6.3.
X0 = np.array([0.8212890625, -0.0517578125, -0.0078125, -0.8369140625])


def atoms(x: Any, shift: float = 0.0) -> dict[str, Any]:
    """An ``atoms`` block of x, y = x + 1, z = x + 2 (plus ``shift``)."""
    x = np.asarray(x, dtype=np.float64) + shift
    return {"x": x, "y": x + 1.0, "z": x + 2.0}


def frame(step: int, pe: float | None = None, **blocks: Any) -> mrecd.Frame:
    """A trajectory frame; ``pe`` omitted when ``None``."""
    meta = {} if pe is None else {"pe": pe}
    return mrecd.Frame(blocks, meta=meta, step=step)


def system(n: int = 4, **meta: Any) -> mrecd.Frame:
    """A system with ``n`` atoms carrying ``element`` only (topology)."""
    elements = np.array((["O", "O", "H", "H"] * n)[:n])
    return mrecd.Frame({"atoms": {"element": elements}}, meta=meta or {"smiles": "OO"})


def new(path: Path, declaration: Any = H2O2, **kwargs: Any) -> mrecd.Collection:
    """A fresh collection at ``path`` with the H2O2 declaration and units."""
    kwargs.setdefault("meta", UNITS)
    return mrecd.create_collection(path, declaration=declaration, **kwargs)


@contextmanager
def raw(path: Path, write: bool = False) -> Iterator[Any]:
    """A raw LMDB transaction on the file (to inspect or tamper with it)."""
    env = lmdb.open(str(path), subdir=False, readonly=not write, lock=True)
    try:
        with env.begin(write=write) as txn:
            yield txn
    finally:
        env.close()


def keys(path: Path) -> dict[bytes, bytes]:
    """Every key and value of the file."""
    with raw(path) as txn:
        return {bytes(k): bytes(v) for k, v in txn.cursor()}


def header(value: bytes) -> tuple[str, int]:
    """``(header text, header length)`` of frame bytes."""
    length = int.from_bytes(value[4:8], "little")
    return value[8 : 8 + length].decode(), length


def meta_of(path: Path) -> dict[str, Any]:
    """The decoded ``meta`` value."""
    with raw(path) as txn:
        out: dict[str, Any] = json.loads(bytes(txn.get(b"meta")))
        return out


def put_meta(path: Path, meta: dict[str, Any]) -> None:
    """Overwrite ``meta`` with ``meta`` (tampering)."""
    with raw(path, write=True) as txn:
        txn.put(b"meta", json.dumps(meta).encode())


def rewrite_frame_value(path: Path, key: bytes, edit: Any) -> None:
    """Decode the frame bytes at ``key``, let ``edit(blocks, header)`` change them, re-encode."""
    with raw(path, write=True) as txn:
        blocks, head = decode_blocks(bytes(txn.get(key)), copy=True)
        blocks, head = edit(dict(blocks), dict(head))
        head.pop("blocks", None)
        txn.put(key, encode_blocks(blocks, head))


def snapshot(col: mrecd.Collection) -> dict[bytes, bytes]:
    """Every key and value, read through the collection's own environment
    (LMDB refuses a second environment on a file open in this process)."""
    with col._binding.reading() as txn:
        return {bytes(k): bytes(v) for k, v in txn.cursor()}
