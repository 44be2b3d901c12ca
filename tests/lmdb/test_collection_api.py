"""The local API's behaviour: indexing, projections, batches, reopening, sharing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from collection_helpers import H2O2, UNITS, X0, XYZ, atoms, frame, keys, new, snapshot, system

import mrecd
from mrecd.api import RecordOutOfRange

BONDS = {"atomi": {"dtype": "u64", "trailing": []}, "atomj": {"dtype": "u64", "trailing": []}}
DECL = {"blocks": {"atoms": {"columns": XYZ}, "bonds": {"columns": BONDS}}, "meta": H2O2["meta"]}


def _bonds(n: int) -> dict[str, Any]:
    return {"atomi": np.zeros(n, np.uint64), "atomj": np.ones(n, np.uint64)}


@pytest.fixture
def col(tmp_path: Path) -> Any:
    collection = new(tmp_path / "api.mrec.lmdb", declaration=DECL)
    collection.extend(
        [
            {
                "meta": {"i": 0},
                "system": system(),
                "trajectory": [
                    frame(0, -1.0, atoms=atoms(X0), bonds=_bonds(1)),
                    frame(1, -2.0, atoms=atoms(X0, 1)),
                ],
            },
            {"meta": {"i": 1}, "trajectory": [frame(7, 0.0, atoms=atoms(X0))]},
            {"meta": {"i": 2}, "system": system(2)},
        ]
    )
    yield collection
    collection.close()


def test_record_indexing(col: mrecd.Collection) -> None:
    assert len(col) == 3 and col.n_frames == 3
    assert col[-1].meta == {"i": 2} and col[0].meta == {"i": 0}
    assert [r.meta["i"] for r in col[1:]] == [1, 2]
    assert [r.meta["i"] for r in col] == [0, 1, 2]
    for bad in (3, -4, 10**30):
        with pytest.raises(RecordOutOfRange) as info:
            col[bad]
        assert isinstance(info.value, IndexError) and isinstance(info.value, mrecd.NotFound)
    with pytest.raises(TypeError):
        col["0"]  # type: ignore[call-overload]


def test_trajectory_sequence(col: mrecd.Collection) -> None:
    trajectory = col[0].trajectory
    assert len(trajectory) == 2
    assert trajectory[-1].step == 1 and trajectory[0].step == 0
    assert [f.step for f in trajectory[0:2]] == [0, 1]
    steps = trajectory.steps()
    assert steps.dtype == np.int64 and steps.tolist() == [0, 1] and trajectory.times() is None
    assert trajectory[1]["bonds"] == trajectory[0]["bonds"]  # carried forward
    with pytest.raises(IndexError):
        trajectory[2]
    assert trajectory == list(trajectory) and list(trajectory) == trajectory
    assert trajectory != [trajectory[0]]
    assert trajectory.declaration.to_dict() == DECL
    assert repr(trajectory) == "CollectionTrajectory(record=0, frames=2)"


def test_read_projection(col: mrecd.Collection) -> None:
    trajectory = col[0].trajectory
    only = trajectory.read(1, blocks=["bonds"])
    assert list(only) == ["bonds"] and only.step == 1 and only.meta == {"pe": -2.0}
    xy = trajectory.read(1, columns=["x", "y"])
    assert list(xy["atoms"]) == ["x", "y"] and xy["bonds"].count == 1 and list(xy["bonds"]) == []
    per_block = trajectory.read(0, columns={"atoms": ["z"]})
    assert list(per_block["atoms"]) == ["z"] and list(per_block["bonds"]) == ["atomi", "atomj"]
    joined = trajectory.read(0, blocks=["atoms"], columns={"atoms": ["element", "x"]}, join=True)
    assert list(joined) == ["atoms"] and list(joined["atoms"]) == ["element", "x"]
    with pytest.raises(mrecd.InvalidRecord, match=r"'angles'.* not declared"):
        trajectory.read(0, blocks=["angles"])
    with pytest.raises(mrecd.NotFound, match="columns"):
        trajectory.read(0, columns=["vx"])
    with pytest.raises(mrecd.NotFound, match="no columns"):
        trajectory.read(0, columns={"atoms": ["vx"]})


def test_frames_outlive_the_collection(tmp_path: Path) -> None:
    path = tmp_path / "o.mrec.lmdb"
    with new(path) as col:
        col.append({"trajectory": [frame(0, 1.0, atoms=atoms(X0))]})
        frame0 = col[0].trajectory[0]
        loaded = col.read_many([0])[0]
        lazy = col.read_many([0], frames=False)[0]
    assert frame0["atoms"]["x"].values.tolist() == X0.tolist()
    assert not frame0["atoms"]["x"].values.flags.writeable
    assert next(iter(loaded.trajectory)) == frame0  # loaded in the batch's transaction
    with pytest.raises(ValueError, match="closed"):
        lazy.trajectory[0]


def test_copy_records_between_collections(col: mrecd.Collection, tmp_path: Path) -> None:
    with new(tmp_path / "copy.mrec.lmdb", declaration=DECL) as other:
        assert other.extend(col.read_many(range(len(col)))) == range(3)
        assert other.append(col[0]) == 3
        assert [other[r] for r in range(3)] == [col[r] for r in range(3)]
    with (
        new(tmp_path / "narrow.mrec.lmdb") as narrow,
        pytest.raises(mrecd.InvalidRecord, match="bonds"),
    ):
        narrow.append(col[0])  # its trajectory carries the wider declaration


def test_records_compare_with_what_was_appended(tmp_path: Path) -> None:
    record = mrecd.Record({"a": 1}, system=system(), trajectory=[frame(0, 1.0, atoms=atoms(X0))])
    with new(tmp_path / "eq.mrec.lmdb") as col:
        col.append(record)
        assert col[0] == record and record == col[0]
        assert col[0] != mrecd.Record({"a": 2}, system=system(), trajectory=record.trajectory)


def test_extend_with_nothing(col: mrecd.Collection) -> None:
    assert col.extend([]) == range(3, 3)
    assert len(col) == 3


def test_declaration_is_pinned_by_the_first_frames(tmp_path: Path) -> None:
    path = tmp_path / "d.mrec.lmdb"
    with mrecd.create_collection(path, meta=UNITS) as col:
        assert col.declaration is None
        col.append({"system": system()})
        col.append({"trajectory": []})
        assert col.declaration is None
        col.append({"trajectory": [frame(0, -1.0, atoms=atoms(X0))]})
        assert col.declaration is not None and col.declaration.to_dict() == H2O2
        with pytest.raises(mrecd.InvalidRecord, match="'bonds' is not declared"):
            col.append({"trajectory": [frame(0, -1.0, atoms=atoms(X0), bonds=_bonds(1))]})
    with mrecd.open_collection(path) as col:
        assert col.declaration is not None and col.declaration.to_dict() == H2O2


def test_declaration_derived_from_carried_ones(tmp_path: Path, col: mrecd.Collection) -> None:
    with mrecd.create_collection(tmp_path / "d.mrec.lmdb", meta=UNITS) as other:
        other.append(col[1])  # presents only atoms, but carries the full declaration
        assert other.declaration is not None and other.declaration.to_dict() == DECL


@pytest.mark.parametrize(
    ("record", "n_atoms"),
    [
        ({"system": system(3), "trajectory": [frame(0, 0.0, atoms=atoms(X0[:3]))]}, 3),
        ({"system": mrecd.Frame({"atoms": {"element": np.array([], dtype=str)}})}, 0),
        (
            {
                "system": mrecd.Frame({"meta_only": {}}),
                "trajectory": [frame(0, 0.0), frame(1, 0.0, atoms=atoms(X0))],
            },
            4,
        ),
        ({"trajectory": [frame(0, 0.0, bonds=_bonds(2))]}, 0),
        ({"trajectory": []}, 0),
    ],
)
def test_n_atoms(tmp_path: Path, record: dict[str, Any], n_atoms: int) -> None:
    with new(tmp_path / "n.mrec.lmdb", declaration=DECL) as col:
        col.append(record)
        assert col.index["n_atoms"].values.tolist() == [n_atoms]


def test_reopen_to_append_with_derive(tmp_path: Path) -> None:
    path = tmp_path / "r.mrec.lmdb"
    smiles = {"smiles": {"dtype": "string", "derive": lambda rec: rec.system.meta["smiles"]}}
    with new(path, index_columns=smiles) as col:
        col.append({"system": system(smiles="OO")})
    with mrecd.open_collection(path, "r+") as col:
        assert col.index_columns == {"smiles": {"dtype": "string", "trailing": []}}
        with pytest.raises(mrecd.InvalidRecord, match="no derive"):
            col.append({"system": system(smiles="O")})
        col.append({"system": system(smiles="O")}, index={"smiles": "[OH-]"})
    with mrecd.open_collection(path, "r+", index_columns=smiles) as col:
        col.append({"system": system(smiles="C")})
        assert col.index["smiles"].values.tolist() == ["OO", "[OH-]", "C"]
    with pytest.raises(mrecd.InvalidRecord, match="differs from the stored"):
        mrecd.open_collection(path, "r+", index_columns={"smiles": {"dtype": "i64"}})
    with pytest.raises(mrecd.InvalidRecord, match="not an index column"):
        mrecd.open_collection(path, "r+", index_columns={"inchi": {"derive": len}})


def test_nullable_index_column_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "n.mrec.lmdb"
    with new(path, index_columns={"q_formal": {"dtype": "i32", "nullable": True}}) as col:
        col.append({"system": system()}, index={"q_formal": 0})
        assert col.index["q_formal"].validity is None
    # No null is stored yet and the file cannot say the column is nullable.
    with mrecd.open_collection(path, "r+") as col, pytest.raises(mrecd.InvalidRecord, match="not"):
        col.append({"system": system()}, index={"q_formal": None})
    with mrecd.open_collection(path, "r+", index_columns={"q_formal": {"nullable": True}}) as col:
        col.append({"system": system()}, index={"q_formal": None})
    with mrecd.open_collection(path, "r+") as col:  # a null is stored: nullable from now on
        col.append({"system": system()}, index={"q_formal": None})
        assert col.index["q_formal"].validity.tolist() == [True, False, False]
        assert col.index_columns["q_formal"]["nullable"] is True


def test_one_environment_per_path_per_process(tmp_path: Path) -> None:
    path = tmp_path / "e.mrec.lmdb"
    writer = new(path)
    reader = mrecd.open_collection(path)
    assert writer._binding._handle is reader._binding._handle
    writer.append({"system": system()})
    assert len(reader) == 1  # the same process sees a commit at once
    writer.close()
    assert len(reader) == 1 and reader[0].system == system()
    reader.close()
    with pytest.raises(ValueError, match="closed"):
        len(reader)
    assert repr(reader) == "Collection(closed)"
    reader.close()  # idempotent
    with mrecd.open_collection(path) as again:
        assert len(again) == 1 and again.mode == "r"


def test_file_is_one_small_file(tmp_path: Path) -> None:
    path = tmp_path / "s.mrec.lmdb"
    new(path).close()
    assert path.is_file() and path.stat().st_size < 1 << 20  # the 2^40 map is address space only
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.mrec.lmdb", "s.mrec.lmdb-lock"]


def test_index_is_read_only(col: mrecd.Collection) -> None:
    values = col.index["n_frames"].values
    with pytest.raises(ValueError):
        values[0] = 9


def test_collection_meta_preserves_keys(tmp_path: Path) -> None:
    meta = {"units": {"length": "nm"}, "molrec_version": 1, "x_provenance": {"n": None}}
    with mrecd.create_collection(tmp_path / "m.mrec.lmdb", meta=meta) as col:
        assert col.meta == {
            "units": {"length": "nm"},
            "molrec_version": 2,
            "x_provenance": {"n": None},
        }
        assert "records=0" in repr(col)


def test_client_import_stays_light() -> None:
    code = "import sys, mrecd, mrecd_client; assert 'lmdb' not in sys.modules; mrecd.Frame"
    server = Path(__file__).parents[2] / "server"
    client = Path(__file__).parents[2] / "client"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(server), str(client)]))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    assert mrecd.Collection is mrecd.api.Collection


def test_compact_packs_the_same_keys_and_values(tmp_path: Path) -> None:
    path, packed = tmp_path / "grown.mrec.lmdb", tmp_path / "packed.mrec.lmdb"
    with new(path, index_columns={"k": {"dtype": "i64"}}) as col:
        for k in range(300):
            x = np.linspace(0, 1, 40) + k
            frames = [frame(s, -1.0 * s, atoms=atoms(x, s)) for s in range(k % 7 + 1)]
            col.append(
                {"meta": {"k": k}, "system": system(40), "trajectory": frames}, index={"k": k}
            )
        col.compact(packed)
        with pytest.raises(mrecd.AlreadyExists):
            col.compact(packed)
        before = snapshot(col)
    assert keys(packed) == before
    assert packed.stat().st_size < 0.8 * path.stat().st_size
    with mrecd.open_collection(packed, "r+") as copy, mrecd.open_collection(path) as col:
        assert copy.read_many(range(300)) == col.read_many(range(300))
        assert copy.append({"system": system()}, index={"k": -1}) == 300


def test_compact_of_an_empty_collection(tmp_path: Path) -> None:
    with new(tmp_path / "e.mrec.lmdb") as col:
        col.compact(tmp_path / "p.mrec.lmdb")
    with mrecd.open_collection(tmp_path / "p.mrec.lmdb") as copy:
        assert len(copy) == 0 and copy.declaration is not None


def test_numpy_ordinals(col: mrecd.Collection) -> None:
    assert col[np.int64(1)].meta == {"i": 1}
    assert [r.meta["i"] for r in col.read_many(np.array([2, 0]))] == [2, 0]
    assert col[0].trajectory[np.uint8(1)].step == 1
    with pytest.raises(TypeError):
        col[True]  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        col[1.0]  # type: ignore[call-overload]


@pytest.mark.parametrize("content", [b"not lmdb at all", bytes(range(256)) * 64])
def test_a_file_that_is_not_lmdb(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "junk.mrec.lmdb"
    path.write_bytes(content)
    with pytest.raises(mrecd.InvalidRecord, match="not a readable LMDB file"):
        mrecd.open_collection(path)


def test_index_kept_in_memory_is_the_stored_index(tmp_path: Path) -> None:
    """The writer keeps the index decoded (with spare capacity) and re-encodes it
    per commit: after growth, nulls and batches it is exactly what the file holds."""
    from mrecd.codecs import decode_blocks

    columns = {
        "label": {"dtype": "string", "nullable": True},
        "v": {"dtype": "f64", "trailing": [2], "precision": 0.5},
    }
    with new(tmp_path / "i.mrec.lmdb", index_columns=columns) as col:
        for k in range(150):  # past the initial capacity of 64 rows, twice
            label = None if k % 7 == 3 else f"m{k}"
            frames = [frame(s, 0.0, atoms=atoms(X0, s)) for s in range(k % 3)]
            col.append({"trajectory": frames}, index={"label": label, "v": [k / 3, -k]})
            if k % 50 == 0:
                col.extend(
                    [{"system": system()}] * 3, index={"label": ["a", None, "c"], "v": [[0, 0]] * 3}
                )
        (stored,) = decode_blocks(snapshot(col)[b"index"])[0].values()
        assert stored == col.index
        assert stored["label"].validity is not None and stored["v"].precision == 0.5
        assert stored["first_frame"].values[-1] + stored["n_frames"].values[-1] == col.n_frames
