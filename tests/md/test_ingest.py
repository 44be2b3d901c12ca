"""mrecd.ingest on MDAnalysisTests' real files: frames, steps, times, cells and system columns."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.md import box_of, source_precision

from .conftest import Ingests, mda

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def originals(universe: Any, selection: slice) -> list[dict[str, Any]]:
    """What MDAnalysis reads for each selected frame."""
    return [
        {
            "xyz": ts.positions.astype(np.float64).copy(),
            "frame": ts.frame,
            "step": ts.data.get("step"),
            "time": float(ts.time),
            "dimensions": None if ts.dimensions is None else ts.dimensions.copy(),
        }
        for ts in universe.trajectory[selection]
    ]


def stored_xyz(frame: mrecd.Frame) -> np.ndarray:
    return np.column_stack([frame["atoms"][c].values for c in "xyz"])


def test_xtc_is_declared_at_its_own_grid_and_read_back_within_it(ingested: Ingests) -> None:
    source = ingested["xtc"]
    want = originals(source.original(), source.selection)
    with source.record() as rec:
        traj = rec.trajectory
        assert traj is not None and len(traj) == len(want) == 10
        spec = traj.declaration.blocks["atoms"].columns
        # adk_oplsaa.xtc is written at 1e-3 nm: 1e-2 Å, stored on the 2^-7 Å grid
        assert {spec[c].precision for c in "xyz"} == {0.01}
        for frame, orig in zip(traj, want, strict=True):
            xyz = stored_xyz(frame)
            assert np.abs(xyz - orig["xyz"]).max() <= 0.01 / 2 + 1e-6
            assert mrecd.on_grid(xyz, 0.01)
            # the binary grid is finer than XTC's: every 0.01 Å value comes back distinct
            np.testing.assert_array_equal(np.round(xyz * 100), np.round(orig["xyz"] * 100))
            assert (frame.step, frame.time) == (orig["step"], orig["time"])
            assert frame.box == box_of(orig["dimensions"])


def test_lossless_formats_store_the_read_values_exactly(ingested: Ingests) -> None:
    source = ingested["dcd"]
    want = originals(source.original(), source.selection)
    with source.record() as rec:
        traj = rec.trajectory
        assert traj is not None and len(traj) == 12
        assert traj.declaration.blocks["atoms"].columns["x"].precision is None
        for frame, orig in zip(traj, want, strict=True):
            np.testing.assert_array_equal(stored_xyz(frame), orig["xyz"])
            assert (frame.step, frame.time) == (orig["step"], orig["time"])
            assert frame.box is None  # adk_dims.dcd has no unit cell
        np.testing.assert_array_equal(traj.steps(), np.arange(1, 13))


def test_a_triclinic_cell_becomes_the_lattice_vectors(ingested: Ingests) -> None:
    source = ingested["triclinic"]
    want = originals(source.original(), source.selection)
    from MDAnalysis.lib.mdamath import triclinic_box, triclinic_vectors

    with source.record() as rec:
        traj = rec.trajectory
        assert traj is not None
        for frame, orig in zip(traj, want, strict=True):
            rows = triclinic_vectors(orig["dimensions"].astype(np.float64), dtype=np.float64)
            assert frame.box is not None and frame.box.boundary.all()
            np.testing.assert_array_equal(frame.box.vectors, rows.T)  # columns are vectors
            np.testing.assert_allclose(triclinic_box(*rows), orig["dimensions"], rtol=1e-6)
            assert np.abs(orig["dimensions"][3:] - 90).max() > 1  # the file really is triclinic


def test_without_reader_steps_the_frame_index_is_the_step(ingested: Ingests) -> None:
    source = ingested["ncdf"]
    want = originals(source.original(), source.selection)
    assert all(o["step"] is None for o in want)  # NetCDF carries times, no steps
    with source.record() as rec:
        traj = rec.trajectory
        assert traj is not None
        np.testing.assert_array_equal(traj.steps(), [o["frame"] for o in want])
        assert traj.steps()[:3].tolist() == [1, 4, 7]
        np.testing.assert_array_equal(traj.times(), [o["time"] for o in want])


def test_psf_topology_becomes_system_columns_and_bonds(ingested: Ingests) -> None:
    source = ingested["dcd"]
    u = source.original()
    with source.record() as rec:
        system = rec.system
        assert system is not None and system.meta["units"]["length"] == "angstrom"
        atoms = system["atoms"]
        for column, attr in [
            ("name", "names"),
            ("type", "types"),
            ("res_name", "resnames"),
            ("segid", "segids"),
            ("res_id", "resids"),
            ("id", "ids"),
            ("charge", "charges"),
            ("mass", "masses"),
        ]:
            np.testing.assert_array_equal(
                atoms[column].values.astype(getattr(u.atoms, attr).dtype), getattr(u.atoms, attr)
            )
        assert atoms["res_id"].dtype == "u64" and atoms["charge"].dtype == "f64"
        for block, group in [("bonds", u.bonds), ("angles", u.angles), ("dihedrals", u.dihedrals)]:
            rows = np.column_stack([c.values for c in system[block].columns.values()])
            assert len(rows) == len(group)
            assert set(map(tuple, rows.tolist())) == set(map(tuple, group.to_indices().tolist()))
            assert set(system[block].targets.values()) == {"atoms"}


def test_guessed_attributes_are_not_stored_as_data(ingested: Ingests) -> None:
    u = ingested["xtc"].original()
    assert u._topology.types.is_guessed and u._topology.masses.is_guessed  # GRO has neither
    with ingested["xtc"].record() as rec:
        atoms = rec.system["atoms"]
        assert "type" not in atoms and "mass" not in atoms
        np.testing.assert_array_equal(atoms["name"].values.astype(object), u.atoms.names)
        np.testing.assert_array_equal(atoms["res_id"].values, u.atoms.resids)
        assert "bonds" not in rec.system


@pytest.mark.parametrize(
    ("source", "pairs"),
    [
        (
            "trr",
            [("element", "elements"), ("chain", "chainIDs"), ("mol_id", "molnums")],
        ),
        (
            "pdb",
            [
                ("chain", "chainIDs"),
                ("icode", "icodes"),
                ("altloc", "altLocs"),
                ("b_factor", "tempfactors"),
                ("occupancy", "occupancies"),
                ("record_type", "record_types"),
            ],
        ),
    ],
)
def test_format_specific_columns_match_mdanalysis(
    ingested: Ingests, source: str, pairs: list[tuple[str, str]]
) -> None:
    u = ingested[source].original()
    with ingested[source].record() as rec:
        atoms = rec.system["atoms"]
        for column, attr in pairs:
            want = getattr(u.atoms, attr)
            np.testing.assert_array_equal(atoms[column].values.astype(want.dtype), want)


def test_the_source_precision_of_formats() -> None:
    from MDAnalysisTests.datafiles import DCD, GRO, PSF, TRR, XTC

    assert source_precision(mda.Universe(GRO, XTC).trajectory) == 0.01
    assert source_precision(mda.Universe(GRO, [XTC, XTC]).trajectory) == 0.01
    assert source_precision(mda.Universe(GRO, [XTC, TRR]).trajectory) is None  # no rounding TRR
    assert source_precision(mda.Universe(PSF, DCD).trajectory) is None


def test_a_given_precision_overrides_the_source(tmp_path, ingested: Ingests) -> None:
    files = ingested["dcd"].files
    done = mrecd.ingest(files, tmp_path, "coarse", precision=0.05, stop=2, progress=False)
    assert (done.frames, done.atoms, done.precision) == (2, 3341, 0.05)
    with mrecd.open(tmp_path).record("coarse") as rec:
        xyz = stored_xyz(rec.trajectory[1])
    orig = mda.Universe(*files).trajectory[1].positions.astype(np.float64)
    error = np.abs(xyz - orig).max()
    assert 2**-5 / 4 < error <= 2**-5 / 2  # the quantum of 0.05 Å is 2^-5: rounding shows


def test_a_universe_is_accepted_as_it_is(tmp_path) -> None:
    from MDAnalysisTests.datafiles import DCD, PSF

    u = mda.Universe(PSF, DCD)
    u.trajectory[3]  # ingest reads from the selection's start, wherever the reader stands
    done = mrecd.ingest(u, tmp_path, "from-universe", start=2, stop=4, progress=False)
    with mrecd.open(tmp_path).record("from-universe") as rec:
        assert rec.trajectory.steps().tolist() == [3, 4] and done.frames == 2
        assert rec.meta["source"] == f"{PSF}, {DCD}"
        assert rec.meta["creator"]["name"] == "mrecd"


def test_frames_go_to_the_sink_in_batches(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from MDAnalysisTests.datafiles import DCD, PSF

    from mrecd.md import _ingest

    batches: list[int] = []

    class Recorder:
        """A sink that is not a catalog: it only counts what it is handed."""

        def __init__(self) -> None:
            self.trajectory = self
            self.closed = False

        def create_record(self, name: str, **sections: Any) -> Recorder:
            self.sections = sections
            return self

        def extend(self, frames: Any) -> int:
            batches.append(len(list(frames)))
            return sum(batches)

        def close(self) -> None:
            self.closed = True

    monkeypatch.setattr(_ingest, "BATCH_FRAMES", 16)
    sink = Recorder()
    done = mrecd.ingest([PSF, DCD], sink, "anywhere", stop=40, progress=False)
    assert batches == [16, 16, 8] and done.frames == 40 and sink.closed
    assert sink.sections["system"]["atoms"].count == 3341


def test_the_progress_bar_reports_frames_per_second(tmp_path, capsys) -> None:
    from MDAnalysisTests.datafiles import DCD, PSF

    mrecd.ingest([PSF, DCD], tmp_path, "shown", stop=3)
    bar = capsys.readouterr().err
    assert "3/3" in bar and "frame/s" in bar
    mrecd.ingest([PSF, DCD], tmp_path, "quiet", stop=3, progress=False)
    assert capsys.readouterr().err == ""


def test_a_lammps_dump_is_read_when_its_format_is_named(tmp_path, capsys) -> None:
    from MDAnalysisTests.datafiles import (
        LAMMPSDUMP,
    )  # *.lammpstrj.bz2: no extension MDAnalysis knows

    from mrecd.cli import main as cli

    with pytest.raises(mrecd.InvalidRecord, match="reads no topology"):
        mrecd.ingest([LAMMPSDUMP], tmp_path, "dump", progress=False)
    done = mrecd.ingest([LAMMPSDUMP], tmp_path, "dump", format="LAMMPSDUMP", progress=False)
    orig = mda.Universe(LAMMPSDUMP, format="LAMMPSDUMP")
    with mrecd.open(tmp_path).record("dump") as rec:
        assert done.frames == len(rec.trajectory) == orig.trajectory.n_frames == 3
        for frame, ts in zip(rec.trajectory, orig.trajectory, strict=True):
            np.testing.assert_array_equal(stored_xyz(frame), ts.positions)
            assert frame.step == ts.data["step"] and frame.box == box_of(ts.dimensions)
    argv = ["ingest", LAMMPSDUMP, "-o", f"{tmp_path}/cli", "--format", "LAMMPSDUMP", "--quiet"]
    assert cli(argv) == 0 and "3 frames of 24 atoms" in capsys.readouterr().err
