"""``mrecd ingest --to http://…/NAME``: frames stream into a real ``mrecd serve`` on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from MDAnalysisTests import datafiles as data

import mrecd
from mrecd.cli import main
from mrecd.md import split_url
from mrecd_client import Client

from .conftest import Ingests

ROOT = Path(__file__).parents[2]
ADMIN, APPEND = "admin-token", "append-token"
TOKENS = [{"token": ADMIN, "scope": "admin"}, {"token": APPEND, "scope": "append"}]
DCD = [data.PSF, data.DCD]  # adk in vacuum, 3341 atoms


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``mrecd serve`` process on 127.0.0.1 with an admin and an append token."""
    port, store = free_port(), tmp_path_factory.mktemp("served") / "data"
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'server'}:{ROOT / 'client'}",
        "MRECD_TOKENS": json.dumps(TOKENS),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "mrecd.cli", "serve", str(store), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/readyz", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "mrecd serve did not answer"
                time.sleep(0.1)
        yield url
    finally:
        proc.kill()
        proc.wait(10)


def quiet_ingest(*args: object, **kwargs: object) -> mrecd.md.Ingested:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MDAnalysis's notes on the PSF/DCD
        return mrecd.ingest(*args, **kwargs)  # type: ignore[no-any-return]


def test_ingest_into_a_server_matches_a_local_ingest(server: str, ingested: Ingests) -> None:
    local = ingested["dcd"]  # frames 0-11 of the same files
    done = quiet_ingest(DCD, server, "adk-dcd", token=APPEND, stop=12, progress=False)
    assert (done.frames, done.atoms, done.precision) == (12, 3341, None)
    with Client(server, ADMIN) as client, local.record() as mine:
        theirs = client.record("adk-dcd")
        assert theirs.system == mine.system
        assert theirs.meta["source"] == mine.meta["source"]
        remote, here = theirs.trajectory, mine.trajectory
        assert remote is not None and here is not None
        assert len(remote) == len(here) == 12
        assert list(remote.steps()) == list(here.steps())
        for i in range(12):
            assert remote[i] == here[i], i


def test_cli_ingest_to_with_the_token_from_the_environment(
    server: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MRECD_TOKEN", APPEND)
    args = ["ingest", *DCD, "--to", f"{server}/cli-dcd", "--step", "10", "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(args) == 0
    assert "10 frames of 3341 atoms" in capsys.readouterr().err
    with Client(server, ADMIN) as client:
        traj = client.record("cli-dcd").trajectory
        assert traj is not None and len(traj) == 10


def test_an_existing_record_is_refused_before_reading(
    server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with Client(server, ADMIN) as client:
        client.create_record("taken").close()
    with pytest.raises(mrecd.AlreadyExists):
        quiet_ingest(DCD, server, "taken", token=APPEND, progress=False)
    assert main(["ingest", *DCD, "--to", f"{server}/taken", "--token", APPEND, "--quiet"]) == 2
    assert "taken" in capsys.readouterr().err
    with Client(server, ADMIN) as client:
        untouched = client.record("taken")  # still the empty record it was
        assert untouched.system is None and untouched.trajectory is None


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_a_missing_or_wrong_token_is_refused(
    server: str, token: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(mrecd.PermissionDenied, match="401"):
        quiet_ingest(DCD, server, "no-entry", token=token, progress=False)
    args = ["ingest", *DCD, "--to", f"{server}/no-entry", "--quiet"]
    assert main([*args, "--token", token] if token else args) == 2
    assert "401" in capsys.readouterr().err
    with Client(server, ADMIN) as client:
        assert "no-entry" not in client


def test_an_unreachable_server_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    began = time.monotonic()
    with pytest.raises(mrecd.RetryableError):
        quiet_ingest(DCD, url, "nowhere", progress=False)
    assert main(["ingest", *DCD, "--to", f"{url}/nowhere", "--quiet"]) == 2
    assert "127.0.0.1" in capsys.readouterr().err
    assert time.monotonic() - began < 30


@pytest.mark.parametrize(
    "target", ["http://127.0.0.1:8000", "http://127.0.0.1:8000/", "ftp://host/name", "http:///x"]
)
def test_a_target_without_a_record_name_is_refused(
    target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(mrecd.InvalidRecord):
        split_url(target)
    assert main(["ingest", *DCD, "--to", target, "--quiet"]) == 2
    assert "http://host:port/NAME" in capsys.readouterr().err


def test_split_url() -> None:
    assert split_url("http://h:1/run") == ("http://h:1", "run")
    assert split_url("https://h/api/run.mrec") == ("https://h/api", "run")
