"""``extend`` admits a batch at once: all or nothing, the same refusals and stored values as
one frame at a time, and a producer's arrays changed afterwards change nothing stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.api._trajectory import create_trajectory, open_trajectory

from .conftest import frame, make_root, xyz_declaration

ROWS = 6


def _declaration() -> dict[str, Any]:
    declaration = xyz_declaration(1e-3)
    u64 = {"dtype": "u64", "trailing": []}
    declaration["blocks"]["bonds"] = {"columns": {"atomi": u64, "atomj": u64}}
    return declaration


def _frames(first: int, n: int, bonds: dict[str, np.ndarray]) -> list[mrecd.Frame]:
    rng = np.random.default_rng(first)
    out = []
    for i in range(first, first + n):
        pos = rng.uniform(0, 10, (3, ROWS))
        blocks = {"atoms": {"x": pos[0], "y": pos[1], "z": pos[2]}, "bonds": bonds}
        out.append(frame(i, blocks=blocks))
    return out


def _bonds() -> dict[str, np.ndarray]:
    return {"atomi": np.array([0, 2], dtype=np.uint64), "atomj": np.array([1, 3], dtype=np.uint64)}


def test_a_bad_frame_mid_batch_refuses_the_whole_batch(new_trajectory: Any) -> None:
    traj = new_trajectory(_declaration())
    traj.append(_frames(0, 1, _bonds())[0])
    frames = _frames(1, 64, _bonds())
    bad = dict(frames[30]["atoms"].columns, vx=np.zeros(ROWS))
    frames[30] = frame(31, blocks={"atoms": bad, "bonds": _bonds()})
    with pytest.raises(mrecd.InvalidRecord) as refused:
        traj.extend(frames)
    assert refused.value.path == "frame 31/atoms"
    assert "not declared" in refused.value.message
    assert len(traj) == 1
    good = _frames(1, 64, _bonds())
    assert traj.extend(good) == 65
    for i, presented in enumerate(good, start=1):
        stored = traj[i]
        for c in "xyz":
            want = mrecd.quantize(presented["atoms"][c].values, 1e-3)
            assert stored["atoms"][c].values.tobytes() == want.tobytes()
    traj.close()


def test_extended_frames_read_back_as_appended_ones(root: Any, tmp_path: Path) -> None:
    frames = _frames(0, 150, _bonds())
    create_trajectory(root, _declaration())
    extended = open_trajectory(root)
    for start in range(0, 150, 64):
        extended.extend(frames[start : start + 64])
    extended.close()
    other = make_root(tmp_path / "appended.mrec")
    create_trajectory(other, _declaration())
    appended = open_trajectory(other)
    for f in frames:
        appended.append(f)
    appended.close()
    a, b = open_trajectory(root), open_trajectory(other)
    assert len(a) == len(b) == 150
    for i in range(150):
        for name in ("atoms", "bonds"):
            assert a[i][name].same_content(b[i][name]), (i, name)


def test_a_producer_array_changed_after_extend_changes_nothing_stored(root: Any) -> None:
    create_trajectory(root, _declaration())
    traj = open_trajectory(root)
    bonds = _bonds()
    traj.extend(_frames(0, 10, bonds))
    bonds["atomj"][:] = [5, 4]  # the producer reuses its arrays in place
    traj.extend(_frames(10, 10, bonds))
    traj.close()
    stored = open_trajectory(root)
    for i in range(20):
        want = [1, 3] if i < 10 else [5, 4]
        assert stored[i]["bonds"]["atomj"].values.tolist() == want
