"""Files as other conforming writers make them (lmdb.md's *(ref)* marks and §8,
collection.md §2.1, §5), written byte by byte with py-lmdb from the spec and
read back; and the refusals that stay."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from collection_helpers import X0, meta_of, put_meta

import lmdb
import mrecd

H2O2_SCHEMA = {
    "blocks": {"atoms": {"columns": {c: {"dtype": "f64", "trailing": []} for c in "xyz"}}},
    "meta": {"pe": {"dtype": "f64"}},
}


def _key(prefix: bytes, ordinal: int) -> bytes:
    return prefix + struct.pack(">Q", ordinal)


def mrf1(header: dict[str, Any], buffers: list[bytes], *, pad_tail: bool = True) -> bytes:
    """Frame bytes (lmdb.md §6) from a header and the payload buffers placed at
    the offsets the header names; ``pad_tail=False`` leaves the last buffer unpadded."""
    text = json.dumps(header, separators=(",", ":")).encode()
    head = b"MRF1" + struct.pack("<I", len(text)) + text
    head += bytes(-len(head) % 8)
    payload = b""
    for k, buffer in enumerate(buffers):
        payload += buffer
        if pad_tail or k < len(buffers) - 1:
            payload += bytes(-len(payload) % 8)
    return head + payload


def f64_column(values: list[float], offset: int) -> dict[str, Any]:
    return {"dtype": "f64", "shape": [len(values)], "offset": offset}


def index_value(
    n_frames: list[int], n_atoms: list[int], *, own_first: bool = False, meta: Any = None
) -> bytes:
    """The ``index`` value with a string column ``smiles`` (before or after the four)."""
    n = len(n_frames)
    first = np.concatenate([[0], np.cumsum(n_frames)[:-1]]).astype("<u8")
    buffers = [
        first.tobytes(),
        np.array(n_frames, "<u8").tobytes(),
        np.array(n_atoms, "<u8").tobytes(),
        np.ones(n, np.uint8).tobytes(),
    ]
    step = -(-8 * n // 8) * 8
    binding = {
        "first_frame": {"dtype": "u64", "shape": [n], "offset": 0},
        "n_frames": {"dtype": "u64", "shape": [n], "offset": step},
        "n_atoms": {"dtype": "u64", "shape": [n], "offset": 2 * step},
        "has_trajectory": {"dtype": "bool", "shape": [n], "offset": 3 * step},
    }
    smiles = {"smiles": {"dtype": "string", "shape": [n], "values": ["OO"] * n}}
    # Binding columns shuffled as well as placed after the collection's own.
    order = smiles | dict(reversed(binding.items())) if own_first else binding | smiles
    header: dict[str, Any] = {"blocks": {"records": {"count": n, "columns": order}}}
    if meta is not None:
        header["meta"] = meta
    return mrf1(header, buffers)


def update(step: int, pe: float, xyz: np.ndarray | None, **extra: Any) -> bytes:
    """A trajectory update carrying ``atoms`` (``xyz`` 3 x n) or no block."""
    blocks: dict[str, Any] = {}
    buffers: list[bytes] = []
    if xyz is not None:
        n = xyz.shape[1]
        columns = {c: f64_column(list(xyz[k]), 8 * n * k) for k, c in enumerate("xyz")}
        blocks["atoms"] = {"count": n, "structural_shape": None, "columns": columns}
        buffers = [np.ascontiguousarray(row, "<f8").tobytes() for row in xyz]
    return mrf1({"blocks": blocks, "meta": {"pe": pe}, "step": step, **extra}, buffers)


def write_file(path: Path, items: dict[bytes, bytes]) -> Path:
    """A collection file holding exactly ``items`` (``meta`` put last, one transaction)."""
    env = lmdb.open(str(path), subdir=False, map_size=2**30)
    with env.begin(write=True) as txn:
        for key, value in sorted(items.items()):
            if key != b"meta":
                txn.put(key, value)
        txn.put(b"meta", items[b"meta"])
    env.close()
    return path


def meta_value(**changes: Any) -> bytes:
    meta: dict[str, Any] = {
        "layout": "mrec-lmdb",
        "collection": {"units": {"length": "angstrom", "energy": "kcal/mol"}},
        "sequence_schema": H2O2_SCHEMA,
        "n_records": 2,
        "n_frames": 5,
    }
    meta.update(changes)
    return json.dumps(meta).encode()


XYZ0 = np.stack([X0, X0 + 1.0, X0 + 2.0])


def h2o2_items(*, own_first: bool = False, **meta: Any) -> dict[bytes, bytes]:
    """lmdb.md §5's two H2O2 records as a writer without ``layout_version`` writes them."""
    return {
        b"meta": meta_value(**meta),
        b"index": index_value([3, 2], [4, 4], own_first=own_first, meta={}),
        _key(b"r", 0): b"{}",
        _key(b"r", 1): b'{"name": "second"}',
        _key(b"f", 0): update(0, -12.0, XYZ0 + 0.5),
        _key(b"f", 1): update(1, -12.3, XYZ0),
        _key(b"f", 2): update(2, -12.2, None),
        _key(b"f", 3): update(0, -11.0, XYZ0),
        _key(b"f", 4): update(1, -11.5, XYZ0 + 1.0),
    }


def _check_h2o2(col: mrecd.Collection, n_records: int = 2, n_frames: int = 5) -> None:
    assert len(col) == n_records and col.n_frames == n_frames
    first = col[0].trajectory
    assert [f.step for f in first] == [0, 1, 2]
    assert first[2]["atoms"]["x"].values.tolist() == X0.tolist()  # carried forward
    assert first[2].meta == {"pe": -12.2}
    assert col[1].meta == {"name": "second"}
    assert col[1].trajectory[1]["atoms"]["z"].values.tolist() == (X0 + 3.0).tolist()


# -- lmdb.md §8: no layout_version, no molrec_version ----------------------------------------


def test_file_without_layout_version_reads_as_layout_1(tmp_path: Path) -> None:
    path = write_file(tmp_path / "ref020.mrec.lmdb", h2o2_items())
    assert "layout_version" not in meta_of(path)
    with mrecd.open_collection(path) as col:
        _check_h2o2(col)
        assert "molrec_version" not in col.meta  # the later revision drops it too: current


def test_appending_to_such_a_file_writes_layout_version_1(tmp_path: Path) -> None:
    path = write_file(tmp_path / "ref020.mrec.lmdb", h2o2_items())
    with mrecd.open_collection(path, "r+") as col:
        col.append(
            {"trajectory": [mrecd.Frame({}, meta={"pe": 0.0}, step=0)]}, index={"smiles": "O"}
        )
    assert meta_of(path)["layout_version"] == 1
    with mrecd.open_collection(path) as col:
        _check_h2o2(col, 3, 6)


@pytest.mark.parametrize("version", [0, 2, "1", None, 1.0, True, [1]])
def test_a_present_layout_version_outside_1_is_refused(tmp_path: Path, version: Any) -> None:
    path = write_file(tmp_path / "v.mrec.lmdb", h2o2_items(layout_version=version))
    with pytest.raises(
        mrecd.UnsupportedVersion, match=r"meta\.layout_version: layout_version must be an integer"
    ) as info:
        mrecd.open_collection(path)
    assert repr(version) in str(info.value)


def test_layout_version_1_reads(tmp_path: Path) -> None:
    path = write_file(tmp_path / "v1.mrec.lmdb", h2o2_items(layout_version=1))
    with mrecd.open_collection(path) as col:
        _check_h2o2(col)


# -- lmdb.md §4 (ref): index column order ----------------------------------------------------


def test_index_with_its_own_columns_first_reads(tmp_path: Path) -> None:
    path = write_file(tmp_path / "order.mrec.lmdb", h2o2_items(own_first=True))
    with mrecd.open_collection(path) as col:
        _check_h2o2(col)
        assert col.index["first_frame"].values.tolist() == [0, 3]
        assert col.index["smiles"].values.tolist() == ["OO", "OO"]
        assert col.index_columns == {"smiles": {"dtype": "string", "trailing": []}}


def test_appending_rewrites_the_index_binding_columns_first(tmp_path: Path) -> None:
    path = write_file(tmp_path / "order.mrec.lmdb", h2o2_items(own_first=True))
    with mrecd.open_collection(path, "r+") as col:
        col.append({"trajectory": []}, index={"smiles": "O"})
        assert list(col.index) == ["first_frame", "n_frames", "n_atoms", "has_trajectory", "smiles"]
    with mrecd.open_collection(path) as col:
        assert col.index["smiles"].values.tolist() == ["OO", "OO", "O"]
        _check_h2o2(col, 3)


@pytest.mark.parametrize(
    ("column", "entry", "match"),
    [
        ("n_frames", {"dtype": "i64", "shape": [2], "offset": 16}, "n_frames is u64"),
        ("has_trajectory", None, "lacks the binding column 'has_trajectory'"),
    ],
)
def test_binding_columns_are_still_held_by_name(
    tmp_path: Path, column: str, entry: Any, match: str
) -> None:
    items = h2o2_items(own_first=True)
    raw = items[b"index"]
    length = struct.unpack_from("<I", raw, 4)[0]
    head = json.loads(raw[8 : 8 + length])
    if entry is None:
        del head["blocks"]["records"]["columns"][column]
    else:
        head["blocks"]["records"]["columns"][column] = entry
    payload = raw[8 + length + (-(8 + length) % 8) :]
    items[b"index"] = mrf1(head, [payload])
    path = write_file(tmp_path / "bad.mrec.lmdb", items)
    with pytest.raises(mrecd.InvalidRecord, match=match) as info:
        mrecd.open_collection(path)
    assert "index/records" in str(info.value)


# -- lmdb.md §3 (ref): "no declaration" ------------------------------------------------------


def _systems_only(**meta: Any) -> dict[bytes, bytes]:
    system = mrf1(
        {
            "blocks": {
                "atoms": {
                    "count": 2,
                    "columns": {"element": {"dtype": "string", "shape": [2], "values": ["O", "H"]}},
                }
            },
        },
        [],
    )
    n = 1
    return {
        b"meta": meta_value(n_records=n, n_frames=0, **meta),
        b"index": mrf1(
            {
                "blocks": {
                    "records": {
                        "count": 1,
                        "columns": {
                            "first_frame": {"dtype": "u64", "shape": [1], "offset": 0},
                            "n_frames": {"dtype": "u64", "shape": [1], "offset": 8},
                            "n_atoms": {"dtype": "u64", "shape": [1], "offset": 16},
                            "has_trajectory": {"dtype": "bool", "shape": [1], "offset": 24},
                        },
                    }
                }
            },
            [bytes(8), bytes(8), struct.pack("<Q", 2), b"\x00"],
            pad_tail=False,
        ),
        _key(b"r", 0): b"{}",
        _key(b"s", 0): system,
    }


@pytest.mark.parametrize("schema", ["null", "absent", "empty"])
def test_no_declaration_written_other_ways(tmp_path: Path, schema: str) -> None:
    """(ref) ``{"blocks": {}, "meta": {}}``; null or a missing key say the same. The
    index and system headers here carry no ``meta`` (§8: not said to be required),
    no ``structural_shape`` (ref: null) and an unpadded last buffer (ref: padded)."""
    items = _systems_only(sequence_schema={"blocks": {}, "meta": {}} if schema == "empty" else None)
    if schema == "absent":
        meta = json.loads(items[b"meta"])
        del meta["sequence_schema"]
        items[b"meta"] = json.dumps(meta).encode()
    path = write_file(tmp_path / "none.mrec.lmdb", items)
    with mrecd.open_collection(path) as col:
        assert col.declaration is None
        assert col[0].system == mrecd.Frame({"atoms": {"element": ["O", "H"]}})
        assert col.index["n_atoms"].values.tolist() == [2]
    with mrecd.open_collection(path, "r+") as col:  # pins from its first frames
        col.append({"trajectory": [mrecd.Frame({"atoms": {"x": [1.0]}}, step=0)]})
        assert col.declaration is not None and list(col.declaration.blocks) == ["atoms"]


# -- other (ref) shapes ----------------------------------------------------------------------


def test_buffers_in_another_order_and_an_index_with_meta(tmp_path: Path) -> None:
    """(ref) buffers follow column order; any aligned placement inside the value is
    as good. (ref) the index header's meta is ``{}``; a reader ignores another."""
    items = h2o2_items()
    columns = {c: f64_column([], 32 * (2 - k)) | {"shape": [4]} for k, c in enumerate("xyz")}
    items[_key(b"f", 3)] = mrf1(
        {"blocks": {"atoms": {"count": 4, "columns": columns}}, "meta": {"pe": -11.0}, "step": 0},
        [np.ascontiguousarray(XYZ0[k], "<f8").tobytes() for k in (2, 1, 0)],
    )
    items[b"index"] = index_value([3, 2], [4, 4], meta={"writer": "elsewhere"})
    path = write_file(tmp_path / "order.mrec.lmdb", items)
    with mrecd.open_collection(path) as col:
        _check_h2o2(col)
        assert col[1].trajectory[0]["atoms"]["y"].values.tolist() == (X0 + 1.0).tolist()


def test_restated_unchanged_block_and_partial_box(tmp_path: Path) -> None:
    """§8: a writer may restate an unchanged block; §6.1 (ref): a box with only
    ``vectors`` (origin, boundary and cell_defined take their defaults)."""
    items = h2o2_items()
    box = {"vectors": [[10.0, 0, 0], [0, 10.0, 0], [0, 0, 10.0]]}
    items[_key(b"f", 1)] = update(1, -12.3, XYZ0, box=box)
    items[_key(b"f", 2)] = update(2, -12.2, XYZ0)  # the same atoms again
    path = write_file(tmp_path / "restate.mrec.lmdb", items)
    with mrecd.open_collection(path) as col:
        _check_h2o2(col)
        frames = list(col[0].trajectory)
        assert frames[1]["atoms"] == frames[2]["atoms"]
        assert frames[2].box == mrecd.Box(np.eye(3) * 10.0) and frames[0].box is None
        assert col[0].trajectory[2].box == frames[2].box


def test_system_box_and_empty_units(tmp_path: Path) -> None:
    """§7 (ref): a bare trajectory as a one-record collection with ``units: {}``;
    §8: a system value may carry the system's cell as ``box``."""
    items = _systems_only(sequence_schema=None)
    items[b"meta"] = meta_value(
        n_records=1, n_frames=0, sequence_schema=None, collection={"units": {}}
    )
    box = {"vectors": [[5.0, 0, 0], [0, 5.0, 0], [0, 0, 5.0]], "boundary": [True, True, False]}
    items[_key(b"s", 0)] = mrf1(
        {
            "blocks": {
                "atoms": {
                    "count": 2,
                    "columns": {"element": {"dtype": "string", "shape": [2], "values": ["O", "H"]}},
                }
            },
            "meta": {},
            "box": box,
        },
        [],
    )
    path = write_file(tmp_path / "cell.mrec.lmdb", items)
    with mrecd.open_collection(path) as col:
        assert col.meta == {"units": {}}
        system = col[0].system
        assert system is not None and system.box is not None
        assert list(system.box.boundary) == [True, True, False]


# -- refusals that stay ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda m: m.update(layout="mrec-zarr"), r"meta\.layout: layout must be 'mrec-lmdb'"),
        (lambda m: m["collection"].update(molrec_version=None), "molrec_version"),
        (lambda m: m.pop("n_records"), r"meta lacks \['n_records'\]"),
        (lambda m: m.update(sequence_schema=[]), "sequence_schema"),
    ],
)
def test_what_stays_refused(
    tmp_path: Path, edit: Callable[[dict[str, Any]], Any], match: str
) -> None:
    path = write_file(tmp_path / "bad.mrec.lmdb", h2o2_items())
    meta = meta_of(path)
    edit(meta)
    put_meta(path, meta)
    with pytest.raises(mrecd.InvalidRecord, match=match):
        mrecd.open_collection(path)
