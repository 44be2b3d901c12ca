"""mrecd.md.universe: a record opened as an MDAnalysis Universe, frames read on demand."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import mrecd
from mrecd.api import Trajectory
from mrecd.md import MrecReader, universe

from .conftest import Ingests, mda

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


@pytest.mark.parametrize(("source", "atol"), [("dcd", 0.0), ("triclinic", 0.0), ("xtc", 2**-8)])
def test_positions_cells_steps_and_times_match_mdanalysis_on_the_original(
    ingested: Ingests, source: str, atol: float
) -> None:
    orig = ingested[source].original()
    u = universe(ingested[source].store / source)
    assert isinstance(u.trajectory, MrecReader) and u.trajectory.n_frames > 1
    try:
        frames = orig.trajectory[ingested[source].selection]
        for ts, want in zip(u.trajectory, frames, strict=True):
            np.testing.assert_allclose(ts.positions, want.positions, rtol=0, atol=atol)
            assert ts.data["step"] == want.data["step"] and ts.time == want.time
            if want.dimensions is None:
                assert ts.dimensions is None
            else:
                np.testing.assert_allclose(ts.dimensions, want.dimensions, rtol=1e-6)
    finally:
        u.trajectory.close()


def test_the_topology_is_the_system_section(ingested: Ingests) -> None:
    orig = ingested["dcd"].original()
    u = universe(ingested["dcd"].store / "dcd.mrec")  # a record root works as well as STORE/NAME
    assert (u.atoms.n_residues, u.atoms.n_segments) == (orig.atoms.n_residues, 1)
    np.testing.assert_array_equal(u.residues.resids, orig.residues.resids)
    np.testing.assert_array_equal(u.residues.resnames, orig.residues.resnames)
    np.testing.assert_array_equal(u.segments.segids, orig.segments.segids)
    np.testing.assert_array_equal(u.atoms.names, orig.atoms.names)
    np.testing.assert_array_equal(u.atoms.charges, orig.atoms.charges)
    np.testing.assert_array_equal(u.bonds.to_indices(), orig.bonds.to_indices())
    assert len(u.dihedrals) == len(orig.dihedrals)
    # analysis code runs unchanged: selections, centres of mass
    sel, want = u.select_atoms("name CA"), orig.select_atoms("name CA")
    u.trajectory[5], orig.trajectory[5]
    np.testing.assert_allclose(sel.center_of_mass(), want.center_of_mass(), rtol=1e-6)
    u.trajectory.close()


def test_segments_are_numbered_in_order_of_appearance(ingested: Ingests) -> None:
    orig = ingested["trr"].original()  # a TPR: many molecules, several segments
    u = universe(ingested["trr"].store / "trr")
    assert orig.atoms.n_segments > 1
    np.testing.assert_array_equal(u.segments.segids, orig.segments.segids)
    np.testing.assert_array_equal(u.atoms.segindices, orig.atoms.segindices)
    np.testing.assert_array_equal(u.atoms.resindices, orig.atoms.resindices)
    u.trajectory.close()


def test_frames_are_read_one_at_a_time_when_asked_for(
    ingested: Ingests, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[int] = []
    read = Trajectory.read

    def spy(self: Trajectory, i: int, **kwargs: object) -> mrecd.Frame:
        asked.append(i)
        return read(self, i, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Trajectory, "read", spy)
    u = universe(ingested["dcd"].store / "dcd")
    opened = list(asked)
    u.trajectory[7]
    u.trajectory[3]
    assert set(opened) == {0} and asked[len(opened) :] == [7, 3]
    u.trajectory.close()


def test_an_open_record_is_read_and_left_open(ingested: Ingests) -> None:
    with ingested["dcd"].record() as rec:
        u = universe(rec)
        u.trajectory[2]
        np.testing.assert_array_equal(
            u.atoms.positions[:, 0], rec.trajectory[2]["atoms"]["x"].values.astype(np.float32)
        )
        u.trajectory.close()
        assert len(rec.trajectory) == 12  # the caller's handle still works


def test_a_pickled_universe_reopens_the_record(ingested: Ingests) -> None:
    u = universe(ingested["dcd"].store / "dcd")
    u.trajectory[4]
    copy = pickle.loads(pickle.dumps(u))
    assert copy.trajectory.ts.frame == 4
    np.testing.assert_array_equal(copy.atoms.positions, u.atoms.positions)
    copy.trajectory[9]
    u.trajectory[9]
    np.testing.assert_array_equal(copy.atoms.positions, u.atoms.positions)
    u.trajectory.close()
    copy.trajectory.close()


def test_a_record_without_system_gives_bare_atoms(tmp_path) -> None:
    store = mrecd.open(tmp_path)
    with store.create_record("bare", declaration=mrecd.Declaration.from_frames([_frame(0)])) as rec:
        rec.trajectory.extend([_frame(i) for i in range(3)])
    u = universe(tmp_path / "bare")
    assert u.atoms.n_atoms == 4 and u.trajectory.n_frames == 3
    u.trajectory[2]
    np.testing.assert_array_equal(u.atoms.positions[:, 0], [2, 3, 4, 5])
    assert u.trajectory.ts.data["step"] == 20 and u.dimensions is None
    u.trajectory.close()


def _frame(i: int) -> mrecd.Frame:
    x = np.arange(4, dtype=np.float64) + i
    return mrecd.Frame({"atoms": {"x": x, "y": x, "z": x}}, step=10 * i)


def test_refusals_name_the_problem(tmp_path) -> None:
    with pytest.raises(mrecd.NotFound, match="no record named 'nope'"):
        universe(tmp_path / "nope")
    store = mrecd.open(tmp_path)
    store.create_record("empty", system=mrecd.Frame({"atoms": {"name": ["A"]}})).close()
    with pytest.raises(mrecd.InvalidRecord, match="no trajectory frames"):
        universe(tmp_path / "empty")


def test_mdanalysis_opens_a_record_path_as_a_trajectory(ingested: Ingests) -> None:
    source = ingested["dcd"]
    # loading mrecd.md's reader registers the MREC format: a *.mrec root is a trajectory file
    u = mda.Universe(source.files[0], str(source.store / "dcd.mrec"))
    assert isinstance(u.trajectory, MrecReader) and u.trajectory.n_frames == 12
    np.testing.assert_array_equal(
        u.trajectory[11].positions, source.original().trajectory[11].positions
    )
    u.trajectory.close()
