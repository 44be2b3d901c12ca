"""Unborn runs (a name, perhaps meta, no content yet) are the store's: a durable hidden marker.

Any process sees, opens, appends to and deletes them; a SIGKILL of the
creator loses nothing; of two processes giving one its first frames, one
creates it and the other appends to it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import mrecd
from mrecd.storage import drop_memory_store

MARKER = ".unborn.json"


def frame(step: int) -> mrecd.Frame:
    return mrecd.Frame({"atoms": {"x": np.full(4, float(step))}}, meta={"pe": -1.0}, step=step)


@pytest.fixture(params=["directory", "memory"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "directory":
        yield str(tmp_path / "data")
        return
    name = uuid.uuid4().hex
    yield f"memory://{name}"
    drop_memory_store(name)


def test_an_unborn_run_is_seen_opened_and_born_through_another_catalog(url: str) -> None:
    first = mrecd.open(url)
    first.create_record("job", meta={"temperature_K": 300})
    other = mrecd.open(url)  # another handle on the same store, nothing shared in memory
    assert "job" in other and other.records() == ["job"] and other.records("jo") == ["job"]
    rec = other.record("job", "r+")
    assert not rec.exists and rec.meta["temperature_K"] == 300 and rec.sections == []
    assert rec.trajectory is not None and len(rec.trajectory) == 0
    rec.trajectory.append(frame(0))
    assert rec.exists and rec.sections == ["meta", "trajectory"]
    rec.close()
    with first.record("job") as born:
        assert born.exists and born.meta["temperature_K"] == 300
        assert born.trajectory is not None and len(born.trajectory) == 1
    assert first.record("job").exists  # the marker went at birth
    with pytest.raises(mrecd.AlreadyExists):
        other.create_record("job")


def test_a_section_write_bears_an_unborn_run_opened_elsewhere(url: str) -> None:
    mrecd.open(url).create_record("job")
    rec = mrecd.open(url).record("job", "r+")
    rec.write_status({"state": "running"})
    rec.close()
    with mrecd.open(url).record("job") as born:
        assert born.status == {"state": "running"} and "trajectory" not in born.sections


def test_a_read_only_unborn_handle_refuses_writes_and_follows_the_birth(url: str) -> None:
    catalog = mrecd.open(url)
    writer = catalog.create_record("job")
    reader = mrecd.open(url).record("job")
    assert reader.read_only and not reader.refresh()
    assert reader.trajectory is not None and len(reader.trajectory) == 0
    with pytest.raises(mrecd.ReadOnlyError):
        reader.write_status({"state": "running"})
    writer.trajectory.append(frame(0))  # type: ignore[union-attr]
    writer.close()
    assert reader.refresh() and reader.trajectory is not None and len(reader.trajectory) == 1
    with pytest.raises(mrecd.ReadOnlyError):
        reader.trajectory.append(frame(1))


def test_delete_record_removes_an_unborn_run(url: str) -> None:
    catalog = mrecd.open(url)
    catalog.create_record("job")
    mrecd.open(url).delete_record("job")
    assert "job" not in catalog and catalog.records() == []
    with pytest.raises(mrecd.NotFound):
        catalog.record("job")
    catalog.create_record("job").close()  # the name is free again
    assert catalog.records() == ["job"]


def test_exist_ok_opens_an_unborn_run_created_elsewhere(url: str) -> None:
    mrecd.open(url).create_record("job", meta={"a": 1})
    again = mrecd.open(url).create_record("job", meta={"a": 2}, exist_ok=True)
    assert not again.exists and again.meta["a"] == 1  # the first create's meta stands


def test_the_marker_is_hidden_from_raw_key_reads(tmp_path: Path) -> None:
    catalog = mrecd.open(tmp_path)
    catalog.create_record("job", meta={"a": 1})
    marker = tmp_path / "job.mrec" / MARKER
    assert json.loads(marker.read_text())["meta"]["a"] == 1
    assert catalog.read_key("job", MARKER) is None and catalog.key_info("job", MARKER) is None
    assert not (tmp_path / "job.mrec" / "zarr.json").exists()


def test_a_leftover_marker_beside_a_root_reads_as_born(tmp_path: Path) -> None:
    catalog = mrecd.open(tmp_path)
    catalog.create_record("job", meta={"a": 1}).close()
    marker = (tmp_path / "job.mrec" / MARKER).read_bytes()
    with catalog.record("job", "r+") as rec:
        rec.trajectory.append(frame(0))  # type: ignore[union-attr]
    (tmp_path / "job.mrec" / MARKER).write_bytes(marker)  # a crash between root and marker removal
    assert catalog.records() == ["job"]
    with catalog.record("job", "r+") as rec:
        assert rec.exists and rec.trajectory is not None and len(rec.trajectory) == 1
        rec.trajectory.append(frame(1))
    assert mrecd.validate_record(tmp_path / "job.mrec") == []


_CREATE_AND_HANG = """
import sys, time, mrecd
mrecd.open(sys.argv[1]).create_record("job", meta={"by": "child"})
print("created", flush=True)
time.sleep(600)
"""


def test_an_unborn_run_survives_sigkill_of_its_creator(tmp_path: Path) -> None:
    root = tmp_path / "data"
    child = subprocess.Popen(
        [sys.executable, "-c", _CREATE_AND_HANG, str(root)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "created"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    catalog = mrecd.open(root)
    assert catalog.records() == ["job"]
    with catalog.record("job", "r+") as rec:
        assert rec.meta["by"] == "child" and not rec.exists
        rec.trajectory.append(frame(0))  # type: ignore[union-attr]
    with catalog.record("job") as rec:
        assert rec.trajectory is not None and len(rec.trajectory) == 1


_BIRTH = """
import sys, numpy as np, mrecd
rec = mrecd.open(sys.argv[1]).record("job", "r+")
sys.stdin.readline()
if sys.argv[2] == "status":
    rec.write_status({"state": "running"})
else:
    rec.trajectory.append(mrecd.Frame({"atoms": {"x": np.zeros(4)}}, meta={"pe": -1.0}, step=0))
rec.close()
"""


@pytest.mark.parametrize("attempt", range(3))
def test_two_processes_birthing_one_run_create_it_once_and_both_land(
    tmp_path: Path, attempt: int
) -> None:
    root = tmp_path / "data"
    mrecd.open(root).create_record("job", meta={"attempt": attempt})
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _BIRTH, str(root), first_write],
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for first_write in ("status", "frame")
    ]
    for child in children:  # both open the unborn run, then write as close together as we can
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    for child in children:
        assert child.wait(timeout=120) == 0, child.stderr.read() if child.stderr else ""
    with mrecd.open(root).record("job") as rec:  # whoever lost the birth wrote into the born run
        assert rec.status == {"state": "running"} and rec.meta["attempt"] == attempt
        assert rec.trajectory is not None and len(rec.trajectory) == 1
    assert sorted(p.name for p in (root / "job.mrec").iterdir()) == [
        "meta",
        "status",
        "trajectory",
        "zarr.json",
    ]
    assert mrecd.validate_record(root / "job.mrec") == []


def test_threads_birthing_one_run_create_it_once(url: str) -> None:
    catalog = mrecd.open(url)
    catalog.create_record("job")
    handles = [mrecd.open(url).record("job", "r+") for _ in range(2)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def birth(rec: mrecd.StoredRecord, status: str) -> None:
        barrier.wait()
        try:
            rec.write_status({"state": status})
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [
        threading.Thread(target=birth, args=(h, s))
        for h, s in zip(handles, ("running", "done"), strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []  # no AlreadyExists escapes: the loser writes to the born record
    with catalog.record("job") as rec:
        assert rec.exists and rec.status is not None
        assert rec.status["state"] in ("running", "done")
    for h in handles:
        h.close()


def test_a_create_races_cleanly_on_the_marker(url: str) -> None:
    catalog = mrecd.open(url)
    catalog.create_record("job")
    with pytest.raises(mrecd.AlreadyExists):
        mrecd.open(url).create_record("job")


def test_a_handle_that_missed_the_birth_appends_to_the_born_run(url: str) -> None:
    mrecd.open(url).create_record("job")
    winner = mrecd.open(url).record("job", "r+")
    loser = mrecd.open(url).record("job", "r+")
    late = loser.trajectory  # made while unborn: its first append would create the record
    assert late is not None and not loser.exists
    winner.trajectory.append(frame(0))  # type: ignore[union-attr]
    winner.close()
    late.append(frame(1))  # the birth finds a root: it appends to the born trajectory instead
    loser.write_status({"state": "running"})
    loser.close()
    with mrecd.open(url).record("job") as rec:
        assert rec.trajectory is not None and list(rec.trajectory.steps()) == [0, 1]
        assert rec.status == {"state": "running"}


def test_a_handle_that_missed_a_section_birth_starts_the_trajectory(url: str) -> None:
    mrecd.open(url).create_record("job")
    winner = mrecd.open(url).record("job", "r+")
    loser = mrecd.open(url).record("job", "r+")
    late = loser.trajectory
    winner.write_status({"state": "running"})  # born without a trajectory
    winner.close()
    assert late is not None
    late.append(frame(0))
    loser.close()
    with mrecd.open(url).record("job") as rec:
        assert rec.status == {"state": "running"}
        assert rec.trajectory is not None and len(rec.trajectory) == 1


def test_a_create_with_content_meets_an_unborn_run(url: str) -> None:
    catalog = mrecd.open(url)
    catalog.create_record("job", meta={"a": 1})
    with pytest.raises(mrecd.AlreadyExists, match="already exists"):
        catalog.create_record("job", status={"state": "running"})
    assert not catalog.record("job").exists  # the refused create left the unborn run alone
    with catalog.create_record("job", status={"state": "done"}, overwrite=True) as rec:
        assert rec.exists and rec.status == {"state": "done"} and "a" not in rec.meta
    assert catalog.records() == ["job"] and catalog.record("job").exists
