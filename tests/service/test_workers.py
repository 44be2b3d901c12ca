"""``mrecd serve --workers 2`` on one directory: a POST reaching either worker lands once.

A real ``python -m mrecd.cli serve`` with two worker processes; posters open a
new connection per request so that both workers take appends. Every group
commit waits for the trajectory's writer lease, re-reads what the other
worker committed (frames and producer state), commits and gives the lease up:
every frame lands exactly once, nstep is right, and no client sees WriterBusy.
Then the server is SIGKILLed and restarted: producer retries still answer as
duplicates.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import mrecd
from mrecd.errors import WriterBusy

from .conftest import FRAMES, _free_port, make_frame, stream

ROOT = Path(__file__).parents[2]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'server'}:{ROOT / 'client'}"}
POSTERS = 6
BATCHES = 8


def _start(store: Path, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "mrecd.cli", "serve", str(store), "--port", str(port)]
    proc = subprocess.Popen(
        [*command, "--workers", "2"],
        env={k: v for k, v in ENV.items() if not k.startswith("MRECD_")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # one process group: the test can SIGKILL all of it
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "mrecd serve did not answer"
        time.sleep(0.1)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


def _workers(proc: subprocess.Popen[bytes]) -> list[int]:
    """The worker processes uvicorn started (children of the serving process)."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    return [  # not multiprocessing's resource tracker
        int(c) for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()
    ]


def _written(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


@pytest.fixture
def served(store_dir: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    with mrecd.open(store_dir).create_record("w", meta={"name": "w"}) as record:
        assert record.trajectory is not None
        record.trajectory.append(make_frame(0, pe=-1.0))
    port = _free_port()
    proc = _start(store_dir, port)
    try:
        yield f"http://127.0.0.1:{port}", proc, store_dir
    finally:
        if proc.poll() is None:
            _kill(proc)


def _post(url: str, frames: list[mrecd.Frame], who: int, seq: int) -> httpx.Response:
    """A POST on a connection of its own (so that it may reach either worker)."""
    return httpx.post(
        f"{url}/v1/records/w/trajectory/frames",
        content=stream(frames),
        headers={
            "Content-Type": FRAMES,
            "Producer-Id": f"p{who}",
            "Producer-Epoch": "0",
            "Producer-Seq": str(seq),
        },
        timeout=60,
    )


def _poster(url: str, who: int, clock: list[int], lock: threading.Lock, out: list[Any]) -> None:
    for seq in range(BATCHES):
        while True:
            with lock:
                clock[0] += 10
                step = clock[0]
            tag = who * 1000 + seq
            r = _post(url, [make_frame(step, pe=float(tag))], who, seq)
            if r.status_code == 409 and r.json()["type"].endswith("step-order"):
                continue  # another poster's later step landed first: take a new step
            out.append((who, seq, r.status_code, r.json()))
            break


def test_two_workers_land_every_frame_once(
    served: tuple[str, subprocess.Popen[bytes], Path],
) -> None:
    url, proc, store = served
    workers = _workers(proc)
    assert len(workers) == 2
    before = {pid: _written(pid) for pid in workers}
    clock, lock, out = [0], threading.Lock(), []
    threads = [
        threading.Thread(target=_poster, args=(url, w, clock, lock, out)) for w in range(POSTERS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    refused = [(w, s, code, body) for w, s, code, body in out if code != 200]
    assert refused == []  # never WriterBusy, never a gap
    assert all(not body["duplicate"] and body["count"] == 1 for *_, body in out)
    assert len(out) == POSTERS * BATCHES
    after = {pid: _written(pid) for pid in workers}
    assert all(after[pid] - before[pid] > 4096 for pid in workers), "one worker wrote nothing"

    summary = httpx.get(f"{url}/v1/records/w/trajectory", timeout=10).json()
    assert summary["nstep"] == 1 + POSTERS * BATCHES
    with mrecd.open(store).record("w") as record:
        traj = record.trajectory
        assert traj is not None
        tags = [f.meta["pe"] for f in traj]
        steps = list(traj.steps())
    assert sorted(tags[1:]) == sorted(
        float(w * 1000 + s) for w in range(POSTERS) for s in range(BATCHES)
    )
    assert steps == sorted(set(steps))
    for who, seq, _, body in out:
        assert tags[body["first"]] == who * 1000 + seq

    # SIGKILL the server and start it again: a retry is still a duplicate
    port = int(url.rsplit(":", 1)[1])
    _kill(proc)
    restarted = _start(store, port)
    try:
        last = next(body for w, s, _, body in out if (w, s) == (0, BATCHES - 1))
        retry = _post(url, [make_frame(10**6, pe=0.0)], 0, BATCHES - 1)
        assert retry.status_code == 200 and retry.json() == {**last, "duplicate": True}
        more = _post(url, [make_frame(10**6, pe=0.0)], 0, BATCHES)
        assert more.json()["first"] == 1 + POSTERS * BATCHES and not more.json()["duplicate"]
    finally:
        _kill(restarted)


# -- in process: what a worker does with the lease between commits -------------------------------


def _local_append(store: Path, step: int, wait: float = 0.0) -> None:
    """Another process's append (it may wait ``wait`` s for the lease, as a worker does)."""
    with mrecd.open(store).record("w", "r+") as record:
        assert record.trajectory is not None
        record.trajectory.acquire_writer(wait)
        record.trajectory.append(make_frame(step, pe=-2.0))


def _app_post(client: Any, step: int, seq: int) -> httpx.Response:
    return client.post(
        "/v1/records/w/trajectory/frames",
        content=stream([make_frame(step)]),
        headers={
            "Content-Type": FRAMES,
            "Producer-Id": "solo",
            "Producer-Epoch": "0",
            "Producer-Seq": str(seq),
        },
    )


def test_a_shared_worker_gives_the_lease_up_and_rereads(make_client: Any, store_dir: Path) -> None:
    with mrecd.open(store_dir).create_record("w", meta={"name": "w"}) as record:
        assert record.trajectory is not None
        record.trajectory.append(make_frame(0))
    client = make_client(workers=2)
    assert _app_post(client, 10, 0).json()["first"] == 1
    _local_append(store_dir, 20, wait=5)  # the worker answers, then gives the lease up
    answer = _app_post(client, 30, 1).json()  # the worker re-reads nstep (and its producers)
    assert answer == {"nstep": 4, "first": 3, "count": 1, "duplicate": False}
    assert _app_post(client, 10, 0).json()["duplicate"] is True
    assert client.get("/v1/records/w/trajectory/steps").json()["steps"] == [0, 10, 20, 30]


def test_a_single_worker_keeps_the_lease(make_client: Any, store_dir: Path) -> None:
    with mrecd.open(store_dir).create_record("w", meta={"name": "w"}) as record:
        assert record.trajectory is not None
        record.trajectory.append(make_frame(0))
    client = make_client()
    assert _app_post(client, 10, 0).status_code == 200
    with pytest.raises(WriterBusy):
        _local_append(store_dir, 20, wait=0.3)


def test_a_gap_is_filled_through_another_worker(make_client: Any, store_dir: Path) -> None:
    """Sequence 1 waits in one worker while sequence 0 lands through another."""
    with mrecd.open(store_dir).create_record("w", meta={"name": "w"}) as record:
        assert record.trajectory is not None
        record.trajectory.append(make_frame(0))
    first, second = make_client(workers=2), make_client(workers=2)
    answers: dict[int, Any] = {}
    later = threading.Thread(target=lambda: answers.update({1: _app_post(first, 20, 1)}))
    later.start()
    time.sleep(0.3)  # sequence 1 is parked in the first worker
    answers[0] = _app_post(second, 10, 0)
    later.join(30)
    assert answers[0].json() == {"nstep": 2, "first": 1, "count": 1, "duplicate": False}
    assert answers[1].json() == {"nstep": 3, "first": 2, "count": 1, "duplicate": False}
    assert second.get("/v1/records/w/trajectory/steps").json()["steps"] == [0, 10, 20]


# -- unborn runs: the store's, whichever worker answers -------------------------------------------


def test_a_put_answered_by_one_worker_lands_a_post_on_another(make_client: Any) -> None:
    first, second = make_client(workers=2), make_client(workers=2)
    assert first.put("/v1/records/fresh", json={"meta": {"by": "first"}}).status_code == 201
    again = second.put("/v1/records/fresh", json={})
    assert again.status_code == 409  # the other worker sees the create at once
    assert second.get("/v1/records").json()["records"] == ["fresh"]
    for client, step in ((second, 0), (first, 10), (second, 20)):
        r = client.post(
            "/v1/records/fresh/trajectory/frames",
            content=stream([make_frame(step)]),
            headers={"Content-Type": FRAMES},
        )
        assert r.status_code == 200, r.text
    assert first.get("/v1/records/fresh/trajectory/steps").json()["steps"] == [0, 10, 20]
    assert second.get("/v1/records/fresh/meta").json()["by"] == "first"


def test_two_real_workers_take_a_put_then_posts_on_fresh_connections(store_dir: Path) -> None:
    store_dir.mkdir(parents=True)
    port = _free_port()
    proc = _start(store_dir, port)
    url = f"http://127.0.0.1:{port}"
    try:
        assert httpx.put(f"{url}/v1/records/fresh", json={}, timeout=30).status_code == 201
        answers = [
            httpx.post(  # a new connection each: they reach both workers
                f"{url}/v1/records/fresh/trajectory/frames",
                content=stream([make_frame(10 * i)]),
                headers={"Content-Type": FRAMES},
                timeout=60,
            )
            for i in range(8)
        ]
        assert [r.status_code for r in answers] == [200] * 8, [r.text for r in answers]
        assert [r.json()["first"] for r in answers] == list(range(8))
    finally:
        _kill(proc)
    with mrecd.open(store_dir).record("fresh") as record:
        assert record.trajectory is not None and len(record.trajectory) == 8
