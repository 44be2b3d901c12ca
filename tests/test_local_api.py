"""The local API end to end, across the Zarr record, trajectory and LMDB collection bindings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mrecd
from mrecd.cli import main as cli


def positions(i: int, n: int = 5) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(i)
    return dict(zip("xyz", rng.uniform(0, 20, (3, n)), strict=True))


DECLARATION = {
    "blocks": {
        "atoms": {
            "columns": {c: {"dtype": "f64", "trailing": [], "precision": 1e-3} for c in "xyz"}
        }
    },
    "meta": {"pe": {"dtype": "f64"}},
}


def test_record_lifecycle_through_the_catalog(tmp_path: Path) -> None:
    store = mrecd.open(tmp_path / "data")
    system = mrecd.Frame({"atoms": {"element": ["O", "H", "H", "O", "H"]}}, meta={"smiles": "O.O"})
    with store.create_record(
        "run-42",
        meta={"record_id": "r42"},
        system=system,
        declaration=mrecd.Declaration.from_dict(DECLARATION),
    ) as rec:
        traj = rec.trajectory
        assert traj is rec.trajectory  # one object per open record: it holds the writer
        for i in range(20):
            traj.append(
                mrecd.Frame(
                    {"atoms": positions(i)},
                    meta={"pe": -float(i)},
                    box=mrecd.Box(np.eye(3) * 20),
                    step=10 * i,
                    time=0.5 * i,
                )
            )
        assert len(traj) == 20
    assert store.records() == ["run-42"]
    with store.record("run-42") as rec:
        assert rec.meta["molrec_version"] == 2 and rec.system == system
        traj = rec.trajectory
        assert traj is not None and len(traj) == 20
        f = traj[-1]
        assert (f.step, f.time, f.meta["pe"]) == (190, 9.5, -19.0)
        np.testing.assert_array_equal(
            f["atoms"]["x"].values, mrecd.quantize(positions(19)["x"], 1e-3)
        )
        assert traj.series("pe").tolist() == [-float(i) for i in range(20)]
    packed = store.pack("run-42")
    assert packed.name == "run-42.mrec.zip"
    with mrecd.open_record(packed) as rec:  # random access in the zip, no extraction
        traj = rec.trajectory
        assert rec.read_only and traj is not None and len(traj) == 20
        assert (
            traj[7]["atoms"]
            == mrecd.open_record(tmp_path / "data" / "run-42.mrec").trajectory[7]["atoms"]
        )
        with pytest.raises(mrecd.ReadOnlyError):
            traj.append(mrecd.Frame({"atoms": positions(99)}, meta={"pe": 0.0}, step=1000))
    assert mrecd.validate_record(packed) == []
    assert cli(["validate", str(packed)]) == 0


def test_first_append_creates_the_trajectory(tmp_path: Path) -> None:
    path = tmp_path / "a.mrec"
    with mrecd.create_record(path, frame=mrecd.Frame({"atoms": positions(0)})) as rec:
        assert rec.trajectory is not None and len(rec.trajectory) == 0
        rec.trajectory.append(mrecd.Frame({"atoms": positions(1)}, step=0))
        rec.trajectory.append(mrecd.Frame({"atoms": positions(2)}, step=1))
    with mrecd.open_record(path) as rec:
        assert "trajectory" in rec.sections and len(rec.trajectory) == 2


def test_validator_reports_trajectory_violations(tmp_path: Path) -> None:
    path = tmp_path / "bad.mrec"
    with mrecd.create_record(path, declaration=mrecd.Declaration.from_dict(DECLARATION)) as rec:
        rec.trajectory.append(mrecd.Frame({"atoms": positions(0)}, meta={"pe": 0.0}, step=0))
    import zarr

    x = zarr.open_array(str(path / "trajectory" / "atoms" / "x"), mode="r+")
    x[0] = 0.1  # off the 2^-10 grid: a writer defect a validator reports
    problems = mrecd.validate_record(path)
    assert [(v.path, v.rule) for v in problems] == [("trajectory/atoms/x", "frame.md §7.2")]
    assert cli(["validate", str(path)]) == 1


def test_collections_in_the_catalog(tmp_path: Path) -> None:
    store = mrecd.open(tmp_path / "data")
    col = store.create_collection(
        "qm", meta={"units": {"length": "angstrom", "energy": "kcal/mol"}}, declaration=DECLARATION
    )
    with col:
        for r in range(3):
            col.append(
                mrecd.Record(
                    system=mrecd.Frame({"atoms": {"element": ["C"] * 5}}),
                    trajectory=[mrecd.Frame({"atoms": positions(r)}, meta={"pe": 1.0}, step=0)],
                )
            )
    assert store.collections() == ["qm"] and store.records() == []
    with pytest.raises(mrecd.AlreadyExists):
        store.create_collection("qm", meta={"units": {}})
    with store.collection("qm") as col:
        assert len(col) == 3
        np.testing.assert_array_equal(
            col[2].trajectory[0]["atoms"]["y"].values, mrecd.quantize(positions(2)["y"], 1e-3)
        )
    store.delete_collection("qm")
    assert store.collections() == []
    with pytest.raises(mrecd.NotFound):
        store.collection("qm")


def test_importing_the_model_and_client_loads_no_storage_library() -> None:
    code = (
        "import sys, mrecd, mrecd.model, mrecd.codecs, mrecd_client; "
        "heavy = {'zarr', 'lmdb', 'obstore', 'fastapi'} & {m.split('.')[0] for m in sys.modules}; "
        "print(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
