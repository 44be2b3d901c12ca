"""SIGKILL a real ``mrecd serve`` at random moments while 8 posters append with retries.

After every restart, and at the end, every acknowledged frame is on the
store bit for bit at its acknowledged position, no frame is there twice,
nstep never went back, and a batch whose answer was lost landed whole or not
at all. The kills restart the whole server, or (``--workers 2``) take one
worker down while the other serves on. ``MRECD_SERVER_KILLS`` sets the
kills of the three normal tests together (20: 10 + 6 + 4); ``make soak``
runs the slow variants with ``MRECD_SOAK_SERVER_KILLS`` (200: 100 + 60 + 40).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from ._killing import (
    Ack,
    IfMatchPoster,
    Ledger,
    OwnCheck,
    Poster,
    ProducerPoster,
    Reader,
    Server,
    SharedCheck,
    StepClock,
    frame_bytes,
)
from .conftest import _free_port

POSTERS = 8
KILLS = int(os.environ.get("MRECD_SERVER_KILLS", "20"))
SOAK_KILLS = int(os.environ.get("MRECD_SOAK_SERVER_KILLS", "200"))
SEED = int(os.environ.get("MRECD_SERVER_KILL_SEED", "20261202"))

Check = Callable[[Sequence[Ack]], int]
#: SIGKILLs (part of) the server and waits until it serves again; the seconds that took
Crash = Callable[["Server", random.Random], float]


@dataclass
class Tally:
    """What a run did, for the assertions and the printed summary."""

    kills: int = 0
    acked_frames: int = 0
    frames_checked: int = 0
    seconds: float = 0.0
    restart_seconds: float = 0.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """A killable server on ``tmp_path/data``; its process group is killed at teardown."""
    srv = Server(tmp_path / "data", _free_port(), tmp_path / "serve.log")
    yield srv
    srv.kill()


def restart(server: Server, rng: random.Random) -> float:
    """SIGKILL the whole server and start it again; seconds until it answered."""
    server.kill()
    time.sleep(rng.choice([0.0, rng.uniform(0.0, 0.3)]))  # posters meet a closed port
    return server.start()


def kill_one_worker(server: Server, rng: random.Random) -> float:
    """SIGKILL one worker (the others serve on); seconds until its replacement serves."""
    return server.kill_worker(rng)


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[Server]:
    """As ``server``, with ``--workers 2`` (uvicorn replaces a worker that dies)."""
    srv = Server(tmp_path / "data", _free_port(), tmp_path / "serve.log", workers=2)
    yield srv
    srv.kill()


def kill_repeatedly(
    server: Server,
    posters: list[Poster],
    ledger: Ledger,
    check: Check,
    kills: int,
    crash: Crash = restart,
) -> Tally:
    """Run ``posters`` against ``server``, ``crash`` it ``kills`` times at random moments.

    ``check`` runs after each restart (and once more after the posters
    stopped) with the acknowledgements made before it started.
    """
    rng, tally, began = random.Random(SEED), Tally(), time.monotonic()
    tally.restart_seconds += server.start()
    ledger.go.set()
    for poster in posters:
        poster.start()
    try:
        for _ in range(kills):
            await_progress(ledger)  # the first requests after a start open the records
            time.sleep(rng.uniform(0.0, 0.6))  # then a random moment, commits in flight
            tally.restart_seconds += crash(server, rng)
            tally.kills += 1
            ledger.go.clear()  # posters finish the batch they hold, then wait for the check
            tally.frames_checked += checked(server, check, ledger)
            ledger.go.set()
            assert not ledger.failures, ledger.failures
    finally:
        for poster in posters:
            poster.stop.set()
        for poster in posters:
            poster.join(30)
    assert not any(p.is_alive() for p in posters), "a poster did not stop"
    tally.frames_checked += check(list(ledger.acks))
    assert not ledger.failures, ledger.failures
    assert not ledger.server_errors, ledger.server_errors[:5]
    tally.acked_frames = sum(len(a.ks) for a in ledger.acks)
    tally.seconds = time.monotonic() - began
    duplicates = sum(a.duplicate for a in ledger.acks)
    print(f"\n{tally}\n{ledger.statuses=} {ledger.transport_errors=} {ledger.dropped=}")
    print(f"{ledger.landed_unacked=} {duplicates=} acks={len(ledger.acks)}")
    return tally


def checked(server: Server, check: Check, ledger: Ledger) -> int:
    """``check`` the acknowledgements so far; a checker request left unanswered fails the
    test with the server's stacks and sockets, to tell a hung worker from a lost request."""
    try:
        return check(list(ledger.acks))
    except httpx.TimeoutException as timeout:
        pytest.fail(f"the checker got no answer ({timeout!r}):\n{server.dump_stacks()}")


def await_progress(ledger: Ledger, timeout: float = 30.0) -> None:
    """Wait until a poster gets a new acknowledgement."""
    before, deadline = len(ledger.acks), time.monotonic() + timeout
    while len(ledger.acks) == before and not ledger.failures:
        assert time.monotonic() < deadline, f"no acknowledgement in {timeout} s"
        time.sleep(0.01)


def split(kills: int) -> tuple[int, int, int]:
    """``kills`` shared out: own records (half), shared trajectory, one of two workers (a fifth)."""
    workers, shared = max(1, kills // 5), max(1, kills * 3 // 10)
    return max(1, kills - shared - workers), shared, workers


def own_records(server: Server, kills: int, crash: Crash = restart) -> Tally:
    """8 posters, each the only writer of its records, exactly-once by ``If-Match``."""
    ledger = Ledger()
    posters = [IfMatchPoster(server.url, p, ledger, seed=SEED + p) for p in range(POSTERS)]
    check = OwnCheck(server.url, posters)
    try:
        tally = kill_repeatedly(server, list(posters), ledger, check, kills, crash)
    finally:
        check.close()
    assert {a.poster for a in ledger.acks} == set(range(POSTERS)), "a poster never got an answer"
    assert tally.frames_checked == sum(r.nstep for r in check.readers.values())
    for poster in posters:  # the batches a poster saw land (acknowledged or learnt) are there
        assert check.readers[poster.record].nstep >= poster.k
        for record, nstep in poster.finished.items():  # and nothing after a record's last
            assert check.readers[record].nstep == nstep, record
    # the records that lived through the most kills, and a sample, read again from frame 0
    finished = sorted(r for p in posters for r in p.finished)
    sample = {p.record for p in posters} | set(
        random.Random(SEED).sample(finished, min(8, len(finished)))
    )
    again = OwnCheck(server.url, posters, only=sample)
    try:
        assert again(ledger.acks) == sum(check.readers[r].nstep for r in sample)
    finally:
        again.close()
    return tally


def shared_record(server: Server, kills: int, crash: Crash = restart) -> Tally:
    """8 idempotent producers appending to one trajectory, steps from one shared clock."""
    ledger, clock = Ledger(), StepClock()
    posters: list[Poster] = [
        ProducerPoster(server.url, "shared", p, ledger, seed=SEED + p, clock=clock)
        for p in range(POSTERS)
    ]
    reader = Reader(server.url, "shared")
    try:
        check = SharedCheck(reader)
        tally = kill_repeatedly(server, posters, ledger, check, kills, crash)
    finally:
        reader.close()
    assert {a.poster for a in ledger.acks} == set(range(POSTERS)), "a poster never got an answer"
    for poster in posters:  # every batch a poster saw acknowledged is there
        assert check.next_k.get(poster.poster, 0) >= poster.k
    return tally


def test_sigkill_loses_and_duplicates_no_acknowledged_frame(server: Server) -> None:
    own = split(KILLS)[0]
    tally = own_records(server, own)
    assert tally.kills == own >= 1 and tally.acked_frames > 0


def test_sigkill_with_producers_sharing_one_trajectory(server: Server) -> None:
    shared = split(KILLS)[1]
    tally = shared_record(server, shared)
    assert tally.kills == shared >= 1 and tally.acked_frames > 0


def test_sigkill_one_of_two_workers_under_producers(two_workers: Server) -> None:
    kills = split(KILLS)[2]
    tally = shared_record(two_workers, kills, kill_one_worker)
    assert tally.kills == kills >= 1 and tally.acked_frames > 0


@pytest.mark.slow
@pytest.mark.timeout(0)  # as long as the kills take: `make soak` sets how many
def test_soak_server_kills(server: Server) -> None:  # pragma: no cover - `make soak`
    own_records(server, split(SOAK_KILLS)[0])


@pytest.mark.slow
@pytest.mark.timeout(0)
def test_soak_server_kills_shared(server: Server) -> None:  # pragma: no cover - `make soak`
    shared_record(server, split(SOAK_KILLS)[1])


@pytest.mark.slow
@pytest.mark.timeout(0)
def test_soak_worker_kills(two_workers: Server) -> None:  # pragma: no cover - `make soak`
    kills = split(SOAK_KILLS)[2]
    shared_record(two_workers, kills // 2, kill_one_worker)
    two_workers.kill()
    own_records(two_workers, kills - kills // 2, kill_one_worker)


def test_an_acknowledged_empty_put_survives_a_kill(server: Server) -> None:
    server.start()
    assert httpx.put(f"{server.url}/v1/records/unborn", json={}).status_code == 201
    server.kill()
    server.start()
    assert httpx.get(f"{server.url}/v1/records/unborn").status_code == 200
    assert httpx.get(f"{server.url}/v1/records").json()["records"] == ["unborn"]
    landed = httpx.post(
        f"{server.url}/v1/records/unborn/trajectory/frames",
        content=frame_bytes(0, 0, 0),
        headers={"Content-Type": "application/x-mrec-frame"},
    )
    assert landed.status_code == 200 and landed.json()["nstep"] == 1
    server.kill()
    server.start()
    assert httpx.get(f"{server.url}/v1/records/unborn/trajectory").json()["nstep"] == 1


def test_a_server_asked_for_its_stacks_prints_them_and_serves_on(server: Server) -> None:
    server.start()
    report = server.dump_stacks()
    assert "(most recent call first)" in report  # without the handler, SIGUSR1 kills it
    assert "uvicorn" in report, report[-2000:]  # the serving thread's frames are in the log
    assert httpx.get(f"{server.url}/healthz", timeout=5.0).status_code == 200
