"""What a writer refuses, and that a refusal writes nothing (collection.md §2-§3,
lmdb.md §3-§5, trajectory.md §1, §7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from collection_helpers import H2O2, UNITS, X0, XYZ, atoms, frame, new, snapshot, system

import mrecd
from mrecd.forcefield import ForceField


@pytest.fixture
def col(tmp_path: Path) -> Any:
    collection = new(tmp_path / "w.mrec.lmdb")
    yield collection
    collection.close()


def _bad_records() -> list[tuple[str, Any, type[Exception], str]]:
    good = [frame(0, -1.0, atoms=atoms(X0))]
    bonds = {"atomi": np.array([0], dtype=np.uint64), "atomj": np.array([1], dtype=np.uint64)}
    return [
        ("neither", {"meta": {"name": "x"}}, mrecd.InvalidRecord, "neither"),
        ("neither-record", mrecd.Record({"name": "x"}), mrecd.InvalidRecord, "neither"),
        (
            "undeclared-block",
            {"trajectory": [frame(0, -1.0, atoms=atoms(X0), bonds=bonds)]},
            mrecd.InvalidRecord,
            "'bonds' is not declared",
        ),
        (
            "undeclared-column",
            {"trajectory": [frame(0, -1.0, atoms=atoms(X0) | {"vx": X0})]},
            mrecd.InvalidRecord,
            "not declared for block",
        ),
        (
            "missing-column",
            {"trajectory": [frame(0, -1.0, atoms={"x": X0, "y": X0})]},
            mrecd.InvalidRecord,
            "lacks",
        ),
        (
            "undeclared-key",
            {
                "trajectory": [
                    mrecd.Frame({"atoms": atoms(X0)}, meta={"pe": 1.0, "ke": 2.0}, step=0)
                ]
            },
            mrecd.InvalidRecord,
            "'ke' is not declared",
        ),
        (
            "missing-key",
            {"trajectory": [frame(0, None, atoms=atoms(X0))]},
            mrecd.InvalidRecord,
            "no fill",
        ),
        (
            "mask-not-nullable",
            {
                "trajectory": [
                    frame(
                        0,
                        1.0,
                        atoms=atoms(X0)
                        | {"x": mrecd.Column(X0, validity=[True, False, True, True])},
                    )
                ]
            },
            mrecd.InvalidRecord,
            "not declared nullable",
        ),
        (
            "real-for-int",
            {"trajectory": [mrecd.Frame({"atoms": atoms(X0)}, meta={"pe": "high"}, step=0)]},
            mrecd.InvalidRecord,
            "pe",
        ),
        (
            "no-step",
            {"trajectory": [mrecd.Frame({"atoms": atoms(X0)}, meta={"pe": 1.0})]},
            mrecd.InvalidRecord,
            "step",
        ),
        (
            "repeated-step",
            {"trajectory": [*good, frame(0, -1.0, atoms=atoms(X0))]},
            mrecd.StepOrderError,
            "not above",
        ),
        (
            "decreasing-step",
            {"trajectory": [frame(10, 0.0, atoms=atoms(X0)), frame(5, 0.0)]},
            mrecd.StepOrderError,
            "not above",
        ),
        (
            "time-late",
            {"trajectory": [*good, mrecd.Frame(meta={"pe": 1.0}, step=1, time=0.5)]},
            mrecd.InvalidRecord,
            "all-or-nothing",
        ),
        (
            "frame-section",
            mrecd.Record(frame=mrecd.Frame({}), trajectory=good),
            mrecd.InvalidRecord,
            r"\['frame'\]",
        ),
        (
            "forcefield-section",
            mrecd.Record(
                forcefield=ForceField(
                    {"name": "ff", "units": {"preset": "real"}, "styles": []}, {}
                ),
                trajectory=good,
            ),
            mrecd.InvalidRecord,
            "forcefield",
        ),
        (
            "status-section",
            {"status": {"state": "running"}, "trajectory": good},
            mrecd.InvalidRecord,
            "status",
        ),
        (
            "unknown-key",
            {"trajectory": good, "extra": 1},
            mrecd.InvalidRecord,
            "unknown record keys",
        ),
        ("system-with-step", {"system": mrecd.Frame({}, step=3)}, mrecd.InvalidRecord, "no step"),
        (
            "bad-meta",
            {"meta": {"created_at": "yesterday"}, "trajectory": good},
            mrecd.InvalidRecord,
            "RFC 3339",
        ),
        (
            "nan-meta",
            {"meta": {"score": float("nan")}, "trajectory": good},
            mrecd.InvalidRecord,
            "finite",
        ),
        (
            "v3-meta",
            {"meta": {"molrec_version": 3}, "trajectory": good},
            mrecd.UnsupportedVersion,
            "molrec_version",
        ),
        ("not-a-record", [good], mrecd.InvalidRecord, "a record is"),
        (
            "system-rows",
            {"system": system(4), "trajectory": [frame(0, 0.0, atoms=atoms(np.append(X0, 1.0)))]},
            mrecd.InvalidRecord,
            "align 1:1",
        ),
        (
            "system-shares-column",
            {"system": mrecd.Frame({"atoms": {"element": ["O"] * 4, "x": X0}}), "trajectory": good},
            mrecd.InvalidRecord,
            r"columns \['x'\] are in both",
        ),
        (
            "system-shares-column-no-frames",
            {"system": mrecd.Frame({"atoms": {"element": ["O"] * 4, "x": X0}}), "trajectory": []},
            mrecd.InvalidRecord,
            "in both",
        ),
        (
            "cell-defined-changes",
            {
                "trajectory": [
                    frame(0, 0.0, atoms=atoms(X0)).replace(box=np.eye(3)),
                    frame(1, 0.0).replace(box=mrecd.Box(cell_defined=False)),
                ]
            },
            mrecd.InvalidRecord,
            "cell_defined",
        ),
        (
            "carried-meta-differs",
            {
                "trajectory": {
                    "declaration": {
                        "blocks": H2O2["blocks"],
                        "meta": {"pe": {"dtype": "f64"}, "ke": {"dtype": "f64"}},
                    },
                    "frames": good,
                }
            },
            mrecd.InvalidRecord,
            "must be equal exactly",
        ),
        (
            "carried-fill-differs",
            {
                "trajectory": {
                    "declaration": {"blocks": {}, "meta": {"pe": {"dtype": "f64", "fill": "NaN"}}},
                    "frames": good,
                }
            },
            mrecd.InvalidRecord,
            "must be equal exactly",
        ),
        (
            "carried-block-undeclared",
            {
                "trajectory": {
                    "declaration": {"blocks": {"bonds": {"columns": {}}}, "meta": H2O2["meta"]},
                    "frames": good,
                }
            },
            mrecd.InvalidRecord,
            "'bonds', which the collection does not",
        ),
        (
            "carried-block-differs",
            {
                "trajectory": {
                    "declaration": {
                        "blocks": {"atoms": {"columns": {"x": XYZ["x"]}}},
                        "meta": H2O2["meta"],
                    },
                    "frames": good,
                }
            },
            mrecd.InvalidRecord,
            "declares block 'atoms' as",
        ),
    ]


@pytest.mark.parametrize(
    ("record", "error", "match"),
    [case[1:] for case in _bad_records()],
    ids=[case[0] for case in _bad_records()],
)
def test_writer_refuses_and_writes_nothing(
    col: mrecd.Collection, record: Any, error: type[Exception], match: str
) -> None:
    col.append({"trajectory": [frame(0, -1.0, atoms=atoms(X0))]})
    before = snapshot(col)
    with pytest.raises(error, match=match):
        col.append(record)
    assert snapshot(col) == before
    assert len(col) == 1
    assert col.append({"system": system()}) == 1


def test_failed_batch_writes_none_of_it(col: mrecd.Collection) -> None:
    before = snapshot(col)
    good = {"trajectory": [frame(0, -1.0, atoms=atoms(X0))]}
    with pytest.raises(mrecd.StepOrderError):
        col.extend([good, good, {"trajectory": [frame(1, 0.0, atoms=atoms(X0)), frame(1, 0.0)]}])
    assert snapshot(col) == before
    assert len(col) == 0 and col.n_frames == 0
    assert col.extend([good, good]) == range(0, 2)
    assert col.index["first_frame"].values.tolist() == [0, 1]


def test_id_may_be_in_both_when_equal(tmp_path: Path) -> None:
    declaration = {
        "blocks": {"atoms": {"columns": XYZ | {"id": {"dtype": "u64", "trailing": []}}}},
        "meta": {},
    }
    ids = np.arange(4, dtype=np.uint64)
    sysframe = mrecd.Frame({"atoms": {"element": ["O", "O", "H", "H"], "id": ids}})
    with new(tmp_path / "id.mrec.lmdb", declaration=declaration) as col:
        col.append({"system": sysframe, "trajectory": [frame(0, atoms=atoms(X0) | {"id": ids})]})
        with pytest.raises(mrecd.InvalidRecord, match="id differs"):
            col.append(
                {
                    "system": sysframe,
                    "trajectory": [frame(0, atoms=atoms(X0) | {"id": ids[::-1].copy()})],
                }
            )
        joined = col[0].trajectory.joined(0)["atoms"]
        assert list(joined) == ["element", "id", "x", "y", "z"]


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


def test_aligned_block_sharing_a_system_name_is_refused(tmp_path: Path) -> None:
    """collection.md §4 (10), reject-aligned-shares-system-name."""
    sysframe = mrecd.Frame({"atoms": {"element": ["O"] * 4}, "atom_types": {"charge": np.zeros(4)}})
    with new(tmp_path / "a.mrec.lmdb", declaration=ALIGNED) as col:
        with pytest.raises(mrecd.InvalidRecord, match="shares its name with a system block"):
            col.append({"system": sysframe, "trajectory": [frame(0, atoms=atoms(X0))]})
        assert len(col) == 0
        col.append({"system": sysframe})  # without a trajectory the names never meet
        assert len(col) == 1


def test_aligned_block_row_count_is_refused(tmp_path: Path) -> None:
    """collection.md §4 (10): an aligned block whose row count differs from its target's."""
    with new(tmp_path / "a.mrec.lmdb", declaration=ALIGNED) as col:
        with pytest.raises(mrecd.InvalidRecord, match="aligned block 'atom_types' has 3 rows"):
            col.append(
                {"trajectory": [frame(0, atoms=atoms(X0), atom_types={"type": ["a", "b", "c"]})]}
            )
        with pytest.raises(mrecd.InvalidRecord, match="restate it"):
            col.append(
                {
                    "trajectory": [
                        frame(0, atoms=atoms(X0), atom_types={"type": list("abcd")}),
                        frame(1, atoms=atoms(np.append(X0, 0.0))),
                    ]
                }
            )
        with pytest.raises(mrecd.InvalidRecord, match="target 'atoms' is absent"):
            col.append({"trajectory": [frame(0, atom_types={"type": list("abcd")})]})
        assert len(col) == 0


# -- creation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("meta", "match"),
    [
        ({}, "must carry units"),
        ({"units": {"length": "parsecs of cheese"}}, "pint"),
        ({"units": {"length": ""}}, "non-empty"),
        ({"units": ["angstrom"]}, "units is an object"),
        ({"units": {"length": "angstrom"}, "x": float("inf")}, "finite"),
    ],
)
def test_create_refuses_bad_collection_meta(tmp_path: Path, meta: Any, match: str) -> None:
    path = tmp_path / "m.mrec.lmdb"
    with pytest.raises(mrecd.InvalidRecord, match=match):
        mrecd.create_collection(path, meta=meta)
    assert not path.exists()


@pytest.mark.parametrize("name", ["first_frame", "n_frames", "n_atoms", "has_trajectory"])
def test_reserved_index_column_names_are_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / "i.mrec.lmdb"
    with pytest.raises(mrecd.InvalidRecord, match="reserved for the binding"):
        mrecd.create_collection(path, meta=UNITS, index_columns={name: {"dtype": "u64"}})
    assert not path.exists()


@pytest.mark.parametrize(
    ("columns", "match"),
    [
        ({"q": {"dtype": "float"}}, "closed set"),
        ({"q": {"dtype": "i64", "precision": 0.1}}, "only on f64"),
        ({"q": {"dtype": "f64", "precision": 0}}, "precision"),
        ({"q": {"dtype": "f64", "trailing": [-1]}}, "non-negative"),
        ({"q": {"dtype": "f64", "shape": [3]}}, "unknown keys"),
        ({"q": {"dtype": "f64", "derive": 3}}, "callable"),
        ({"x": {"dtype": "i64"}}, "canonical"),
        ({"_validity": {"dtype": "i64"}}, "cannot name"),
        ({"a/b": {"dtype": "i64"}}, "cannot name"),
    ],
)
def test_bad_index_column_declarations(tmp_path: Path, columns: Any, match: str) -> None:
    with pytest.raises(mrecd.InvalidRecord, match=match):
        mrecd.create_collection(tmp_path / "i.mrec.lmdb", meta=UNITS, index_columns=columns)


@pytest.mark.parametrize(
    ("spec", "value", "match"),
    [
        ({"dtype": "string"}, 5, "holds text"),
        ({"dtype": "i32"}, 2**40, "exactly"),
        ({"dtype": "i64"}, 1.5, "exactly"),
        ({"dtype": "f64"}, True, "boolean"),
        ({"dtype": "f64", "trailing": [3]}, [1.0, 2.0], "trailing shape"),
        ({"dtype": "u8"}, None, "not nullable"),
    ],
)
def test_bad_index_values(tmp_path: Path, spec: Any, value: Any, match: str) -> None:
    with new(tmp_path / "i.mrec.lmdb", index_columns={"q": spec}) as col:
        with pytest.raises(mrecd.InvalidRecord, match=match):
            col.append({"system": system()}, index={"q": value})
        assert len(col) == 0


def test_missing_index_value_without_derive(tmp_path: Path) -> None:
    with new(tmp_path / "i.mrec.lmdb", index_columns={"smiles": {"dtype": "string"}}) as col:
        with pytest.raises(mrecd.InvalidRecord, match="no value for index column 'smiles'"):
            col.append({"system": system()})
        with pytest.raises(mrecd.InvalidRecord, match="not declared"):
            col.append({"system": system()}, index={"smiles": "OO", "inchi": "x"})
        with pytest.raises(mrecd.InvalidRecord, match="needs 2 values"):
            col.extend([{"system": system()}] * 2, index={"smiles": ["OO"]})


def test_failing_derive_names_the_column(tmp_path: Path) -> None:
    columns = {"smiles": {"dtype": "string", "derive": lambda rec: rec.system.meta["inchi"]}}
    with (
        new(tmp_path / "i.mrec.lmdb", index_columns=columns) as col,
        pytest.raises(
            mrecd.InvalidRecord, match="derive of index column 'smiles' failed: KeyError"
        ),
    ):
        col.append({"system": system()})


@pytest.mark.parametrize("name", ["c.lmdb", "c.mrec", "c.mrec.lmdb/", ".mrec.lmdb"])
def test_path_must_carry_the_suffix(tmp_path: Path, name: str) -> None:
    with pytest.raises(mrecd.InvalidRecord, match=r"\.mrec\.lmdb"):
        mrecd.create_collection(
            str(tmp_path / name) + ("/" if name.endswith("/") else ""), meta=UNITS
        )


def test_existing_file_needs_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "c.mrec.lmdb"
    with new(path) as col:
        col.append({"system": system()})
        with pytest.raises(mrecd.AlreadyExists, match="open in this process"):
            new(path, overwrite=True)
    with pytest.raises(mrecd.AlreadyExists, match="overwrite=True"):
        new(path)
    with new(path, overwrite=True) as col:
        assert len(col) == 0


def test_missing_directory_or_file(tmp_path: Path) -> None:
    with pytest.raises(mrecd.NotFound):
        mrecd.create_collection(tmp_path / "nope" / "c.mrec.lmdb", meta=UNITS)
    with pytest.raises(mrecd.NotFound):
        mrecd.open_collection(tmp_path / "c.mrec.lmdb")


def test_read_only_mode_refuses_appends(tmp_path: Path) -> None:
    path = tmp_path / "c.mrec.lmdb"
    new(path).close()
    with mrecd.open_collection(path, "r") as col:
        assert col.mode == "r"
        with pytest.raises(mrecd.ReadOnlyError):
            col.append({"system": system()})
    with pytest.raises(ValueError, match="mode"):
        mrecd.open_collection(path, "w")  # type: ignore[arg-type]


def test_read_only_file_opens_for_reading_only(tmp_path: Path) -> None:
    path = tmp_path / "c.mrec.lmdb"
    with new(path) as col:
        col.append({"system": system()})
    path.chmod(0o444)
    try:
        with mrecd.open_collection(path) as col:
            assert len(col) == 1
        if not path.stat().st_mode & 0o200 and not _is_root():
            with pytest.raises(mrecd.ReadOnlyError):
                mrecd.open_collection(path, "r+")
    finally:
        path.chmod(0o644)


def _is_root() -> bool:
    import os

    return os.geteuid() == 0


def test_version_1_collection_is_read_never_appended(tmp_path: Path) -> None:
    from collection_helpers import meta_of, put_meta

    path = tmp_path / "v1.mrec.lmdb"
    with new(path) as col:
        col.append({"trajectory": [frame(0, -1.0, atoms=atoms(X0))]})
    meta = meta_of(path)
    meta["collection"]["molrec_version"] = 1
    put_meta(path, meta)
    with mrecd.open_collection(path) as col:
        assert col[0].trajectory[0]["atoms"]["x"].values.tolist() == X0.tolist()
    with pytest.raises(mrecd.ReadOnlyError, match="version-1"):
        mrecd.open_collection(path, "r+")
