"""The collection suite of collection.md §4 (1-10), its concrete cases, the
tests of §2-§3, and the trajectory rules of lmdb.md §5 as a collection stores them."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from collection_helpers import H2O2, X0, XYZ, atoms, frame, header, keys, new, snapshot, system

import mrecd
from mrecd.bindings.lmdb import frame_key
from mrecd.codecs import decode_blocks
from mrecd.forcefield import ForceField

U64 = {"dtype": "u64", "trailing": []}
BONDS = {"atomi": U64, "atomj": U64}
WITH_BONDS = {
    "blocks": {"atoms": {"columns": XYZ}, "bonds": {"columns": BONDS}},
    "meta": H2O2["meta"],
}


def bonds(*pairs: tuple[int, int]) -> dict[str, Any]:
    a = np.array(pairs, dtype=np.uint64).reshape(-1, 2)
    return {"atomi": a[:, 0].copy(), "atomj": a[:, 1].copy()}


def stored_blocks(source: Path | mrecd.Collection, j: int) -> list[str]:
    """Block names the update at global ordinal ``j`` stores."""
    values = snapshot(source) if isinstance(source, mrecd.Collection) else keys(source)
    blocks, _ = decode_blocks(values[frame_key(j)])
    return list(blocks)


def _mixed_records() -> list[mrecd.Record]:
    return [
        mrecd.Record(
            {"name": "full"},
            system=system(),
            trajectory=[frame(0, -1.0, atoms=atoms(X0)), frame(5, -2.0, atoms=atoms(X0, 0.25))],
        ),
        mrecd.Record(
            {"name": "no-system"}, trajectory=[frame(3, 0.5, atoms=atoms(X0), bonds=bonds((0, 1)))]
        ),
        mrecd.Record(
            {"name": "no-trajectory", "tags": [1, None, {"a": "b"}]}, system=system(2, smiles="O")
        ),
        mrecd.Record({"name": "zero-frames"}, system=system(), trajectory=[]),
    ]


# -- (1), (2), (4): round trip, sections, subsets, zero frames -------------------------------


def test_round_trip_of_meta_schema_index_and_records(tmp_path: Path) -> None:
    path = tmp_path / "c.mrec.lmdb"
    meta = {
        "units": {"length": "angstrom", "energy": "kcal/mol", "time": "ps"},
        "source": {"doi": "10.1/x"},
    }
    columns = {
        "name": {"dtype": "string", "derive": lambda rec: rec.meta["name"]},
        "weight": {"dtype": "f64", "trailing": [2], "precision": 0.01},
    }
    records = _mixed_records()
    weights = [[0.5, 1.0], [1.0 / 3.0, 2.0], [0.0, -0.0], [1e-9, 7.0]]
    with new(path, declaration=WITH_BONDS, meta=meta, index_columns=columns) as col:
        assert col.extend(records, index={"weight": weights}) == range(4)
    with mrecd.open_collection(path) as col:
        assert col.meta == {**meta, "molrec_version": 2}
        assert col.declaration is not None and col.declaration.to_dict() == WITH_BONDS
        index = col.index
        assert list(index) == [
            "first_frame",
            "n_frames",
            "n_atoms",
            "has_trajectory",
            "name",
            "weight",
        ]
        assert index["first_frame"].values.tolist() == [0, 2, 3, 3]
        assert index["n_frames"].values.tolist() == [2, 1, 0, 0]
        assert index["n_atoms"].values.tolist() == [4, 4, 2, 4]
        assert index["has_trajectory"].values.tolist() == [True, True, False, True]
        assert index["name"].values.tolist() == [
            "full",
            "no-system",
            "no-trajectory",
            "zero-frames",
        ]
        assert index["weight"].precision == 0.01
        assert index["weight"].values.tolist() == mrecd.quantize(weights, 0.01).tolist()
        assert col.index_columns["weight"] == {"dtype": "f64", "trailing": [2], "precision": 0.01}
        for r, record in enumerate(records):
            assert col[r] == record
        assert col[2].trajectory is None and col[1].system is None
        assert col[3].trajectory is not None and len(col[3].trajectory) == 0
        assert col.read_many(range(4)) == records


def test_records_present_different_subsets(tmp_path: Path) -> None:
    """collection.md §2.2: A atoms, B atoms+bonds → ok; C angles, D meta {pe, ke} → refused."""
    with new(tmp_path / "c.mrec.lmdb", declaration=WITH_BONDS) as col:
        col.append({"trajectory": [frame(0, 0.0, atoms=atoms(X0))]})
        col.append({"trajectory": [frame(0, 0.0, atoms=atoms(X0), bonds=bonds((0, 1), (2, 3)))]})
        with pytest.raises(mrecd.InvalidRecord, match="'angles' is not declared"):
            col.append({"trajectory": [frame(0, 0.0, angles={"atomi": np.zeros(1, np.uint64)})]})
        carried = {
            "blocks": WITH_BONDS["blocks"],
            "meta": {"pe": {"dtype": "f64"}, "ke": {"dtype": "f64"}},
        }
        with pytest.raises(mrecd.InvalidRecord, match="must be equal exactly"):
            col.append({"trajectory": {"declaration": carried, "frames": [frame(0, 0.0)]}})
        assert len(col) == 2
        assert "bonds" not in col[0].trajectory[0] and "bonds" in col[1].trajectory[0]


# -- (3): topology that changes mid-record, and topology that never does -----------------------


def test_topology_changing_and_constant(tmp_path: Path) -> None:
    path = tmp_path / "c.mrec.lmdb"
    constant = [frame(k, 0.0, atoms=atoms(X0, k), bonds=bonds((0, 1))) for k in range(3)]
    changing = [
        frame(0, 0.0, atoms=atoms(X0), bonds=bonds((0, 1))),
        frame(1, 0.0, atoms=atoms(X0, 1), bonds=bonds((0, 1))),
        frame(2, 0.0, atoms=atoms(X0, 2), bonds=bonds((0, 1), (1, 2))),  # a bond forms
        frame(3, 0.0, atoms=atoms(X0, 3), bonds=bonds()),  # every bond breaks: an empty block
    ]
    with new(path, declaration=WITH_BONDS) as col:
        col.extend([{"trajectory": constant}, {"trajectory": changing}])
    assert [stored_blocks(path, j) for j in range(3)] == [["atoms", "bonds"], ["atoms"], ["atoms"]]
    assert [stored_blocks(path, j) for j in range(3, 7)] == [
        ["atoms", "bonds"],
        ["atoms"],
        ["atoms", "bonds"],
        ["atoms", "bonds"],
    ]
    with mrecd.open_collection(path) as col:
        assert list(col[0].trajectory) == constant
        assert list(col[1].trajectory) == changing
        empty = col[1].trajectory[3]["bonds"]
        assert empty.count == 0 and list(empty) == ["atomi", "atomj"]


# -- (5), (6), (7): refusals ------------------------------------------------------------------


def test_refuses_a_record_declaring_another_trajectory(tmp_path: Path) -> None:
    with new(tmp_path / "c.mrec.lmdb") as col:
        other = {
            "blocks": {"atoms": {"columns": XYZ | {"vx": {"dtype": "f64", "trailing": []}}}},
            "meta": H2O2["meta"],
        }
        with pytest.raises(mrecd.InvalidRecord, match="declares block 'atoms'"):
            col.append({"trajectory": {"declaration": other, "frames": []}})
        same = {"declaration": H2O2, "frames": [frame(0, 1.0, atoms=atoms(X0))]}
        assert col.append({"trajectory": same}) == 0


def test_refuses_rows_differing_from_the_system_block(tmp_path: Path) -> None:
    """collection.md §3: system/atoms 4 rows, a trajectory update of atoms with 5 → refused."""
    with new(tmp_path / "c.mrec.lmdb") as col:
        five = atoms(np.append(X0, 0.0))
        with pytest.raises(mrecd.InvalidRecord, match="holds 5 rows but system/atoms has 4"):
            col.append(
                {
                    "system": system(4),
                    "trajectory": [frame(0, 0.0, atoms=atoms(X0)), frame(1, 0.0, atoms=five)],
                }
            )
        assert len(col) == 0


@pytest.mark.parametrize(
    ("meta", "ok"), [({}, False), ({"units": {"length": "angstrom"}}, True), ({"units": {}}, True)]
)
def test_units_are_required(tmp_path: Path, meta: dict[str, Any], ok: bool) -> None:
    """collection.md §2.1 (and §4 (7))."""
    path = tmp_path / "c.mrec.lmdb"
    if ok:
        mrecd.create_collection(path, meta=meta).close()
        with mrecd.open_collection(path) as col:
            assert col.meta["units"] == meta["units"]
    else:
        with pytest.raises(mrecd.InvalidRecord, match="units"):
            mrecd.create_collection(path, meta=meta)


# -- (8): a collection-wide force field ------------------------------------------------------


def test_forcefield_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "ff.mrec.lmdb"
    document = {
        "name": "tip3p-ish",
        "units": {"preset": "real"},
        "styles": [
            {"category": "atom", "style": "full"},
            {"category": "bond", "style": "harmonic"},
        ],
        "x_vendor": [1, 2],
    }
    tables = {
        "bond.harmonic": mrecd.Block(
            {"name": ["OW-HW"], "itom": ["OW"], "jtom": ["HW"], "k": [450.0], "r0": [0.9572]}
        ),
        "atom.full": mrecd.Block({"name": ["OW", "HW"], "mass": [15.9994, 1.008]}),
    }
    ff = ForceField(document, tables)
    with new(path, forcefield=ff) as col:
        col.append({"system": system()})
        assert col.forcefield == ff
    value = keys(path)[b"ff"]
    head = json.loads(header(value)[0])
    assert (
        head["meta"] == document
        and "meta_types" not in head
        and list(head["blocks"]) == list(tables)
    )
    with mrecd.open_collection(path) as col:
        assert col.forcefield == ff
    with new(tmp_path / "none.mrec.lmdb") as col:
        assert col.forcefield is None
    assert b"ff" not in keys(tmp_path / "none.mrec.lmdb")


# -- (9): aligned blocks ---------------------------------------------------------------------

ALIGNED = {
    "blocks": {
        "atoms": {"columns": XYZ},
        "atom_types": {
            "columns": {"type": {"dtype": "string", "trailing": []}},
            "aligned_with": "atoms",
        },
    },
    "meta": {},
}


def test_aligned_block_carries_forward_and_is_restated_on_growth(tmp_path: Path) -> None:
    """collection.md §4 (9) and the concrete case aligned-in-collection."""
    path = tmp_path / "al.mrec.lmdb"
    three = {"type": ["a", "b", "c"]}
    four = {"type": ["a", "b", "c", "d"]}
    x3, x4 = X0[:3], X0
    first = [
        frame(0, atoms=atoms(x3), atom_types=three),
        frame(1, atoms=atoms(x3, 1)),  # the target moves, types carry forward
        frame(2, atoms=atoms(x4, 2), atom_types=four),  # the target grows: restated
        frame(3, atoms=atoms(x4, 3)),
    ]
    second = [frame(0, atoms=atoms(x4), atom_types=four), frame(1, atoms=atoms(x4, 1))]
    with new(path, declaration=ALIGNED) as col:
        col.extend([{"trajectory": first}, {"trajectory": second}])
        stored = [stored_blocks(col, j) for j in range(6)]
        assert stored == [
            ["atoms", "atom_types"],
            ["atoms"],
            ["atoms", "atom_types"],
            ["atoms"],
            ["atoms", "atom_types"],  # the next record restates: carry-forward never crosses
            ["atoms"],
        ]
        types = [f["atom_types"]["type"].values.tolist() for f in col[0].trajectory]
        assert types == [three["type"], three["type"], four["type"], four["type"]]
        assert col[1].trajectory[1]["atom_types"]["type"].values.tolist() == four["type"]


# -- collection.md §2.3 and §3 ----------------------------------------------------------------


def test_index_column_string_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "i.mrec.lmdb"
    with new(path, index_columns={"smiles": {"dtype": "string"}}) as col:
        col.extend([{"system": system()}, {"system": system()}], index={"smiles": ["OO", "OO"]})
    with mrecd.open_collection(path) as col:
        smiles = col.index["smiles"]
        assert (smiles.dtype, smiles.shape, smiles.values.tolist()) == (
            "string",
            (2,),
            ["OO", "OO"],
        )


def test_system_and_trajectory_read_as_one_block(tmp_path: Path) -> None:
    """collection.md §3: system atoms{element,type} + trajectory atoms{x,y,z} → 5 columns."""
    topology = mrecd.Frame(
        {"atoms": {"element": ["O", "O", "H", "H"], "type": ["OW", "OW", "HW", "HW"]}},
        meta={"total_charge": 0},
    )
    with new(tmp_path / "j.mrec.lmdb") as col:
        col.append({"system": topology, "trajectory": [frame(0, -3.0, atoms=atoms(X0))]})
        trajectory = col[0].trajectory
        plain = trajectory[0]
        assert list(plain["atoms"]) == ["x", "y", "z"]  # the section as stored
        joined = trajectory.read(0, join=True)
        assert list(joined["atoms"]) == ["element", "type", "x", "y", "z"]
        assert joined["atoms"].count == 4
        assert joined.meta == {"total_charge": 0, "pe": -3.0}
        assert trajectory.joined(0) == joined


# -- lmdb.md §5 / trajectory.md §6: what an update stores -------------------------------------


def test_precision_and_bitwise_change_detection(tmp_path: Path) -> None:
    path = tmp_path / "p.mrec.lmdb"
    declaration = {
        "blocks": {
            "atoms": {
                "columns": {c: {"dtype": "f64", "trailing": [], "precision": 0.001} for c in "xyz"}
            }
        },
        "meta": {},
    }
    zero = np.zeros(4)
    with new(path, declaration=declaration) as col:
        col.append(
            {
                "trajectory": [
                    frame(0, atoms=atoms(X0)),
                    frame(1, atoms=atoms(X0 + 0.0001)),  # below half the quantum: unchanged
                    frame(2, atoms={"x": zero, "y": zero, "z": zero}),
                    frame(
                        3, atoms={"x": -zero, "y": zero, "z": zero}
                    ),  # -0.0 after 0.0 is a change
                    frame(4, atoms={"x": np.full(4, np.nan), "y": zero, "z": zero}),
                    frame(
                        5, atoms={"x": np.full(4, np.nan), "y": zero, "z": zero}
                    ),  # a repeated NaN is not
                ]
            }
        )
        assert [stored_blocks(col, j) for j in range(6)] == [
            ["atoms"],
            [],
            ["atoms"],
            ["atoms"],
            ["atoms"],
            [],
        ]
        x1 = col[0].trajectory[1]["atoms"]["x"].values
        assert x1.tolist() == mrecd.quantize(X0, 0.001).tolist()
        assert math.copysign(1, col[0].trajectory[3]["atoms"]["x"].values[0]) == -1
        assert "precision" not in header(snapshot(col)[frame_key(0)])[0]


def test_declared_fills_are_materialized(tmp_path: Path) -> None:
    path = tmp_path / "f.mrec.lmdb"
    declaration = {
        "blocks": {},
        "meta": {"pe": {"dtype": "f64", "fill": "NaN"}, "n": {"dtype": "i32", "fill": 7}},
    }
    with new(path, declaration=declaration) as col:
        col.append(
            {
                "trajectory": [
                    mrecd.Frame(meta={"n": 2}, step=0),
                    mrecd.Frame(meta={"pe": 1.5}, step=1),
                ]
            }
        )
        assert (
            header(snapshot(col)[frame_key(0)])[0]
            == '{"blocks":{},"meta":{"pe":"NaN","n":2},"step":0}'
        )
        frames = list(col[0].trajectory)
        assert math.isnan(frames[0].meta["pe"]) and frames[1].meta == {"pe": 1.5, "n": 7}
        assert frames[1].meta_types == {"pe": "f64", "n": "i32"}


def test_step_time_and_box_only_where_they_change(tmp_path: Path) -> None:
    path = tmp_path / "b.mrec.lmdb"
    cube = mrecd.Box(np.eye(3) * 12.0)
    bigger = mrecd.Box(np.eye(3) * 12.25)
    presented = [
        frame(0, 0.0, atoms=atoms(X0)).replace(time=0.0, box=cube),
        frame(10, 0.0, atoms=atoms(X0, 1)).replace(time=0.5, box=cube),
        frame(20, 0.0, atoms=atoms(X0, 2)).replace(time=1.0),  # drops its cell: carries forward
        frame(25, 0.0, atoms=atoms(X0, 3)).replace(time=1.25, box=bigger),
    ]
    with new(path) as col:
        col.append({"trajectory": presented})
        heads = [json.loads(header(snapshot(col)[frame_key(j)])[0]) for j in range(4)]
        assert ["box" in h for h in heads] == [True, False, False, True]
        assert [(h["step"], h["time"]) for h in heads] == [
            (0, 0.0),
            (10, 0.5),
            (20, 1.0),
            (25, 1.25),
        ]
        trajectory = col[0].trajectory
        assert [f.box for f in trajectory] == [cube, cube, cube, bigger]
        assert trajectory.steps().tolist() == [0, 10, 20, 25]
        assert trajectory.times().tolist() == [0.0, 0.5, 1.0, 1.25]  # type: ignore[union-attr]
        assert trajectory[2].time == 1.0


def test_record_meta_version_is_dropped(tmp_path: Path) -> None:
    """lmdb.md §3: a record in a collection carries no molrec_version of its own."""
    path = tmp_path / "v.mrec.lmdb"
    with new(path) as col:
        col.append({"meta": {"molrec_version": 2, "record_id": "abc"}, "system": system()})
        assert col[0].meta == {"record_id": "abc"}


# -- fixtures ---------------------------------------------------------------------------------

SCHEMA = Path(__file__).parents[1] / "fixtures" / "schema" / "core"


@pytest.mark.parametrize(
    "case", sorted((SCHEMA / "collection").glob("valid-*.json")), ids=lambda p: p.name
)
def test_valid_collection_fixture_round_trips(tmp_path: Path, case: Path) -> None:
    from mrecd.api import load_collection

    data = json.loads(case.read_text())
    path = tmp_path / "fixture.mrec.lmdb"
    load_collection(path, data).close()
    with mrecd.open_collection(path) as col:
        assert col.to_dict() == data


@pytest.mark.parametrize(
    "case", sorted((SCHEMA / "collection-meta").glob("*.json")), ids=lambda p: p.name
)
def test_collection_meta_fixtures(tmp_path: Path, case: Path) -> None:
    from mrecd.model import check_collection_meta

    doc = json.loads(case.read_text())
    path = tmp_path / "m.mrec.lmdb"
    if case.name.startswith("valid-"):
        assert check_collection_meta(doc) == doc
        mrecd.create_collection(path, meta=doc).close()
        with mrecd.open_collection(path) as col:
            assert col.meta == doc
    else:
        with pytest.raises(mrecd.InvalidRecord):
            check_collection_meta(doc)
        with pytest.raises(mrecd.InvalidRecord):
            mrecd.create_collection(path, meta=doc)
        assert not path.exists()


def test_valid_trajectory_fixture_as_a_one_record_collection(tmp_path: Path) -> None:
    """lmdb.md §7 (ref): a bare trajectory is a one-record collection without a system."""
    from mrecd.bindings.lmdb._interchange import trajectory_from_dict

    data = json.loads((SCHEMA / "trajectory" / "valid-one-frame.json").read_text())
    trajectory = trajectory_from_dict(data, path="trajectory")
    with mrecd.create_collection(
        tmp_path / "t.mrec.lmdb", meta={"units": {}}, declaration=trajectory["declaration"]
    ) as col:
        col.append({"trajectory": trajectory})
        (read,) = col[0].trajectory
        assert read == trajectory["frames"][0]
        assert read.box == mrecd.Box(np.eye(3) * 10.0)


def test_system_cell_round_trips_and_joins(tmp_path: Path) -> None:
    """lmdb.md §8: a box on a system frame is the system's cell."""
    cell = mrecd.Box(np.eye(3) * 30.0, boundary=[True, True, False])
    topology = system().replace(box=cell)
    with new(tmp_path / "c.mrec.lmdb") as col:
        col.append({"system": topology, "trajectory": [frame(0, 0.0, atoms=atoms(X0))]})
        assert col[0].system == topology and col[0].system.box == cell
        assert col[0].trajectory[0].box is None
        assert col[0].trajectory.joined(0).box == cell
