"""SIGKILL the server while a client appends with batches in flight: every frame lands once.

A real ``mrecd serve`` process on 127.0.0.1 is killed (SIGKILL) several
times and restarted on the same port and store while one client appends;
the client's retries carry its batches over each restart and the producer
state committed with the frames drops the repeats.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import mrecd
from mrecd_client import Client, RetryPolicy

from .conftest import make_frame

ROOT = Path(__file__).parents[2]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "server"), str(ROOT / "client")]))
KILLS = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``mrecd serve STORE --port PORT`` as a child process, killed and restarted at will."""

    def __init__(self, store: Path, port: int) -> None:
        self.store, self.port = store, port
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mrecd.cli", "serve", str(self.store), "--port", str(self.port)],
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert self.proc.poll() is None, "mrecd serve exited"
            assert time.monotonic() < deadline, "mrecd serve did not answer"
            time.sleep(0.05)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    server = Server(tmp_path / "data", _free_port())
    server.start()
    yield server
    if server.proc is not None and server.proc.poll() is None:
        server.kill()


def test_sigkill_mid_stream_lands_every_frame_once(server: Server) -> None:
    frames = [make_frame(s) for s in range(400)]
    policy = RetryPolicy(attempts=200, base_delay=0.02, max_delay=0.25)
    with Client(server.url, retries=policy, batch_frames=8, max_in_flight=4) as client:
        record = client.create_record("killed", status={"state": "running"})
        traj = record.trajectory
        assert traj is not None
        errors: list[BaseException] = []

        def produce() -> None:
            try:
                for frame in frames:
                    traj.append(frame)
                    time.sleep(0.002)
                traj.flush()
            except BaseException as exc:
                errors.append(exc)

        producer = threading.Thread(target=produce)
        producer.start()
        for _ in range(KILLS):
            time.sleep(0.4)
            server.kill()
            server.start()
        producer.join(120)
        assert not producer.is_alive() and errors == []
        assert traj.refresh() == len(frames)
    server.kill()
    stored = mrecd.open(server.store).record("killed").trajectory
    assert stored is not None
    assert stored.steps().tolist() == [f.step for f in frames]
    for i in (0, 137, 399):
        assert stored[i] == frames[i]
