"""Two ``mrecd serve`` processes on one S3 bucket (moto): no lease, conditional PUTs decide.

Eight posters send frames to one trajectory, alternating between the two
servers, as idempotent producers; a poster whose step another overtook takes
a new one, and a few post with ``If-Match`` (retrying on 412). Each server
keeps its writer; a commit that lost the race to the other server's reopens
and tries again inside the server. Every frame lands exactly once,
bit-identical, ``nstep`` as seen through either server never goes back, and
the record validates.
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
import numpy as np
import pytest

import mrecd

from .conftest import FRAMES, _free_port, make_frame, stream

ROOT = Path(__file__).parents[2]
POSTERS = 8
BATCHES = 6


def _start(store: str, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MRECD_")}
    env["PYTHONPATH"] = f"{ROOT / 'server'}:{ROOT / 'client'}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mrecd.cli", "serve", store, "--port", str(port), "--insecure"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
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


@pytest.fixture
def replicas(s3_bucket: str) -> Iterator[tuple[list[str], str]]:
    store = f"{s3_bucket}/lab"
    with mrecd.open(store).create_record("w", meta={"name": "w"}) as record:
        assert record.trajectory is not None
        record.trajectory.append(make_frame(0, pe=-1.0))
    procs, urls = [], []
    try:
        for _ in range(2):
            port = _free_port()
            procs.append(_start(store, port))
            urls.append(f"http://127.0.0.1:{port}")
        yield urls, store
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def _poster(
    urls: list[str], who: int, clock: list[int], lock: threading.Lock, out: list[Any]
) -> None:
    conditional = who % 4 == 3  # two posters use If-Match on nstep instead of producer ids
    for seq in range(BATCHES):
        url = urls[(who + seq) % 2]
        while True:
            with lock:
                clock[0] += 10
                step = clock[0]
            tag = who * 1000 + seq
            headers = {"Content-Type": FRAMES}
            if conditional:
                nstep = httpx.get(f"{url}/v1/records/w/trajectory", timeout=30).json()["nstep"]
                headers["If-Match"] = f'"{nstep}"'
            else:
                headers |= {
                    "Producer-Id": f"p{who}",
                    "Producer-Epoch": "0",
                    "Producer-Seq": str(seq),
                }
            r = httpx.post(
                f"{url}/v1/records/w/trajectory/frames",
                content=stream([make_frame(step, pe=float(tag))]),
                headers=headers,
                timeout=120,
            )
            if r.status_code == 409 and r.json()["type"].endswith("step-order"):
                continue  # another poster's later step landed first: take a new step
            if conditional and r.status_code == 412:
                continue  # another commit landed since we read nstep: read it again
            out.append((who, seq, step, r.status_code, r.json()))
            break


def _watch(urls: list[str], stop: threading.Event, seen: list[list[int]]) -> None:
    while not stop.is_set():
        for k, url in enumerate(urls):
            r = httpx.get(f"{url}/v1/records/w/trajectory", timeout=30)
            seen[k].append(r.json()["nstep"])
        time.sleep(0.02)


def test_two_replicas_on_one_bucket_land_every_frame_once(
    replicas: tuple[list[str], str],
) -> None:
    urls, store = replicas
    clock, lock, out = [0], threading.Lock(), []
    stop, seen = threading.Event(), [[], []]
    watcher = threading.Thread(target=_watch, args=(urls, stop, seen))
    watcher.start()
    threads = [
        threading.Thread(target=_poster, args=(urls, w, clock, lock, out)) for w in range(POSTERS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    stop.set()
    watcher.join(60)

    refused = [(w, s, code, body) for w, s, _, code, body in out if code != 200]
    assert refused == []
    assert len(out) == POSTERS * BATCHES
    firsts = sorted(body["first"] for *_, body in out)
    assert firsts == list(range(1, 1 + POSTERS * BATCHES))  # one frame per nstep, none twice
    # reads through either server never go back, though the other server commits too
    assert all(seen[k] == sorted(seen[k]) for k in range(2)), seen
    with mrecd.open(store).record("w") as record:
        traj = record.trajectory
        assert traj is not None and len(traj) == 1 + POSTERS * BATCHES
        steps = list(traj.steps())
        assert steps == sorted(set(steps))
        for who, seq, step, _, body in out:
            got, sent = traj[body["first"]], make_frame(step, pe=float(who * 1000 + seq))
            assert got.meta["pe"] == sent.meta["pe"] and got.step == step
            for c in "xyz":
                assert np.asarray(got["atoms"][c].values).tobytes() == (
                    np.asarray(sent["atoms"][c].values).tobytes()
                )
    assert mrecd.validate_record(f"{store}/w.mrec") == []


def test_a_read_through_the_writing_replica_sees_the_others_commits(
    replicas: tuple[list[str], str],
) -> None:
    (first, second), _ = replicas

    def post(url: str, steps: range) -> int:
        body = stream([make_frame(s, pe=float(s)) for s in steps])
        r = httpx.post(
            f"{url}/v1/records/w/trajectory/frames",
            content=body,
            headers={"Content-Type": FRAMES},
            timeout=60,
        )
        assert r.status_code == 200, r.text
        return int(r.json()["nstep"])

    def nstep(url: str) -> int:
        return int(httpx.get(f"{url}/v1/records/w/trajectory", timeout=30).json()["nstep"])

    assert post(first, range(10, 12)) == 3  # the first server holds its writer now
    assert post(second, range(20, 25)) == 8
    assert nstep(first) == 8  # not its held writer's 3
    frame = httpx.get(f"{first}/v1/records/w/trajectory/frames/7", timeout=30)
    assert frame.status_code == 200
    assert post(first, range(30, 31)) == 9  # its stale writer reopened after the other's
    assert nstep(second) == 9
