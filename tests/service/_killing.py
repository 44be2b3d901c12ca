"""Harness of the server-kill tests: a killable ``mrecd serve``, posters that retry, checkers.

Every frame is a pure function of (poster, k, step), so a checker can
recompute the exact MRF1 bytes of any frame it reads back and tell a lost,
torn, duplicated or altered frame from a good one.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
import numpy as np

import mrecd
from mrecd.codecs import decode_frame, encode_frame

ROOT = Path(__file__).parents[2]
FRAMES = "application/x-mrec-frames"
SERVE = (sys.executable, "-m", "mrecd.cli", "serve")
#: Generous: a request only times out when the server hangs, which is itself a finding.
TIMEOUT = httpx.Timeout(20.0, connect=2.0)
#: A POST that gives up on its answer at once: the server commits it, the poster never knows.
DROP = httpx.Timeout(20.0, connect=2.0, read=0.001)
#: how often a poster drops the answer of a POST
DROP_RATE = 0.1


def frame_bytes(poster: int, k: int, step: int) -> bytes:
    """MRF1 bytes of frame ``k`` of ``poster`` at ``step``: atoms, ``pe``, ``poster``, ``k``.

    One frame in four has 600 atoms instead of 5, so that a kill also meets
    the longer writes of larger frames and the extents change size.
    """
    rng = np.random.default_rng([poster, k])
    atoms = 600 if rng.random() < 0.25 else 5
    frame = mrecd.Frame(
        {"atoms": {c: rng.uniform(-50, 50, atoms) for c in "xyz"}},
        meta={"pe": float(rng.normal()), "poster": poster, "k": k},
        step=step,
        time=0.25 * step,
    )
    return encode_frame(frame, meta_types=True)


def pack(items: Sequence[bytes]) -> bytes:
    """``application/x-mrec-frames``: each item preceded by its u64 little-endian length."""
    return b"".join(len(item).to_bytes(8, "little") + item for item in items)


def unpack(body: bytes) -> list[bytes]:
    """The items of an ``application/x-mrec-frames`` body."""
    items, at = [], 0
    while at < len(body):
        size = int.from_bytes(body[at : at + 8], "little")
        items.append(body[at + 8 : at + 8 + size])
        at += 8 + size
    if at != len(body):
        raise AssertionError(f"a frame stream ends inside an item ({len(body)} bytes)")
    return items


def identity(item: bytes) -> tuple[int, int, int]:
    """``(poster, k, step)`` of frame bytes made by :func:`frame_bytes`."""
    frame = decode_frame(item)
    assert frame.step is not None
    return int(frame.meta["poster"]), int(frame.meta["k"]), int(frame.step)


class Server:
    """``python -m mrecd.cli serve`` on one directory and port, started and SIGKILLed at will.

    Parameters
    ----------
    store
        The directory served (kept across restarts).
    port
        The loopback port (kept across restarts: posters keep their URL).
    log
        stderr and stdout of every incarnation, appended (read when a start fails).
    workers
        ``--workers``: with more than one, uvicorn's supervisor replaces a
        worker that dies, which :meth:`kill_worker` relies on.
    """

    def __init__(self, store: Path, port: int, log: Path, workers: int = 1) -> None:
        self.store, self.port, self.log, self.workers = store, port, log, workers
        self.url = f"http://127.0.0.1:{port}"
        self.starts = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None

    def start(self, timeout: float = 60.0) -> float:
        """Start an incarnation and wait until ``/healthz`` answers; seconds it took."""
        assert self._proc is None, "already running"
        began = time.monotonic()
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'server'}:{ROOT / 'client'}"}
        self._log_file = self.log.open("ab")
        args = [*SERVE, str(self.store), "--host", "127.0.0.1", "--port", str(self.port)]
        args += ["--workers", str(self.workers)]
        self._proc = subprocess.Popen(
            args,
            env=env,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the kill reaches any child
        )
        self.starts += 1
        while not self._healthy():
            if self._proc.poll() is not None:
                raise RuntimeError(f"mrecd serve exited {self._proc.returncode}: {self.tail()}")
            if time.monotonic() - began > timeout:
                raise RuntimeError(f"mrecd serve not healthy after {timeout} s: {self.tail()}")
            time.sleep(0.05)
        return time.monotonic() - began

    def _healthy(self) -> bool:
        try:
            return httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200
        except httpx.TransportError:
            return False

    def kill(self) -> None:
        """SIGKILL the process group of the running incarnation and reap it."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def worker_pids(self) -> list[int]:
        """Process ids of the workers the supervisor runs now (spawned Python children)."""
        assert self._proc is not None
        pid = self._proc.pid
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except FileNotFoundError:
            return []
        workers = []
        for child in map(int, children):
            with contextlib.suppress(FileNotFoundError):
                if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                    workers.append(child)
        return workers

    def kill_worker(self, rng: random.Random, timeout: float = 60.0) -> float:
        """SIGKILL one worker at random; wait until its replacement serves. Seconds waited."""
        began = time.monotonic()
        victim = rng.choice(self.worker_pids())
        os.kill(victim, signal.SIGKILL)
        while True:
            assert time.monotonic() - began < timeout, f"no worker replaced {victim}: {self.tail()}"
            fresh = [p for p in self.worker_pids() if p != victim]
            if len(fresh) == self.workers and all(self._started(p) for p in fresh):
                return time.monotonic() - began
            time.sleep(0.05)

    def dump_stacks(self) -> str:
        """Ask every serving process for its thread stacks (``SIGUSR1``), then return the
        loopback TCP sockets of the port with their owners and the log's end: where a
        request that got no answer is (unread in a socket, or in which worker's stack)."""
        assert self._proc is not None
        for pid in self.worker_pids() or [self._proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGUSR1)
        time.sleep(1.0)
        sockets = subprocess.run(
            ["ss", "-tnpi", f"( sport = :{self.port} or dport = :{self.port} )"],
            capture_output=True,
            text=True,
            check=False,
        )
        return f"{sockets.stdout}{sockets.stderr}\n{self.tail(60_000)}"

    def _started(self, pid: int) -> bool:
        return f"Started server process [{pid}]".encode() in self.log.read_bytes()

    def tail(self, size: int = 4000) -> str:
        """The end of the log of every incarnation."""
        return self.log.read_bytes()[-size:].decode(errors="replace")


@dataclass
class Ack:
    """A batch the server acknowledged with 200 ``{nstep, first, count}``."""

    record: str
    poster: int
    ks: range
    nstep: int
    first: int | None
    count: int | None
    duplicate: bool = False
    #: every body sent for this batch (renumbered steps after a step-order refusal)
    bodies: list[list[bytes]] = field(default_factory=list)


@dataclass
class Ledger:
    """What the posters saw, shared with the checker (lists only appended to; counts locked)."""

    acks: list[Ack] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    server_errors: list[str] = field(default_factory=list)
    #: batches whose 200 was lost but that had landed (learnt from nstep)
    landed_unacked: int = 0
    #: cleared while the checker reads, so that posting does not outrun reading back
    go: threading.Event = field(default_factory=threading.Event)
    transport_errors: int = 0
    #: POST answers the posters walked away from (on purpose, see ``DROP``)
    dropped: int = 0
    #: answers by status code
    statuses: Counter[int] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, what: str) -> None:
        """Add one to counter ``what`` (``landed_unacked``, ``transport_errors``, ``dropped``)."""
        with self._lock:
            setattr(self, what, getattr(self, what) + 1)

    def answered(self, status: int) -> None:
        """Count an answer of ``status``."""
        with self._lock:
            self.statuses[status] += 1


class Poster(threading.Thread):
    """A thread appending batches of frames (1-4, now and then 16), retrying through kills.

    Subclasses define how a batch is made exactly-once (:meth:`land`) and
    may move on to another record after a batch (:meth:`after_batch`).
    """

    def __init__(self, url: str, record: str, poster: int, ledger: Ledger, seed: int) -> None:
        super().__init__(name=f"poster-{poster}", daemon=True)
        self.poster, self.ledger = poster, ledger
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.http = httpx.Client(base_url=url, timeout=TIMEOUT)
        self._failures = 0
        self.use(record, source=poster)

    def use(self, record: str, source: int) -> None:
        """Append to ``record`` from now on, its frames made as those of poster ``source``."""
        self.record, self.source = record, source
        self.path = f"/v1/records/{record}"
        self.k = 0  # the next frame for this record

    def after_batch(self) -> None:
        """Called after each batch landed; by default the poster keeps its record."""

    def run(self) -> None:
        try:
            while not self.stop.is_set() and not self.ledger.failures:
                if not self.ledger.go.wait(0.1):
                    continue
                count = 16 if self.rng.random() < 0.1 else self.rng.randint(1, 4)
                if self.land(range(self.k, self.k + count)):
                    self.k += count
                    self.after_batch()
        except Exception as exc:  # a harness bug must fail the test, not vanish in a thread
            self.ledger.failures.append(f"{self.name} crashed: {exc!r}")
        finally:
            self.http.close()

    def land(self, ks: range) -> bool:
        """Land frames ``ks`` exactly once; whether they did (``False``: stopped first)."""
        raise NotImplementedError

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response | None:
        """One request; ``None`` when its outcome is unknown (connection lost, 5xx)."""
        try:
            response = self.http.request(method, url, **kwargs)
        except httpx.TransportError:
            self.ledger.count("transport_errors")
            self.backoff()
            return None
        self.ledger.answered(response.status_code)
        if response.status_code >= 500:
            self.ledger.server_errors.append(
                f"{method} {url}: {response.status_code} {response.text}"
            )
            self.backoff()
            return None
        self._failures = 0
        return response

    def post_frames(self, body: bytes, headers: dict[str, str]) -> httpx.Response | None:
        """POST ``body`` to the trajectory; now and then walk away before the answer."""
        if self.rng.random() < DROP_RATE:
            self.ledger.count("dropped")
            return self.request(
                "POST",
                f"{self.path}/trajectory/frames",
                content=body,
                headers=headers,
                timeout=DROP,
            )
        return self.request("POST", f"{self.path}/trajectory/frames", content=body, headers=headers)

    def backoff(self) -> None:
        """Sleep 10 ms doubling to 80 ms, with jitter: the server is restarting, try soon."""
        delay = min(0.01 * 2**self._failures, 0.08)
        self._failures += 1
        self.stop.wait(delay * self.rng.uniform(0.5, 1.5))

    def create(self) -> None:
        """Create the record if absent: a kill loses a record that has no frame yet."""
        while not self.stop.is_set():
            response = self.request("PUT", self.path, params={"exist_ok": "true"}, json={})
            if response is not None:
                self.expect(response, 200, 201)
                return

    def expect(self, response: httpx.Response, *statuses: int) -> None:
        """Record a failure (and stop every poster) unless ``response`` has one of ``statuses``."""
        if response.status_code not in statuses:
            self.ledger.failures.append(
                f"{self.name}: {response.request.method} {response.request.url}"
                f" answered {response.status_code} {response.text}"
            )


class IfMatchPoster(Poster):
    """Sole writer of its records: ``If-Match: "<nstep>"`` makes each batch exactly-once.

    Frame ``k`` has step ``k``, so a trajectory must always be frames
    ``0 .. nstep-1`` of its source. Every 10-40 frames the poster moves on to
    a new record, so that kills also meet record creation and the first
    (declaring) POST.
    """

    def __init__(self, url: str, poster: int, ledger: Ledger, seed: int) -> None:
        super().__init__(url, f"own-{poster}-0", poster, ledger, seed)
        #: every record this poster wrote, with the source its frames are made as
        self.records = {self.record: self.source}
        #: the records it moved on from, with their final nstep
        self.finished: dict[str, int] = {}
        self.quota = self.rng.randint(10, 40)

    def after_batch(self) -> None:
        if self.k >= self.quota:
            self.finished[self.record] = self.k
            generation = len(self.records)
            self.use(f"own-{self.poster}-{generation}", source=100 * self.poster + generation)
            self.records[self.record] = self.source
            self.quota = self.rng.randint(10, 40)

    def land(self, ks: range) -> bool:
        body = pack([frame_bytes(self.source, k, k) for k in ks])
        headers = {"Content-Type": FRAMES, "If-Match": f'"{ks.start}"'}
        while not self.stop.is_set() and not self.ledger.failures:
            response = self.post_frames(body, headers)
            if response is not None and response.status_code == 200:
                return self._acknowledged(ks, response.json())
            if response is not None and response.status_code == 404:
                self.create()
                continue
            if response is not None and response.status_code == 412:
                nstep = response.json()["nstep"]
            elif response is None:  # unknown outcome: only this poster writes, so nstep tells
                nstep = self.nstep()
                if nstep is None:
                    continue
            else:
                self.expect(response, 200)
                return False
            if nstep == ks.start:
                continue  # it did not land: send it again
            if nstep == ks.stop:
                self.ledger.count("landed_unacked")
                return True
            self.ledger.failures.append(
                f"{self.name}: nstep {nstep} after sending frames [{ks.start}, {ks.stop})"
            )
            return False
        return False

    def _acknowledged(self, ks: range, answer: dict[str, Any]) -> bool:
        ack = Ack(self.record, self.poster, ks, answer["nstep"], answer["first"], answer["count"])
        expected = {"nstep": ks.stop, "first": ks.start, "count": len(ks), "duplicate": False}
        if answer != expected:
            self.ledger.failures.append(f"{self.name}: {answer} for frames [{ks.start}, {ks.stop})")
        self.ledger.acks.append(ack)
        return True

    def nstep(self) -> int | None:
        """The committed nstep (0 without a record or trajectory); ``None`` if unknown."""
        response = self.request("GET", f"{self.path}/trajectory")
        if response is None:
            return None
        if response.status_code == 404:
            return 0
        self.expect(response, 200)
        return int(response.json()["nstep"])


class StepClock:
    """Step numbers shared by the posters of one trajectory (steps strictly increase)."""

    def __init__(self) -> None:
        self._next = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> range:
        """``n`` fresh step numbers above every step taken before."""
        with self._lock:
            steps = range(self._next, self._next + n)
            self._next += n
            return steps


class ProducerPoster(Poster):
    """One of several writers of one trajectory: an idempotent producer (epoch 0, seq per batch).

    On an unknown outcome it resends the same bytes with the same sequence;
    after a step-order refusal (another poster's later steps landed first) it
    takes fresh steps and resends the same sequence.
    """

    def __init__(
        self, url: str, record: str, poster: int, ledger: Ledger, seed: int, clock: StepClock
    ) -> None:
        super().__init__(url, record, poster, ledger, seed)
        self.clock = clock
        self.seq = 0

    def land(self, ks: range) -> bool:
        headers = {
            "Content-Type": FRAMES,
            "Producer-Id": f"poster-{self.poster}",
            "Producer-Epoch": "0",
            "Producer-Seq": str(self.seq),
        }
        bodies = [self._items(ks)]
        while not self.stop.is_set() and not self.ledger.failures:
            response = self.post_frames(pack(bodies[-1]), headers)
            if response is None:
                continue  # unknown outcome: the same sequence again; a repeat is answered as such
            if response.status_code == 200:
                answer = response.json()
                self.ledger.acks.append(
                    Ack(
                        self.record,
                        self.poster,
                        ks,
                        answer["nstep"],
                        answer["first"],
                        answer["count"],
                        bool(answer.get("duplicate")),
                        bodies,
                    )
                )
                self.seq += 1
                return True
            if response.status_code == 404:
                self.create()
            elif response.status_code == 409 and response.json().get("type", "").endswith(
                "step-order"
            ):
                bodies.append(self._items(ks))
            else:
                self.expect(response, 200)
                return False
        return False

    def _items(self, ks: range) -> list[bytes]:
        steps = self.clock.take(len(ks))
        return [frame_bytes(self.poster, k, s) for k, s in zip(ks, steps, strict=True)]


class Reader:
    """The checker's view of one trajectory: reads each new frame once, tracks nstep."""

    def __init__(self, url: str, record: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=TIMEOUT)
        self.path = f"/v1/records/{record}/trajectory"
        self.items: list[bytes] = []
        self.nstep = 0

    def refresh(self) -> list[bytes]:
        """Read the frames committed since the last refresh; assert nstep never went back."""
        response = self.http.get(
            f"{self.path}/frames", params={"start": len(self.items)}, headers={"Accept": FRAMES}
        )
        if response.status_code == 404 and not self.items:
            return []  # not created yet, or created with no frames yet (unborn)
        assert response.status_code == 200, response.text
        nstep = int(response.headers["X-Mrecd-Nstep"])
        assert nstep >= self.nstep, f"{self.path}: nstep went back from {self.nstep} to {nstep}"
        new = unpack(response.content)
        assert len(self.items) + len(new) == nstep, f"{self.path}: {len(new)} new of {nstep}"
        self.items.extend(new)
        self.nstep = nstep
        return new

    def close(self) -> None:
        """Close the HTTP client."""
        self.http.close()


@dataclass
class OwnCheck:
    """Checks the records of :class:`IfMatchPoster` threads, reading each frame once.

    Frame ``i`` of a record must be frame ``(source, i, step i)`` bit for bit,
    and every acknowledged batch must be below its record's nstep. A record
    its poster moved on from is read until its final nstep, then left alone.
    """

    url: str
    posters: Sequence[IfMatchPoster]
    #: check only these records (all when ``None``)
    only: set[str] | None = None
    readers: dict[str, Reader] = field(default_factory=dict)

    def __call__(self, acks: Sequence[Ack]) -> int:
        """Read the new frames of the records and check them and ``acks``; frames read."""
        read = 0
        for poster in self.posters:
            for record, source in list(poster.records.items()):
                if self.only is not None and record not in self.only:
                    continue
                reader = self.readers.get(record)
                if reader is None:
                    reader = self.readers[record] = Reader(self.url, record)
                elif poster.finished.get(record) == reader.nstep:
                    continue
                start = len(reader.items)
                for i, item in enumerate(reader.refresh(), start):
                    assert item == frame_bytes(source, i, i), f"{record}: frame {i} differs"
                    read += 1
        for ack in acks:
            if self.only is None or ack.record in self.only:
                nstep = self.readers[ack.record].nstep
                assert ack.nstep <= nstep, f"acknowledged {ack} is missing: nstep {nstep}"
        return read

    def close(self) -> None:
        """Close every reader."""
        for reader in self.readers.values():
            reader.close()


@dataclass
class SharedCheck:
    """Checks one trajectory written by :class:`ProducerPoster` threads, incrementally."""

    reader: Reader
    #: the next frame number expected from each poster (per producer, frames land in order)
    next_k: dict[int, int] = field(default_factory=dict)
    position: dict[tuple[int, int], int] = field(default_factory=dict)
    last_step: int = -1

    def __call__(self, acks: Sequence[Ack]) -> int:
        """Read the new frames and check them and ``acks``; how many frames were read."""
        start = len(self.reader.items)
        new = self.reader.refresh()
        for i, item in enumerate(new, start):
            poster, k, step = identity(item)
            assert item == frame_bytes(poster, k, step), f"frame {i} differs"
            assert step > self.last_step, f"frame {i}: step {step} after {self.last_step}"
            self.last_step = step
            expected = self.next_k.get(poster, 0)
            assert k == expected, f"frame {i} is frame {k} of poster {poster}, not {expected}"
            self.next_k[poster] = k + 1
            self.position[poster, k] = i
        for ack in acks:
            self._check_ack(ack)
        return len(new)

    def _check_ack(self, ack: Ack) -> None:
        missing = [k for k in ack.ks if (ack.poster, k) not in self.position]
        assert not missing, f"acknowledged frames {missing} of poster {ack.poster} are missing"
        assert ack.nstep <= self.reader.nstep, f"{ack} beyond nstep {self.reader.nstep}"
        if ack.first is None:  # a repeat whose first answer the server no longer keeps
            assert ack.duplicate, ack
            return
        assert ack.count == len(ack.ks), ack
        assert self.position[ack.poster, ack.ks.start] == ack.first, ack
        landed = self.reader.items[ack.first : ack.first + ack.count]
        assert landed in ack.bodies, f"frames {ack.first}.. differ from every body sent"
