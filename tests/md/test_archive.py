"""The archive of a real trajectory: the adk XTC (47,681 atoms), archived and read back."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import zarr
from zarr.storage import ZipStore

import mrecd

from .conftest import Ingests

QUANTUM = 2.0**-7  # the grid of the XTC's 0.01 Å (frame.md §7.1)


def coordinate_bytes(archive: Path) -> int:
    """Stored bytes of the x/y/z arrays (chunks and shard indexes) in a packed record."""
    with zipfile.ZipFile(archive) as z:
        return sum(
            i.file_size
            for i in z.infolist()
            if i.filename.split("/")[:2] == ["trajectory", "atoms"] and "/c/" in i.filename
        )


def test_adk_archive_holds_the_xtc_within_its_precision_and_is_denser(
    ingested: Ingests, tmp_path: Path
) -> None:
    source = ingested["xtc"]
    live = source.store / f"{source.name}.mrec"
    archive = Path(mrecd.archive_record(live, tmp_path / "adk.mrec.zip"))
    assert mrecd.validate_record(archive) == []
    u = source.original()
    n_atoms, n_frames = u.atoms.n_atoms, len(u.trajectory)
    with mrecd.open_record(live) as a, mrecd.open_record(archive) as b:
        assert a.trajectory is not None and b.trajectory is not None
        for i in (0, 4, 9):
            assert b.trajectory[i] == a.trajectory[i]
            atoms = b.trajectory[i]["atoms"]
            got = np.stack([atoms[c].values for c in "xyz"], axis=1)
            u.trajectory[i]
            # the stored grid is finer than the XTC's; float32 positions add their own ulp
            assert np.abs(got - u.atoms.positions).max() <= QUANTUM / 2 + 1e-5
    per_atom_frame = coordinate_bytes(archive) / (n_atoms * n_frames)
    live_bytes = sum(
        p.stat().st_size for c in "xyz" for p in (live / "trajectory/atoms" / c / "c").rglob("*")
    )
    assert per_atom_frame < 0.9 * live_bytes / (n_atoms * n_frames)
    assert per_atom_frame < 4.5  # measured 4.33 (XTC 3.46): see README "Archives"


def test_adk_archive_reads_through_zarr_python_and_zarrs(ingested: Ingests, tmp_path: Path) -> None:
    source = ingested["xtc"]
    live = source.store / f"{source.name}.mrec"
    archive = Path(mrecd.archive_record(live, tmp_path / "adk.mrec.zip"))
    with mrecd.open_record(live) as rec:
        assert rec.trajectory is not None
        expected = np.concatenate([rec.trajectory[i]["atoms"]["y"].values for i in range(10)])
    store = ZipStore(archive, mode="r")
    try:
        plain = zarr.open_array(store, path="trajectory/atoms/y", mode="r")[:]
        with zarr.config.set(
            {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True}
        ):
            rust = zarr.open_array(store, path="trajectory/atoms/y", mode="r")[:]
    finally:
        store.close()
    assert plain.tobytes() == rust.tobytes() == expected.tobytes()
