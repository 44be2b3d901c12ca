"""Records as other conforming writers lay them down, read through mrecd.

Each store is written by hand from the spec with plain zarr-python, the JSON
module or ``zipfile`` (never mrecd's writer), taking an alternative that a
*(ref)* mark or a revision note allows (record.md §4.3, storage.md §1, §3,
§5.5, §6.1, §10, frame.md §6, §9, §10.4, chunking.md §1, §4-§5, §7). mrecd
writes one form; these tests hold its reader to every form. The README's
conformance table ("Where mrecd reads more liberally than it writes") points
here, line by line. Trajectory forms: tests/trajectory/test_foreign_writers.py.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from zarr.codecs import BytesCodec, Crc32cCodec, ShardingCodec, TransposeCodec, ZstdCodec
from zarr_helpers import zarr_json

import mrecd


def base_record(root: Path, *, root_attributes: dict[str, Any] | None = None) -> zarr.Group:
    """A record root with stamped meta and an empty ``frame/``; returns the frame group."""
    g = zarr.open_group(root, mode="w", attributes=root_attributes or {})
    g.create_group("meta", attributes={"molrec_version": 2})
    return g.create_group("frame")


def put(group: zarr.Group, name: str, values: Any, **kwargs: Any) -> zarr.Array:
    values = np.asarray(values)
    kwargs.setdefault("chunks", values.shape or (1,))
    array = group.create_array(name, shape=values.shape, dtype=values.dtype, **kwargs)
    array[...] = values
    return array


def read_frame(root: Path) -> mrecd.Frame:
    with mrecd.open_record(root) as record:
        frame = record.frame
    assert frame is not None
    return frame


# -- the root and meta (storage.md §3, §10; record.md §4.3) ----------------------------------


def test_root_group_with_attributes(tmp_path: Path) -> None:
    """*(ref)* the root's attributes are ``{}``; another writer may put its own there."""
    root = tmp_path / "r.mrec"
    frame = base_record(root, root_attributes={"producer": "other", "n": 1})
    frame.create_group("atoms", attributes={"count": 0})
    assert set(read_frame(root).blocks) == {"atoms"}
    assert mrecd.validate_record(root) == []


def test_keys_of_earlier_drafts_are_ordinary_meta_keys(tmp_path: Path) -> None:
    """record.md §4.3: ``version``, ``record_schema_version``, ``format_name`` state no version."""
    root = tmp_path / "r.mrec"
    base_record(root).create_group("atoms", attributes={"count": 0})
    meta = {
        "version": 9,
        "record_schema_version": "7",
        "frame_schema_version": 3,
        "format_name": "molrec",
        "audit": {"revision": None},
    }
    zarr.open_group(root / "meta", mode="a").attrs.put(meta)  # no molrec_version: a later revision
    with mrecd.open_record(root) as record:
        assert record.meta == meta and record.molrec_version is None
        assert record.frame is not None
    assert mrecd.validate_record(root) == []


# -- frame-shaped groups (storage.md §5, §6.1; frame.md §6, §9, §10) ---------------------------


def test_string_columns_with_any_chunking_and_codecs(tmp_path: Path) -> None:
    """*(ref)* a frame's string array is one chunk, ``vlen-utf8 → gzip(1) → crc32c``."""
    root = tmp_path / "r.mrec"
    atoms = base_record(root).create_group("atoms", attributes={"count": 5})
    names = np.array(["O", "H", "H", "Zn", "héllo"], dtype=np.dtypes.StringDType())
    put(atoms, "element", names, chunks=(2,), compressors=[ZstdCodec(level=5)])
    put(atoms, "label", names, compressors=None)
    block = read_frame(root)["atoms"]
    assert block["element"].values.tolist() == names.tolist()
    assert block["label"].values.tolist() == names.tolist()
    assert mrecd.validate_record(root) == []


def test_cell_parts_written_at_their_defaults(tmp_path: Path) -> None:
    """*(ref)* origin/boundary are omitted at their defaults; another writer keeps them."""
    root = tmp_path / "r.mrec"
    box = base_record(root).create_group("box")
    put(box, "vectors", np.eye(3) * 9)
    put(box, "origin", np.zeros(3))
    put(box, "boundary", np.ones(3, dtype=bool))
    cell = read_frame(root).box
    assert cell is not None and cell.cell_defined is True
    assert cell.origin.tolist() == [0.0] * 3 and cell.boundary.tolist() == [True] * 3
    assert mrecd.validate_record(root) == []


def test_cell_defined_true_spelled_out_reads_and_is_reported(tmp_path: Path) -> None:
    """``cell_defined`` is written only as ``false`` (frame.md §9): ``true`` breaks that writer
    rule, not a MUST a reader enforces, so it reads as the default and the validator reports."""
    root = tmp_path / "r.mrec"
    box = base_record(root).create_group("box", attributes={"cell_defined": True})
    put(box, "vectors", np.eye(3) * 9)
    cell = read_frame(root).box
    assert cell is not None and cell.cell_defined is True
    violations = mrecd.validate_record(root)
    assert [(v.path, v.rule) for v in violations] == [("frame/box", "frame.md §9")]


def test_undefined_cell_with_zero_vectors_and_no_boundary(tmp_path: Path) -> None:
    """frame.md §9.1: vectors are ignored (identity) and an omitted boundary reads all-false."""
    root = tmp_path / "r.mrec"
    box = base_record(root).create_group("box", attributes={"cell_defined": False})
    put(box, "vectors", np.zeros((3, 3)))
    cell = read_frame(root).box
    assert cell is not None and cell.cell_defined is False
    assert cell.vectors.tolist() == np.eye(3).tolist()
    assert cell.boundary.tolist() == [False] * 3


def test_an_all_true_mask_reads_as_no_mask(tmp_path: Path) -> None:
    """frame.md §6: a writer MAY omit an all-true mask; one that keeps it means the same."""
    root = tmp_path / "r.mrec"
    atoms = base_record(root).create_group("atoms", attributes={"count": 3})
    put(atoms, "q", np.array([1.0, 2.0, 3.0]))
    put(atoms.create_group("_validity"), "q", np.ones(3, dtype=bool))
    assert read_frame(root)["atoms"]["q"].validity is None
    assert mrecd.validate_record(root) == []


def test_exact_json_integers_beyond_two_to_the_53(tmp_path: Path) -> None:
    """frame.md §10.4: readers accept an exact JSON integer beyond 2^53 (a 64-bit writer's form)
    as well as the decimal string mrecd writes."""
    root = tmp_path / "r.mrec"
    base_record(root)
    doc = zarr_json(root / "frame")
    doc["attributes"] = {
        "big": 18446744073709551615,
        "low": -9223372036854775808,
        "odd": 2**53 + 1,
        "e": 3,  # a JSON number for an f64 key: that real
        "_meta_types": {"big": "u64", "low": "i64", "odd": "i64", "e": "f64"},
    }
    (root / "frame" / "zarr.json").write_text(json.dumps(doc))
    frame = read_frame(root)
    assert frame.meta == {"big": 2**64 - 1, "low": -(2**63), "odd": 2**53 + 1, "e": 3.0}
    assert isinstance(frame.meta["e"], float)
    assert frame.meta_types == {"big": "u64", "low": "i64", "odd": "i64", "e": "f64"}


def test_a_method_type_outside_the_standard_ones(tmp_path: Path) -> None:
    """run-surface.md §3 flags the golden's ``"type": "training"`` (no module): not refused."""
    root = tmp_path / "r.mrec"
    g = zarr.open_group(root, mode="w")
    g.create_group("meta", attributes={"molrec_version": 2})
    g.create_group("status", attributes={"state": "succeeded"})
    method = {"type": "training", "description": "fit", "engine": {"name": "molnex"}}
    g.create_group("method", attributes=method)
    with mrecd.open_record(root) as record:
        assert record.method == method


# -- chunking and codecs (chunking.md §1, §4.2, §5 (ref)) --------------------------------------


def test_any_chunking_and_any_must_decode_pipeline(tmp_path: Path) -> None:
    """Many plain chunks instead of one shard, a shard indexed at the start, the transpose codec,
    v2 chunk keys and a ``.`` separator: chunking is the writer's choice (chunking.md §4 (ref))."""
    root = tmp_path / "r.mrec"
    atoms = base_record(root).create_group("atoms", attributes={"count": 12})
    x = np.linspace(-1.0, 1.0, 12)
    put(atoms, "x", x, chunks=(2,), compressors=[ZstdCodec(level=3), Crc32cCodec()])
    put(
        atoms,
        "y",
        x * 2,
        chunks=(10,),
        serializer=ShardingCodec(
            chunk_shape=(5,),
            codecs=[BytesCodec(), ZstdCodec(level=1)],
            index_location="start",
        ),
        compressors=None,
    )
    v = np.arange(36.0).reshape(12, 3)
    put(atoms, "v", v, chunks=(5, 3), filters=[TransposeCodec(order=(1, 0))])
    ids = np.arange(12, dtype=np.uint64) + 2**60
    put(atoms, "id", ids, chunks=(4,), chunk_key_encoding={"name": "v2"})
    flags = np.arange(12) % 3 == 0
    put(
        atoms,
        "flag",
        flags,
        chunks=(7,),
        chunk_key_encoding={"name": "default", "configuration": {"separator": "."}},
    )
    block = read_frame(root)["atoms"]
    assert block["x"].values.tolist() == x.tolist()
    assert block["y"].values.tolist() == (x * 2).tolist()
    assert block["v"].values.tolist() == v.tolist()
    assert block["id"].values.tolist() == ids.tolist() and block["id"].dtype == "u64"
    assert block["flag"].values.tolist() == flags.tolist()
    assert mrecd.validate_record(root) == []


# -- the packed form (chunking.md §7) ---------------------------------------------------------


def zip_of(root: Path, dest: Path, *, compression: int, directories: bool) -> Path:
    """``dest`` holding every file of ``root`` (names relative to the root), by ``zipfile``."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    with zipfile.ZipFile(dest, "w", compression=compression) as archive:
        if directories:
            for folder in sorted({p.parent for p in files} - {root}):
                archive.writestr(f"{folder.relative_to(root).as_posix()}/", b"")
        for path in reversed(files):  # any entry order
            archive.write(path, path.relative_to(root).as_posix())
    return dest


@pytest.mark.parametrize(
    ("compression", "directories"),
    [(zipfile.ZIP_STORED, True), (zipfile.ZIP_DEFLATED, False)],
    ids=["directory-entries", "deflated-entries"],
)
def test_packed_records_from_other_zip_tools_read(
    water: Path, tmp_path: Path, compression: int, directories: bool
) -> None:
    """Every entry stored and no directory entries is what a packer writes; a reader loses
    nothing by taking deflated entries (no random access) and skipping directory entries.
    The validator still reports them."""
    with mrecd.open_record(water) as record:
        frame, system = record.frame, record.system
    packed = zip_of(
        water, tmp_path / "other.mrec.zip", compression=compression, directories=directories
    )
    with mrecd.open_record(packed) as record:
        assert record.frame == frame and record.system == system
    rules = {v.rule for v in mrecd.validate_record(packed)}
    assert rules and all(rule.startswith("chunking.md §7") for rule in rules)


def test_a_zip_of_the_record_folder_is_not_a_record(water: Path, tmp_path: Path) -> None:
    """Refusal kept: entries are named relative to the record root (chunking.md §7); under a
    ``<stem>.mrec/`` folder there is no root ``zarr.json``."""
    dest = tmp_path / "nested.mrec.zip"
    with zipfile.ZipFile(dest, "w") as archive:
        for path in sorted(p for p in water.rglob("*") if p.is_file()):
            archive.write(path, f"water.mrec/{path.relative_to(water).as_posix()}")
    with pytest.raises(mrecd.InvalidRecord, match=r"zarr\.json"):
        mrecd.open_record(dest)
