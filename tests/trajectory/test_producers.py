"""Idempotent producers at the local API: ``Trajectory.extend_once`` and its stored state.

Every rule of the producer contract (docs: /work/briefs/producer-protocol.md,
README conformance notes): a duplicate answers as the first time, a gap and a
stale epoch are refused, a new epoch takes over, refused frames do not advance
the sequence, and the state survives a SIGKILL because it commits with the frames.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mrecd
from mrecd.api import Appended, Producer, validate_record
from mrecd.api._trajectory import Trajectory, open_trajectory
from mrecd.bindings.zarr._producers import MAX_ANSWERS, MAX_PRODUCERS, ProducerTable
from mrecd.errors import (
    InvalidRecord,
    PreconditionFailed,
    ProducerFenced,
    SequenceGap,
    StepOrderError,
    WriterBusy,
)

from .conftest import make_root


def frame(step: int, n: int = 3) -> mrecd.Frame:
    xyz = np.random.default_rng(step).uniform(0, 9, (3, n))
    return mrecd.Frame({"atoms": dict(zip("xyz", xyz, strict=True))}, step=step)


def frames(*steps: int) -> list[mrecd.Frame]:
    return [frame(s) for s in steps]


@pytest.fixture
def traj(tmp_path: Path) -> Any:
    store = mrecd.open(tmp_path / "data")
    record = store.create_record("r", meta={"name": "r"})
    yield record.trajectory
    record.close()


def marker(tmp_path: Path) -> dict[str, Any]:
    doc = json.loads((tmp_path / "data" / "r.mrec" / "trajectory" / "zarr.json").read_text())
    return dict(doc["attributes"])


def test_first_batch_creates_the_trajectory_and_answers(traj: Trajectory) -> None:
    answer = traj.extend_once(frames(0, 10), Producer("job", 0, 0))
    assert answer == Appended(nstep=2, first=0, count=2, duplicate=False)
    assert traj.extend_once(frames(20), Producer("job", 0, 1)) == Appended(3, 2, 1)
    assert [f.step for f in traj] == [0, 10, 20]


def test_a_duplicate_answers_as_the_first_time_and_lands_nothing(traj: Trajectory) -> None:
    traj.extend_once(frames(0, 10), Producer("job", 0, 0))
    traj.extend_once(frames(20), Producer("job", 0, 1))
    traj.extend(frames(30))  # another writer's frames: nstep moves on
    again = traj.extend_once(frames(0, 10), Producer("job", 0, 0), expected_nstep=0)
    assert again == Appended(nstep=2, first=0, count=2, duplicate=True)
    assert len(traj) == 4


def test_a_duplicate_whose_answer_is_forgotten_answers_the_current_nstep(
    traj: Trajectory,
) -> None:
    for s in range(MAX_ANSWERS + 2):
        traj.extend_once(frames(s), Producer("job", 0, s))
    assert traj.extend_once(frames(1), Producer("job", 0, 1)) == Appended(
        MAX_ANSWERS + 2, None, None, duplicate=True
    )
    kept = MAX_ANSWERS + 1
    assert traj.extend_once(frames(kept), Producer("job", 0, kept)).first == kept


def test_an_unknown_producer_starts_at_sequence_zero(traj: Trajectory) -> None:
    with pytest.raises(SequenceGap) as refused:
        traj.extend_once(frames(0), Producer("job", 4, 1))
    assert refused.value.expected == 0 and refused.value.path == "Producer-Seq"
    assert len(traj) == 0 and traj.nstep == 0


def test_a_gap_is_refused_with_the_expected_sequence(traj: Trajectory) -> None:
    traj.extend_once(frames(0), Producer("job", 0, 0))
    with pytest.raises(SequenceGap) as refused:
        traj.extend_once(frames(10), Producer("job", 0, 2))
    assert refused.value.expected == 1 and refused.value.status == 409
    assert len(traj) == 1
    traj.extend_once(frames(10), Producer("job", 0, 1))
    assert traj.extend_once(frames(20), Producer("job", 0, 2)).first == 2


def test_a_new_epoch_takes_over_and_fences_the_old(traj: Trajectory) -> None:
    traj.extend_once(frames(0), Producer("job", 1, 0))
    traj.extend_once(frames(10), Producer("job", 1, 1))
    with pytest.raises(SequenceGap) as refused:
        traj.extend_once(frames(20), Producer("job", 2, 5))
    assert refused.value.expected == 0
    assert traj.extend_once(frames(20), Producer("job", 2, 0)) == Appended(3, 2, 1)
    with pytest.raises(ProducerFenced) as fenced:
        traj.extend_once(frames(30), Producer("job", 1, 2))
    assert fenced.value.epoch == 2 and fenced.value.path == "Producer-Epoch"
    with pytest.raises(ProducerFenced):  # even a retry of the old epoch's committed batch
        traj.extend_once(frames(10), Producer("job", 1, 1))
    assert len(traj) == 3


def test_refused_frames_do_not_advance_the_sequence(traj: Trajectory) -> None:
    traj.extend_once(frames(0, 10), Producer("job", 0, 0))
    with pytest.raises(StepOrderError):
        traj.extend_once(frames(20, 5), Producer("job", 0, 1))
    bad = mrecd.Frame({"atoms": {"x": np.zeros(3)}}, step=30)  # a declared column missing
    with pytest.raises(InvalidRecord):
        traj.extend_once([bad], Producer("job", 0, 1))
    with pytest.raises(PreconditionFailed):
        traj.extend_once(frames(20), Producer("job", 0, 1), expected_nstep=7)
    assert len(traj) == 2
    assert traj.extend_once(frames(20), Producer("job", 0, 1)) == Appended(3, 2, 1)


def test_producers_are_independent(traj: Trajectory) -> None:
    traj.extend_once(frames(0), Producer("a", 0, 0))
    traj.extend_once(frames(10), Producer("b", 7, 0))
    traj.extend_once(frames(20), Producer("a", 0, 1))
    assert traj.extend_once(frames(10), Producer("b", 7, 0)) == Appended(2, 1, 1, True)


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        (("", 0, 0), "id"),
        (("x" * 129, 0, 0), "id"),
        (("a b", 0, 0), "id"),
        (("a", -1, 0), "epoch"),
        (("a", 2**53, 0), "epoch"),
        (("a", True, 0), "epoch"),
        (("a", 0, 1.0), "seq"),
    ],
)
def test_a_malformed_producer_is_refused(fields: tuple[Any, Any, Any], path: str) -> None:
    with pytest.raises(InvalidRecord) as refused:
        Producer(*fields)
    assert refused.value.path == path


def test_the_state_commits_in_the_marker_beside_nstep(traj: Trajectory, tmp_path: Path) -> None:
    traj.extend(frames(0))
    traj.flush()
    assert "mrecd_producers" not in marker(tmp_path)  # no producer: the marker as before
    traj.extend_once(frames(10, 20), Producer("job", 3, 0))
    traj.flush()
    attributes = marker(tmp_path)
    assert attributes["nstep"] == 3
    assert attributes["mrecd_producers"] == [
        {"id": "job", "epoch": 3, "seq": 0, "answers": [[0, 1, 2]]}
    ]


def test_reopened_the_state_answers_retries(tmp_path: Path) -> None:
    store = mrecd.open(tmp_path / "data")
    with store.create_record("r", meta={"name": "r"}) as record:
        assert record.trajectory is not None
        record.trajectory.extend_once(frames(0, 10), Producer("job", 0, 0))
        record.trajectory.extend(frames(20))
    with mrecd.open(tmp_path / "data").record("r", "r+") as record:
        traj = record.trajectory
        assert traj is not None
        assert traj.extend_once(frames(0, 10), Producer("job", 0, 0)) == Appended(2, 0, 2, True)
        assert traj.extend_once(frames(30), Producer("job", 0, 1)) == Appended(4, 3, 1)
    assert validate_record(tmp_path / "data" / "r.mrec") == []


def test_validate_reports_a_damaged_state(tmp_path: Path) -> None:
    with mrecd.open(tmp_path / "data").create_record("r", meta={"name": "r"}) as record:
        assert record.trajectory is not None
        record.trajectory.extend_once(frames(0), Producer("job", 0, 0))
    root = tmp_path / "data" / "r.mrec"
    path = root / "trajectory" / "zarr.json"
    doc = json.loads(path.read_text())
    doc["attributes"]["mrecd_producers"][0]["answers"] = [[0, 5, 9]]
    path.write_text(json.dumps(doc))
    assert any("beyond nstep" in v.message for v in validate_record(root))
    doc["attributes"]["mrecd_producers"] = {"job": 1}
    path.write_text(json.dumps(doc))
    assert any("mrecd_producers" in (v.path or "") for v in validate_record(root))
    with mrecd.open(tmp_path / "data").record("r", "r+") as record:
        assert record.trajectory is not None
        with pytest.raises(InvalidRecord):  # appending refuses a state it cannot trust
            record.trajectory.extend(frames(10))


def test_the_table_forgets_the_least_recently_committed_producer() -> None:
    table = ProducerTable()
    for n in range(MAX_PRODUCERS + 1):
        table.record(Producer(f"p{n}", 0, 0), n, 1)
    assert len(table) == MAX_PRODUCERS and "p0" not in table and "p1" in table
    table.record(Producer("p1", 0, 1), 9000, 1)  # p1 is now the most recent
    table.record(Producer("late", 0, 0), 9001, 1)
    assert "p1" in table and "p2" not in table
    again = ProducerTable.from_attribute(table.to_attribute())
    assert again.to_attribute() == table.to_attribute()


@pytest.mark.parametrize(
    "value",
    [
        {"id": "x"},
        [{"id": "x", "epoch": 0, "seq": 0}],
        [{"id": "x y", "epoch": 0, "seq": 0, "answers": [[0, 0, 1]]}],
        [{"id": "x", "epoch": 0, "seq": 1, "answers": [[0, 0, 1]]}],
        [{"id": "x", "epoch": 0, "seq": 1, "answers": [[1, 0, 1], [0, 1, 1]]}],
        [{"id": "x", "epoch": 0, "seq": 0, "answers": []}],
        [{"id": "x", "epoch": -1, "seq": 0, "answers": [[0, 0, 1]]}],
    ],
)
def test_a_malformed_attribute_is_refused(value: Any) -> None:
    with pytest.raises(InvalidRecord):
        ProducerTable.from_attribute(value)


_CHILD = """
import os, sys
import numpy as np
import mrecd
from mrecd.api import Producer
store = mrecd.open(sys.argv[1])
record = store.create_record("r", meta={"name": "r"})
for seq in range(5):
    batch = [mrecd.Frame({"atoms": {"x": np.full(3, 10.0 * seq + k)}}, step=10 * seq + k)
             for k in range(2)]
    record.trajectory.extend_once(batch, Producer("job", 1, seq))
    record.trajectory.flush()
print("DURABLE", flush=True)
os.kill(os.getpid(), 9)
"""


def test_the_state_survives_sigkill(tmp_path: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ,
    )
    assert child.returncode == -signal.SIGKILL and "DURABLE" in child.stdout, child.stderr
    with mrecd.open(tmp_path / "data").record("r", "r+") as record:
        traj = record.trajectory
        assert traj is not None and len(traj) == 10
        retry = [mrecd.Frame({"atoms": {"x": np.full(3, 30.0)}}, step=30)]
        assert traj.extend_once(retry, Producer("job", 1, 3)) == Appended(8, 6, 2, True)
        with pytest.raises(ProducerFenced):
            traj.extend_once(retry, Producer("job", 0, 5))
        more = [mrecd.Frame({"atoms": {"x": np.full(3, 50.0)}}, step=50)]
        assert traj.extend_once(more, Producer("job", 1, 5)) == Appended(11, 10, 1)
        assert len(traj) == 11


def _held_and_waiting(tmp_path: Path) -> tuple[Any, Any]:
    """Two handles of one record (frame 0 committed): the first holds the writer lease."""
    with mrecd.open(tmp_path / "data").create_record("r", meta={"name": "r"}) as record:
        assert record.trajectory is not None
        record.trajectory.append(frame(0))
    holder = mrecd.open(tmp_path / "data").record("r", "r+")
    waiter = mrecd.open(tmp_path / "data").record("r", "r+")
    assert holder.trajectory is not None and waiter.trajectory is not None
    holder.trajectory.append(frame(10))
    return holder, waiter


def test_acquire_writer_waits_for_the_lease(tmp_path: Path) -> None:
    holder, waiter = _held_and_waiting(tmp_path)
    started = time.monotonic()
    with pytest.raises(WriterBusy):
        waiter.trajectory.acquire_writer(0.2)
    assert time.monotonic() - started >= 0.2
    timer = threading.Timer(0.2, holder.trajectory.release_writer)
    timer.start()
    assert waiter.trajectory.acquire_writer(10) == 2  # took it once released, re-read nstep
    waiter.trajectory.append(frame(20))
    waiter.close()
    holder.close()
    timer.join()
    with mrecd.open(tmp_path / "data").record("r") as record:
        assert record.trajectory is not None
        assert list(record.trajectory.steps()) == [0, 10, 20]


def test_reads_go_on_while_a_writer_waits_for_the_lease(tmp_path: Path) -> None:
    # the service waits for another worker's lease before its commit; its reads of the
    # same trajectory must not wait with it (a checker's GET once timed out behind one)
    holder, waiter = _held_and_waiting(tmp_path)
    waiting = threading.Thread(target=waiter.trajectory.acquire_writer, args=(1.5,))
    waiting.start()
    time.sleep(0.2)  # the waiter is polling for the lease now
    started = time.monotonic()
    assert len(waiter.trajectory) == 1 and waiter.trajectory[0].step == 0
    assert time.monotonic() - started < 0.5
    assert waiting.is_alive()  # still waiting: the holder has not let go
    holder.trajectory.release_writer()
    waiting.join(5)
    assert not waiting.is_alive() and len(waiter.trajectory) == 2
    waiter.close()
    holder.close()


_PRODUCER_CHILD = """
import sys
import numpy as np
import mrecd
from mrecd.api import Producer
from mrecd.api._trajectory import open_trajectory
root, epoch = sys.argv[1], int(sys.argv[2])
traj = open_trajectory(root, flush_every=2)  # automatic commits inside every batch too
seq = len(traj) // 3
while True:
    batch = [mrecd.Frame({"atoms": {"x": np.full(3, float(3 * seq + k))}}, step=3 * seq + k)
             for k in range(3)]
    traj.extend_once(batch, Producer("job", epoch, seq))
    if seq % 3 == 0:
        traj.flush()
        print("DURABLE", seq, flush=True)
    seq += 1
"""


def test_sigkill_mid_stream_keeps_the_state_and_the_frames_together(tmp_path: Path) -> None:
    root = make_root(tmp_path / "run.mrec")
    durable = -1
    for kill, delay in enumerate((0.6, 0.9, 1.3)):
        child = subprocess.Popen(
            [sys.executable, "-c", _PRODUCER_CHILD, str(root), "0"],
            stdout=subprocess.PIPE,
            text=True,
            env=os.environ,
        )
        time.sleep(delay + (3.0 if kill == 0 else 0))  # the first start imports numpy, zarr
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate(timeout=30)
        seen = [int(line.split()[1]) for line in out.splitlines() if line.startswith("DURABLE")]
        durable = max([durable, *seen])
        traj = open_trajectory(root)
        n = len(traj)
        attribute = marker_at(root)["mrecd_producers"]
        stored = attribute[0]["seq"]
        assert n == 3 * (stored + 1), "frames and producer state committed apart"
        assert stored >= durable
        assert attribute[0]["answers"][-1] == [stored, 3 * stored, 3]
        assert [f.step for f in traj] == list(range(n))
        retry = frames(3 * stored, 3 * stored + 1, 3 * stored + 2)
        assert traj.extend_once(retry, Producer("job", 0, stored)) == Appended(n, n - 3, 3, True)
        traj.close()
    assert durable >= 0


def marker_at(root: Path) -> dict[str, Any]:
    return dict(json.loads((root / "trajectory" / "zarr.json").read_text())["attributes"])
