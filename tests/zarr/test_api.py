"""The local API on one record: create_record, open_record, StoredRecord readers and writers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr_helpers import update_attributes, water_frame, zarr_json

import mrecd
from mrecd.api import _record as api_record
from mrecd.bindings.zarr import _record as binding_record
from mrecd.forcefield import ForceField


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# -- create_record ---------------------------------------------------------------------------


def test_create_stamps_version_over_the_producers(tmp_path: Path) -> None:
    path = tmp_path / "a.mrec"
    mrecd.create_record(
        path, meta={"molrec_version": 7, "record_id": "a"}, status={"state": "pending"}
    ).close()
    assert zarr_json(path / "meta")["attributes"] == {"record_id": "a", "molrec_version": 2}
    assert zarr_json(path) == {"zarr_format": 3, "node_type": "group", "attributes": {}}


def test_create_returns_an_open_writable_record(tmp_path: Path) -> None:
    with mrecd.create_record(tmp_path / "a.mrec", frame=water_frame()) as record:
        assert not record.read_only
        assert record.local_path == str(tmp_path / "a.mrec") and record.name == "a"
        assert record.sections == ["frame", "meta"]
        assert record.molrec_version == 2
        assert record.system is None and record.forcefield is None
        assert record.status is None and record.method is None
        # writable: an empty trajectory whose first append creates the section
        assert record.trajectory is not None and len(record.trajectory) == 0
        assert record.trajectory.declaration is None and "trajectory" not in record.sections
    with mrecd.open_record(tmp_path / "a.mrec") as reader:
        assert reader.trajectory is None  # read-only and no section: nothing to hand out


def test_root_and_meta_are_written_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []
    real = binding_record.write_group_json

    def spy(directory: Path, attributes: Any) -> None:
        order.append(directory.name)
        real(directory, attributes)

    monkeypatch.setattr(binding_record, "write_group_json", spy)
    monkeypatch.setattr(
        api_record,
        "frame_section_writer",
        lambda a, b, box: lambda new: (order.append(new.name), real(new, a)),
    )
    path = tmp_path / "o.mrec"
    mrecd.create_record(path, frame=mrecd.Frame({}), status={"state": "running"}).close()
    assert order[:2] == ["o.mrec", "meta"]
    assert set(order[2:]) == {"frame", "status"}


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"meta": {"record_id": "only"}},
        {"method": {"type": "ml", "description": "fit", "engine": {"name": "x"}}},
    ],
    ids=["nothing", "meta-only", "method-only"],
)
def test_create_refuses_a_record_without_a_substantive_section(
    tmp_path: Path, kwargs: dict[str, Any]
) -> None:
    path = tmp_path / "e.mrec"
    if "method" not in kwargs:  # a name (and meta) alone: an unborn record, its marker only
        record = mrecd.create_record(path, **kwargs)
        assert not record.exists and record.sections == [] and listing(path) == [".unborn.json"]
        with pytest.raises(mrecd.InvalidRecord, match=r"record\.md §2"):
            record.write_method({"type": "ml", "description": "fit", "engine": {"name": "x"}})
        record.close()
        assert listing(path) == [".unborn.json"]  # no root: §2 holds for anything with a root
        with pytest.raises(mrecd.NotFound):
            mrecd.open_record(path)  # as before the marker: no record at this path
        with pytest.raises(mrecd.NotFound, match="nothing to validate"):
            mrecd.validate_record(path)
        import zarr

        with pytest.raises(zarr.errors.GroupNotFoundError):
            zarr.open_group(path, mode="r")  # not a record for zarr-python either
        return
    with pytest.raises(mrecd.InvalidRecord, match=r"record\.md §2"):
        mrecd.create_record(path, **kwargs)
    assert listing(tmp_path) == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"frame": water_frame()},
        {"system": water_frame()},
        {"status": {"state": "running"}},
        {"forcefield": ForceField({"name": "f", "units": {"preset": "real"}, "styles": []}, {})},
    ],
    ids=["frame", "system", "status", "forcefield"],
)
def test_each_substantive_section_is_a_sole_companion_of_meta(
    tmp_path: Path, kwargs: dict[str, Any]
) -> None:
    path = tmp_path / "s.mrec"
    mrecd.create_record(path, **kwargs).close()
    with mrecd.open_record(path) as record:
        assert record.sections == sorted(["meta", *kwargs])


BAD_INPUTS: list[tuple[str, dict[str, Any], str]] = [
    ("status-without-state", {"status": {"stage": "x"}}, "status.state"),
    (
        "method-without-engine",
        {"frame": mrecd.Frame({}), "method": {"type": "ml", "description": "d"}},
        "method.engine.name",
    ),
    (
        "creator-without-name",
        {"frame": mrecd.Frame({}), "meta": {"creator": {"version": "1"}}},
        "meta.creator",
    ),
    ("nan-in-meta", {"frame": mrecd.Frame({}), "meta": {"x": float("nan")}}, "meta"),
    ("frame-not-a-frame", {"frame": {"blocks": {}}}, "frame"),
    ("frame-with-step", {"frame": mrecd.Frame({}, step=3)}, "frame"),
    (
        "target-out-of-range",
        {
            "frame": mrecd.Frame(
                {
                    "atoms": {"x": [0.0]},
                    "b": mrecd.Block({"p": np.array([1], dtype=np.uint64)}, targets={"p": "atoms"}),
                }
            )
        },
        "frame/b/p",
    ),
    (
        "absolute-target-into-system-out-of-range",
        {
            "system": mrecd.Frame({"atoms": {"x": [0.0, 1.0]}}),
            "frame": mrecd.Frame(
                {
                    "b": mrecd.Block(
                        {"p": np.array([2], dtype=np.uint64)}, targets={"p": "/system/atoms"}
                    )
                }
            ),
        },
        "frame/b/p",
    ),
    ("column-name-dunder", {"frame": mrecd.Frame({"atoms": {"__x": [0.0]}})}, "frame/atoms"),
    ("block-name-zarr-json", {"frame": mrecd.Frame({"zarr.json": {"x": [0.0]}})}, "frame"),
    ("block-name-dotdot", {"frame": mrecd.Frame({"..": {"x": [0.0]}})}, "frame"),
]


@pytest.mark.parametrize(
    ("kwargs", "where"), [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS]
)
def test_create_refuses_bad_input_and_leaves_nothing(
    tmp_path: Path, kwargs: dict[str, Any], where: str
) -> None:
    path = tmp_path / "bad.mrec"
    with pytest.raises(mrecd.InvalidRecord) as info:
        mrecd.create_record(path, **kwargs)
    assert (info.value.path or "").startswith(where)
    assert listing(tmp_path) == []


@pytest.mark.parametrize(
    ("block", "column"),
    [("box", None), (None, "_validity")],
)
def test_model_refuses_reserved_names(block: str | None, column: str | None) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        if block is not None:
            mrecd.Frame({block: {"x": [0.0]}})
        else:
            mrecd.Frame({"atoms": {column: [0.0]}})


def test_meta_types_key_is_refused_in_meta() -> None:
    with pytest.raises(mrecd.InvalidRecord, match="_meta_types"):
        mrecd.Frame({}, meta={"_meta_types": {}})


def test_failed_write_leaves_no_staging_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(new: Path) -> None:
        new.mkdir()
        (new / "half").write_text("x")
        raise OSError("disk full")

    monkeypatch.setattr(api_record, "document_writer", lambda doc: boom)
    with pytest.raises(OSError, match="disk full"):
        mrecd.create_record(tmp_path / "x.mrec", status={"state": "running"})
    assert listing(tmp_path) == []


@pytest.mark.parametrize("name", ["plain", "record.zarr", "x.mrec.zip", ".mrec"])
def test_create_needs_the_brand(tmp_path: Path, name: str) -> None:
    with pytest.raises(mrecd.InvalidRecord, match=r"storage\.md §1|pack it"):
        mrecd.create_record(tmp_path / name, status={"state": "running"})
    assert listing(tmp_path) == []


def test_create_refuses_an_existing_record_unless_overwrite(water: Path) -> None:
    with pytest.raises(mrecd.AlreadyExists):
        mrecd.create_record(water, status={"state": "done"})
    with mrecd.create_record(water, status={"state": "done"}, overwrite=True) as record:
        assert record.sections == ["meta", "status"]
        assert record.status == {"state": "done"}
    assert listing(water.parent) == ["water.mrec"]


def test_overwrite_never_replaces_a_non_record(tmp_path: Path) -> None:
    target = tmp_path / "keep.mrec"
    target.mkdir()
    (target / "precious.txt").write_text("mine")
    with pytest.raises(mrecd.AlreadyExists, match="not a record"):
        mrecd.create_record(target, status={"state": "x"}, overwrite=True)
    assert (target / "precious.txt").read_text() == "mine"


def test_create_makes_parent_directories(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "r.mrec"
    mrecd.create_record(path, status={"state": "x"}).close()
    assert (path / "zarr.json").is_file()


def test_declaration_must_be_a_declaration(tmp_path: Path) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="Declaration"):
        mrecd.create_record(tmp_path / "t.mrec", declaration={"blocks": {}})  # type: ignore[arg-type]


# -- open_record ----------------------------------------------------------------------------


def test_open_missing_path_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(mrecd.NotFound):
        mrecd.open_record(tmp_path / "none.mrec")


def test_open_a_directory_without_zarr_json_is_not_a_record(tmp_path: Path) -> None:
    (tmp_path / "water.mrec").mkdir()
    with pytest.raises(mrecd.NotFound):  # an empty directory holds no object at all
        mrecd.open_record(tmp_path / "water.mrec")
    (tmp_path / "water.mrec" / "stray.txt").write_text("x")
    with pytest.raises(mrecd.InvalidRecord, match=r"no zarr\.json"):
        mrecd.open_record(tmp_path / "water.mrec")


def test_open_wrong_brand_is_refused(water: Path) -> None:
    other = water.rename(water.with_name("water.zarr"))
    with pytest.raises(mrecd.InvalidRecord, match=r"storage\.md §1"):
        mrecd.open_record(other)


def test_open_mode_must_be_r_or_r_plus(water: Path) -> None:
    with pytest.raises(ValueError, match="mode"):
        mrecd.open_record(water, "w")  # type: ignore[arg-type]


def test_read_only_record_refuses_writes(water: Path) -> None:
    with mrecd.open_record(water) as record:
        assert record.read_only
        with pytest.raises(mrecd.ReadOnlyError):
            record.write_status({"state": "x"})


def test_version_one_record_is_read_but_not_written(water: Path) -> None:
    update_attributes(water / "meta", molrec_version=1)
    with mrecd.open_record(water) as record:
        assert record.molrec_version == 1
        assert record.frame is not None
    with pytest.raises(mrecd.ReadOnlyError, match="version-1"):
        mrecd.open_record(water, "r+")


def test_sections_are_read_lazily(water: Path) -> None:
    (water / "frame" / "atoms" / "mass" / "c" / "0").write_bytes(b"broken")
    with mrecd.open_record(water) as record:
        assert record.system is not None  # the broken frame does not stop other sections
        with pytest.raises(mrecd.InvalidRecord, match="frame/atoms/mass"):
            _ = record.frame


def test_sections_lists_unknown_ones(water: Path) -> None:
    import zarr

    zarr.open_group(water / "x_vendor", mode="w")
    with mrecd.open_record(water) as record:
        assert record.sections == ["frame", "meta", "status", "system", "x_vendor"]


def test_meta_is_returned_as_stored(water: Path) -> None:
    update_attributes(water / "meta", molrec_version=1, x=None)
    with mrecd.open_record(water) as record:
        assert record.meta == {"record_id": "w", "molrec_version": 1, "x": None}


# -- writers ------------------------------------------------------------------------------


def test_write_each_section(water: Path) -> None:
    new_frame = water_frame(6, seed=3)
    ff = ForceField({"name": "f", "units": {"preset": "real"}, "styles": []}, {})
    with mrecd.open_record(water, "r+") as record:
        record.write_frame(new_frame)
        record.write_system(mrecd.Frame({"atoms": {"element": np.array(["C"] * 6)}}))
        record.write_forcefield(ff)
        record.write_status({"state": "succeeded"})
        record.write_method({"type": "classical", "description": "NVT", "engine": {"name": "m"}})
        record.write_meta({"record_id": "w2", "molrec_version": 1})
        assert record.frame == new_frame
    with mrecd.open_record(water) as record:
        assert record.frame == new_frame
        assert record.system is not None and record.system["atoms"].count == 6
        assert record.forcefield == ff
        assert record.status == {"state": "succeeded"}
        assert record.method == {"type": "classical", "description": "NVT", "engine": {"name": "m"}}
        assert record.meta == {"record_id": "w2", "molrec_version": 2}
    assert listing(water.parent) == ["water.mrec"]


def test_writer_refuses_bad_status_and_keeps_the_old(water: Path) -> None:
    with mrecd.open_record(water, "r+") as record:
        with pytest.raises(mrecd.InvalidRecord, match="state"):
            record.write_status({"stage": "x"})
        assert record.status == {"state": "running"}
    assert zarr_json(water / "status")["attributes"] == {"state": "running"}


def test_rewriting_system_cannot_break_frame_references(water: Path) -> None:
    with mrecd.open_record(water, "r+") as record:
        record.write_frame(
            mrecd.Frame(
                {
                    "m": mrecd.Block(
                        {"a": np.array([2], dtype=np.uint64)}, targets={"a": "/system/atoms"}
                    )
                }
            )
        )
        with pytest.raises(mrecd.InvalidRecord, match="frame/m/a"):
            record.write_system(mrecd.Frame({"atoms": {"element": np.array(["O", "H"])}}))
        assert record.system is not None and record.system["atoms"].count == 3


def test_delete_section(water: Path) -> None:
    with mrecd.open_record(water, "r+") as record:
        record.delete_section("frame")
        record.delete_section("status")
        assert record.status is None
        with pytest.raises(mrecd.InvalidRecord, match=r"record\.md §2"):
            record.delete_section("system")
        with pytest.raises(mrecd.InvalidRecord, match="meta"):
            record.delete_section("meta")
        with pytest.raises(mrecd.NotFound):
            record.delete_section("frame")
        assert record.sections == ["meta", "system"]


def test_unstamped_record_is_stamped_by_its_first_write(water: Path) -> None:
    update_attributes(water / "meta", molrec_version=...)
    with mrecd.open_record(water, "r+") as record:
        assert record.molrec_version is None
        record.write_status({"state": "done"})
        assert record.molrec_version == 2
    assert zarr_json(water / "meta")["attributes"] == {"record_id": "w", "molrec_version": 2}


def test_record_without_meta_gets_one_on_write(water: Path) -> None:
    import shutil

    shutil.rmtree(water / "meta")
    with mrecd.open_record(water, "r+") as record:
        record.write_status({"state": "done"})
    assert zarr_json(water / "meta")["attributes"] == {"molrec_version": 2}


def test_attributes_are_strict_json_on_disk(water: Path) -> None:
    def refuse(token: str) -> None:
        pytest.fail(f"bare {token} in a zarr.json")

    for path in water.rglob("zarr.json"):
        json.loads(path.read_text(), parse_constant=refuse)


def test_repr_names_path_and_sections(water: Path) -> None:
    with mrecd.open_record(water) as record:
        assert "water.mrec" in repr(record) and "'frame'" in repr(record)


def test_a_broken_section_does_not_block_rewriting_another(water: Path) -> None:
    (water / "frame" / "atoms" / "mass" / "c" / "0").write_bytes(b"broken")
    with mrecd.open_record(water, "r+") as record:
        record.write_system(mrecd.Frame({"atoms": {"element": np.array(["N"])}}))
        assert record.system is not None and record.system["atoms"].count == 1


def test_a_failed_section_write_keeps_the_old_section(
    water: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = sorted(p.relative_to(water).as_posix() for p in water.rglob("*"))

    def half_then_fail(root: Path, *args: Any, **kwargs: Any) -> None:
        root.mkdir(parents=True)
        (root / "zarr.json").write_text("{}")
        raise OSError("disk full")

    monkeypatch.setattr(binding_record, "write_section", half_then_fail)
    with mrecd.open_record(water, "r+") as record:
        with pytest.raises(OSError, match="disk full"):
            record.write_frame(water_frame(5, seed=4))
        assert record.frame == water_frame()
    assert sorted(p.relative_to(water).as_posix() for p in water.rglob("*")) == before
    assert listing(water.parent) == ["water.mrec"]
