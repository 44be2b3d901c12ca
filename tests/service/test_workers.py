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
