"""The commit pipeline: a failed commit and the commits queued behind it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mrecd.api._trajectory import open_trajectory
from mrecd.bindings.zarr._trajectory_write import TrajectoryWriter

from .conftest import atoms, attrs, frame


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
