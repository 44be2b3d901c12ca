"""``mrecd.open(url)``: a catalog of records ``<root>/<name>.mrec``."""

from __future__ import annotations

from pathlib import Path

import pytest
from zarr_helpers import water_frame

import mrecd


@pytest.fixture
def catalog(tmp_path: Path) -> mrecd.Catalog:
    return mrecd.open(tmp_path / "root")


def root_of(catalog: mrecd.Catalog) -> Path:
    """The local directory of a catalog on a directory store."""
    assert catalog.local_path is not None
    return Path(catalog.local_path)


def test_open_accepts_a_path_or_a_file_url(tmp_path: Path) -> None:
    assert mrecd.open(tmp_path / "a").local_path == str(tmp_path / "a")
    assert mrecd.open(str(tmp_path / "b")).local_path == str(tmp_path / "b")
    assert mrecd.open(f"file://{tmp_path}/c").local_path == str(tmp_path / "c")
    assert mrecd.open(f"file://localhost{tmp_path}/d%20e").local_path == str(tmp_path / "d e")
    assert mrecd.open(tmp_path / "a").url == (tmp_path / "a").as_uri()
    assert (tmp_path / "a").is_dir()


@pytest.mark.parametrize(
    "url", ["ftp://bucket/prefix", "gopher://example.org/x", "file://otherhost/x"]
)
def test_open_refuses_other_schemes(url: str) -> None:
    with pytest.raises(mrecd.InvalidRecord, match=r"scheme|host"):
        mrecd.open(url)


def test_open_refuses_a_file_and_a_missing_root_without_create(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(mrecd.InvalidRecord, match="file"):
        mrecd.open(tmp_path / "f")
    with pytest.raises(mrecd.NotFound):
        mrecd.api.open(tmp_path / "missing", create=False)


def test_create_read_list_delete(catalog: mrecd.Catalog) -> None:
    with catalog.create_record("water", frame=water_frame()) as record:
        assert record.local_path == str(root_of(catalog) / "water.mrec")
    catalog.create_record("ethanol-1", status={"state": "running"}).close()
    catalog.create_record("ethanol-2", status={"state": "running"}).close()
    assert catalog.records() == ["ethanol-1", "ethanol-2", "water"]
    assert catalog.records(prefix="eth") == ["ethanol-1", "ethanol-2"]
    assert "water" in catalog and "nope" not in catalog and "../x" not in catalog
    with catalog.record("water") as record:
        assert record.read_only and record.frame == water_frame()
    with catalog.record("water", mode="r+") as record:
        record.write_status({"state": "done"})
    catalog.delete_record("ethanol-1")
    assert catalog.records() == ["ethanol-2", "water"]
    assert sorted(p.name for p in root_of(catalog).iterdir()) == ["ethanol-2.mrec", "water.mrec"]


def test_missing_and_existing_names(catalog: mrecd.Catalog) -> None:
    with pytest.raises(mrecd.NotFound):
        catalog.record("ghost")
    with pytest.raises(mrecd.NotFound):
        catalog.delete_record("ghost")
    catalog.create_record("a", status={"state": "x"}).close()
    with pytest.raises(mrecd.AlreadyExists):
        catalog.create_record("a", status={"state": "x"})
    catalog.create_record("a", status={"state": "y"}, overwrite=True).close()
    with catalog.record("a") as record:
        assert record.status == {"state": "y"}


@pytest.mark.parametrize(
    "name",
    [
        "",
        "..",
        "../escape",
        "a/b",
        "/abs",
        ".hidden",
        "a..b",
        "spa ce",
        "ü",
        "x" * 201,
        "a\\b",
        "a\x00",
    ],
)
def test_unsafe_names_are_refused(catalog: mrecd.Catalog, name: str) -> None:
    for call in (
        lambda: catalog.create_record(name, status={"state": "x"}),
        lambda: catalog.record(name),
        lambda: catalog.delete_record(name),
        lambda: catalog.pack(name),
    ):
        with pytest.raises(mrecd.InvalidRecord, match="record name"):
            call()
    assert list(root_of(catalog).iterdir()) == []
    assert not (root_of(catalog).parent / "escape.mrec").exists()


@pytest.mark.parametrize("name", ["a", "A-1_b.c", "x" * 200, "run.2024-01-01"])
def test_safe_names_are_accepted(catalog: mrecd.Catalog, name: str) -> None:
    catalog.create_record(name, status={"state": "x"}).close()
    assert catalog.records() == [name]


def test_pack_and_open_packed(catalog: mrecd.Catalog, tmp_path: Path) -> None:
    catalog.create_record("water", frame=water_frame()).close()
    packed = catalog.pack("water")
    assert Path(packed) == root_of(catalog) / "water.mrec.zip"
    elsewhere = catalog.pack("water", tmp_path / "out" / "w.mrec.zip")
    assert elsewhere.is_file()
    assert catalog.records() == ["water"]
    catalog.delete_record("water")
    assert catalog.records() == []
    assert list(root_of(catalog).iterdir()) == []


def test_a_packed_only_record_is_listed_and_opened_read_only(catalog: mrecd.Catalog) -> None:
    catalog.create_record("w", frame=water_frame()).close()
    catalog.pack("w")
    live = root_of(catalog) / "w.mrec"
    import shutil

    shutil.rmtree(live)
    assert catalog.records() == ["w"] and "w" in catalog
    with catalog.record("w") as record:
        assert record.url.endswith("/w.mrec.zip") and record.frame == water_frame()
    with pytest.raises(mrecd.ReadOnlyError):
        catalog.record("w", mode="r+")
    with pytest.raises(mrecd.AlreadyExists, match="packed"):
        catalog.create_record("w", status={"state": "x"})
    with pytest.raises(mrecd.NotFound):
        catalog.pack("w")


def test_listing_ignores_what_is_not_a_record(catalog: mrecd.Catalog) -> None:
    root = root_of(catalog)
    (root / "notes.txt").write_text("x")
    (root / "empty.mrec").mkdir()  # no zarr.json: not a record
    (root / "set.mrec.lmdb").write_bytes(b"")  # a collection's name, not the catalog's
    (root / ".staging.mrec").mkdir()
    (root / ".staging.mrec" / "zarr.json").write_text("{}")
    (root / "data.zarr").mkdir()
    assert catalog.records() == []


def test_iteration_and_repr(catalog: mrecd.Catalog) -> None:
    catalog.create_record("b", status={"state": "x"}).close()
    catalog.create_record("a", status={"state": "x"}).close()
    assert list(catalog) == ["a", "b"]
    assert "root" in repr(catalog)
