"""mrecd.md.export: records written by MDAnalysis, checked against MDAnalysis on the originals."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import mrecd
from mrecd.md import export

from .conftest import Ingests, mda

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def read(*files: str | Path) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mda.Universe(*map(str, files))


def test_xtc_out_gives_back_the_original_xtc(ingested: Ingests, tmp_path: Path) -> None:
    source = ingested["xtc"]
    out = tmp_path / "adk.xtc"
    assert export(source.store / "xtc", out) == 10
    back, orig = read(source.files[0], out), source.original()
    for ts, want in zip(back.trajectory, orig.trajectory, strict=True):
        # stored values sit within 2^-8 Å of the 0.01 Å grid, so XTC's rounding lands on
        # the original integers: the file holds the same coordinates
        np.testing.assert_allclose(ts.positions, want.positions, rtol=0, atol=1e-5)
        assert (ts.data["step"], ts.time) == (want.data["step"], want.time)
        np.testing.assert_allclose(ts.dimensions, want.dimensions, rtol=1e-6)


def test_dcd_out_is_exact_for_a_lossless_record(ingested: Ingests, tmp_path: Path) -> None:
    source = ingested["triclinic"]
    out = tmp_path / "water.dcd"
    assert export(source.store / "triclinic", out) == 10
    back, orig = read(source.files[0], out), source.original()
    assert back.trajectory.n_frames == 10
    for ts, want in zip(back.trajectory, orig.trajectory, strict=True):
        np.testing.assert_array_equal(ts.positions, want.positions)
        np.testing.assert_allclose(ts.dimensions, want.dimensions, rtol=1e-5)


def test_pdb_out_carries_the_topology(ingested: Ingests, tmp_path: Path) -> None:
    source = ingested["pdb"]
    out = tmp_path / "adk.pdb"
    assert export(source.store / "pdb", out) == 1
    orig = source.original()
    orig.atoms.write(tmp_path / "by-mdanalysis.pdb")  # what MDAnalysis itself makes of the original
    back, want = read(out), read(tmp_path / "by-mdanalysis.pdb")
    np.testing.assert_allclose(back.atoms.positions, orig.atoms.positions, atol=5e-4)
    for attr in ("names", "resnames", "resids", "chainIDs", "segids", "tempfactors", "icodes"):
        np.testing.assert_array_equal(getattr(back.atoms, attr), getattr(want.atoms, attr))
    # from the cell on (MDAnalysis copies the original's header remarks) the files are the same
    ours, theirs = (p.read_text() for p in (out, tmp_path / "by-mdanalysis.pdb"))
    assert ours[ours.index("CRYST1") :] == theirs[theirs.index("CRYST1") :]


def test_multi_frame_pdb_and_one_frame_gro(ingested: Ingests, tmp_path: Path) -> None:
    source = ingested["dcd"]
    orig = source.original()
    assert export(source.store / "dcd", tmp_path / "movie.pdb", start=2, stop=8, step=3) == 2
    movie = read(tmp_path / "movie.pdb")
    assert movie.trajectory.n_frames == 2
    movie.trajectory[1]
    orig.trajectory[5]
    np.testing.assert_allclose(movie.atoms.positions, orig.atoms.positions, atol=5e-4)
    assert export(source.store / "dcd", tmp_path / "last.gro", frame=-1) == 1
    last = read(tmp_path / "last.gro")
    orig.trajectory[11]
    np.testing.assert_allclose(last.atoms.positions, orig.atoms.positions, atol=5e-3)  # GRO: 0.01 Å
    np.testing.assert_array_equal(last.atoms.names, orig.atoms.names)


def test_export_refusals_name_the_problem(ingested: Ingests, tmp_path: Path) -> None:
    record = ingested["dcd"].store / "dcd"
    with pytest.raises(
        mrecd.InvalidRecord, match=r"one frame to '\.gro' files and 12 are selected"
    ):
        export(record, tmp_path / "all.gro")
    with pytest.raises(mrecd.InvalidRecord, match=r"no writer for '\.foo'"):
        export(record, tmp_path / "x.foo")
    with pytest.raises(mrecd.InvalidRecord, match="frame 12 is outside the 12 frames"):
        export(record, tmp_path / "x.pdb", frame=12)
    (tmp_path / "taken.xtc").write_bytes(b"")
    with pytest.raises(mrecd.AlreadyExists, match="output file exists"):
        export(record, tmp_path / "taken.xtc")
    assert export(record, tmp_path / "taken.xtc", frame=0, overwrite=True) == 1
    assert not (tmp_path / "all.gro").exists() and not (tmp_path / "x.foo").exists()
