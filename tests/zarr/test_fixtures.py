"""The schema fixtures through the Zarr binding: valid cases round-trip, invalid ones are refused.

A valid case is loaded with the model (``from_dict``), written, read back and
compared. An invalid case is refused by the model; where the broken rule can
be laid on disk, the same content written by plain zarr calls is refused by
the reader too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from zarr_helpers import put_array, update_attributes

import mrecd
from mrecd.forcefield import ForceField

SCHEMA = Path(__file__).parent.parent / "fixtures" / "schema" / "core"


def cases(kind: str, prefix: str) -> list[Path]:
    return sorted((SCHEMA / kind).glob(f"{prefix}-*.json"))


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


def read_back(tmp_path: Path, **sections: Any) -> mrecd.StoredRecord:
    path = tmp_path / "f.mrec"
    mrecd.create_record(path, **sections).close()
    return mrecd.open_record(path)


@pytest.mark.parametrize("section", ["frame", "system"])
@pytest.mark.parametrize("case", cases("frame", "valid"), ids=ids(cases("frame", "valid")))
def test_valid_frames_round_trip(tmp_path: Path, case: Path, section: str) -> None:
    frame = mrecd.Frame.from_dict(load(case))
    with read_back(tmp_path, **{section: frame}) as record:
        assert getattr(record, section) == frame
        assert getattr(record, section).to_dict() == frame.to_dict()


@pytest.mark.parametrize("case", cases("frame", "invalid"), ids=ids(cases("frame", "invalid")))
def test_invalid_frames_are_refused(case: Path) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        mrecd.Frame.from_dict(load(case))


def test_retired_meta_tag_is_refused_on_disk(water: Path) -> None:
    update_attributes(water / "frame", e=1.5, _meta_types={"e": "f32"})
    with mrecd.open_record(water) as record, pytest.raises(mrecd.InvalidRecord, match="f32"):
        _ = record.frame


@pytest.mark.parametrize("case", cases("column", "valid"), ids=ids(cases("column", "valid")))
def test_valid_columns_round_trip(tmp_path: Path, case: Path) -> None:
    column = mrecd.Column.from_dict(load(case))
    frame = mrecd.Frame({"b": {"c": column}})
    with read_back(tmp_path, frame=frame) as record:
        assert record.frame is not None
        assert record.frame["b"]["c"] == column


@pytest.mark.parametrize("case", cases("column", "invalid"), ids=ids(cases("column", "invalid")))
def test_invalid_columns_are_refused(case: Path) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        mrecd.Column.from_dict(load(case))


@pytest.mark.parametrize(
    ("data", "attributes"),
    [
        (np.zeros(2, dtype=np.float32), {}),  # invalid-narrow-float
        (np.array([1, 2]), {"precision": 0.001}),  # invalid-precision-on-i64
        (np.array([0.5]), {"precision": 0}),  # invalid-zero-precision
    ],
    ids=["narrow-float", "precision-on-i64", "zero-precision"],
)
def test_invalid_columns_are_refused_on_disk(
    water: Path, data: Any, attributes: dict[str, Any]
) -> None:
    block = zarr.open_group(water / "frame", mode="r+").create_group(
        "b", attributes={"count": len(data)}
    )
    block.create_array("c", data=data, attributes=attributes)
    with mrecd.open_record(water) as record, pytest.raises(mrecd.InvalidRecord) as info:
        _ = record.frame
    assert info.value.path == "frame/b/c"


@pytest.mark.parametrize("kind", ["box", "cell"])
def test_valid_boxes_round_trip(tmp_path: Path, kind: str) -> None:
    for case in cases(kind, "valid"):
        box = mrecd.Box.from_dict(load(case))
        with read_back(tmp_path / case.stem, frame=mrecd.Frame({}, box=box)) as record:
            assert record.frame is not None and record.frame.box == box


@pytest.mark.parametrize("kind", ["box", "cell"])
def test_invalid_boxes_are_refused(kind: str) -> None:
    for case in cases(kind, "invalid"):
        with pytest.raises(mrecd.InvalidRecord):
            mrecd.Box.from_dict(load(case))


def test_invalid_boxes_are_refused_on_disk(water: Path) -> None:
    update_attributes(water / "frame" / "box", cell_defined="no")  # invalid-string-flag
    with mrecd.open_record(water) as record, pytest.raises(mrecd.InvalidRecord):
        _ = record.frame
    update_attributes(water / "frame" / "box", cell_defined=...)
    put_array(water / "frame" / "box", "vectors", np.eye(2))  # invalid-two-by-two
    with mrecd.open_record(water) as record, pytest.raises(mrecd.InvalidRecord):
        _ = record.frame


@pytest.mark.parametrize("case", cases("block", "valid"), ids=ids(cases("block", "valid")))
def test_valid_blocks_round_trip(tmp_path: Path, case: Path) -> None:
    block = mrecd.Block.from_dict(load(case))
    frame = mrecd.Frame({"atoms": {"x": np.zeros(2)}, "subject": block})
    with read_back(tmp_path, frame=frame) as record:
        assert record.frame is not None and record.frame["subject"] == block


def test_invalid_block_target_into_trajectory_is_refused(water: Path) -> None:
    (case,) = cases("block", "invalid")
    with pytest.raises(mrecd.InvalidRecord, match="trajectory"):
        mrecd.Block.from_dict(load(case))
    block = zarr.open_group(water / "frame", mode="r+").create_group(
        "m", attributes={"count": 1, "targets": {"atom": "/trajectory/atoms"}}
    )
    block.create_array("atom", data=np.zeros(1, dtype=np.uint64))
    with mrecd.open_record(water) as record, pytest.raises(mrecd.InvalidRecord, match="trajectory"):
        _ = record.frame


@pytest.mark.parametrize("case", cases("meta", "valid"), ids=ids(cases("meta", "valid")))
def test_valid_meta_is_stored_stamped(tmp_path: Path, case: Path) -> None:
    meta = load(case)
    with read_back(tmp_path, meta=meta, status={"state": "x"}) as record:
        assert record.meta == {**meta, "molrec_version": 2}


def test_invalid_meta_is_refused(tmp_path: Path, water: Path) -> None:
    by_name = {p.stem: load(p) for p in cases("meta", "invalid")}
    with pytest.raises(mrecd.InvalidRecord, match="creator"):
        mrecd.create_record(
            tmp_path / "x.mrec", meta=by_name["invalid-creator-without-name"], status={"state": "x"}
        )
    for name in ("invalid-newer-version", "invalid-null-version"):
        zarr.open_group(water / "meta", mode="w", attributes=by_name[name])
        with pytest.raises(mrecd.UnsupportedVersion):
            mrecd.open_record(water)


@pytest.mark.parametrize("kind", ["status", "method"])
def test_documents(tmp_path: Path, water: Path, kind: str) -> None:
    (valid,) = cases(kind, "valid")
    (invalid,) = cases(kind, "invalid")
    with read_back(tmp_path, frame=mrecd.Frame({}), **{kind: load(valid)}) as record:
        assert getattr(record, kind) == load(valid)
    with pytest.raises(mrecd.InvalidRecord):
        mrecd.create_record(tmp_path / "bad.mrec", frame=mrecd.Frame({}), **{kind: load(invalid)})
    zarr.open_group(water / kind, mode="w", attributes=load(invalid))
    with pytest.raises(mrecd.InvalidRecord):
        mrecd.open_record(water)


@pytest.mark.parametrize(
    "case", cases("forcefield", "valid"), ids=ids(cases("forcefield", "valid"))
)
def test_valid_forcefields_round_trip(tmp_path: Path, case: Path) -> None:
    ff = ForceField.from_dict(load(case))
    with read_back(tmp_path, forcefield=ff) as record:
        assert record.forcefield == ff
        assert record.forcefield is not None and record.forcefield.to_dict() == ff.to_dict()


def test_record_structure_fixture_round_trips(tmp_path: Path) -> None:
    data = load(SCHEMA / "record" / "valid-structure.json")
    frame = mrecd.Frame.from_dict(data["frame"])
    with read_back(
        tmp_path, meta=data["meta"], frame=frame, status=data["status"], method=data["method"]
    ) as record:
        assert record.meta == data["meta"]
        assert record.frame == frame
        assert record.status == data["status"]
        assert record.method == data["method"]
        assert record.sections == ["frame", "meta", "method", "status"]
    assert mrecd.validate_record(tmp_path / "f.mrec") == []


def test_forcefield_package_fixture_round_trips(tmp_path: Path) -> None:
    data = load(SCHEMA / "record" / "valid-forcefield-package.json")
    ff = ForceField.from_dict(data["forcefield"])
    with read_back(tmp_path, meta=data["meta"], forcefield=ff) as record:
        assert record.sections == ["forcefield", "meta"]
        assert record.forcefield == ff
