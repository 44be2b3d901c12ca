"""One trajectory protocol: a record's Trajectory and a collection's CollectionTrajectory agree.

The signature test compares public names and ``inspect.signature`` of both
classes with :class:`TrajectoryLike`; every difference must be listed, with
its reason, in ``INTENDED_DIFFERENCES``. The behaviour tests read the same
frames through both and expect the same answers and the same errors.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.api import CollectionTrajectory, FrameSlice, Trajectory, TrajectoryLike

#: class -> member -> why it differs from TrajectoryLike (absent there, or another signature)
INTENDED_DIFFERENCES: dict[str, dict[str, str]] = {
    "Trajectory": {
        "append": "writer: only a record's trajectory is appended to",
        "extend": "writer: many frames, all or nothing",
        "extend_once": "writer: extend as an idempotent producer's batch (issue 12, exactly once)",
        "acquire_writer": "writer: wait for another process's lease (several service workers)",
        "release_writer": "writer: commit and give the lease up, staying open (several workers)",
        "exclusive": "writer: hold the trajectory from admission to flush (service group commits)",
        "flush": "writer: commits queued frames durably",
        "close": "writer: commits and releases the writer lock",
        "nstep": "writer: frames committed on disk, while len counts queued ones too",
        "refresh": "follows a store that another process appends to",
        "url": "a record's trajectory lives at a store URL; a collection's has no URL of its own",
        "count": "Sequence mixin",
        "index": "Sequence mixin",
    },
    "CollectionTrajectory": {
        "declaration": "never None: the collection pins one sequence_schema for every record",
        "read": "adds join= (collection.md §3) and per-block columns={block: names}",
        "joined": "read(i, join=True)",
        "system": "a collection record's system travels with its trajectory",
        "count": "Sequence mixin",
        "index": "Sequence mixin",
    },
}

PROTOCOL_DUNDERS = ("__len__", "__getitem__", "__iter__")


def _members(cls: type) -> dict[str, Any]:
    names = {n for n in dir(cls) if not n.startswith("_")} | set(PROTOCOL_DUNDERS)
    return {n: inspect.getattr_static(cls, n) for n in names if hasattr(cls, n)}


def _signature(member: Any) -> inspect.Signature:
    function = member.fget if isinstance(member, property) else member
    return inspect.signature(function)


def _differences(cls: type) -> dict[str, str]:
    """member -> how ``cls`` differs from the protocol there."""
    protocol, mine = _members(TrajectoryLike), _members(cls)
    out = {n: "not in the protocol" for n in mine.keys() - protocol.keys()}
    out |= {n: "missing" for n in protocol.keys() - mine.keys()}
    for name in protocol.keys() & mine.keys():
        if isinstance(protocol[name], property) != isinstance(mine[name], property):
            out[name] = "property in one, method in the other"
        elif _signature(protocol[name]) != _signature(mine[name]):
            out[name] = f"{_signature(mine[name])} is not {_signature(protocol[name])}"
    return out


@pytest.mark.parametrize("cls", [Trajectory, CollectionTrajectory], ids=lambda c: c.__name__)
def test_names_and_signatures_match_the_protocol(cls: type) -> None:
    differences = _differences(cls)
    listed = INTENDED_DIFFERENCES[cls.__name__]
    assert {n: d for n, d in differences.items() if n not in listed} == {}
    assert sorted(set(listed) - set(differences)) == [], "stale INTENDED_DIFFERENCES entries"


def test_the_signature_check_sees_a_difference() -> None:
    class Drifted(CollectionTrajectory):
        def steps(self, start: int = 0) -> Any:  # type: ignore[override]
            return super().steps()[start:]

    assert "steps" in _differences(Drifted) and "read" in _differences(Drifted)


# -- the same frames, read through both ---------------------------------------------------------

DECLARATION = {
    "blocks": {"atoms": {"columns": {c: {"dtype": "f64", "trailing": []} for c in "xyz"}}},
    "meta": {
        "pe": {"dtype": "f64"},
        "note": {"dtype": "string"},
        "flags": {"dtype": "i64x3"},
        "doc": {"dtype": "json"},
    },
}
N = 6


def _frame(i: int) -> mrecd.Frame:
    xyz = np.random.default_rng(i).uniform(0, 9, (3, 4))
    meta = {"pe": -1.5 * i, "note": f"n{i}", "flags": (i, -i, 2**40), "doc": {"k": [i]}}
    return mrecd.Frame(
        {"atoms": dict(zip("xyz", xyz, strict=True))},
        meta=meta,
        meta_types={"pe": "f64", "note": "string", "flags": "i64x3", "doc": "json"},
        step=10 * i,
        time=0.25 * i,
    )


@pytest.fixture(params=["record", "collection"])
def traj(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    store = mrecd.open(tmp_path / "data")
    declaration = mrecd.Declaration.from_dict(DECLARATION)
    frames = [_frame(i) for i in range(N)]
    if request.param == "record":
        with store.create_record("r", declaration=declaration) as rec:
            rec.trajectory.extend(frames)
        with store.record("r") as rec:
            yield rec.trajectory
    else:
        units = {"length": "angstrom", "energy": "kcal/mol"}
        with store.create_collection("c", meta={"units": units}, declaration=declaration) as col:
            col.append(mrecd.Record(trajectory=frames))
            yield col[0].trajectory


def test_both_conform_at_run_time(traj: Any) -> None:
    assert isinstance(traj, TrajectoryLike)
    assert not isinstance([_frame(0)], TrajectoryLike)


def test_indexing_and_iteration(traj: TrajectoryLike) -> None:
    assert len(traj) == N
    assert traj[0] == _frame(0) and traj[-1] == _frame(N - 1) and traj[-N] == _frame(0)
    assert traj.read(-2) == _frame(N - 2)
    assert list(traj) == [_frame(i) for i in range(N)]


def test_slices_are_lazy_frame_slices(traj: TrajectoryLike) -> None:
    view = traj[1:-1:2]
    assert type(view).__name__ == "FrameSlice" and len(view) == 2
    assert [f.step for f in view] == [10, 30]
    assert view[-1] == _frame(3) and [f.step for f in view[::-1]] == [30, 10]
    assert len(traj[N:]) == 0 and [f.step for f in traj[::-3]] == [50, 20]


def test_steps_times_and_series(traj: TrajectoryLike) -> None:
    steps, times = traj.steps(), traj.times()
    assert steps.dtype == np.int64 and steps.tolist() == [10 * i for i in range(N)]
    assert times is not None and times.dtype == np.float64
    assert times.tolist() == [0.25 * i for i in range(N)]
    pe = traj.series("pe")
    assert pe.dtype == np.float64 and pe.tolist() == [-1.5 * i for i in range(N)]
    assert traj.series("pe", 2, 4).tolist() == [-3.0, -4.5]
    assert traj.series("pe", 4, 99).tolist() == [-6.0, -7.5]
    assert traj.series("pe", 5, 2).shape == (0,)
    flags = traj.series("flags", 1, 3)
    assert flags.dtype == np.int64 and flags.tolist() == [[1, -1, 2**40], [2, -2, 2**40]]
    assert traj.series("flags", 3, 3).shape == (0, 3)
    assert traj.series("note").tolist() == [f"n{i}" for i in range(N)]
    assert traj.series("doc", 0, 2).tolist() == ['{"k":[0]}', '{"k":[1]}']  # as JSON text


def test_projection(traj: TrajectoryLike) -> None:
    frame = traj.read(2, blocks=["atoms"], columns=["x"])
    assert list(frame) == ["atoms"] and list(frame["atoms"]) == ["x"]
    assert frame["atoms"]["x"].values.tolist() == _frame(2)["atoms"]["x"].values.tolist()
    assert frame.step == 20 and frame.meta["pe"] == -3.0


def test_the_same_faults_raise_the_same_classes(traj: TrajectoryLike) -> None:
    for bad in (N, -N - 1):
        with pytest.raises(IndexError):
            traj[bad]
    for wrong in ("0", 1.0, True):
        with pytest.raises(TypeError):
            traj[wrong]  # type: ignore[call-overload]
    with pytest.raises(mrecd.InvalidRecord, match="'angles'"):
        traj.read(0, blocks=["angles"])
    with pytest.raises(mrecd.InvalidRecord, match="'kinetic'"):
        traj.series("kinetic")
    assert traj.declaration is not None and set(traj.declaration.meta) == {
        "pe",
        "note",
        "flags",
        "doc",
    }


# -- FrameSlice over anything with len and read ---------------------------------------------


class _Counting:
    """A source that records which frames were read."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.reads: list[int] = []

    def __len__(self) -> int:
        return self.n

    def read(self, i: int) -> mrecd.Frame:
        self.reads.append(i)
        return _frame(i)


def test_frame_slice_reads_only_what_is_indexed() -> None:
    source = _Counting(10)
    view = FrameSlice(source, range(2, 9, 2))
    assert source.reads == [] and len(view) == 4
    assert view[-1].step == 80 and view[1:][0].step == 40
    assert source.reads == [8, 4]
    assert view == [_frame(i) for i in (2, 4, 6, 8)] and view != [_frame(2)]
    assert view == FrameSlice(_Counting(10), range(2, 10, 2))
    assert repr(view) == "FrameSlice(range(2, 9, 2))"
    with pytest.raises(IndexError, match="outside the 4 frames"):
        view[4]
    with pytest.raises(TypeError):
        view[False]
    with pytest.raises(TypeError):
        view["1"]  # type: ignore[call-overload]


def test_frame_slice_keeps_its_old_import_path() -> None:
    from mrecd.api._trajectory import FrameSlice as Legacy

    assert Legacy.__name__ == "FrameSlice"


# -- len() once the writer is closed (fixed by main's storage-seam work) ---------------------


def test_len_after_close_counts_the_committed_frames(tmp_path: Path) -> None:
    store = mrecd.open(tmp_path / "data")
    with store.create_record("r", declaration=mrecd.Declaration.from_dict(DECLARATION)) as rec:
        trajectory = rec.trajectory
        trajectory.extend([_frame(i) for i in range(3)])
        trajectory.close()
        assert len(trajectory) == 3
