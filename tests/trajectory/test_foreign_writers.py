"""Trajectories as other conforming writers lay them down, read through mrecd.

Each store here is written by hand from the spec with plain zarr-python (never
mrecd's writer), taking an alternative that a *(ref)* mark or a revision note
allows (trajectory.md §12, chunking.md §4-§5, §8, storage.md §1, §6.1). mrecd
writes one form; these tests hold its reader to every form. The README's
conformance table ("Where mrecd reads more liberally than it writes") points
here, line by line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from zarr.codecs import (
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    ShardingCodec,
    TransposeCodec,
    ZstdCodec,
)

import mrecd
from mrecd.api._trajectory import open_trajectory, validate_trajectory

from .conftest import u64, zs

F64: dict[str, Any] = {"dtype": "f64", "trailing": []}
DECL_X: dict[str, Any] = {"blocks": {"atoms": {"columns": {"x": F64}}}, "meta": {}}
EVERY_STEP: dict[str, Any] = {"start": 0, "stride": 1}


def trajectory_group(root: Any, attributes: dict[str, Any]) -> zarr.Group:
    """The ``trajectory/`` group, created by plain zarr-python."""
    return zarr.open_group(zs(root / "trajectory"), mode="a", attributes=attributes)


def put(group: zarr.Group, name: str, values: Any, **kwargs: Any) -> zarr.Array:
    """Array ``name`` holding ``values``: one chunk unless ``kwargs`` say otherwise."""
    values = np.asarray(values)
    kwargs.setdefault("chunks", values.shape or (1,))
    attributes = kwargs.pop("attributes", None)
    array = group.create_array(
        name, shape=values.shape, dtype=values.dtype, attributes=attributes, **kwargs
    )
    array[...] = values
    return array


def regular_x(tr: zarr.Group, n_frames: int, rows: int = 2) -> np.ndarray:
    """A regular ``atoms`` block of ``rows`` rows per frame; returns the x values."""
    atoms = tr.create_group("atoms", attributes={"uniform_rows": rows, "dense_updates": True})
    x = np.arange(float(n_frames * rows))
    put(atoms, "x", x)
    return x


def cell(scale: float) -> list[list[float]]:
    return (np.eye(3) * scale).tolist()


# -- the cell section (trajectory.md §4, §12) -------------------------------------------------


@pytest.mark.parametrize("with_step_index", [True, False])
def test_a_fixed_cell_stored_as_one_array_update(root: Path, with_step_index: bool) -> None:
    """An older revision wrote ``box/`` arrays for a fixed cell; a trivial index may be omitted."""
    tr = trajectory_group(
        root, {"sequence_schema": DECL_X, "nstep": 3, "step_progression": EVERY_STEP}
    )
    regular_x(tr, 3)
    box = tr.create_group("box")
    put(box, "vectors", np.array([cell(20.0)]))
    if with_step_index:
        put(box, "step_index", u64(0))
    traj = open_trajectory(root)
    for i in range(3):
        cell_i = traj[i].box
        assert cell_i is not None and cell_i.vectors.tolist() == cell(20.0)
    assert validate_trajectory(root) == []


def test_cell_parts_written_at_their_defaults(root: Path) -> None:
    """*(ref)* origin/boundary arrays are omitted at their defaults; another writer keeps them,
    and spells ``cell_defined: true`` out."""
    tr = trajectory_group(
        root, {"sequence_schema": DECL_X, "nstep": 3, "step_progression": EVERY_STEP}
    )
    regular_x(tr, 3)
    box = tr.create_group("box", attributes={"cell_defined": True})
    put(box, "step_index", u64(0, 2))
    put(box, "vectors", np.array([cell(12.0), cell(12.25)]))
    put(box, "origin", np.zeros((2, 3)))
    put(box, "boundary", np.ones((2, 3), dtype=bool))
    traj = open_trajectory(root)
    first, last = traj[1].box, traj[2].box
    assert first is not None and last is not None
    assert first.vectors.tolist() == cell(12.0) and last.vectors.tolist() == cell(12.25)
    assert last.origin.tolist() == [0.0, 0.0, 0.0] and last.boundary.tolist() == [True] * 3
    assert last.cell_defined is True
    assert validate_trajectory(root) == []


def test_attribute_cell_with_its_defaults_spelled_out(root: Path) -> None:
    tr = trajectory_group(
        root, {"sequence_schema": DECL_X, "nstep": 2, "step_progression": EVERY_STEP}
    )
    regular_x(tr, 2)
    tr.create_group(
        "box",
        attributes={
            "vectors": cell(20.0),
            "origin": [0.0, 0.0, 0.0],
            "boundary": [True, True, True],
            "cell_defined": True,
        },
    )
    box = open_trajectory(root)[1].box
    assert box is not None and box.vectors.tolist() == cell(20.0)
    assert box.boundary.tolist() == [True] * 3 and box.cell_defined is True


# -- steps and times (trajectory.md §3.2, §12) ------------------------------------------------


def test_step_and_time_arrays_for_progressions(root: Path) -> None:
    """An older revision wrote a ``step`` array for a constant stride (and a time array)."""
    tr = trajectory_group(root, {"sequence_schema": DECL_X, "nstep": 3})
    regular_x(tr, 3)
    put(tr, "step", np.array([0, 100, 200], dtype=np.int64))
    put(tr, "time", np.array([0.0, 0.5, 1.0]))
    traj = open_trajectory(root)
    assert traj.steps().tolist() == [0, 100, 200]
    times = traj.times()
    assert times is not None and times.tolist() == [0.0, 0.5, 1.0]
    assert (traj[2].step, traj[2].time) == (200, 1.0)
    assert validate_trajectory(root) == []


# -- the declaration (trajectory.md §8) ---------------------------------------------------------


def test_declaration_with_optional_keys_spelled_out(root: Path) -> None:
    """Optional keys are written only when set (absent = false); another writer may write them."""
    decl = {
        "blocks": {
            "atoms": {
                "columns": {"x": {"dtype": "f64", "trailing": [], "nullable": False}},
                "targets": {},
            }
        },
        "meta": {},
    }
    tr = trajectory_group(
        root, {"sequence_schema": decl, "nstep": 2, "step_progression": EVERY_STEP}
    )
    regular_x(tr, 2)
    traj = open_trajectory(root)
    assert traj[1]["atoms"]["x"].values.tolist() == [2.0, 3.0]
    assert validate_trajectory(root) == []


def test_declared_block_with_no_group_is_absent(root: Path) -> None:
    decl = {
        "blocks": {
            "atoms": DECL_X["blocks"]["atoms"],
            "bonds": {"columns": {"atomi": {"dtype": "u64", "trailing": []}}},
        },
        "meta": {},
    }
    tr = trajectory_group(
        root, {"sequence_schema": decl, "nstep": 2, "step_progression": EVERY_STEP}
    )
    regular_x(tr, 2)
    traj = open_trajectory(root)
    assert set(traj[0]) == {"atoms"} and set(traj[1]) == {"atoms"}
    assert validate_trajectory(root) == []


# -- chunking and codecs (chunking.md §1, §4, §5 (ref)) ---------------------------------------


def test_any_chunking_and_any_must_decode_pipeline(root: Path) -> None:
    """Chunks that straddle frames, unsharded and end-indexed arrays, other codecs, the transpose
    codec, v2 chunk keys: chunking is the writer's choice and every layout must read."""
    decl = {
        "blocks": {
            "atoms": {
                "columns": {
                    "x": F64,
                    "y": F64,
                    "z": {"dtype": "f64", "trailing": [], "nullable": True},
                    "v": {"dtype": "f64", "trailing": [3]},
                    "element": {"dtype": "string", "trailing": []},
                }
            }
        },
        "meta": {"pe": {"dtype": "f64"}},
    }
    tr = trajectory_group(root, {"sequence_schema": decl, "nstep": 3})
    atoms = tr.create_group("atoms")
    counts = [2, 3, 1]
    offset = np.concatenate([[0], np.cumsum(counts)]).astype(np.uint64)
    rows = int(offset[-1])
    put(atoms, "step_index", u64(0, 1, 2), chunks=(1,), chunk_key_encoding={"name": "v2"})
    put(
        atoms,
        "offset",
        offset,
        chunks=(2,),
        chunk_key_encoding={"name": "default", "configuration": {"separator": "."}},
    )
    x = np.arange(rows) * 1.5
    put(atoms, "x", x, chunks=(4,), compressors=GzipCodec(level=9))  # 4-row chunks straddle frames
    y = -np.arange(rows, dtype=np.float64)
    put(
        atoms,
        "y",
        y,
        chunks=(rows,),
        serializer=ShardingCodec(
            chunk_shape=(2,),
            codecs=[BytesCodec(), ZstdCodec(level=1)],
            index_codecs=[BytesCodec(), Crc32cCodec()],
            index_location="end",
        ),
        compressors=None,
    )
    z = np.linspace(0.0, 1.0, rows)
    put(atoms, "z", z, chunks=(5,), compressors=[ZstdCodec(level=19), Crc32cCodec()])
    validity = atoms.create_group("_validity")
    mask = np.array([True, False, True, True, False, True])
    put(validity, "z", mask, chunks=(4,), compressors=None)
    v = np.arange(rows * 3, dtype=np.float64).reshape(rows, 3)
    put(atoms, "v", v, chunks=(3, 3), filters=[TransposeCodec(order=(1, 0))], compressors=None)
    element = np.array(["O", "H", "H", "C", "N", "Zn"], dtype=np.dtypes.StringDType())
    put(atoms, "element", element, chunks=(2,), compressors=ZstdCodec(level=3))
    meta = tr.create_group("meta")
    put(meta, "pe", np.array([-1.0, -2.0, -3.0]), chunks=(2,), attributes={"meta_dtype": "f64"})
    put(tr, "step", np.array([5, 7, 30], dtype=np.int64), chunks=(2,))

    traj = open_trajectory(root)
    for i in range(3):
        a, b = int(offset[i]), int(offset[i + 1])
        block = traj[i]["atoms"]
        assert block["x"].values.tolist() == x[a:b].tolist()
        assert block["y"].values.tolist() == y[a:b].tolist()
        assert block["v"].values.tolist() == v[a:b].tolist()
        assert block["element"].values.tolist() == element[a:b].tolist()
        z_mask = block["z"].validity
        expected = mask[a:b]
        assert (z_mask is None and bool(expected.all())) or z_mask.tolist() == expected.tolist()
    assert traj[2].step == 30 and traj[1].meta["pe"] == -2.0
    assert validate_trajectory(root) == []


def test_blosc_is_outside_the_must_decode_set_but_still_reads(root: Path) -> None:
    """A codec beyond chunking.md §1 is what a writer MUST NOT use for unknown readers; mrecd
    decodes whatever zarr-python decodes rather than refusing data it can read exactly."""
    tr = trajectory_group(
        root, {"sequence_schema": DECL_X, "nstep": 2, "step_progression": EVERY_STEP}
    )
    atoms = tr.create_group("atoms", attributes={"uniform_rows": 2, "dense_updates": True})
    put(atoms, "x", np.arange(4.0), compressors=BloscCodec())
    assert open_trajectory(root)[1]["atoms"]["x"].values.tolist() == [2.0, 3.0]


def test_missing_chunks_read_as_the_fill_value(root: Path) -> None:
    """storage.md §1: zarr writes no chunk holding only the fill value (*(ref)* 0)."""
    decl = {"blocks": {"atoms": {"columns": {"x": F64}}}, "meta": {"n": {"dtype": "i64"}}}
    tr = trajectory_group(
        root, {"sequence_schema": decl, "nstep": 4, "step_progression": EVERY_STEP}
    )
    atoms = tr.create_group("atoms", attributes={"uniform_rows": 2, "dense_updates": True})
    x = np.zeros(8)
    x[4:6] = [1.0, 2.0]
    put(atoms, "x", x, chunks=(2,))  # chunks 0, 1 and 3 are all zero: not written
    meta = tr.create_group("meta")
    n = meta.create_array(
        "n", shape=(4,), dtype="int64", chunks=(2,), fill_value=-7, attributes={"meta_dtype": "i64"}
    )
    n[:2] = [3, 4]  # chunk 1 stays unwritten and reads as -7
    traj = open_trajectory(root)
    assert [traj[i]["atoms"]["x"].values.tolist() for i in range(4)] == [
        [0.0, 0.0],
        [0.0, 0.0],
        [1.0, 2.0],
        [0.0, 0.0],
    ]
    assert [traj[i].meta["n"] for i in range(4)] == [3, 4, -7, -7]


def test_missing_inner_chunks_of_a_shard_read_as_the_fill_value(root: Path) -> None:
    tr = trajectory_group(
        root, {"sequence_schema": DECL_X, "nstep": 4, "step_progression": EVERY_STEP}
    )
    atoms = tr.create_group("atoms", attributes={"uniform_rows": 2, "dense_updates": True})
    x = np.zeros(8)
    x[2:4] = [5.0, 6.0]
    put(
        atoms,
        "x",
        x,
        chunks=(8,),
        serializer=ShardingCodec(chunk_shape=(2,), index_location="start"),
        compressors=None,
    )
    traj = open_trajectory(root)
    assert traj[1]["atoms"]["x"].values.tolist() == [5.0, 6.0]
    assert traj[3]["atoms"]["x"].values.tolist() == [0.0, 0.0]


# -- versions and system beside trajectory (trajectory.md §12, storage.md §10) ------------------


def record_root(root: Any, meta: dict[str, Any] | None) -> None:
    """Rewrite the record's meta (``None``: remove the ``meta/`` group, a pre-1 store)."""
    if meta is None:
        del zarr.open_group(zs(root), mode="a")["meta"]
    else:
        zarr.open_group(zs(root / "meta"), mode="a").attrs.put(meta)


@pytest.mark.parametrize(
    "meta", [{"molrec_version": 1}, {}, None], ids=["version-1", "no-version", "no-meta-group"]
)
def test_trajectory_of_an_older_or_unversioned_record_reads(root: Any, meta: Any) -> None:
    """The growth example stamps ``molrec_version: 1``; a later revision drops the key."""
    record_root(root, meta)
    tr = trajectory_group(
        root, {"sequence_schema": DECL_X, "nstep": 2, "step_progression": EVERY_STEP}
    )
    regular_x(tr, 2)
    with mrecd.open_record(root) as record:
        assert record.meta == (meta or {})
        traj = record.trajectory
        assert traj is not None and traj[1]["atoms"]["x"].values.tolist() == [2.0, 3.0]
    violations = mrecd.validate_record(root)
    if meta is None:  # read as {}, yet still the writer's defect (record.md §2 rule 1)
        assert [(v.path, v.rule) for v in violations] == [("meta", "record.md §2")]
    else:
        assert violations == []


def system_with_ids(root: Any, ids: list[int]) -> None:
    system = zarr.open_group(zs(root / "system"), mode="a", attributes={})
    atoms = system.create_group("atoms", attributes={"count": len(ids)})
    put(atoms, "id", np.array(ids, dtype=np.uint64))


def test_system_and_trajectory_blocks_both_carrying_id(root: Any) -> None:
    """trajectory.md §12: §1.5 lets both carry ``id`` (equal row for row)."""
    system_with_ids(root, [7, 8])
    decl = {
        "blocks": {"atoms": {"columns": {"x": F64, "id": {"dtype": "u64", "trailing": []}}}},
        "meta": {},
    }
    tr = trajectory_group(
        root, {"sequence_schema": decl, "nstep": 2, "step_progression": EVERY_STEP}
    )
    atoms = tr.create_group("atoms", attributes={"uniform_rows": 2, "dense_updates": True})
    put(atoms, "x", np.arange(4.0))
    put(atoms, "id", u64(7, 8, 7, 8))
    with mrecd.open_record(root) as record:
        traj = record.trajectory
        assert traj is not None and traj[1]["atoms"]["id"].values.tolist() == [7, 8]
    assert mrecd.validate_record(root) == []


def test_system_and_trajectory_ids_that_differ_are_refused(root: Any) -> None:
    """record.md §6.1: matching counts but different ``id`` values → refused (and reported)."""
    system_with_ids(root, [7, 8])
    decl = {
        "blocks": {"atoms": {"columns": {"x": F64, "id": {"dtype": "u64", "trailing": []}}}},
        "meta": {},
    }
    tr = trajectory_group(
        root, {"sequence_schema": decl, "nstep": 2, "step_progression": EVERY_STEP}
    )
    atoms = tr.create_group("atoms", attributes={"uniform_rows": 2, "dense_updates": True})
    put(atoms, "x", np.arange(4.0))
    put(atoms, "id", u64(7, 8, 8, 7))  # the second update swaps the rows
    with mrecd.open_record(root) as record:
        traj = record.trajectory
        assert traj is not None and traj[0]["atoms"]["id"].values.tolist() == [7, 8]
        with pytest.raises(mrecd.InvalidRecord, match="row for row") as caught:
            traj[1]
        assert caught.value.path == "trajectory/atoms/id"
        assert traj.read(1, columns=["x"])["atoms"]["x"].values.tolist() == [2.0, 3.0]
    violations = mrecd.validate_record(root)
    assert [(v.path, v.rule) for v in violations] == [("trajectory/atoms/id", "record.md §6.1")]


def test_attribute_cell_as_the_spec_writes_it_with_integers(root: Path) -> None:
    """trajectory.md §4's own example writes ``[[20,0,0],…]``: integers convert exactly to f64."""
    tr = trajectory_group(
        root, {"sequence_schema": DECL_X, "nstep": 1, "step_progression": {"start": 0}}
    )
    regular_x(tr, 1)
    tr.create_group("box", attributes={"vectors": [[20, 0, 0], [0, 20, 0], [0, 0, 20]]})
    box = open_trajectory(root)[0].box
    assert box is not None and box.vectors.dtype == np.float64
    assert box.vectors.tolist() == cell(20.0)


def test_undefined_attribute_cell_without_boundary(root: Path) -> None:
    """frame.md §9.1: vectors ignored (identity), an omitted boundary reads all-false."""
    tr = trajectory_group(
        root, {"sequence_schema": DECL_X, "nstep": 1, "step_progression": {"start": 0}}
    )
    regular_x(tr, 1)
    tr.create_group("box", attributes={"vectors": np.zeros((3, 3)).tolist(), "cell_defined": False})
    box = open_trajectory(root)[0].box
    assert box is not None and box.cell_defined is False
    assert box.vectors.tolist() == np.eye(3).tolist() and box.boundary.tolist() == [False] * 3


def test_a_fill_beyond_two_to_the_53_as_an_exact_json_integer(root: Path) -> None:
    """frame.md §10.4: a 64-bit writer may write the fill as a JSON integer, not a string."""
    decl = {**DECL_X, "meta": {"n": {"dtype": "u64", "fill": 18446744073709551615}}}
    tr = trajectory_group(
        root, {"sequence_schema": decl, "nstep": 1, "step_progression": {"start": 0}}
    )
    regular_x(tr, 1)
    meta = tr.create_group("meta")
    put(meta, "n", np.array([2**64 - 1], dtype=np.uint64), attributes={"meta_dtype": "u64"})
    traj = open_trajectory(root)
    declaration = traj.declaration
    assert declaration is not None and declaration.meta["n"].fill == 2**64 - 1
    assert traj[0].meta["n"] == 2**64 - 1


def test_a_declaration_key_the_spec_does_not_name_is_refused(root: Path) -> None:
    """Refusal kept (README): the pinned declaration says what every frame means, so a key
    another writer gave meaning (here a column ``unit``) is not silently dropped."""
    decl = {"blocks": {"atoms": {"columns": {"x": {**F64, "unit": "angstrom"}}}}, "meta": {}}
    tr = trajectory_group(
        root, {"sequence_schema": decl, "nstep": 1, "step_progression": {"start": 0}}
    )
    regular_x(tr, 1)
    with pytest.raises(mrecd.InvalidRecord, match="unit") as caught:
        open_trajectory(root)
    assert caught.value.path is not None and "columns.x.unit" in caught.value.path


@pytest.mark.parametrize(
    ("attributes", "step", "where"),
    [
        ({"step_progression": {"start": 0}}, None, "trajectory"),  # 3 frames, no stride
        ({"step_progression": {"start": 5, "stride": -1}}, None, "trajectory"),
        ({}, [0, 10, 10], "trajectory/step"),
    ],
    ids=["no-stride", "negative-stride", "repeated-step"],
)
def test_steps_that_do_not_increase_read_and_are_reported(
    root: Path, attributes: dict[str, Any], step: list[int] | None, where: str
) -> None:
    """trajectory.md §1.1 binds writers; the reader reads such a store and validate reports it."""
    tr = trajectory_group(root, {"sequence_schema": DECL_X, "nstep": 3, **attributes})
    regular_x(tr, 3)
    if step is not None:
        put(tr, "step", np.array(step, dtype=np.int64))
    traj = open_trajectory(root)
    assert traj[2]["atoms"]["x"].values.tolist() == [4.0, 5.0]
    problems = validate_trajectory(root)
    assert [p.path for p in problems] == [where]
    assert "strictly increase" in problems[0].message
