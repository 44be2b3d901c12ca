"""The commit pipeline: chunk bytes written ahead of the commit before, and failed commits."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mrecd.api._trajectory import create_trajectory, open_trajectory
from mrecd.bindings.zarr._shard import ArrayAppender
from mrecd.bindings.zarr._trajectory_write import TrajectoryWriter

from .conftest import atoms, attrs, frame, xyz_declaration


class _Gate:
    """Holds the committer at the ``n``-th commit's array writes until released."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, n: int, *, fail: bool) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.calls = 0
        real = TrajectoryWriter._write_arrays

        def gated(writer: TrajectoryWriter, arrays: Any) -> None:
            self.calls += 1
            if self.calls == n:
                self.entered.set()
                assert self.release.wait(20)
                if fail:
                    raise OSError("disk full")
            real(writer, arrays)

        monkeypatch.setattr(TrajectoryWriter, "_write_arrays", gated)


def _frames(first: int, stop: int) -> list[Any]:
    return [frame(i, blocks={"atoms": atoms(3, i)}) for i in range(first, stop)]


def test_a_commit_queued_behind_a_failed_one_writes_nothing(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = _Gate(monkeypatch, 2, fail=True)
    traj = open_trajectory(root, flush_every=2)
    for f in _frames(0, 4):  # commits 1 and 2; 2 fails once 3 is queued behind it
        traj.append(f)
    assert gate.entered.wait(20)
    for f in _frames(4, 6):
        traj.append(f)
    gate.release.set()
    writer = traj._writer
    assert writer is not None
    with pytest.raises(OSError, match="disk full"):
        writer.wait()
    traj.close()
    assert attrs(root / "trajectory")["nstep"] == 2  # commit 3 published nothing
    again = open_trajectory(root, flush_every=2)
    assert len(again) == 2
    np.testing.assert_array_equal(again[1]["atoms"]["x"].values, atoms(3, 1)["x"])
    for f in _frames(2, 6):
        again.append(f)
    again.close()
    reread = open_trajectory(root)
    assert len(reread) == 6
    for i in range(6):
        np.testing.assert_array_equal(reread[i]["atoms"]["y"].values, atoms(3, i)["y"])
    reread.close()


@pytest.mark.positional_only
def test_chunk_bytes_written_ahead_are_unreferenced_until_their_commit(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = _Gate(monkeypatch, 2, fail=False)
    encoded = threading.Semaphore(0)
    real_encode = TrajectoryWriter._encode

    def encode(writer: TrajectoryWriter, commit: Any) -> None:
        real_encode(writer, commit)
        encoded.release()

    monkeypatch.setattr(TrajectoryWriter, "_encode", encode)
    traj = open_trajectory(root, flush_every=2)
    for f in _frames(0, 4):
        traj.append(f)
    assert gate.entered.wait(20)  # commit 2 is held before any of its metadata
    for f in _frames(4, 6):
        traj.append(f)
    for _ in range(3):  # commit 3's chunk bytes are at the shard tails
        assert encoded.acquire(timeout=20)
    writer = traj._writer
    assert writer is not None
    shard = writer.blocks["atoms"].columns["x"]._shards[0]
    assert shard.end > max(int(o + s) for o, s in shard.index if o != 2**64 - 1)
    reader = open_trajectory(root)
    assert len(reader) == 2
    for i in range(2):
        np.testing.assert_array_equal(reader[i]["atoms"]["z"].values, atoms(3, i)["z"])
    reader.close()
    gate.release.set()
    traj.close()
    reread = open_trajectory(root)
    assert len(reread) == 6
    for i in range(6):
        np.testing.assert_array_equal(reread[i]["atoms"]["x"].values, atoms(3, i)["x"])
    reread.close()


def _snapshot(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


@pytest.mark.directory_only
def test_data_ahead_writes_the_same_bytes(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    frames = [
        frame(i, blocks={"atoms": {c: rng.uniform(0, 40, 500) for c in "xyz"}}) for i in range(70)
    ]
    stores = []
    for early in (True, False):
        monkeypatch.setattr(ArrayAppender, "early_data", early)
        target = root if early else root.parent / "plain.mrec"
        if not early:
            target.mkdir()
            for name in ("zarr.json", "meta/zarr.json"):
                (target / name).parent.mkdir(exist_ok=True)
                (target / name).write_bytes((root / name).read_bytes())
        create_trajectory(target, xyz_declaration(1e-3))
        traj = open_trajectory(target, flush_every=8)
        traj.extend(frames[:30])
        for f in frames[30:]:
            traj.append(f)
        traj.close()
        stores.append(_snapshot(target))
    assert stores[0].keys() == stores[1].keys()
    assert stores[0] == stores[1]
