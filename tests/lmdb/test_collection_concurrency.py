"""One writer, many readers, also in other processes (lmdb.md §1): readers see
committed records only and never a torn one; writers in turn."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from collection_workers import DECLARATION, check, record

import mrecd

WORKERS = Path(__file__).with_name("collection_workers.py")
SERVER = Path(__file__).parents[2] / "server"


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SERVER), env.get("PYTHONPATH")]))
    return subprocess.Popen(
        [sys.executable, str(WORKERS), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return out


def _create(path: Path) -> None:
    mrecd.create_collection(
        path, meta={"units": {"length": "angstrom"}}, declaration=DECLARATION
    ).close()


@pytest.mark.parametrize("n_readers", [1, 3])
def test_readers_in_other_processes_see_whole_records(tmp_path: Path, n_readers: int) -> None:
    path = tmp_path / "live.mrec.lmdb"
    _create(path)
    total = 240
    readers = [_spawn("reader", str(path), str(total)) for _ in range(n_readers)]
    for proc in readers:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    with mrecd.open_collection(path, "r+") as col:
        for tag in range(total):
            assert col.append(record(tag)) == tag
    outputs = [_finish(proc) for proc in readers]
    seen = [int(out.split("lengths")[1]) for out in outputs]
    assert all(n > 2 for n in seen), seen  # each reader watched the file grow


def test_writer_in_another_process_readers_here(tmp_path: Path) -> None:
    path = tmp_path / "live.mrec.lmdb"
    _create(path)
    total = 200
    proc = _spawn("writer", str(path), "0", str(total))
    with mrecd.open_collection(path) as col:
        last = 0
        while proc.poll() is None or last < total:
            n = len(col)
            assert n >= last
            last = n
            if n:
                check(col[n - 1], n - 1)
            if proc.poll() is not None and proc.returncode != 0:
                break
        _finish(proc)
        assert len(col) == total
        assert col.n_frames == sum(t % 4 for t in range(total))
        for r, rec in enumerate(col.read_many(range(total))):
            check(rec, r)


def test_writers_in_several_processes_take_turns(tmp_path: Path) -> None:
    path = tmp_path / "rivals.mrec.lmdb"
    _create(path)
    count = 60
    rivals = [_spawn("rival", str(path), str(w), str(count)) for w in range(3)]
    for proc in rivals:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in rivals:
        _finish(proc)
    with mrecd.open_collection(path) as col:
        assert len(col) == 3 * count
        by_writer: dict[int, list[int]] = {}
        for rec in col:
            by_writer.setdefault(rec.meta["writer"], []).append(rec.meta["tag"])
        assert by_writer == {w: list(range(count)) for w in range(3)}
        for rec in col:
            check(rec, rec.meta["tag"], rec.meta["writer"])


def test_threads_share_one_environment(tmp_path: Path) -> None:
    path = tmp_path / "threads.mrec.lmdb"
    _create(path)
    total = 150
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        try:
            with mrecd.open_collection(path) as col:
                while not done.is_set() or len(col) < total:
                    n = len(col)
                    if n:  # two writers interleave: the tag says which record it is
                        newest = col[n - 1]
                        check(newest, newest.meta["tag"])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    def write(start: int) -> None:
        try:
            with mrecd.open_collection(path, "r+") as col:
                for tag in range(start, total, 2):
                    col.append(record(tag))
        except BaseException as exc:
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for thread in readers:
        thread.start()
    writers = [threading.Thread(target=write, args=(s,)) for s in (0, 1)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    done.set()
    for thread in readers:
        thread.join()
    assert not errors, errors
    with mrecd.open_collection(path) as col:
        assert sorted(rec.meta["tag"] for rec in col) == list(range(total))


def _snapshots_while_growing(path: Path, base: int, appended: int, n_readers: int) -> None:
    """``base`` records in bulk, then a writer here appends ``appended`` more (single
    appends and extends) while readers in other processes check whole snapshots."""
    _finish(_spawn("bulk", str(path), str(base)))
    total = base + appended
    readers = [_spawn("snapshot_reader", str(path), str(total)) for _ in range(n_readers)]
    for proc in readers:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    with mrecd.open_collection(path, "r+") as col:
        tag = base
        while tag < total:
            if tag % 7 == 0 and tag + 3 <= total:
                assert col.extend([record(t) for t in range(tag, tag + 3)]) == range(tag, tag + 3)
                tag += 3
            else:
                assert col.append(record(tag)) == tag
                tag += 1
    seen = [int(_finish(proc).split("snapshots")[1]) for proc in readers]
    assert all(n > 3 for n in seen), seen
    with mrecd.open_collection(path) as col:
        assert len(col) == total
        for r in (0, base - 1, base, total - 1):
            check(col[r], r)


def test_snapshots_while_a_paged_collection_grows(tmp_path: Path) -> None:
    """Past one index page (512 rows): readers refresh page by page."""
    _snapshots_while_growing(tmp_path / "grow.mrec.lmdb", 1500, 150, 2)


@pytest.mark.slow
def test_snapshots_at_a_hundred_thousand_records(tmp_path: Path) -> None:
    _snapshots_while_growing(tmp_path / "big.mrec.lmdb", 100_000, 400, 2)
