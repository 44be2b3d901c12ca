"""Packing to ``*.mrec.zip`` (chunking.md §7) and reading the archive in place."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from zarr_helpers import file_bytes, water_frame

import mrecd
from mrecd.cli import main


def test_pack_entries_follow_the_rules(water: Path) -> None:
    packed = mrecd.pack_record(water)
    assert Path(packed) == water.with_name("water.mrec.zip")
    files = file_bytes(water)
    with zipfile.ZipFile(packed) as archive:
        infos = archive.infolist()
        assert sorted(i.filename for i in infos) == sorted(files)
        for info in infos:
            assert info.compress_type == zipfile.ZIP_STORED
            assert not info.is_dir()
            assert not info.filename.startswith("/") and "\\" not in info.filename
            assert ".." not in info.filename.split("/")
            assert archive.read(info) == files[info.filename]
    names = {i.filename for i in infos}
    assert {"zarr.json", "meta/zarr.json", "frame/zarr.json", "frame/box/vectors/c/0/0"} <= names


def test_packed_record_reads_the_same(water: Path) -> None:
    packed = mrecd.pack_record(water)
    with mrecd.open_record(water) as live, mrecd.open_record(packed) as zipped:
        assert zipped.read_only
        assert zipped.local_path == os.fspath(packed)
        assert zipped.meta == live.meta
        assert zipped.frame == live.frame
        assert zipped.system == live.system
        assert zipped.status == live.status
        assert zipped.sections == live.sections


def test_packed_record_is_read_in_place_without_extraction(water: Path, tmp_path: Path) -> None:
    packed = mrecd.pack_record(water, tmp_path / "elsewhere" / "copy.mrec.zip")
    before = sorted(p.name for p in packed.parent.iterdir())
    with mrecd.open_record(packed) as record:
        assert record.frame is not None
    assert sorted(p.name for p in packed.parent.iterdir()) == before == ["copy.mrec.zip"]


def test_packed_record_refuses_writes(water: Path) -> None:
    packed = mrecd.pack_record(water)
    with pytest.raises(mrecd.ReadOnlyError):
        mrecd.open_record(packed, "r+")


def test_zip64_when_limits_are_exceeded(water: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Shrink zipfile's ZIP64 threshold so this small record needs ZIP64 records, as a
    # multi-GiB shard would; the archive must still read back bit-identically.
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 64)
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 4)
    packed = mrecd.pack_record(water)
    monkeypatch.undo()
    raw = packed.read_bytes()
    assert zipfile.stringEndArchive64 in raw  # the ZIP64 end-of-central-directory record
    with mrecd.open_record(packed) as zipped, mrecd.open_record(water) as live:
        assert zipped.frame == live.frame
    with zipfile.ZipFile(packed) as archive:
        for rel, content in file_bytes(water).items():
            assert archive.read(rel) == content


def test_pack_refuses_an_existing_archive_unless_overwrite(water: Path) -> None:
    packed = mrecd.pack_record(water)
    with pytest.raises(mrecd.AlreadyExists):
        mrecd.pack_record(water)
    with mrecd.open_record(water, "r+") as record:
        record.write_frame(water_frame(9, seed=2))
    mrecd.pack_record(water, overwrite=True)
    with mrecd.open_record(packed) as record:
        assert record.frame is not None and record.frame["atoms"].count == 9


@pytest.mark.parametrize("dest", ["out.zip", "out.mrec", ".mrec.zip"])
def test_pack_destination_needs_the_brand(water: Path, dest: str) -> None:
    with pytest.raises(mrecd.InvalidRecord, match=r"chunking\.md §7"):
        mrecd.pack_record(water, water.parent / dest)
    assert not (water.parent / dest).exists()


def test_pack_refuses_what_is_not_a_record(tmp_path: Path) -> None:
    (tmp_path / "empty.mrec").mkdir()
    with pytest.raises(mrecd.InvalidRecord):
        mrecd.pack_record(tmp_path / "empty.mrec")


def test_no_temporary_file_is_left_after_a_failed_pack(
    water: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: zipfile.ZipFile, *args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(zipfile.ZipFile, "writestr", broken)
    with pytest.raises(OSError, match="disk full"):
        mrecd.pack_record(water)
    assert sorted(p.name for p in water.parent.iterdir()) == ["water.mrec"]


def test_cli_pack(water: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = water.parent / "cli.mrec.zip"
    assert main(["pack", str(water), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    with mrecd.open_record(out) as record:
        assert record.frame is not None
    assert main(["pack", str(water), "-o", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["pack", str(water), "-o", str(out), "--force"]) == 0


def test_cli_pack_default_destination(water: Path) -> None:
    assert main(["pack", str(water)]) == 0
    assert water.with_name("water.mrec.zip").is_file()


def test_all_zero_chunks_are_absent_from_the_archive(tmp_path: Path) -> None:
    path = tmp_path / "z.mrec"
    mrecd.create_record(path, frame=mrecd.Frame({"atoms": {"x": np.zeros(4)}})).close()
    packed = mrecd.pack_record(path)
    with zipfile.ZipFile(packed) as archive:
        assert "frame/atoms/x/c/0" not in archive.namelist()
    with mrecd.open_record(packed) as record:
        assert record.frame is not None
        assert record.frame["atoms"]["x"].values.tolist() == [0.0] * 4
