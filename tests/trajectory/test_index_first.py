"""A commit that turns a regular block indexed, cut short at any array (trajectory.md §5.4).

Frames 0-4 present ``atoms``, frame 5 does not, so the block is still regular
(markers ``uniform_rows``) with 5 updates when ``nstep`` is 6. The commit of
frame 6 materializes ``step_index``/``offset`` and appends frame 6's rows at
rows 15-17. Had those rows landed while the index had not, a reader taking
the markers would count 6 regular updates and give frame 5 frame 6's atoms:
the index arrays land first, so a cut commit never changes a committed frame.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.api._trajectory import open_trajectory
from mrecd.bindings.zarr._shard import ArrayCommit
from mrecd.errors import WriterBusy

from .conftest import atoms, frame

_REAL_WRITE = ArrayCommit.write


def _failing_at(monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """Every write of an array whose key ends with ``suffix`` fails, as a full disk would."""

    def write(commit: ArrayCommit) -> None:
        if commit.appender.path.key.endswith(suffix):
            raise OSError(f"disk full writing {suffix}")
        _REAL_WRITE(commit)

    monkeypatch.setattr(ArrayCommit, "write", write)


def _presented(i: int) -> Any:
    return frame(i) if i == 5 else frame(i, blocks={"atoms": atoms(3, i)})


def _expected_x(i: int) -> np.ndarray:
    return atoms(3, 4 if i == 5 else i)["x"]


@pytest.mark.parametrize("suffix", ["atoms/x", "atoms/z", "atoms/offset", "atoms/step_index"])
def test_a_cut_indexing_commit_leaves_committed_frames_as_they_were(
    root: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    traj = open_trajectory(root)
    for i in range(6):
        traj.append(_presented(i))
    assert traj.flush() == 6
    _failing_at(monkeypatch, suffix)
    traj.append(_presented(6))
    with pytest.raises((OSError, WriterBusy)):
        traj.flush()
    with contextlib.suppress(OSError, WriterBusy):  # object stores: the writer is spent
        traj.close()
    monkeypatch.undo()
    monkeypatch.setenv("MRECD_LIVE_TAIL_GRACE", "0")  # object stores: no replica is in flight
    reader = open_trajectory(root)
    assert len(reader) == 6
    for i in range(6):
        np.testing.assert_array_equal(reader[i]["atoms"]["x"].values, _expected_x(i))
    reader.close()
    again = open_trajectory(root)
    assert len(again) == 6
    again.append(_presented(6))
    again.close()
    final = open_trajectory(root)
    assert [final[i]["atoms"]["x"].values.tolist() for i in range(7)] == [
        (_expected_x(i)).tolist() for i in range(7)
    ]
    final.close()


@pytest.mark.parametrize("suffix", ["box/vectors", "box/step_index"])
def test_a_cut_commit_of_the_first_cell_gives_no_earlier_frame_a_cell(
    root: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    """A cell first given at ordinal 2, cut before or after its ``vectors``: ``vectors`` alone
    would read as a cell from frame 0 (a trivial ``step_index`` ``[0]`` may be omitted)."""
    traj = open_trajectory(root)
    for i in range(2):
        traj.append(_presented(i))
    assert traj.flush() == 2
    _failing_at(monkeypatch, suffix)
    traj.append(frame(2, blocks={"atoms": atoms(3, 2)}, box=mrecd.Box(np.eye(3) * 5.0)))
    with pytest.raises((OSError, WriterBusy)):
        traj.flush()
    with contextlib.suppress(OSError, WriterBusy):
        traj.close()
    monkeypatch.undo()
    reader = open_trajectory(root)
    assert len(reader) == 2
    assert [reader[i].box for i in range(2)] == [None, None]
    reader.close()
