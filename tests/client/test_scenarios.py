"""One scenario suite, two back ends: the local API and the client of a real uvicorn.

Each test takes ``catalog``: ``mrecd.open(tmp)`` or ``Client(live_url)``, and
must pass on both, errors included (the same classes). A refused frame is
raised by ``append`` locally and by the ``flush`` after it remotely (appends
are batched), so refusals are checked around ``append`` + ``flush``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd_client import Client

from .conftest import make_frame, serve

SYSTEM = mrecd.Frame({"atoms": {"element": np.array(["O", "H", "H", "C"])}})


@pytest.fixture(params=["local", "remote"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """The local catalog, or a client of a server of an equal catalog."""
    if request.param == "local":
        yield mrecd.open(tmp_path / "local")
        return
    with serve(tmp_path / "served") as url, Client(url) as client:
        yield client


def append_and_flush(traj: Any, *frames: mrecd.Frame) -> int:
    for frame in frames:
        traj.append(frame)
    return int(traj.flush())


def test_an_unborn_run_is_born_through_another_handle(catalog: Any) -> None:
    first = catalog.create_record("run-u")
    assert "run-u" in catalog.records() and not first.refresh()
    other = catalog.record("run-u", "r+")
    assert not other.exists
    append_and_flush(other.trajectory, make_frame(0), make_frame(1))
    other.close()
    assert first.refresh() and "trajectory" in first.sections
    first.close()
    with pytest.raises(mrecd.AlreadyExists):
        catalog.create_record("run-u")


def test_a_run_starts_with_only_its_first_frames(catalog: Any) -> None:
    record = catalog.create_record("run-1", meta={"project": "water"})
    assert not record.exists and record.sections == []
    traj = record.trajectory
    assert traj is not None and traj.declaration is None and len(traj) == 0
    assert traj.append(make_frame(0)) == 1  # declares the trajectory
    assert traj.extend([make_frame(s) for s in range(1, 5)]) == 5
    assert traj.flush() == 5
    assert record.exists and "trajectory" in record.sections
    record.close()

    again = catalog.record("run-1")
    assert again.meta["project"] == "water"
    read = again.trajectory
    assert len(read) == 5 and read.steps().tolist() == [0, 1, 2, 3, 4]
    assert read.declaration is not None and set(read.declaration.meta) == {"pe"}
    assert [f.step for f in read[1:4]] == [1, 2, 3]
    assert read[-1] == make_frame(4)
    assert list(read) == [make_frame(s) for s in range(5)]
    assert np.array_equal(read.times(), 0.5 * np.arange(5))
    assert np.array_equal(read.series("pe", 1, 3), [-1.0, -2.0])
    assert "run-1" in catalog and catalog.records("run") == ["run-1"]
    again.close()


def test_a_restarted_job_continues_its_run(catalog: Any) -> None:
    first = catalog.create_record("job", system=SYSTEM)
    append_and_flush(first.trajectory, make_frame(0), make_frame(1))
    first.close()
    resumed = catalog.create_record("job", exist_ok=True)
    traj = resumed.trajectory
    assert len(traj) == 2
    assert append_and_flush(traj, make_frame(2)) == 3
    assert resumed.system == SYSTEM
    resumed.close()


def test_conditional_appends(catalog: Any) -> None:
    record = catalog.create_record("cond")
    traj = record.trajectory
    assert traj.append(make_frame(0), expected_nstep=0) == 1
    with pytest.raises(mrecd.PreconditionFailed) as caught:
        traj.append(make_frame(1), expected_nstep=0)
    assert caught.value.nstep == 1
    assert traj.extend([make_frame(1), make_frame(2)], expected_nstep=1) == 3
    with pytest.raises(mrecd.InvalidRecord, match="expected_nstep"):
        traj.extend([make_frame(3)], expected_nstep=-2)
    assert traj.flush() == 3
    record.close()


def test_refused_frames_change_nothing(catalog: Any) -> None:
    record = catalog.create_record("strict")
    traj = record.trajectory
    append_and_flush(traj, make_frame(0), make_frame(1))
    undeclared = mrecd.Frame({"ions": {"x": [1.0]}}, meta={"pe": 0.0}, step=9, time=4.5)
    wrong_meta = make_frame(9).replace(meta={"pe": 0.0, "undeclared": 1.0})
    for bad, error in (
        (undeclared, mrecd.InvalidRecord),
        (wrong_meta, mrecd.InvalidRecord),
        (make_frame(1), mrecd.StepOrderError),
        (make_frame(0), mrecd.StepOrderError),
    ):
        with pytest.raises(error):
            append_and_flush(traj, bad)
        assert len(traj) == 2
    assert append_and_flush(traj, make_frame(2)) == 3
    record.close()
    assert catalog.record("strict").trajectory.steps().tolist() == [0, 1, 2]


def test_refusals_of_the_catalog(catalog: Any) -> None:
    with pytest.raises(mrecd.NotFound):
        catalog.record("absent")
    with pytest.raises(mrecd.NotFound):
        catalog.record("absent", "w")  # the name first, as locally
    with pytest.raises(mrecd.InvalidRecord):
        catalog.create_record("../escape")
    catalog.create_record("taken", status={"state": "queued"}).close()
    with pytest.raises(ValueError, match="mode"):
        catalog.record("taken", "w")
    with pytest.raises(mrecd.AlreadyExists):
        catalog.create_record("taken")
    with pytest.raises(mrecd.NotFound):
        catalog.delete_record("absent")
    assert "../escape" not in catalog and "absent" not in catalog


def test_refusals_of_a_trajectory(catalog: Any) -> None:
    writer = catalog.create_record("reads")
    append_and_flush(writer.trajectory, *(make_frame(s) for s in range(3)))
    writer.close()
    record = catalog.record("reads")
    traj = record.trajectory
    for i in (3, -4):
        with pytest.raises(IndexError):
            traj[i]
    with pytest.raises(TypeError):
        traj.read("1")
    with pytest.raises(mrecd.InvalidRecord):
        traj.read(0, blocks=["nope"])
    with pytest.raises(mrecd.InvalidRecord):
        traj.series("nope")
    with pytest.raises(mrecd.ReadOnlyError):
        append_and_flush(traj, make_frame(3))
    assert len(traj) == 3
    record.close()


def test_reads_agree(catalog: Any) -> None:
    writer = catalog.create_record("agree", system=SYSTEM)
    frames = [make_frame(s, pe=float(s) ** 0.5) for s in range(0, 30, 3)]
    append_and_flush(writer.trajectory, *frames)
    writer.close()
    traj = catalog.record("agree").trajectory
    assert traj[::-3] == frames[::-3]
    assert traj[2:8:2][1:] == frames[2:8:2][1:]
    projected = traj.read(4, blocks=["atoms"], columns=["x"])
    assert list(projected["atoms"].columns) == ["x"]
    assert traj.steps().tolist() == [f.step for f in frames]
    assert np.array_equal(traj.series("pe"), [f.meta["pe"] for f in frames])


def test_listing_and_deleting(catalog: Any) -> None:
    for name in ("b", "a", "c-1"):
        catalog.create_record(name, status={"state": "done"}).close()
    assert catalog.records() == ["a", "b", "c-1"] and list(catalog) == ["a", "b", "c-1"]
    catalog.delete_record("b")
    assert catalog.records() == ["a", "c-1"] and "b" not in catalog
    assert catalog.local_path is None or Path(catalog.local_path).is_dir()


def test_a_record_without_trajectory_gets_one_from_its_first_frames(catalog: Any) -> None:
    record = catalog.create_record("static", system=SYSTEM, meta={"kind": "minimized"})
    assert record.exists and "trajectory" not in record.sections
    traj = record.trajectory
    assert traj is not None and len(traj) == 0 and traj.declaration is None
    assert append_and_flush(traj, make_frame(0), make_frame(1)) == 2
    assert "trajectory" in record.sections and traj.declaration is not None
    record.close()
    reread = catalog.record("static")
    assert reread.system == SYSTEM and [f.step for f in reread.trajectory] == [0, 1]
    reread.close()
