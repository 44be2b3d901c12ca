"""Reading rules and every refusal a reader owes (trajectory.md §3-§10, chunking.md §3)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import mrecd
from mrecd.api._trajectory import open_trajectory, validate_trajectory

from .conftest import atoms, attrs, frame, u64, write_attrs, zs


def plain_group(path: Path, attributes: dict[str, Any]) -> zarr.Group:
    """A group written by plain zarr-python, no mrecd code."""
    return zarr.open_group(zs(path), mode="a", attributes=attributes)


def plain_array(group: zarr.Group, name: str, values: Any, **attributes: Any) -> None:
    values = np.asarray(values)
    array = group.create_array(
        name, shape=values.shape, dtype=values.dtype, chunks=values.shape or (1,)
    )
    array[...] = values
    if attributes:
        array.attrs.update(attributes)


def foreign_store(root: Path, trajectory_attrs: dict[str, Any], build: Any) -> None:
    tr = plain_group(root / "trajectory", trajectory_attrs)
    build(tr)


DECL_X = {"blocks": {"atoms": {"columns": {"x": {"dtype": "f64", "trailing": []}}}}, "meta": {}}
DECL_X_BONDS = {
    "blocks": {
        "atoms": DECL_X["blocks"]["atoms"],
        "bonds": {"columns": {"atomi": {"dtype": "u64", "trailing": []}}},
    },
    "meta": {},
}


def test_uncommitted_tail_is_ignored(root: Path) -> None:
    """nstep 3, step_index [0,1,2,3], offset [0,4,8,12,17]: 3 updates, 12 logical rows."""

    def build(tr: zarr.Group) -> None:
        g = tr.create_group("atoms")
        plain_array(g, "step_index", u64(0, 1, 2, 3))
        plain_array(g, "offset", u64(0, 4, 8, 12, 17))
        plain_array(g, "x", np.arange(17.0))

    foreign_store(
        root,
        {"sequence_schema": DECL_X, "nstep": 3, "step_progression": {"start": 0, "stride": 1}},
        build,
    )
    traj = open_trajectory(root)
    assert len(traj) == 3
    np.testing.assert_array_equal(traj[2]["atoms"]["x"].values, [8.0, 9.0, 10.0, 11.0])
    assert traj.url.endswith("run.mrec/trajectory") and validate_trajectory(root) == []


def test_regular_block_shortest_column(root: Path) -> None:
    """uniform_rows 4, x length 18, y length 12, nstep 5: 3 updates; frame 4 -> rows 8:12."""
    decl = {
        "blocks": {"atoms": {"columns": {c: {"dtype": "f64", "trailing": []} for c in "xy"}}},
        "meta": {},
    }

    def build(tr: zarr.Group) -> None:
        g = tr.create_group("atoms", attributes={"uniform_rows": 4, "dense_updates": True})
        plain_array(g, "x", np.arange(18.0))
        plain_array(g, "y", np.arange(12.0))

    foreign_store(
        root,
        {"sequence_schema": decl, "nstep": 5, "step_progression": {"start": 0, "stride": 1}},
        build,
    )
    traj = open_trajectory(root)
    np.testing.assert_array_equal(traj[4]["atoms"]["x"].values, [8.0, 9.0, 10.0, 11.0])
    np.testing.assert_array_equal(traj[1]["atoms"]["y"].values, [4.0, 5.0, 6.0, 7.0])


def test_regular_block_four_updates(root: Path) -> None:
    def build(tr: zarr.Group) -> None:
        g = tr.create_group("atoms", attributes={"uniform_rows": 4, "dense_updates": True})
        plain_array(g, "x", np.arange(16.0))

    foreign_store(
        root, {"sequence_schema": DECL_X, "nstep": 4, "step_progression": {"start": 0}}, build
    )
    np.testing.assert_array_equal(
        open_trajectory(root)[2]["atoms"]["x"].values, [8.0, 9.0, 10.0, 11.0]
    )


def test_no_nstep_uses_step_length(root: Path) -> None:
    def build(tr: zarr.Group) -> None:
        plain_array(tr, "step", np.array([1, 2, 3, 4, 5], dtype=np.int64))

    foreign_store(root, {"sequence_schema": {"blocks": {}, "meta": {}}}, build)
    traj = open_trajectory(root)
    assert len(traj) == 5 and traj.steps().tolist() == [1, 2, 3, 4, 5]


def test_no_nstep_no_step_is_empty(root: Path) -> None:
    foreign_store(root, {"sequence_schema": DECL_X}, lambda tr: None)
    assert len(open_trajectory(root)) == 0


def test_foreign_store_without_sequence_schema_is_derived(root: Path) -> None:
    def build(tr: zarr.Group) -> None:
        g = tr.create_group("atoms", attributes={"uniform_rows": 2, "dense_updates": True})
        plain_array(g, "x", np.arange(4.0))
        plain_array(g, "id", u64(7, 8, 7, 8))
        m = tr.create_group("meta")
        plain_array(m, "pe", np.array([1.0, 2.0]), meta_dtype="f64")
        plain_array(tr, "step", np.array([0, 5], dtype=np.int64))
        tr.create_group("x_vendor")  # an unknown group with no arrays is not a block

    foreign_store(root, {"nstep": 2}, build)
    traj = open_trajectory(root)
    declaration = traj.declaration
    assert declaration is not None
    assert set(declaration.blocks["atoms"].columns) == {"x", "id"}
    assert declaration.meta["pe"].dtype == "f64"
    f1 = traj[1]
    assert f1.step == 5 and f1.meta["pe"] == 2.0 and f1["atoms"]["id"].values.tolist() == [7, 8]
    with pytest.raises(mrecd.ReadOnlyError):
        traj.append(frame(6, blocks={"atoms": {"x": [0.0, 1.0], "id": u64(7, 8)}}))


def test_steps_missing_entirely_refused(root: Path) -> None:
    foreign_store(root, {"sequence_schema": DECL_X, "nstep": 2}, lambda tr: None)
    with pytest.raises(mrecd.InvalidRecord, match="progression nor a step array"):
        open_trajectory(root)


@pytest.mark.parametrize(
    ("tamper", "match"),
    [
        (lambda tr: write_attrs(tr, {**attrs(tr), "nstep": -1}), "nstep"),
        (
            lambda tr: write_attrs(tr, {k: v for k, v in attrs(tr).items() if k != "nstep"}),
            "progression",
        ),
        (lambda tr: write_attrs(tr / "atoms", {"uniform_rows": 4}), "pair"),
        (lambda tr: write_attrs(tr / "atoms", {"dense_updates": True}), "pair"),
        (
            lambda tr: write_attrs(tr / "atoms", {"uniform_rows": 0, "dense_updates": True}),
            "positive",
        ),
        (
            lambda tr: write_attrs(tr / "atoms", {"uniform_rows": "4", "dense_updates": True}),
            "positive",
        ),
        (lambda tr: write_attrs(tr / "meta" / "pe", {}), "meta_dtype"),
        (lambda tr: write_attrs(tr / "meta" / "pe", {"meta_dtype": "i64"}), "meta_dtype"),
        (lambda tr: write_attrs(tr / "meta" / "pe", {"meta_dtype": "f32"}), "tag"),
        (
            lambda tr: write_attrs(tr, {**attrs(tr), "step_progression": {"start": 1.5}}),
            "step_progression",
        ),
    ],
)
def test_tampered_store_is_refused(root: Path, tamper: Any, match: str) -> None:
    traj = open_trajectory(root)
    traj.append(frame(0, blocks={"atoms": atoms(4)}, meta={"pe": 0.0}))
    traj.append(frame(1, blocks={"atoms": atoms(4, 1)}, meta={"pe": 1.0}))
    traj.close()
    tamper(root / "trajectory")
    with pytest.raises(mrecd.InvalidRecord, match=match):
        reader = open_trajectory(root)
        reader.read(1)


def _indexed_store(root: Path, step_index: list[int], offset: list[int], nstep: int) -> None:
    def build(tr: zarr.Group) -> None:
        g = tr.create_group("atoms")
        plain_array(g, "step_index", np.array(step_index, dtype=np.uint64))
        plain_array(g, "offset", np.array(offset, dtype=np.uint64))
        plain_array(g, "x", np.arange(float(max(offset))))

    foreign_store(
        root,
        {"sequence_schema": DECL_X, "nstep": nstep, "step_progression": {"start": 0, "stride": 1}},
        build,
    )


def test_non_monotonic_offset_refused(root: Path) -> None:
    _indexed_store(root, [0, 1], [0, 4, 3], 2)
    with pytest.raises(mrecd.InvalidRecord, match="offset"):
        open_trajectory(root)[1]
    assert any("offset" in v.message for v in validate_trajectory(root))


def test_repeating_step_index_refused(root: Path) -> None:
    _indexed_store(root, [0, 2, 2], [0, 1, 2, 3], 3)
    with pytest.raises(mrecd.InvalidRecord, match="step_index"):
        open_trajectory(root)[2]
    assert any("step_index" in v.message for v in validate_trajectory(root))


def test_meta_shorter_than_nstep_refused(root: Path) -> None:
    """nstep 3 and meta/pe of length 2."""

    def build(tr: zarr.Group) -> None:
        m = tr.create_group("meta")
        plain_array(m, "pe", np.array([1.0, 2.0]), meta_dtype="f64")

    decl = {"blocks": {}, "meta": {"pe": {"dtype": "f64"}}}
    foreign_store(
        root,
        {"sequence_schema": decl, "nstep": 3, "step_progression": {"start": 0, "stride": 1}},
        build,
    )
    with pytest.raises(mrecd.InvalidRecord, match="nstep"):
        open_trajectory(root)[0]


@pytest.mark.parametrize(
    ("values", "tag"),
    [(np.zeros(4), "i64"), (np.zeros((4, 3)), "f64x6"), (np.zeros(4, dtype=np.int64), "f64")],
)
def test_meta_array_not_what_its_tag_prescribes(root: Path, values: Any, tag: str) -> None:
    def build(tr: zarr.Group) -> None:
        plain_array(tr.create_group("meta"), "v", values, meta_dtype=tag)

    decl = {"blocks": {}, "meta": {"v": {"dtype": tag}}}
    foreign_store(
        root,
        {"sequence_schema": decl, "nstep": 4, "step_progression": {"start": 0, "stride": 1}},
        build,
    )
    with pytest.raises(mrecd.InvalidRecord, match="prescribes"):
        open_trajectory(root)[0]


@pytest.mark.directory_only
def test_arrays_shorter_than_logical_length_refused(root: Path) -> None:
    _indexed_store(root, [0, 1], [0, 4, 8], 2)
    shutil.rmtree(root / "trajectory" / "atoms" / "x")
    plain_array(zarr.open_group(zs(root / "trajectory" / "atoms")), "x", np.arange(6.0))
    with pytest.raises(mrecd.InvalidRecord, match="shorter"):
        open_trajectory(root)[1]


def test_markers_beside_index_arrays_win(root: Path) -> None:
    """A crash between materializing the index and removing the markers: the arrays win."""

    def build(tr: zarr.Group) -> None:
        g = tr.create_group("atoms", attributes={"uniform_rows": 2, "dense_updates": True})
        plain_array(g, "step_index", u64(0, 1, 2))
        plain_array(g, "offset", u64(0, 2, 4, 7))
        plain_array(g, "x", np.arange(7.0))

    foreign_store(
        root,
        {"sequence_schema": DECL_X, "nstep": 3, "step_progression": {"start": 0, "stride": 1}},
        build,
    )
    assert open_trajectory(root)[2]["atoms"].count == 3


def test_markers_on_a_block_without_columns_refused(root: Path) -> None:
    decl = {"blocks": {"flags": {"columns": {}}}, "meta": {}}
    foreign_store(
        root,
        {"sequence_schema": decl, "nstep": 1, "step_progression": {"start": 0}},
        lambda tr: tr.create_group("flags", attributes={"uniform_rows": 1, "dense_updates": True}),
    )
    with pytest.raises(mrecd.InvalidRecord, match="no columns"):
        open_trajectory(root)[0]


def test_declared_block_without_updates_is_absent(root: Path) -> None:
    decl = DECL_X_BONDS

    def build(tr: zarr.Group) -> None:
        g = tr.create_group("atoms", attributes={"uniform_rows": 1, "dense_updates": True})
        plain_array(g, "x", np.arange(2.0))
        plain_array(tr.create_group("bonds"), "atomi", np.zeros(3, dtype=np.uint64))  # tail only

    foreign_store(
        root,
        {"sequence_schema": decl, "nstep": 2, "step_progression": {"start": 0, "stride": 1}},
        build,
    )
    traj = open_trajectory(root)
    assert set(traj[1]) == {"atoms"}


def test_undeclared_group_is_not_a_block(root: Path) -> None:
    def build(tr: zarr.Group) -> None:
        g = tr.create_group("atoms", attributes={"uniform_rows": 1, "dense_updates": True})
        plain_array(g, "x", np.arange(1.0))
        plain_array(tr.create_group("x_vendor"), "blob", np.arange(3.0))

    foreign_store(
        root, {"sequence_schema": DECL_X, "nstep": 1, "step_progression": {"start": 0}}, build
    )
    assert set(open_trajectory(root)[0]) == {"atoms"}


def test_float32_column_refused(root: Path) -> None:
    def build(tr: zarr.Group) -> None:
        g = tr.create_group("atoms", attributes={"uniform_rows": 1, "dense_updates": True})
        plain_array(g, "x", np.arange(1.0, dtype=np.float32))

    foreign_store(
        root, {"sequence_schema": DECL_X, "nstep": 1, "step_progression": {"start": 0}}, build
    )
    with pytest.raises(mrecd.InvalidRecord, match="float32"):
        open_trajectory(root)[0]


def test_big_endian_arrays_decode(root: Path) -> None:
    def build(tr: zarr.Group) -> None:
        g = tr.create_group("atoms", attributes={"uniform_rows": 2, "dense_updates": True})
        array = g.create_array(
            "x",
            shape=(4,),
            dtype=">f8",
            chunks=(4,),
            serializer={"name": "bytes", "configuration": {"endian": "big"}},
        )
        array[:] = np.arange(4.0)

    foreign_store(
        root,
        {"sequence_schema": DECL_X, "nstep": 2, "step_progression": {"start": 0, "stride": 1}},
        build,
    )
    np.testing.assert_array_equal(open_trajectory(root)[1]["atoms"]["x"].values, [2.0, 3.0])


def test_aligned_block_tampered_offset_refused(root: Path) -> None:
    """`atom_types` offset changed so ordinal 1 holds 2 rows against 3 atoms."""
    decl = {
        "blocks": {
            "atoms": {"columns": {"x": {"dtype": "f64", "trailing": []}}},
            "atom_types": {
                "aligned_with": "atoms",
                "columns": {"type": {"dtype": "string", "trailing": []}},
            },
        },
        "meta": {},
    }

    def build(tr: zarr.Group) -> None:
        g = tr.create_group("atoms", attributes={"uniform_rows": 3, "dense_updates": True})
        plain_array(g, "x", np.arange(6.0))
        t = tr.create_group("atom_types")
        plain_array(t, "step_index", u64(0, 1))
        plain_array(t, "offset", u64(0, 3, 5))
        plain_array(t, "type", np.array(["a", "b", "c", "d", "e"], dtype=np.dtypes.StringDType()))

    foreign_store(
        root,
        {"sequence_schema": decl, "nstep": 2, "step_progression": {"start": 0, "stride": 1}},
        build,
    )
    traj = open_trajectory(root)
    assert traj[0]["atom_types"].count == 3
    with pytest.raises(mrecd.InvalidRecord, match="aligned"):
        traj[1]
    assert any("aligned" in v.message for v in validate_trajectory(root))


def test_validator_reports_off_grid_precision_values(root: Path) -> None:
    decl = {
        "blocks": {
            "atoms": {"columns": {"x": {"dtype": "f64", "trailing": [], "precision": 0.001}}}
        },
        "meta": {},
    }

    def build(tr: zarr.Group) -> None:
        g = tr.create_group("atoms", attributes={"uniform_rows": 2, "dense_updates": True})
        plain_array(g, "x", np.array([0.1, 0.2]))  # not multiples of 2^-10

    foreign_store(
        root, {"sequence_schema": decl, "nstep": 1, "step_progression": {"start": 0}}, build
    )
    np.testing.assert_array_equal(
        open_trajectory(root)[0]["atoms"]["x"].values, [0.1, 0.2]
    )  # read, not refused
    problems = validate_trajectory(root)
    assert len(problems) == 1 and "grid" in problems[0].message
    assert problems[0].path == "trajectory/atoms/x" and problems[0].rule == "frame.md §7.2"


def test_frame_index_bounds(root: Path) -> None:
    traj = open_trajectory(root)
    traj.append(frame(0, blocks={"atoms": atoms(1)}))
    traj.append(frame(1, blocks={"atoms": atoms(1, 1)}))
    traj.close()
    reader = open_trajectory(root)
    assert reader[-1].step == 1 and reader[-2].step == 0
    with pytest.raises(IndexError):
        reader[2]
    with pytest.raises(IndexError):
        reader[-3]


def test_trajectory_attributes_are_strict_json(root: Path) -> None:
    open_trajectory(root).append(frame(0, blocks={"atoms": atoms(1)}))
    path = root / "trajectory" / "zarr.json"
    text = path.read_text().replace('"nstep":0', '"nstep":NaN')
    path.write_text(
        text
        if "NaN" in text
        else json.dumps(json.loads(text)).replace('"nstep": 0', '"nstep": NaN')
    )
    with pytest.raises(mrecd.InvalidRecord):
        open_trajectory(root)[0]


def test_block_with_no_committed_update_is_absent_even_if_partial(root: Path) -> None:
    """A writer killed during a block's first commit: step_index landed, offset did not."""
    decl = DECL_X_BONDS

    def build(tr: zarr.Group) -> None:
        g = tr.create_group("atoms", attributes={"uniform_rows": 1, "dense_updates": True})
        plain_array(g, "x", np.arange(1.0))
        b = tr.create_group("bonds")
        plain_array(b, "step_index", u64(1))
        b.create_array("offset", shape=(0,), dtype="uint64", chunks=(1,))
        b.create_array("atomi", shape=(0,), dtype="uint64", chunks=(1,))

    foreign_store(
        root, {"sequence_schema": decl, "nstep": 1, "step_progression": {"start": 0}}, build
    )
    assert set(open_trajectory(root)[0]) == {"atoms"}
    assert validate_trajectory(root) == []
