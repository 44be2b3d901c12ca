"""What the writer lays down: the spec's layout tests (trajectory.md §3-§6, §11)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import zarr

import mrecd
from mrecd.api._trajectory import open_trajectory

from .conftest import atoms, attrs, frame, u64, xyz_declaration, zs


def zarr_values(path: Path) -> list[object]:
    return zarr.open_array(zs(path), mode="r")[:].tolist()


def children(path: Path) -> set[str]:
    return {p.name for p in path.iterdir() if p.is_dir()}


def test_fixed_topology_vibration(root: Path, new_trajectory) -> None:
    """§11.1: progressions, markers, attribute cell; one array per column and nothing else."""
    traj = new_trajectory(xyz_declaration(pe={"dtype": "f64"}, temp={"dtype": "f64"}))
    for i in range(4):
        traj.append(
            frame(
                100 * i,
                time=0.5 * i,
                blocks={"atoms": atoms(4, i)},
                meta={"pe": -1.0 * i, "temp": 300.0},
                box=mrecd.Box(np.eye(3) * 20),
            )
        )
    traj.close()
    tr = root / "trajectory"
    top = attrs(tr)
    assert top["nstep"] == 4
    assert top["step_progression"] == {"start": 0, "stride": 100}
    assert top["time_progression"] == {"start": 0.0, "stride": 0.5}
    assert children(tr) == {"atoms", "box", "meta"}
    assert attrs(tr / "atoms") == {"uniform_rows": 4, "dense_updates": True}
    assert children(tr / "atoms") == {"x", "y", "z"}
    assert len(zarr_values(tr / "atoms" / "x")) == 16
    assert attrs(tr / "box") == {"vectors": [[20.0, 0.0, 0.0], [0.0, 20.0, 0.0], [0.0, 0.0, 20.0]]}
    assert children(tr / "box") == set()
    for key in ("pe", "temp"):
        assert attrs(tr / "meta" / key) == {"meta_dtype": "f64"}
        assert len(zarr_values(tr / "meta" / key)) == 4
    f2 = open_trajectory(root)[2]
    assert (f2.step, f2.time) == (200, 1.0)
    np.testing.assert_array_equal(f2["atoms"]["x"].values, atoms(4, 2)["x"])


def test_changing_topology_reaction(root: Path, new_trajectory) -> None:
    """§11.2: every index array and the resolution table."""
    declaration = {
        "blocks": {
            "atoms": {"columns": {"x": {"dtype": "f64", "trailing": []}}},
            "bonds": {
                "columns": {
                    "atomi": {"dtype": "u64", "trailing": []},
                    "atomj": {"dtype": "u64", "trailing": []},
                }
            },
            "atom_types": {
                "aligned_with": "atoms",
                "columns": {"type": {"dtype": "string", "trailing": []}},
            },
            "insertions": {"columns": {"atomi": {"dtype": "u64", "trailing": []}}},
        },
        "meta": {},
    }
    traj = new_trajectory(declaration)
    cell = lambda a: mrecd.Box(np.eye(3) * a)  # noqa: E731
    traj.extend(
        [
            frame(
                0,
                blocks={
                    "atoms": {"x": np.arange(4.0)},
                    "bonds": {"atomi": u64(0, 1), "atomj": u64(1, 2)},
                    "atom_types": {"type": ["a"] * 4},
                },
                box=cell(12.0),
            ),
            frame(10, blocks={"atoms": {"x": np.arange(4.0) + 1}}),
            frame(
                20,
                blocks={
                    "atoms": {"x": np.arange(4.0) + 2},
                    "bonds": {"atomi": u64(0, 1, 2), "atomj": u64(1, 2, 3)},
                    "atom_types": {"type": ["b"] * 4},
                },
            ),
            frame(
                25,
                blocks={
                    "atoms": {"x": np.arange(5.0)},
                    "atom_types": {"type": ["c"] * 5},
                    "insertions": {"atomi": u64(4)},
                },
            ),
            frame(
                30,
                blocks={"atoms": {"x": np.arange(5.0) + 1}, "insertions": {"atomi": u64()}},
                box=cell(12.25),
            ),
        ]
    )
    traj.close()
    tr = root / "trajectory"
    assert attrs(tr)["nstep"] == 5 and "step_progression" not in attrs(tr)
    assert zarr_values(tr / "step") == [0, 10, 20, 25, 30]
    expected = {
        "atoms": ([0, 1, 2, 3, 4], [0, 4, 8, 12, 17, 22]),
        "bonds": ([0, 2], [0, 2, 5]),
        "atom_types": ([0, 2, 3], [0, 4, 8, 13]),
        "insertions": ([3, 4], [0, 1, 1]),
    }
    for name, (step_index, offset) in expected.items():
        assert zarr_values(tr / name / "step_index") == step_index, name
        assert zarr_values(tr / name / "offset") == offset, name
        assert "uniform_rows" not in attrs(tr / name)
    assert zarr_values(tr / "insertions" / "atomi") == [4]
    assert zarr_values(tr / "box" / "step_index") == [0, 4]
    assert zarr.open_array(zs(tr / "box" / "vectors")).shape == (2, 3, 3)
    assert attrs(tr / "box") == {}
    table = {
        0: ((0, 4), (0, 2), (0, 4), None, 12.0),
        1: ((4, 8), (0, 2), (0, 4), None, 12.0),
        2: ((8, 12), (2, 5), (4, 8), None, 12.0),
        3: ((12, 17), (2, 5), (8, 13), (0, 1), 12.0),
        4: ((17, 22), (2, 5), (8, 13), (1, 1), 12.25),
    }
    all_x = zarr.open_array(zs(tr / "atoms" / "x"))[:]
    reader = open_trajectory(root)
    for i, (a, b, t, ins, box) in table.items():
        f = reader[i]
        np.testing.assert_array_equal(f["atoms"]["x"].values, all_x[a[0] : a[1]])
        assert f["bonds"].count == b[1] - b[0]
        assert f["atom_types"].count == t[1] - t[0]
        if ins is None:
            assert "insertions" not in f
        else:
            assert f["insertions"].count == ins[1] - ins[0]
        assert f.box is not None and f.box.vectors[0, 0] == box


def test_growth_trajectory(root: Path, new_trajectory) -> None:
    """§11.3: a growing block is indexed, steps a progression, a fixed attribute cell."""
    declaration = {
        "blocks": {
            "atoms": {
                "columns": {
                    "element": {"dtype": "string", "trailing": []},
                    "mol_id": {"dtype": "u64", "trailing": []},
                    "x": {"dtype": "f64", "trailing": []},
                    "y": {"dtype": "f64", "trailing": []},
                    "z": {"dtype": "f64", "trailing": []},
                }
            }
        },
        "meta": {"pe": {"dtype": "f64"}},
    }
    traj = new_trajectory(declaration)
    counts = [2, 2, 5, *range(6, 22)]
    for i, n in enumerate(counts):
        block = {**atoms(n, i), "element": ["C"] * n, "mol_id": np.zeros(n, dtype=np.uint64)}
        traj.append(
            frame(
                10 * i,
                blocks={"atoms": block},
                meta={"pe": float(i)},
                box=mrecd.Box(np.eye(3) * 20),
            )
        )
    traj.close()
    tr = root / "trajectory"
    assert attrs(tr)["step_progression"] == {"start": 0, "stride": 10}
    assert zarr_values(tr / "atoms" / "step_index")[:3] == [0, 1, 2]
    assert zarr_values(tr / "atoms" / "offset")[:4] == [0, 2, 4, 9]
    assert attrs(tr / "atoms") == {}
    assert attrs(tr / "box") == {"vectors": [[20.0, 0.0, 0.0], [0.0, 20.0, 0.0], [0.0, 0.0, 20.0]]}
    assert len(zarr_values(tr / "meta" / "pe")) == 19
    assert attrs(tr)["sequence_schema"] == declaration


@pytest.mark.parametrize(
    ("steps", "progression", "array"),
    [
        ([0, 100, 200, 300], {"start": 0, "stride": 100}, None),
        ([0, 10, 20, 25, 30], None, [0, 10, 20, 25, 30]),
        ([7], {"start": 7}, None),
        ([-5, 0, 5], {"start": -5, "stride": 5}, None),
    ],
)
def test_step_progression(root: Path, new_trajectory, steps, progression, array) -> None:
    traj = new_trajectory(xyz_declaration())
    for s in steps:
        traj.append(frame(s, blocks={"atoms": atoms(2)}))
    traj.close()
    top = attrs(root / "trajectory")
    assert top.get("step_progression") == progression
    assert ((root / "trajectory" / "step").exists()) == (array is not None)
    if array is not None:
        assert zarr_values(root / "trajectory" / "step") == array
    assert open_trajectory(root).steps().tolist() == steps


def _accumulated(n: int, dt: float) -> list[float]:
    out, t = [], 0.0
    for _ in range(n):
        out.append(t)
        t += dt
    return out


@pytest.mark.parametrize(
    ("times", "progression"),
    [
        ([0.0, 0.1, 0.2, 0.3], None),  # 0.0 + 3.0 * 0.1 != 0.3
        (_accumulated(4, 0.1), {"start": 0.0, "stride": 0.1}),
        ([1.0, 1.5, 2.0], {"start": 1.0, "stride": 0.5}),
        ([0.0, math.nan], None),
        ([math.inf], None),
    ],
)
def test_time_progression_is_bit_exact(root: Path, new_trajectory, times, progression) -> None:
    traj = new_trajectory(xyz_declaration())
    for i, t in enumerate(times):
        traj.append(frame(i, time=t, blocks={"atoms": atoms(2)}))
    traj.close()
    top = attrs(root / "trajectory")
    assert top.get("time_progression") == progression
    back = open_trajectory(root).times()
    assert back is not None
    assert np.array(times).tobytes() == back.tobytes()


def test_time_is_all_or_nothing(new_trajectory) -> None:
    traj = new_trajectory(xyz_declaration())
    traj.append(frame(0, time=0.0, blocks={"atoms": atoms(2)}))
    with pytest.raises(mrecd.InvalidRecord, match="all-or-nothing"):
        traj.append(frame(1, blocks={"atoms": atoms(2)}))
    other = new_trajectory.__wrapped__ if hasattr(new_trajectory, "__wrapped__") else None
    del other


def test_no_time_means_no_time_array(root: Path, new_trajectory) -> None:
    traj = new_trajectory(xyz_declaration())
    traj.append(frame(0, blocks={"atoms": atoms(2)}))
    with pytest.raises(mrecd.InvalidRecord, match="all-or-nothing"):
        traj.append(frame(1, time=1.0, blocks={"atoms": atoms(2)}))
    traj.close()
    assert "time_progression" not in attrs(root / "trajectory")
    assert open_trajectory(root).times() is None


@pytest.mark.parametrize("steps", [[0, 10, 10], [0, 10, 5]])
def test_steps_strictly_increase(new_trajectory, steps) -> None:
    traj = new_trajectory(xyz_declaration())
    traj.append(frame(steps[0], blocks={"atoms": atoms(2)}))
    traj.append(frame(steps[1], blocks={"atoms": atoms(2)}))
    with pytest.raises(mrecd.StepOrderError):
        traj.append(frame(steps[2], blocks={"atoms": atoms(2)}))
    assert len(traj) == 2


def test_fixed_cell_migrates_to_arrays(root: Path, new_trajectory) -> None:
    """Cell 12.0 at frames 0-3, 12.25 at 4: step_index [0, 4], no attributes left."""
    traj = new_trajectory(xyz_declaration())
    for i in range(5):
        traj.append(
            frame(
                i,
                blocks={"atoms": atoms(2)},
                box=mrecd.Box(np.eye(3) * (12.25 if i == 4 else 12.0)),
            )
        )
    traj.close()
    box = root / "trajectory" / "box"
    assert attrs(box) == {}
    assert zarr_values(box / "step_index") == [0, 4]
    assert zarr.open_array(zs(box / "vectors")).shape == (2, 3, 3)
    assert not (box / "origin").exists() and not (box / "boundary").exists()
    reader = open_trajectory(root)
    assert [reader[i].box.vectors[0, 0] for i in range(5)] == [12.0] * 4 + [12.25]


def test_cell_appearing_late_and_non_default_parts(root: Path, new_trajectory) -> None:
    traj = new_trajectory(xyz_declaration())
    traj.append(frame(0, blocks={"atoms": atoms(2)}))
    traj.append(frame(1, box=mrecd.Box(np.eye(3) * 10)))
    traj.append(
        frame(2, box=mrecd.Box(np.eye(3) * 10, origin=[1.0, 0, 0], boundary=[True, True, False]))
    )
    traj.append(frame(3))  # the cell carries forward
    traj.close()
    box = root / "trajectory" / "box"
    assert zarr_values(box / "step_index") == [1, 2]
    assert zarr_values(box / "origin") == [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    assert zarr_values(box / "boundary") == [[True, True, True], [True, True, False]]
    reader = open_trajectory(root)
    assert reader[0].box is None
    assert reader[3].box == mrecd.Box(
        np.eye(3) * 10, origin=[1.0, 0, 0], boundary=[True, True, False]
    )


def test_undefined_cell(root: Path, new_trajectory) -> None:
    traj = new_trajectory(xyz_declaration())
    traj.append(
        frame(
            0, blocks={"atoms": atoms(2)}, box=mrecd.Box(cell_defined=False, origin=[1.0, 2.0, 3.0])
        )
    )
    traj.close()
    box_attrs = attrs(root / "trajectory" / "box")
    assert box_attrs["cell_defined"] is False
    assert box_attrs["vectors"] == np.eye(3).tolist()
    assert box_attrs["boundary"] == [False, False, False]
    back = open_trajectory(root)[0].box
    assert back is not None and not back.cell_defined and back.origin.tolist() == [1.0, 2.0, 3.0]


def test_cell_defined_is_one_flag(new_trajectory) -> None:
    traj = new_trajectory(xyz_declaration())
    traj.append(frame(0, blocks={"atoms": atoms(2)}, box=mrecd.Box(np.eye(3))))
    with pytest.raises(mrecd.InvalidRecord, match="cell_defined"):
        traj.append(frame(1, box=mrecd.Box(cell_defined=False)))


def test_regular_block_breaks_into_index(root: Path, new_trajectory) -> None:
    """4 rows at ordinals 0 and 1, then 5 rows at 2: arrays backfilled, markers gone."""
    traj = new_trajectory(xyz_declaration())
    traj.append(frame(0, blocks={"atoms": atoms(4)}))
    traj.append(frame(1, blocks={"atoms": atoms(4, 1)}))
    traj.flush()
    assert attrs(root / "trajectory" / "atoms") == {"uniform_rows": 4, "dense_updates": True}
    traj.append(frame(2, blocks={"atoms": atoms(5)}))
    traj.close()
    atoms_path = root / "trajectory" / "atoms"
    assert attrs(atoms_path) == {}
    assert zarr_values(atoms_path / "step_index") == [0, 1, 2]
    assert zarr_values(atoms_path / "offset") == [0, 4, 8, 13]


def test_constant_topology_is_one_regular_update(root: Path, new_trajectory) -> None:
    """`bonds` presented identically at every frame: one update at 0, markers, length 2."""
    declaration = xyz_declaration()
    declaration["blocks"]["bonds"] = {
        "columns": {
            "atomi": {"dtype": "u64", "trailing": []},
            "atomj": {"dtype": "u64", "trailing": []},
        }
    }
    traj = new_trajectory(declaration)
    for i in range(6):
        traj.append(
            frame(
                i, blocks={"atoms": atoms(3, i), "bonds": {"atomi": u64(0, 1), "atomj": u64(1, 2)}}
            )
        )
    traj.close()
    bonds = root / "trajectory" / "bonds"
    assert attrs(bonds) == {"uniform_rows": 2, "dense_updates": True}
    assert zarr_values(bonds / "atomi") == [0, 1]
    assert not (bonds / "step_index").exists()
    reader = open_trajectory(root)
    assert all(reader[i]["bonds"]["atomj"].values.tolist() == [1, 2] for i in range(6))


def test_block_changing_after_a_gap_materializes(root: Path, new_trajectory) -> None:
    declaration = xyz_declaration()
    declaration["blocks"]["bonds"] = {"columns": {"atomi": {"dtype": "u64", "trailing": []}}}
    traj = new_trajectory(declaration)
    traj.append(frame(0, blocks={"atoms": atoms(3), "bonds": {"atomi": u64(0)}}))
    traj.append(frame(1, blocks={"atoms": atoms(3, 1)}))
    traj.append(frame(2, blocks={"atoms": atoms(3, 2), "bonds": {"atomi": u64(1)}}))
    traj.close()
    bonds = root / "trajectory" / "bonds"
    assert zarr_values(bonds / "step_index") == [0, 2]
    assert zarr_values(bonds / "offset") == [0, 1, 2]


def test_three_states_and_empty_updates(root: Path, new_trajectory) -> None:
    """`insertions` at frame 3 (1 row) and 4 (0 rows): absent 0-2, present 3, empty 4."""
    declaration = xyz_declaration()
    declaration["blocks"]["insertions"] = {"columns": {"atomi": {"dtype": "u64", "trailing": []}}}
    traj = new_trajectory(declaration)
    for i in range(3):
        traj.append(frame(i, blocks={"atoms": atoms(5, i)}))
    traj.append(frame(3, blocks={"insertions": {"atomi": u64(4)}}))
    traj.append(frame(4, blocks={"insertions": {"atomi": u64()}}))
    traj.append(frame(5))
    traj.close()
    tr = root / "trajectory"
    assert zarr_values(tr / "insertions" / "step_index") == [3, 4]
    assert zarr_values(tr / "insertions" / "offset") == [0, 1, 1]
    reader = open_trajectory(root)
    assert ["insertions" in reader[i] for i in range(6)] == [False, False, False, True, True, True]
    assert reader[3]["insertions"].count == 1
    empty = reader[5]["insertions"]
    assert empty.count == 0 and list(empty) == ["atomi"]


def test_bitwise_comparison_after_rounding(root: Path, new_trajectory) -> None:
    """Below q/2 no update; a repeated NaN no update; -0.0 after 0.0 is an update."""
    traj = new_trajectory(xyz_declaration(precision=1e-3))
    base = {"x": np.array([0.0, np.nan]), "y": np.array([1.0, 2.0]), "z": np.array([1.0, 2.0])}
    traj.append(frame(0, blocks={"atoms": base}))
    traj.append(
        frame(1, blocks={"atoms": {**base, "y": base["y"] + 0.0001}})
    )  # q = 2^-10: unchanged
    traj.append(frame(2, blocks={"atoms": dict(base)}))  # NaN repeated: unchanged
    traj.flush()
    assert attrs(root / "trajectory" / "atoms") == {"uniform_rows": 2, "dense_updates": True}
    assert len(zarr_values(root / "trajectory" / "atoms" / "x")) == 2
    traj.append(frame(3, blocks={"atoms": {**base, "x": np.array([-0.0, np.nan])}}))
    traj.close()
    assert zarr_values(root / "trajectory" / "atoms" / "step_index") == [0, 3]
    stored_y = zarr.open_array(zs(root / "trajectory" / "atoms" / "y"))[:]
    assert np.all(stored_y == mrecd.quantize(stored_y, 1e-3))


@pytest.mark.positional_only
def test_precision_rounds_stored_values(root: Path, new_trajectory) -> None:
    traj = new_trajectory(xyz_declaration(precision=1e-3))
    rng = np.random.default_rng(3)
    values = rng.uniform(-40, 40, (3, 50))
    traj.append(frame(0, blocks={"atoms": dict(zip("xyz", values, strict=True))}))
    traj.close()
    for axis, column in zip(values, "xyz", strict=True):
        stored = np.array(zarr_values(root / "trajectory" / "atoms" / column))
        assert stored.tobytes() == mrecd.quantize(axis, 1e-3).tobytes()
        assert np.all(np.abs(stored - axis) <= 2**-11)
    meta = json.loads((root / "trajectory" / "atoms" / "x" / "zarr.json").read_text())
    inner = meta["codecs"][0]["configuration"]["codecs"]
    assert [c["name"] for c in inner] == ["bytes", "numcodecs.shuffle", "zstd", "crc32c"]
    assert "precision" not in meta["attributes"]  # the declaration is its one home


def test_meta_fills_and_vectors(root: Path, new_trajectory) -> None:
    meta = {
        "pe": {"dtype": "f64", "fill": "NaN"},
        "n": {"dtype": "i32", "fill": -1},
        "stress": {"dtype": "f64x6"},
        "info": {"dtype": "json", "fill": None},
        "big": {"dtype": "u64", "fill": "18446744073709551615"},
    }
    traj = new_trajectory(xyz_declaration(**meta))
    traj.append(
        frame(
            0,
            blocks={"atoms": atoms(1)},
            meta={"pe": 1, "n": 3, "stress": [1, 2, 3, 4, 5, 6], "info": {"a": [1]}},
        )
    )
    traj.append(frame(1, meta={"stress": np.arange(6.0)}))
    with pytest.raises(mrecd.InvalidRecord, match="stress"):
        traj.append(frame(2))  # no fill for stress
    traj.close()
    tr = root / "trajectory" / "meta"
    assert attrs(tr / "stress") == {"meta_dtype": "f64x6"}
    assert zarr.open_array(zs(tr / "stress")).shape == (2, 6)
    assert zarr.open_array(zs(tr / "n")).dtype == np.int32
    assert zarr_values(tr / "info") == ['{"a":[1]}', "null"]
    reader = open_trajectory(root)
    f0, f1 = reader[0], reader[1]
    assert f0.meta["pe"] == 1.0 and isinstance(f0.meta["pe"], float)
    assert math.isnan(f1.meta["pe"]) and f1.meta["n"] == -1 and f1.meta["big"] == 2**64 - 1
    assert f1.meta["info"] is None and f0.meta["info"] == {"a": [1]}
    assert f1.meta_types == {
        "pe": "f64",
        "n": "i32",
        "stress": "f64x6",
        "info": "json",
        "big": "u64",
    }
    np.testing.assert_array_equal(reader.series("n"), [3, -1])


def test_nullable_columns_write_masks(root: Path, new_trajectory) -> None:
    declaration = {
        "blocks": {"atoms": {"columns": {"q": {"dtype": "f64", "trailing": [], "nullable": True}}}},
        "meta": {},
    }
    traj = new_trajectory(declaration)
    traj.append(frame(0, blocks={"atoms": {"q": mrecd.Column([1.0, 2.0], validity=[True, False])}}))
    traj.append(frame(1, blocks={"atoms": {"q": [3.0, 4.0]}}))
    traj.close()
    assert zarr_values(root / "trajectory" / "atoms" / "_validity" / "q") == [
        True,
        False,
        True,
        True,
    ]
    reader = open_trajectory(root)
    assert reader[0]["atoms"]["q"].validity.tolist() == [True, False]
    assert reader[1]["atoms"]["q"].validity is None


def test_mask_on_non_nullable_column_refused(new_trajectory) -> None:
    traj = new_trajectory(xyz_declaration())
    masked = {**atoms(2), "x": mrecd.Column([1.0, 2.0], validity=[True, False])}
    with pytest.raises(mrecd.InvalidRecord, match="nullable"):
        traj.append(frame(0, blocks={"atoms": masked}))


def test_first_append_creates_the_trajectory(root: Path, new_trajectory) -> None:
    traj = new_trajectory()
    assert len(traj) == 0 and traj.declaration is None
    traj.append(frame(5, blocks={"atoms": atoms(3)}, meta={"pe": 1.0}))
    traj.close()
    declared = attrs(root / "trajectory")["sequence_schema"]
    assert declared == xyz_declaration(pe={"dtype": "f64"})
    assert attrs(root / "trajectory")["step_progression"] == {"start": 5}


def test_structural_shape_fixes_row_count(root: Path, new_trajectory) -> None:
    declaration = {
        "blocks": {
            "grid": {
                "structural_shape": [2, 2],
                "columns": {"rho": {"dtype": "f64", "trailing": []}},
            }
        },
        "meta": {},
    }
    traj = new_trajectory(declaration)
    traj.append(frame(0, blocks={"grid": {"rho": np.ones(4)}}))
    with pytest.raises(mrecd.InvalidRecord, match="structural_shape"):
        traj.append(frame(1, blocks={"grid": {"rho": np.ones(5)}}))
    traj.close()
    assert attrs(root / "trajectory" / "grid")["structural_shape"] == [2, 2]
    assert open_trajectory(root)[0]["grid"].structural_shape == (2, 2)


def test_trailing_shapes_and_every_dtype(root: Path, new_trajectory) -> None:
    dtypes = {
        "f64": "<f8",
        "i8": "i1",
        "i16": "<i2",
        "i32": "<i4",
        "i64": "<i8",
        "u8": "u1",
        "u16": "<u2",
        "u32": "<u4",
        "u64": "<u8",
        "bool": "?",
        "c64": "<c8",
        "c128": "<c16",
    }
    rng = np.random.default_rng(0)
    columns = {}
    for name, np_dtype in dtypes.items():
        raw = (
            rng.integers(0, 100, (3, 2)).astype(np_dtype)
            if name != "bool"
            else rng.integers(0, 2, (3, 2)).astype(bool)
        )
        columns[f"c_{name}"] = raw
    columns["c_string"] = np.array(
        [["a", "bé"], ["", "x"], ["日本", "z"]], dtype=np.dtypes.StringDType()
    )
    declaration = {
        "blocks": {"b": {"columns": {k: {"dtype": k[2:], "trailing": [2]} for k in columns}}},
        "meta": {},
    }
    traj = new_trajectory(declaration)
    traj.append(frame(0, blocks={"b": columns}))
    traj.close()
    back = open_trajectory(root)[0]["b"]
    for name, values in columns.items():
        assert back[name].dtype == name[2:]
        if name == "c_string":
            assert back[name].values.tolist() == values.tolist()
        else:
            assert back[name].values.tobytes() == values.tobytes()
        assert zarr.open_array(zs(root / "trajectory" / "b" / name)).shape == (3, 2)
