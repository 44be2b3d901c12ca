"""Preserve the unknown (record.md §9, storage.md §5.6, §8): what a reader does not interpret
survives a read-modify-write unchanged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr_helpers import file_bytes, update_attributes, water_frame, zarr_json

import mrecd
from mrecd.forcefield import ForceField


def add_vendor_group(root: Path) -> None:
    """``x_vendor``: attributes, one array, one child group (record.md §9 test)."""
    g = zarr.open_group(
        root / "x_vendor", mode="w", attributes={"tool": "v", "n": None, "deep": {"a": [1]}}
    )
    g.create_array("data", data=np.arange(5, dtype=np.int16))
    g.create_group("child", attributes={"k": "v"})


def add_trajectory_group(root: Path) -> None:
    """A hand-made ``trajectory/`` of plain zarr arrays (the section itself is issue 4's)."""
    g = zarr.open_group(root / "trajectory", mode="w", attributes={"nstep": 2})
    g.create_array("step", data=np.array([0, 10], dtype=np.int64))
    g.create_group("atoms").create_array("x", data=np.zeros(6))
    (root / "trajectory" / "notes.txt").write_text("not a zarr node")


WRITES: list[tuple[str, Callable[[mrecd.StoredRecord], None]]] = [
    ("frame", lambda r: r.write_frame(water_frame(4, seed=9))),
    ("system", lambda r: r.write_system(mrecd.Frame({"atoms": {"element": np.array(["C"])}}))),
    (
        "forcefield",
        lambda r: r.write_forcefield(
            ForceField({"name": "f", "units": {"preset": "real"}, "styles": []}, {})
        ),
    ),
    ("status", lambda r: r.write_status({"state": "failed", "error": {"message": "x"}})),
    (
        "method",
        lambda r: r.write_method({"type": "ml", "description": "d", "engine": {"name": "e"}}),
    ),
    ("meta", lambda r: r.write_meta({"record_id": "new"})),
    ("delete-frame", lambda r: r.delete_section("frame")),
]


@pytest.mark.parametrize("write", [w[1] for w in WRITES], ids=[w[0] for w in WRITES])
def test_unknown_root_sections_survive_byte_for_byte(
    water: Path, write: Callable[[mrecd.StoredRecord], None]
) -> None:
    add_vendor_group(water)
    add_trajectory_group(water)
    vendor, trajectory = file_bytes(water / "x_vendor"), file_bytes(water / "trajectory")
    with mrecd.open_record(water, "r+") as record:
        write(record)
    assert file_bytes(water / "x_vendor") == vendor
    assert file_bytes(water / "trajectory") == trajectory
    group = zarr.open_group(water / "x_vendor", mode="r")
    assert dict(group.attrs) == {"tool": "v", "n": None, "deep": {"a": [1]}}
    assert group["data"][...].tolist() == [0, 1, 2, 3, 4]


def test_unknown_blocks_columns_and_attributes_survive_read_modify_write(water: Path) -> None:
    atoms = water / "frame" / "atoms"
    zarr.open_group(atoms, mode="r+").create_array(
        "x_score", data=np.array([1, 2, 3], dtype=np.uint16)
    )
    update_attributes(atoms, x_units={"score": "pts"}, x_null=None)
    zarr.open_group(water / "frame", mode="r+").create_group(
        "x_mesh", attributes={"count": 2}
    ).create_array("v", data=np.array(["a", "b"], dtype=np.dtypes.StringDType()))
    update_attributes(water / "frame", x_key=None)
    with mrecd.open_record(water, "r+") as record:
        frame = record.frame
        assert frame is not None
        moved = frame.replace(meta={**frame.meta, "title": "moved"})
        record.write_frame(moved)
    with mrecd.open_record(water) as record:
        back = record.frame
        assert back is not None
    assert back["atoms"]["x_score"].values.tolist() == [1, 2, 3]
    assert back["atoms"]["x_score"].dtype == "u16"
    assert back["atoms"].attributes == {"x_units": {"score": "pts"}, "x_null": None}
    assert back["x_mesh"]["v"].values.tolist() == ["a", "b"]
    assert back.meta["x_key"] is None and back.meta["title"] == "moved"
    assert back == moved


def test_content_the_model_cannot_hold_is_carried_over(water: Path) -> None:
    frame_dir = water / "frame"
    zarr.open_group(frame_dir, mode="r+").create_array(
        "loose", data=np.arange(3)
    )  # array beside blocks
    (frame_dir / "README.txt").write_text("producer note")
    atoms = zarr.open_group(frame_dir / "atoms", mode="r+")
    atoms.create_group("x_sub", attributes={"k": 1}).create_array("w", data=np.ones(2))
    update_attributes(frame_dir / "atoms" / "mass", x_unit="dalton")
    update_attributes(frame_dir / "atoms" / "x", x_unit="angstrom")
    zarr.open_group(frame_dir / "atoms" / "_validity", mode="r+").create_group("x_meta")
    update_attributes(frame_dir / "box", x_cell_note="cubic")
    zarr.open_group(frame_dir / "box", mode="r+").create_array("x_strain", data=np.zeros(6))
    kept = {
        "loose": file_bytes(frame_dir / "loose"),
        "atoms/x_sub": file_bytes(frame_dir / "atoms" / "x_sub"),
        "box/x_strain": file_bytes(frame_dir / "box" / "x_strain"),
    }
    with mrecd.open_record(water, "r+") as record:
        frame = record.frame
        assert frame is not None
        atoms_block = frame["atoms"]
        columns = atoms_block.columns
        columns["mass"] = mrecd.Column(columns["mass"].values * 2)
        record.write_frame(frame.replace(blocks={**frame.blocks, "atoms": mrecd.Block(columns)}))
    for name, content in kept.items():
        assert file_bytes(frame_dir / name) == content, name
    assert (frame_dir / "README.txt").read_text() == "producer note"
    assert zarr_json(frame_dir / "atoms" / "mass")["attributes"] == {"x_unit": "dalton"}
    assert zarr_json(frame_dir / "atoms" / "x")["attributes"] == {
        "x_unit": "angstrom",
        "precision": 1e-3,
    }
    assert (frame_dir / "atoms" / "_validity" / "x_meta" / "zarr.json").is_file()
    assert zarr_json(frame_dir / "box")["attributes"] == {"x_cell_note": "cubic"}
    with mrecd.open_record(water) as record:
        assert record.frame is not None
        assert record.frame["atoms"]["mass"].values.tolist() == (columns["mass"].values).tolist()


def test_dropped_blocks_take_their_unknown_content_with_them(water: Path) -> None:
    zarr.open_group(water / "frame" / "bonds", mode="r+").create_group("x_sub")
    with mrecd.open_record(water, "r+") as record:
        frame = record.frame
        assert frame is not None
        record.write_frame(mrecd.Frame({"atoms": frame["atoms"]}, meta=frame.meta, box=frame.box))
    assert not (water / "frame" / "bonds").exists()


def test_unknown_children_of_document_groups_survive_a_rewrite(water: Path) -> None:
    zarr.open_group(water / "status", mode="r+").create_array("odd", data=np.arange(2))
    before = file_bytes(water / "status" / "odd")
    with mrecd.open_record(water, "r+") as record:
        record.write_status({"state": "succeeded", "x_null": None})
    assert file_bytes(water / "status" / "odd") == before
    with mrecd.open_record(water) as record:
        assert record.status == {"state": "succeeded", "x_null": None}


def test_unknown_meta_keys_survive_a_meta_rewrite_through_the_api(water: Path) -> None:
    update_attributes(water / "meta", x_vendor=None, audit={"source": "a"})
    with mrecd.open_record(water, "r+") as record:
        record.write_meta({**record.meta, "record_id": "renamed"})
    assert zarr_json(water / "meta")["attributes"] == {
        "record_id": "renamed",
        "molrec_version": 2,
        "x_vendor": None,
        "audit": {"source": "a"},
    }


def test_unknown_sections_and_trajectory_survive_packing(water: Path) -> None:
    add_vendor_group(water)
    add_trajectory_group(water)
    packed = mrecd.pack_record(water)
    import zipfile

    with zipfile.ZipFile(packed) as archive:
        for rel, content in file_bytes(water).items():
            assert archive.read(rel) == content
    with mrecd.open_record(packed) as record:
        assert "x_vendor" in record.sections and "trajectory" in record.sections
