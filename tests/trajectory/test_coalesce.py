"""Commits that wait behind a busy committer are written as one (positional stores)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mrecd.api._trajectory import Trajectory, create_trajectory, open_trajectory
from mrecd.bindings.zarr import _trajectory_write
from mrecd.bindings.zarr._trajectory_write import TrajectoryWriter

from .conftest import atoms, attrs, frame, make_root, xyz_declaration


class _Held:
    """Holds the committer in its first array writes; records each marker published."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, fail_second: bool = False) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.published: list[tuple[int, bool]] = []
        self.calls = 0
        write, publish = TrajectoryWriter._write_arrays, TrajectoryWriter._publish

        def held(writer: TrajectoryWriter, arrays: Any) -> None:
            self.calls += 1
            if self.calls == 1:
                self.entered.set()
                assert self.release.wait(20)
            elif fail_second:
                raise OSError("disk full")
            write(writer, arrays)

        def recorded(writer: TrajectoryWriter, marker: Any, document: Any, **kw: bool) -> None:
            publish(writer, marker, document, **kw)
            self.published.append((document["attributes"]["nstep"], kw["durable"]))

        monkeypatch.setattr(TrajectoryWriter, "_write_arrays", held)
        monkeypatch.setattr(TrajectoryWriter, "_publish", recorded)

    def queue_behind(self, traj: Trajectory, frames: range) -> TrajectoryWriter:
        """Append ``frames`` while the first commit is held; return once all are encoded."""
        assert self.entered.wait(20)
        for i in frames:
            traj.append(_frame(i))
        writer = traj._writer
        assert isinstance(writer, TrajectoryWriter)
        for _, encoded in list(writer._waiting):
            encoded.result()
        return writer


def _frame(i: int) -> Any:
    return frame(i, blocks={"atoms": atoms(5, float(i))})


def _write(root: Path, held: _Held | None) -> list[tuple[int, bool]]:
    """Ten frames in commits of two (the first held when ``held``), then a durable close."""
    create_trajectory(root, xyz_declaration(1e-3))
    traj = open_trajectory(root, flush_every=2)
    for i in range(2):
        traj.append(_frame(i))
    if held is not None:
        held.queue_behind(traj, range(2, 10))
        held.release.set()
    else:
        for i in range(2, 10):
            traj.append(_frame(i))
    traj.close()
    return [] if held is None else held.published


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted((root / "trajectory").rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


@pytest.mark.directory_only
def test_commits_queued_behind_the_committer_go_as_one_with_the_same_bytes(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    published = _write(root, _Held(monkeypatch))
    monkeypatch.undo()
    # commit 1 alone, commits 2-5 as one group (its marker claims them all), the close alone
    assert published == [(2, False), (10, False), (10, True)]
    monkeypatch.setattr(_trajectory_write, "_COALESCE_AT", 10**9)
    alone = make_root(tmp_path / "alone.mrec")
    _write(alone, None)
    assert _files(root) == _files(alone)  # data, shard indexes, zarr.json: byte for byte
    reread = open_trajectory(root)
    assert [f.step for f in reread] == list(range(10))
    np.testing.assert_array_equal(reread[7]["atoms"]["z"].values, atoms(5, 7.0)["z"])


@pytest.mark.positional_only
def test_a_failed_group_publishes_none_of_its_commits(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _Held(monkeypatch, fail_second=True)
    create_trajectory(root, xyz_declaration(1e-3))
    traj = open_trajectory(root, flush_every=2)
    for i in range(2):
        traj.append(_frame(i))
    writer = held.queue_behind(traj, range(2, 10))
    held.release.set()
    with pytest.raises(OSError, match="disk full"):
        writer.wait()
    traj.close()
    monkeypatch.undo()
    assert held.published == [(2, False)]
    assert attrs(root / "trajectory")["nstep"] == 2
    again = open_trajectory(root, flush_every=2)
    assert len(again) == 2
    for i in range(2, 6):
        again.append(_frame(i))
    again.close()
    reread = open_trajectory(root)
    assert [f.step for f in reread] == list(range(6))
    np.testing.assert_array_equal(reread[5]["atoms"]["x"].values, atoms(5, 5.0)["x"])
