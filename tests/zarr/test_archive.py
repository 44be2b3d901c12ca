"""Archiving a closed record (`mrecd pack --archive`): denser, same values, still range-read."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from zarr.storage import LocalStore, ZipStore

import mrecd
from mrecd.cli import main
from mrecd.storage import CountingStore, DirectoryStore

ATOMS = 300
FRAMES = 96

DECL = mrecd.Declaration.from_dict(
    {
        "blocks": {
            "atoms": {
                "columns": {c: {"dtype": "f64", "trailing": [], "precision": 1e-3} for c in "xyz"}
            },
            "ions": {"columns": {"atomi": {"dtype": "u64", "trailing": []}}},
        },
        "meta": {"pe": {"dtype": "f64"}},
    }
)


def frames() -> list[mrecd.Frame]:
    """A random walk of ATOMS atoms, a block whose row count varies, a cell every 10 frames."""
    rng = np.random.default_rng(3)
    xyz = rng.uniform(0, 40, (3, ATOMS))
    out = []
    for i in range(FRAMES):
        xyz = xyz + rng.normal(0, 0.05, xyz.shape)
        blocks: dict[str, Any] = {
            "atoms": dict(zip("xyz", xyz, strict=True)),
            "ions": {"atomi": np.arange(i % 7, dtype=np.uint64)},
        }
        box = mrecd.Box(np.eye(3) * (40 + i / 10)) if i % 10 == 0 else None
        out.append(mrecd.Frame(blocks, meta={"pe": -float(i)}, step=5 * i, time=0.5 * i, box=box))
    return out


@pytest.fixture
def live(tmp_path: Path) -> Path:
    """A closed live record ``data/run.mrec`` holding :func:`frames`."""
    catalog = mrecd.open(tmp_path / "data")
    system = mrecd.Frame({"atoms": {"element": np.array(["O", "H", "H"] * (ATOMS // 3))}})
    with catalog.create_record("run", system=system, declaration=DECL) as rec:
        assert rec.trajectory is not None
        rec.trajectory.extend(frames())
    return tmp_path / "data" / "run.mrec"


def arrays(root: Path) -> list[str]:
    """Paths (relative to ``root``) of the arrays under ``trajectory/``."""
    return sorted(
        str(p.parent.relative_to(root))
        for p in (root / "trajectory").rglob("zarr.json")
        if json.loads(p.read_text())["node_type"] == "array"
    )


def tree_bytes(root: Path, under: str) -> int:
    return sum(p.stat().st_size for p in (root / under).rglob("*") if p.is_file())


@contextmanager
def zarrs_pipeline() -> Iterator[None]:
    """The zarrs (Rust) codec pipeline, strict: an array it cannot decode is an error."""
    with zarr.config.set(
        {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True}
    ):
        yield


def test_archive_reads_back_bit_for_bit_and_validates(live: Path) -> None:
    dest = mrecd.archive_record(live, live.with_name("run-a.mrec"), frames_per_chunk=4)
    archived = Path(dest)
    assert mrecd.validate_record(archived) == []
    with mrecd.open_record(live) as a, mrecd.open_record(archived) as b:
        assert a.trajectory is not None and b.trajectory is not None
        assert len(b.trajectory) == FRAMES
        np.testing.assert_array_equal(a.trajectory.steps(), b.trajectory.steps())
        np.testing.assert_array_equal(a.trajectory.series("pe"), b.trajectory.series("pe"))
        for i in (0, 1, 43, 44, 45, 95):
            assert a.trajectory[i] == b.trajectory[i]
        assert b.system == a.system
    written = frames()
    with mrecd.open_record(archived) as b:
        assert b.trajectory is not None
        got = b.trajectory[50]["atoms"]["x"].values
        np.testing.assert_allclose(got, written[50]["atoms"]["x"].values, atol=2.0**-11)


def test_archive_is_denser_and_cuts_multi_frame_chunks(live: Path) -> None:
    archived = Path(mrecd.archive_record(live, live.with_name("run-a.mrec"), frames_per_chunk=4))
    meta = json.loads((archived / "trajectory/atoms/x/zarr.json").read_text())
    old = json.loads((live / "trajectory/atoms/x/zarr.json").read_text())
    inner = meta["codecs"][0]["configuration"]
    live_rows = old["codecs"][0]["configuration"]["chunk_shape"][0]
    assert inner["chunk_shape"] == [4 * live_rows]
    assert inner["index_location"] == "start"
    assert [c["name"] for c in inner["codecs"]] == ["bytes", "numcodecs.shuffle", "zstd", "crc32c"]
    assert inner["codecs"][2]["configuration"]["level"] == 19
    assert meta["shape"] == old["shape"] and meta["attributes"] == old["attributes"]
    for column in ("x", "y", "z"):
        path = f"trajectory/atoms/{column}"
        assert tree_bytes(archived, path) < 0.9 * tree_bytes(live, path)
    # everything outside trajectory/ is copied as it was
    for p in live.rglob("*"):
        rel = p.relative_to(live)
        if p.is_file() and rel.parts[0] != "trajectory":
            assert (archived / rel).read_bytes() == p.read_bytes(), rel


def test_frame_i_reads_only_the_chunk_that_holds_it(live: Path) -> None:
    mrecd.archive_record(live, live.with_name("run-a.mrec"), frames_per_chunk=2)
    counting = CountingStore(DirectoryStore(live.parent))
    with mrecd.open(counting).record("run-a") as rec:
        traj = rec.trajectory
        assert traj is not None
        traj.read(0, columns=["x"])  # cold: metadata and the shard index
        shard = live.with_name("run-a.mrec") / "trajectory/atoms/x/c/0"
        meta = json.loads((shard.parent.parent / "zarr.json").read_text())
        per_shard = meta["chunk_grid"]["configuration"]["chunk_shape"][0] // (
            rows := meta["codecs"][0]["configuration"]["chunk_shape"][0]
        )
        raw = shard.read_bytes()[: 16 * per_shard]
        index = np.frombuffer(raw, dtype="<u8").reshape(per_shard, 2)
        i = 70
        chunk = i * ATOMS // rows
        assert chunk > 0 and per_shard > 1
        counting.reset()
        np.testing.assert_array_equal(traj.read(i, columns=["x"])["atoms"]["x"].values.size, ATOMS)
        assert counting.nbytes("get") == int(index[chunk, 1])  # that one chunk, nothing else
        assert counting.requests("get") == 1
        assert counting.nbytes("get") < 0.5 * shard.stat().st_size


def test_zarr_python_and_zarrs_read_every_archived_array(live: Path) -> None:
    archived = Path(mrecd.archive_record(live, live.with_name("run-a.mrec"), frames_per_chunk=3))
    names = arrays(archived)
    assert names == arrays(live) and len(names) >= 8
    for name in names:
        expected = zarr.open_array(LocalStore(live / name, read_only=True), mode="r")[:]
        plain = zarr.open_array(LocalStore(archived / name, read_only=True), mode="r")[:]
        with zarrs_pipeline():
            rust = zarr.open_array(LocalStore(archived / name, read_only=True), mode="r")[:]
        assert expected.tobytes() == plain.tobytes() == rust.tobytes(), name


def test_the_default_archive_is_a_zip_that_zarr_python_reads_in_place(live: Path) -> None:
    dest = Path(mrecd.archive_record(live))
    assert dest == live.with_name("run.mrec.zip")
    assert mrecd.validate_record(dest) == []
    with zipfile.ZipFile(dest) as archive:
        assert all(i.compress_type == zipfile.ZIP_STORED for i in archive.infolist())
    store = ZipStore(dest, mode="r")
    try:
        x = zarr.open_array(store, path="trajectory/atoms/x", mode="r")[:]
    finally:
        store.close()
    live_x = zarr.open_array(LocalStore(live / "trajectory/atoms/x", read_only=True), mode="r")
    assert x.tobytes() == live_x[:].tobytes()
    with mrecd.open_record(dest) as rec:
        assert rec.trajectory is not None and rec.trajectory[95].step == 475


def test_cli_pack_archive(live: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = live.with_name("cli.mrec.zip")
    assert main(["pack", "--archive", str(live), "-o", str(out), "--level", "9"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    with zipfile.ZipFile(out) as archive:
        meta = json.loads(archive.read("trajectory/atoms/x/zarr.json"))
    assert meta["codecs"][0]["configuration"]["codecs"][2]["configuration"]["level"] == 9


# -- refusals --------------------------------------------------------------------------------


def test_a_record_with_a_live_writer_is_refused(live: Path) -> None:
    rec = mrecd.open_record(live, "r+")
    traj = rec.trajectory
    assert traj is not None
    traj.append(
        mrecd.Frame(frames()[0].blocks, meta={"pe": 1.0}, step=10_000, time=1e4)
    )  # takes the lease
    try:
        with pytest.raises(mrecd.WriterBusy, match="close it before archiving"):
            mrecd.archive_record(live)
        assert not live.with_name("run.mrec.zip").exists()
    finally:
        rec.close()
    assert Path(mrecd.archive_record(live)).is_file()  # closed now


def test_an_existing_output_is_refused_unless_forced(live: Path) -> None:
    dest = live.with_name("run.mrec.zip")
    dest.write_bytes(b"keep me")
    with pytest.raises(mrecd.AlreadyExists):
        mrecd.archive_record(live)
    assert dest.read_bytes() == b"keep me"
    assert main(["pack", "--archive", str(live)]) == 2
    assert main(["pack", "--archive", str(live), "--force"]) == 0
    assert mrecd.validate_record(dest) == []


def test_an_existing_directory_output_is_refused(live: Path) -> None:
    other = live.with_name("other.mrec")
    mrecd.archive_record(live, other)
    with pytest.raises(mrecd.AlreadyExists):
        mrecd.archive_record(live, other)
    mrecd.archive_record(live, other, overwrite=True, level=3)
    assert mrecd.validate_record(other) == []
    assert not [p for p in live.parent.iterdir() if p.name.startswith(".")]  # no staging left


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"level": 0}, "level"),
        ({"level": 23}, "level"),
        ({"level": True}, "level"),
        ({"frames_per_chunk": 0}, "frames_per_chunk"),
        ({"frames_per_chunk": 2.5}, "frames_per_chunk"),
    ],
)
def test_bad_options_are_refused(live: Path, options: dict[str, Any], field: str) -> None:
    with pytest.raises(mrecd.InvalidRecord) as info:
        mrecd.archive_record(live, **options)
    assert info.value.path == field
    assert not live.with_name("run.mrec.zip").exists()


def test_a_packed_source_and_bad_names_are_refused(live: Path, tmp_path: Path) -> None:
    packed = mrecd.pack_record(live)
    with pytest.raises(mrecd.InvalidRecord, match="already packed"):
        mrecd.archive_record(packed, tmp_path / "again.mrec.zip")
    with pytest.raises(mrecd.InvalidRecord, match="record path ends in"):
        mrecd.archive_record(live, tmp_path / "archive.zip")
    with pytest.raises(mrecd.InvalidRecord, match="its own source"):
        mrecd.archive_record(live, live, overwrite=True)
    with pytest.raises(mrecd.NotFound):
        mrecd.archive_record(tmp_path / "missing.mrec")


def test_archive_options_only_with_archive_on_the_cli(
    live: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pack", str(live), "--level", "19"]) == 2
    assert "--archive" in capsys.readouterr().err
    assert not live.with_name("run.mrec.zip").exists()
    assert main(["pack", "--archive", str(live), "--level", "30"]) == 2
    assert "zstd level" in capsys.readouterr().err
