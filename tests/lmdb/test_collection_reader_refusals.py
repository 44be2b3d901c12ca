"""What a reader refuses (lmdb.md §3-§5, collection.md §2-§3), each on a real
file tampered with through raw LMDB writes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from collection_helpers import (
    X0,
    XYZ,
    atoms,
    frame,
    meta_of,
    new,
    put_meta,
    raw,
    rewrite_frame_value,
    system,
)

import lmdb
import mrecd
from mrecd.bindings.lmdb import frame_key, system_key
from mrecd.model import Block, Column


def _u64(values: list[int]) -> Column:
    return Column(np.array(values, dtype=np.uint64))


@pytest.fixture
def two(tmp_path: Path) -> Path:
    """Two records of 3 and 2 frames (lmdb.md §5's shape)."""
    path = tmp_path / "two.mrec.lmdb"
    with new(path) as col:
        col.append({"trajectory": [frame(k, -1.0 * k, atoms=atoms(X0, k)) for k in range(3)]})
        col.append({"trajectory": [frame(k, -2.0, atoms=atoms(X0, k)) for k in range(2)]})
    return path


def _read_all(path: Path) -> None:
    with mrecd.open_collection(path) as col:
        for record in col:
            if record.trajectory is not None:
                for i in range(len(record.trajectory)):
                    record.trajectory[i]
                list(record.trajectory)


# -- the meta value -------------------------------------------------------------------------


def test_file_without_meta_is_not_a_collection(tmp_path: Path) -> None:
    path = tmp_path / "bare.mrec.lmdb"
    env = lmdb.open(str(path), subdir=False)
    with env.begin(write=True) as txn:
        txn.put(b"index", b"x")
    env.close()
    with pytest.raises(mrecd.InvalidRecord, match="no meta key"):
        mrecd.open_collection(path)


def test_empty_file_is_not_a_collection(tmp_path: Path) -> None:
    path = tmp_path / "empty.mrec.lmdb"
    lmdb.open(str(path), subdir=False).close()
    with pytest.raises(mrecd.InvalidRecord, match="not a collection"):
        mrecd.open_collection(path)


def _edit(**changes: Any) -> Callable[[dict[str, Any]], None]:
    def apply(meta: dict[str, Any]) -> None:
        for key, value in changes.items():
            if value is _DROP:
                meta.pop(key)
            else:
                meta[key] = value

    return apply


_DROP = object()


def _collection(**changes: Any) -> Callable[[dict[str, Any]], None]:
    def apply(meta: dict[str, Any]) -> None:
        for key, value in changes.items():
            if value is _DROP:
                meta["collection"].pop(key)
            else:
                meta["collection"][key] = value

    return apply


@pytest.mark.parametrize(
    ("edit", "error", "match"),
    [
        (_edit(layout="mrec-zarr"), mrecd.InvalidRecord, "layout must be 'mrec-lmdb'"),
        (_edit(layout=_DROP), mrecd.InvalidRecord, "layout must be"),
        (_edit(layout_version=None), mrecd.UnsupportedVersion, "not None"),
        (_edit(layout_version=0), mrecd.UnsupportedVersion, "layout_version"),
        (_edit(layout_version=2), mrecd.UnsupportedVersion, "layout_version"),
        (_edit(layout_version="1"), mrecd.UnsupportedVersion, "layout_version"),
        (_edit(layout_version=1.0), mrecd.UnsupportedVersion, "layout_version"),
        (_edit(layout_version=True), mrecd.UnsupportedVersion, "layout_version"),
        (_collection(molrec_version=None), mrecd.UnsupportedVersion, "molrec_version"),
        (_collection(molrec_version=3), mrecd.UnsupportedVersion, "molrec_version"),
        (_collection(molrec_version="2"), mrecd.UnsupportedVersion, "molrec_version"),
        (_collection(units=_DROP), mrecd.InvalidRecord, "units"),
        (_collection(units={"length": "furlongs of fish"}), mrecd.InvalidRecord, "pint"),
        (_edit(n_records=-1), mrecd.InvalidRecord, "n_records"),
        (_edit(n_records=True), mrecd.InvalidRecord, "n_records"),
        (_edit(n_frames=_DROP), mrecd.InvalidRecord, "lacks"),
        (
            _edit(sequence_schema={"blocks": {"step": {"columns": {}}}}),
            mrecd.InvalidRecord,
            "reserved",
        ),
        (_edit(extra=1), mrecd.InvalidRecord, "unknown meta keys"),
        (_edit(collection=[]), mrecd.InvalidRecord, "JSON object"),
    ],
    ids=lambda v: None if callable(v) or isinstance(v, type) else str(v),
)
def test_meta_refusals(
    two: Path, edit: Callable[[dict[str, Any]], None], error: type[Exception], match: str
) -> None:
    meta = meta_of(two)
    edit(meta)
    put_meta(two, meta)
    with pytest.raises(error, match=match):
        mrecd.open_collection(two)


def test_meta_not_json_is_refused(two: Path) -> None:
    with raw(two, write=True) as txn:
        txn.put(b"meta", b'{"layout": NaN}')
    with pytest.raises(mrecd.InvalidRecord, match="not UTF-8 JSON"):
        mrecd.open_collection(two)


def test_missing_layout_version_reads_as_1(two: Path) -> None:
    """lmdb.md §8: the reference 0.2.0 writers and the later revision write none."""
    meta = meta_of(two)
    del meta["layout_version"]
    put_meta(two, meta)
    with mrecd.open_collection(two) as col:
        assert len(col[0].trajectory) == 3


def test_unstamped_collection_reads_as_current(two: Path) -> None:
    meta = meta_of(two)
    del meta["collection"]["molrec_version"]
    put_meta(two, meta)
    with mrecd.open_collection(two) as col:
        assert "molrec_version" not in col.meta
        assert len(col[0].trajectory) == 3


# -- the index value ------------------------------------------------------------------------


def _replace_columns(**columns: Column) -> Callable[..., Any]:
    def edit(blocks: dict[str, Block], head: dict[str, Any]) -> Any:
        records = blocks["records"]
        merged = dict(records.columns) | columns
        return {"records": Block(merged)}, head

    return edit


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (_replace_columns(first_frame=_u64([0, 2])), "exclusive prefix sum"),
        (_replace_columns(first_frame=_u64([1, 4])), "exclusive prefix sum"),
        (_replace_columns(n_frames=_u64([3, 3])), "meta.n_frames is 5"),
        (
            _replace_columns(has_trajectory=Column(np.array([False, True]))),
            "has frames but has_trajectory is false",
        ),
        (_replace_columns(n_atoms=Column(np.array([4, 4], dtype=np.int64))), "n_atoms is u64"),
        (
            lambda blocks, head: ({"records": blocks["records"], "extra": Block({})}, head),
            "exactly one block",
        ),
        (
            lambda blocks, head: ({"records": blocks["records"].select(["n_frames"])}, head),
            "lacks the binding column",
        ),
    ],
)
def test_index_refusals(two: Path, edit: Callable[..., Any], match: str) -> None:
    rewrite_frame_value(two, b"index", edit)
    with pytest.raises(mrecd.InvalidRecord, match=match):
        mrecd.open_collection(two)


def test_index_total_must_match_meta(two: Path) -> None:
    meta = meta_of(two)
    meta["n_frames"] = 6
    put_meta(two, meta)
    with pytest.raises(mrecd.InvalidRecord, match=r"index counts 5 frames but meta\.n_frames is 6"):
        mrecd.open_collection(two)


def test_index_rows_must_match_n_records(two: Path) -> None:
    meta = meta_of(two)
    meta["n_records"] = 3
    put_meta(two, meta)
    with pytest.raises(mrecd.InvalidRecord, match=r"2 rows but meta\.n_records is 3"):
        mrecd.open_collection(two)


def test_missing_index_is_refused(two: Path) -> None:
    with raw(two, write=True) as txn:
        txn.delete(b"index")
    with pytest.raises(mrecd.InvalidRecord, match="no index key"):
        mrecd.open_collection(two)


# -- frames ---------------------------------------------------------------------------------


def test_frame_with_undeclared_block_is_refused(two: Path) -> None:
    def add_bonds(blocks: dict[str, Block], head: dict[str, Any]) -> Any:
        return blocks | {"bonds": Block({"atomi": _u64([0]), "atomj": _u64([1])})}, head

    rewrite_frame_value(two, frame_key(1), add_bonds)
    with mrecd.open_collection(two) as col:
        assert col[0].trajectory[0].step == 0  # resolving frame 0 reads frame 0 only
        with pytest.raises(
            mrecd.InvalidRecord, match="'bonds', which sequence_schema does not declare"
        ):
            col[0].trajectory[1]
        with pytest.raises(mrecd.InvalidRecord, match="does not declare"):
            list(col[0].trajectory)
        assert len(col[1].trajectory[1]["atoms"]) == 3  # other records still read


def test_missing_frame_key_is_refused(two: Path) -> None:
    with raw(two, write=True) as txn:
        txn.delete(frame_key(1))
    with mrecd.open_collection(two) as col:
        with pytest.raises(mrecd.InvalidRecord, match=r"f‖1 is missing"):
            col[0].trajectory[2]
        with pytest.raises(mrecd.InvalidRecord, match="missing"):
            col.read_many([0])


def test_missing_last_frame_key_is_refused(two: Path) -> None:
    with raw(two, write=True) as txn:
        txn.delete(frame_key(4))
    with mrecd.open_collection(two) as col:
        with pytest.raises(mrecd.InvalidRecord, match=r"f‖4"):
            col[1].trajectory[1]
        with pytest.raises(mrecd.InvalidRecord, match=r"f‖4"):
            list(col[1].trajectory)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda cols: cols.pop("z"), "declares"),
        (lambda cols: cols.update(x=Column(X0, validity=[True, False, True, True])), "nullable"),
        (lambda cols: cols.update(q=Column(np.zeros(4))), "declares"),
    ],
)
def test_frame_columns_must_match_the_declaration(
    two: Path, change: Callable[[dict[str, Column]], Any], match: str
) -> None:
    def edit(blocks: dict[str, Block], head: dict[str, Any]) -> Any:
        cols = dict(blocks["atoms"].columns)
        change(cols)
        return {"atoms": Block(cols)}, head

    rewrite_frame_value(two, frame_key(3), edit)
    with mrecd.open_collection(two) as col, pytest.raises(mrecd.InvalidRecord, match=match):
        col[1].trajectory[0]


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda h: h.pop("step"), "carries its step"),
        (lambda h: h.update(step=1), "not above the previous step"),
        (lambda h: h.update(time=1.0), "all-or-nothing"),
        (lambda h: h.update(meta={}), "every declared per-step key"),
        (lambda h: h.update(meta={"pe": 1.0, "ke": 2.0}), "every declared per-step key"),
        (lambda h: h.update(meta={"pe": None}), "null"),
        (lambda h: h.update(meta_types={"pe": "i64"}), "disagree"),
    ],
)
def test_update_header_refusals(
    two: Path, edit: Callable[[dict[str, Any]], Any], match: str
) -> None:
    def apply(blocks: dict[str, Block], head: dict[str, Any]) -> Any:
        edit(head)
        return blocks, head

    rewrite_frame_value(two, frame_key(2), apply)
    with mrecd.open_collection(two) as col, pytest.raises(mrecd.InvalidRecord, match=match):
        col[0].trajectory[2]


def test_bad_frame_bytes_are_refused(two: Path) -> None:
    with raw(two, write=True) as txn:
        txn.put(frame_key(0), b"MRF2" + bytes(12))
    with mrecd.open_collection(two) as col, pytest.raises(mrecd.FrameBytesError):
        col[0].trajectory[0]


def test_cell_updates_disagreeing_on_cell_defined(tmp_path: Path) -> None:
    path = tmp_path / "cell.mrec.lmdb"
    cube = mrecd.Box(np.eye(3) * 10.0)
    frames = [frame(0, 0.0, atoms=atoms(X0)), frame(1, 0.0, atoms=atoms(X0, 1))]
    with new(path) as col:
        col.append(
            {
                "trajectory": [
                    frames[0].replace(box=cube),
                    frames[1].replace(box=mrecd.Box(np.eye(3) * 11.0)),
                ]
            }
        )

    def undefine(blocks: dict[str, Block], head: dict[str, Any]) -> Any:
        head["box"] = mrecd.Box(cell_defined=False).to_dict()
        return blocks, head

    rewrite_frame_value(path, frame_key(1), undefine)
    with (
        mrecd.open_collection(path) as col,
        pytest.raises(mrecd.InvalidRecord, match="cell_defined"),
    ):
        col[0].trajectory[1]


def test_record_with_neither_system_nor_trajectory(tmp_path: Path) -> None:
    path = tmp_path / "none.mrec.lmdb"
    with new(path) as col:
        col.append({"trajectory": []})  # a zero-frame trajectory is a trajectory
    rewrite_frame_value(path, b"index", _replace_columns(has_trajectory=Column(np.array([False]))))
    with mrecd.open_collection(path) as col, pytest.raises(mrecd.InvalidRecord, match="neither"):
        col[0]


# -- side-by-side rules ---------------------------------------------------------------------

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


def test_aligned_block_row_count_is_checked_on_read(tmp_path: Path) -> None:
    path = tmp_path / "aligned.mrec.lmdb"
    types = {"type": ["a", "b", "c", "d"]}
    with new(path, declaration=ALIGNED) as col:
        col.append(
            {
                "trajectory": [
                    frame(0, atoms=atoms(X0), atom_types=types),
                    frame(1, atoms=atoms(X0, 1)),
                ]
            }
        )

    def grow(blocks: dict[str, Block], head: dict[str, Any]) -> Any:
        return {"atoms": Block(atoms(np.append(X0, 9.0)))}, head

    rewrite_frame_value(path, frame_key(1), grow)
    with mrecd.open_collection(path) as col:
        assert col[0].trajectory[0]["atom_types"].count == 4
        with pytest.raises(mrecd.InvalidRecord, match="aligned block 'atom_types' has 4 rows"):
            col[0].trajectory[1]
        with pytest.raises(mrecd.InvalidRecord, match="aligned block"):
            list(col[0].trajectory)


@pytest.fixture
def with_system(tmp_path: Path) -> Path:
    path = tmp_path / "sys.mrec.lmdb"
    sysframe = mrecd.Frame(
        {"atoms": {"element": ["O", "O", "H", "H"], "id": np.arange(4, dtype=np.uint64)}}
    )
    declaration = {
        "blocks": {"atoms": {"columns": XYZ | {"id": {"dtype": "u64", "trailing": []}}}},
        "meta": {},
    }
    with new(path, declaration=declaration) as col:
        moving = atoms(X0) | {"id": np.arange(4, dtype=np.uint64)}
        col.append({"system": sysframe, "trajectory": [frame(0, atoms=moving)]})
    return path


def test_system_row_count_is_checked_on_read(with_system: Path) -> None:
    def grow(blocks: dict[str, Block], head: dict[str, Any]) -> Any:
        return {
            "atoms": Block(atoms(np.append(X0, 1.0)) | {"id": np.arange(5, dtype=np.uint64)})
        }, head

    rewrite_frame_value(with_system, frame_key(0), grow)
    with (
        mrecd.open_collection(with_system) as col,
        pytest.raises(mrecd.InvalidRecord, match="align 1:1"),
    ):
        col[0].trajectory[0]


def test_system_id_equality_is_checked_on_read(with_system: Path) -> None:
    def renumber(blocks: dict[str, Block], head: dict[str, Any]) -> Any:
        return {"atoms": Block(atoms(X0) | {"id": np.arange(1, 5, dtype=np.uint64)})}, head

    rewrite_frame_value(with_system, frame_key(0), renumber)
    with mrecd.open_collection(with_system) as col:
        with pytest.raises(mrecd.InvalidRecord, match="id differs"):
            col[0].trajectory[0]
        with pytest.raises(mrecd.InvalidRecord, match="id differs"):
            col.read_many([0])


def test_column_in_system_and_trajectory_is_refused_on_read(with_system: Path) -> None:
    def add_x(blocks: dict[str, Block], head: dict[str, Any]) -> Any:
        return {"atoms": Block(dict(blocks["atoms"].columns) | {"x": X0})}, head

    rewrite_frame_value(with_system, system_key(0), add_x)
    with (
        mrecd.open_collection(with_system) as col,
        pytest.raises(mrecd.InvalidRecord, match=r"\['x'\]"),
    ):
        col[0]


def test_aligned_block_named_like_a_system_block_is_refused_on_read(tmp_path: Path) -> None:
    path = tmp_path / "a.mrec.lmdb"
    with new(path, declaration=ALIGNED) as col:
        col.append({"system": system(), "trajectory": [frame(0, atoms=atoms(X0))]})

    def add_types(blocks: dict[str, Block], head: dict[str, Any]) -> Any:
        return blocks | {"atom_types": Block({"charge": np.zeros(4)})}, head

    rewrite_frame_value(path, system_key(0), add_types)
    with (
        mrecd.open_collection(path) as col,
        pytest.raises(mrecd.InvalidRecord, match="aligned block"),
    ):
        col[0]


def test_out_of_range_target_is_refused_on_read(tmp_path: Path) -> None:
    path = tmp_path / "t.mrec.lmdb"
    declaration = {
        "blocks": {
            "atoms": {"columns": XYZ},
            "bonds": {
                "columns": {
                    "atomi": {"dtype": "u64", "trailing": []},
                    "atomj": {"dtype": "u64", "trailing": []},
                },
                "targets": {"atomi": "atoms"},
            },
        },
        "meta": {},
    }
    bonds = {"atomi": _u64([0]), "atomj": _u64([1])}
    with new(path, declaration=declaration) as col:
        col.append({"trajectory": [frame(0, atoms=atoms(X0), bonds=bonds)]})

    def far(blocks: dict[str, Block], head: dict[str, Any]) -> Any:
        wrong = Block({"atomi": _u64([7]), "atomj": _u64([1])}, targets={"atomi": "atoms"})
        return blocks | {"bonds": wrong}, head

    rewrite_frame_value(path, frame_key(0), far)
    with mrecd.open_collection(path) as col, pytest.raises(mrecd.InvalidRecord, match="not below"):
        col[0].trajectory[0]


def test_version_1_frames_needing_conversion_are_refused(tmp_path: Path) -> None:
    """forcefield.md §11.3: convert exactly or refuse; angle values and relation
    parameters of a version-1 collection are refused, other frames read as stored."""
    path = tmp_path / "v1.mrec.lmdb"
    angles = mrecd.Frame(
        {
            "atoms": {"element": ["O", "H", "H"]},
            "angles": {"atomi": _u64([1]), "atomj": _u64([0]), "atomk": _u64([2]), "theta0": [1.9]},
        }
    )
    with new(path) as col:
        col.append({"system": angles})
        col.append({"system": system()})
    meta = meta_of(path)
    meta["collection"]["molrec_version"] = 1
    put_meta(path, meta)
    with mrecd.open_collection(path) as col:
        with pytest.raises(mrecd.InvalidRecord, match="theta0"):
            col[0]
        assert col[1].system == system()
