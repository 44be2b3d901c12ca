"""``Collection.append(record)`` honours ``record.declaration`` (issue 10, item 3):
its precision is applied and pinned, and a record whose declaration is not the
collection's, or whose frames break it, is refused naming the field and rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from collection_helpers import H2O2, UNITS, X0, XYZ, atoms, frame, new

import mrecd

PRECISE = {
    "blocks": {
        "atoms": {
            "columns": {c: {"dtype": "f64", "trailing": [], "precision": 1e-3} for c in "xyz"}
        }
    },
    "meta": H2O2["meta"],
}
ALIGNED = {
    "blocks": {
        "atoms": {"columns": XYZ},
        "charges": {
            "columns": {"q": {"dtype": "f64", "trailing": []}},
            "aligned_with": "atoms",
        },
    },
    "meta": H2O2["meta"],
}
NOISY = X0 + 1.234567e-4


def _record(declaration: Any, *frames: mrecd.Frame) -> mrecd.Record:
    return mrecd.Record(
        trajectory=list(frames), declaration=mrecd.Declaration.from_dict(declaration)
    )


def test_declared_precision_is_pinned_and_applied(tmp_path: Path) -> None:
    path = tmp_path / "p.mrec.lmdb"
    with mrecd.create_collection(path, meta=UNITS) as col:
        col.append(_record(PRECISE, frame(0, -1.0, atoms=atoms(NOISY))))
        assert col.declaration is not None and col.declaration.to_dict() == PRECISE
    with mrecd.open_collection(path) as col:
        x = col[0].trajectory[0]["atoms"]["x"].values
        assert x.tolist() == mrecd.quantize(NOISY, 1e-3).tolist()
        assert x.tolist() != NOISY.tolist()


def test_precision_applies_when_the_collection_pinned_the_same(tmp_path: Path) -> None:
    with new(tmp_path / "p.mrec.lmdb", declaration=PRECISE) as col:
        col.append(_record(PRECISE, frame(0, -1.0, atoms=atoms(NOISY))))
        x = col[0].trajectory[0]["atoms"]["x"].values
        assert x.tolist() == mrecd.quantize(NOISY, 1e-3).tolist()


def test_a_subset_of_the_pinned_blocks_is_accepted(tmp_path: Path) -> None:
    only_atoms = {"blocks": {"atoms": ALIGNED["blocks"]["atoms"]}, "meta": H2O2["meta"]}
    with new(tmp_path / "s.mrec.lmdb", declaration=ALIGNED) as col:
        assert col.append(_record(only_atoms, frame(0, 1.0, atoms=atoms(X0)))) == 0


@pytest.mark.parametrize(
    ("declaration", "match"),
    [
        (
            PRECISE,
            r"records\[0\]\.trajectory\.declaration\.blocks\.atoms: the record declares block",
        ),
        (
            {"blocks": H2O2["blocks"], "meta": {}},
            r"trajectory\.declaration\.meta: the record declares per-step meta \{\}",
        ),
        (
            {
                "blocks": H2O2["blocks"]
                | {"bonds": {"columns": {"atomi": {"dtype": "u64", "trailing": []}}}},
                "meta": H2O2["meta"],
            },
            r"declaration\.blocks\.bonds: the record declares block 'bonds', which the collection"
            " does not",
        ),
    ],
)
def test_a_declaration_other_than_the_pinned_one_is_refused(
    tmp_path: Path, declaration: Any, match: str
) -> None:
    with new(tmp_path / "d.mrec.lmdb") as col:
        record = _record(declaration, frame(0, 1.0, atoms=atoms(X0)))
        with pytest.raises(mrecd.InvalidRecord, match=match) as info:
            col.append(record)
        assert "collection.md §2.2" in str(info.value)
        assert len(col) == 0


def test_pinned_from_an_earlier_record_then_refused(tmp_path: Path) -> None:
    with mrecd.create_collection(tmp_path / "d.mrec.lmdb", meta=UNITS) as col:
        col.append(_record(H2O2, frame(0, 1.0, atoms=atoms(X0))))
        with pytest.raises(mrecd.InvalidRecord, match="'atoms'"):
            col.append(_record(PRECISE, frame(0, 1.0, atoms=atoms(X0))))
        assert len(col) == 1


def test_an_aligned_count_mismatch_is_refused(tmp_path: Path) -> None:
    with mrecd.create_collection(tmp_path / "a.mrec.lmdb", meta=UNITS) as col:
        wrong = frame(0, 1.0, atoms=atoms(X0), charges={"q": np.zeros(3)})
        with pytest.raises(
            mrecd.InvalidRecord,
            match=r"trajectory\[0\]/charges: aligned block 'charges' has 3 rows but its target"
            r" 'atoms' has 4",
        ):
            col.append(_record(ALIGNED, wrong))
        assert len(col) == 0 and col.declaration is None
        right = frame(0, 1.0, atoms=atoms(X0), charges={"q": np.zeros(4)})
        assert col.append(_record(ALIGNED, right)) == 0
        assert col.declaration is not None and col.declaration.to_dict() == ALIGNED


def test_a_frame_outside_its_records_declaration_is_refused(tmp_path: Path) -> None:
    only_atoms = {"blocks": {"atoms": ALIGNED["blocks"]["atoms"]}, "meta": H2O2["meta"]}
    with new(tmp_path / "o.mrec.lmdb", declaration=ALIGNED) as col:
        record = _record(only_atoms, frame(0, 1.0, atoms=atoms(X0), charges={"q": np.zeros(4)}))
        with pytest.raises(
            mrecd.InvalidRecord,
            match=r"trajectory\[0\]/charges: the frame presents blocks \['charges'\], which the"
            " record's own declaration does not declare",
        ):
            col.append(record)


def test_a_record_without_a_declaration_still_appends(tmp_path: Path) -> None:
    with new(tmp_path / "n.mrec.lmdb") as col:
        record = mrecd.Record(trajectory=[frame(0, 1.0, atoms=atoms(X0))])
        assert record.declaration is None
        assert col.append(record) == 0
