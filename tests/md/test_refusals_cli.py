"""What ingest refuses (and leaves behind), and the ``mrecd ingest`` / ``mrecd export`` commands."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from MDAnalysisTests.datafiles import DCD, PSF, XTC

import mrecd
from mrecd.cli import main as cli

from .conftest import mda

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def ingest(files: list[str], store: Path, name: str = "r", **options: object) -> mrecd.md.Ingested:
    return mrecd.ingest(files, store, name, progress=False, **options)  # type: ignore[arg-type]


def test_an_unknown_format_is_refused_by_name(tmp_path: Path) -> None:
    odd = tmp_path / "system.foo"
    odd.write_text("not a topology")
    with pytest.raises(mrecd.InvalidRecord, match=r"reads no topology of this format.*'\.foo'"):
        ingest([str(odd)], tmp_path / "store")
    notes = tmp_path / "notes.txt"
    notes.write_text("not a trajectory")
    with pytest.raises(mrecd.InvalidRecord, match=r"reads no trajectory of this format.*'\.txt'"):
        ingest([PSF, str(notes)], tmp_path / "store")


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(mrecd.NotFound, match=re.escape(f"{tmp_path}/gone.dcd: no such file")):
        ingest([PSF, str(tmp_path / "gone.dcd")], tmp_path / "store")


def test_an_existing_record_is_refused_and_kept(tmp_path: Path) -> None:
    ingest([PSF, DCD], tmp_path, "adk", stop=2)
    with pytest.raises(mrecd.AlreadyExists, match="the store holds a record named 'adk'"):
        ingest([PSF, DCD], tmp_path, "adk", stop=5)
    with mrecd.open(tmp_path).record("adk") as rec:
        assert len(rec.trajectory) == 2


def test_files_that_disagree_are_refused_with_mdanalysis_reason(tmp_path: Path) -> None:
    with pytest.raises(mrecd.InvalidRecord, match=r"could not read it.*same number of atoms"):
        ingest([PSF, XTC], tmp_path)
    with pytest.raises(mrecd.InvalidRecord, match="holds no coordinates"):
        ingest([PSF], tmp_path)
    with pytest.raises(mrecd.InvalidRecord, match="holds no coordinates"):
        mrecd.ingest(mda.Universe(PSF), tmp_path, "r")
    assert mrecd.open(tmp_path).records() == []


def test_overlapping_inputs_are_refused_and_leave_no_record(tmp_path: Path) -> None:
    # the same DCD twice restarts the step count at the second file
    with pytest.raises(mrecd.StepOrderError, match="frame 98 has step 1, not above frame 97's 98"):
        ingest([PSF, DCD, DCD], tmp_path, "twice")
    assert "twice" not in mrecd.open(tmp_path) and list(tmp_path.iterdir()) == []


def test_bad_options_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(mrecd.InvalidRecord, match="select none"):
        ingest([PSF, DCD], tmp_path, start=500)
    with pytest.raises(mrecd.InvalidRecord, match="step cannot be zero"):
        ingest([PSF, DCD], tmp_path, step=0)
    with pytest.raises(mrecd.InvalidRecord, match="precision"):
        ingest([str(tmp_path / "not-even-read.psf")], tmp_path, precision=0.0)
    with pytest.raises(mrecd.InvalidRecord, match="give a topology"):
        ingest([], tmp_path)
    assert mrecd.open(tmp_path).records() == []


def test_ingest_then_export_on_the_command_line(tmp_path: Path, capsys) -> None:
    target = f"{tmp_path}/data/adk"
    assert cli(["ingest", PSF, DCD, "-o", target, "--stop", "5", "--quiet"]) == 0
    assert f"{target}: 5 frames of 3341 atoms, lossless" in capsys.readouterr().err
    assert cli(["export", target, "-o", str(tmp_path / "adk.dcd")]) == 0
    assert capsys.readouterr().err.strip() == f"{tmp_path}/adk.dcd: 5 frames"
    back, orig = mda.Universe(PSF, str(tmp_path / "adk.dcd")), mda.Universe(PSF, DCD)
    assert back.trajectory.n_frames == 5
    assert (back.trajectory[4].positions == orig.trajectory[4].positions).all()
    fine = ["-o", f"{target}-fine", "--precision", "1e-3", "--start", "90", "--quiet"]
    assert cli(["ingest", PSF, DCD, *fine]) == 0
    assert "8 frames of 3341 atoms, precision 0.001 Å" in capsys.readouterr().err


def test_command_line_refusals_exit_2_with_the_reason(tmp_path: Path, capsys) -> None:
    target = f"{tmp_path}/adk"
    assert cli(["ingest", PSF, DCD, "-o", target, "--stop", "1", "--quiet"]) == 0
    capsys.readouterr()
    assert cli(["ingest", PSF, DCD, "-o", target, "--quiet"]) == 2
    assert "mrecd ingest: adk: the store holds a record named 'adk'" in capsys.readouterr().err
    assert cli(["export", f"{tmp_path}/nope", "-o", str(tmp_path / "x.xtc")]) == 2
    assert "no record named 'nope'" in capsys.readouterr().err


def test_without_mdanalysis_the_commands_say_how_to_install_it(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "MDAnalysis", None)  # an import of it now fails
    assert cli(["ingest", PSF, DCD, "-o", f"{tmp_path}/adk", "--quiet"]) == 2
    assert "needs MDAnalysis: pip install 'mrecd[md]'" in capsys.readouterr().err
