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


# -- collections -------------------------------------------------------------------------------

UNITS = {"length": "angstrom", "energy": "kcal/mol"}


def small_record(k: int, n_frames: int = 2) -> mrecd.Record:
    """Record ``k``: a three-atom system and ``n_frames`` frames of x positions."""
    trajectory = [
        mrecd.Frame({"atoms": {"x": np.arange(3.0) + k + s}}, meta={"pe": -float(s)}, step=s)
        for s in range(n_frames)
    ]
    system = mrecd.Frame({"atoms": {"element": np.array(["O", "H", "H"])}})
    return mrecd.Record({"k": k}, system=system, trajectory=trajectory)


def test_a_collection_grows_and_reads_back(catalog: Any) -> None:
    columns = {"n_heavy": {"dtype": "i64"}}
    with catalog.create_collection("qm", meta={"units": UNITS}, index_columns=columns) as col:
        assert len(col) == 0 and col.declaration is None and col.mode == "r+"
        assert col.append(small_record(0), index={"n_heavy": 0}) == 0
        assert col.declaration is not None and set(col.declaration.blocks) == {"atoms"}
        added = col.extend([small_record(k) for k in range(1, 6)], index={"n_heavy": [1] * 5})
        assert added == range(1, 6)
        assert col.extend([]) == range(6, 6)
    assert "qm" in catalog.collections() and catalog.collections("x") == []
    with catalog.collection("qm") as col:
        assert len(col) == 6 and col.n_frames == 12 and col.mode == "r"
        assert col.meta["units"] == UNITS and col.index_columns["n_heavy"]["dtype"] == "i64"
        assert col.forcefield is None
        index = col.index
        assert index["first_frame"].values.tolist() == [0, 2, 4, 6, 8, 10]
        assert index["n_heavy"].values.tolist() == [0, 1, 1, 1, 1, 1]
        third = col[3]
        assert third.meta == {"k": 3} and third.system == small_record(3).system
        assert list(third.trajectory) == small_record(3).trajectory
        assert col[-1].meta == {"k": 5}
        many = col.read_many([5, 0, -3, 0])
        assert [r.meta["k"] for r in many] == [5, 0, 3, 0]
        assert list(many[0].trajectory) == small_record(5).trajectory
        assert [r.meta["k"] for r in col[1:3]] == [1, 2]
        assert [r.meta["k"] for r in col] == list(range(6))


def test_batches_are_the_same_epoch_both_ways(catalog: Any) -> None:
    with catalog.create_collection("loader", meta={"units": UNITS}) as col:
        col.extend([small_record(k, 1 + k % 3) for k in range(10)])
    with catalog.collection("loader") as col:
        shuffled = [[r.meta["k"] for r in batch] for batch in col.batches(4, seed=7)]
        order = np.random.default_rng(7).permutation(10).tolist()
        assert shuffled == [order[0:4], order[4:8], order[8:10]]
        plain = [[r.meta["k"] for r in b] for b in col.batches(3, shuffle=False, drop_last=True)]
        assert plain == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
        (batch,) = list(col.batches(10, seed=1))
        assert sorted(r.meta["k"] for r in batch) == list(range(10))
        assert all(
            list(r.trajectory) == small_record(r.meta["k"], 1 + r.meta["k"] % 3).trajectory
            for r in batch
        )
        with pytest.raises(ValueError, match="size"):
            next(iter(col.batches(0)))


def test_refusals_of_a_collection(catalog: Any) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        catalog.create_collection("bad", meta={})  # no units
    with pytest.raises(mrecd.InvalidRecord):
        catalog.create_collection("../escape", meta={"units": UNITS})
    with pytest.raises(mrecd.NotFound):
        catalog.collection("absent")
    assert catalog.collections() == []
    col = catalog.create_collection("strict", meta={"units": UNITS})
    col.append(small_record(0))
    with pytest.raises(mrecd.AlreadyExists):
        catalog.create_collection("strict", meta={"units": UNITS})
    undeclared = mrecd.Record({}, trajectory=[mrecd.Frame({"ions": {"x": [1.0]}}, step=0)])
    with pytest.raises(mrecd.InvalidRecord):
        col.extend([small_record(1), undeclared])  # all or nothing
    with pytest.raises(mrecd.InvalidRecord):
        col.append(mrecd.Record({}, status={"state": "done"}))  # not a collection record
    with pytest.raises(mrecd.InvalidRecord):
        col.append(small_record(1), index={"nope": 1})
    assert len(col) == 1
    for r in (1, -2):
        with pytest.raises(IndexError):
            col[r]
    with pytest.raises(mrecd.RecordOutOfRange):
        col.read_many([0, 1])
    with pytest.raises(TypeError):
        col["0"]
    with pytest.raises(ValueError, match="mode"):
        catalog.collection("strict", "w")
    col.close()
    with catalog.collection("strict") as read_only, pytest.raises(mrecd.ReadOnlyError):
        read_only.append(small_record(2))
