"""The cell's arrays and a commit cut short: ``box/step_index`` lands before ``box/vectors``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.api._trajectory import create_trajectory, open_trajectory
from mrecd.bindings.zarr import _shard

from .conftest import atoms, frame, xyz_declaration


def _boxed(i: int, side: float | None) -> mrecd.Frame:
    box = None if side is None else mrecd.Box(np.eye(3) * side)
    return frame(i, blocks={"atoms": atoms(3, float(i))}, box=box)


def test_the_cell_index_is_written_before_the_cell_arrays(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``box/vectors`` alone reads as a cell at ordinal 0: a commit cut short after it
    would give committed frames a cell they never had. Its index goes first."""
    events: list[str] = []
    real_write = _shard.ArrayCommit.write

    def write(self: Any) -> None:
        real_write(self)
        events.append(self.appender.path.key.split("trajectory/", 1)[1])

    monkeypatch.setattr(_shard.ArrayCommit, "write", write)
    create_trajectory(root, xyz_declaration(1e-3))
    traj = open_trajectory(root, flush_every=2)
    for i, side in enumerate([None, None, 10.0, None, 11.0, None]):  # first cell at ordinal 2
        traj.append(_boxed(i, side))
    traj.close()
    assert events.index("box/step_index") < events.index("box/vectors")
    cells = [f.box for f in open_trajectory(root)]
    assert cells[:2] == [None, None]
    assert [c.vectors[0, 0] for c in cells[2:] if c is not None] == [10.0, 10.0, 11.0, 11.0]


@pytest.mark.directory_only  # removes an array's files directly
def test_a_cell_without_its_trivial_index_reopens_and_appends(root: Path) -> None:
    """A cell from ordinal 0 whose ``box/step_index`` is missing (trivial ``[0]``,
    which readers allow) is appended to: the writer writes the index again."""
    create_trajectory(root, xyz_declaration(1e-3))
    traj = open_trajectory(root)
    for i, side in enumerate([10.0, None, 11.0]):
        traj.append(_boxed(i, side))
    traj.close()
    box = root / "trajectory" / "box"
    shutil.rmtree(box / "step_index")  # what another writer may omit: [0, 2] -> keep row 0
    vectors = json.loads((box / "vectors" / "zarr.json").read_text())
    vectors["shape"][0] = 1
    (box / "vectors" / "zarr.json").write_text(json.dumps(vectors))
    marker = json.loads((root / "trajectory" / "zarr.json").read_text())
    marker["attributes"]["nstep"] = 2
    (root / "trajectory" / "zarr.json").write_text(json.dumps(marker))
    again = open_trajectory(root)
    assert len(again) == 2
    again.append(_boxed(2, 12.0))
    again.close()
    sides = [f.box.vectors[0, 0] for f in open_trajectory(root) if f.box is not None]
    assert sides == [10.0, 10.0, 12.0]
