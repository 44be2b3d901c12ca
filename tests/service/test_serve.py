"""``mrecd serve``: starts uvicorn on a fresh store; refuses an open server beyond loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from mrecd.cli import main as cli
from mrecd.service import is_loopback

from .conftest import _free_port

ROOT = Path(__file__).parents[2]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'server'}:{ROOT / 'client'}"}


def test_refuses_beyond_loopback_without_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MRECD_TOKENS", raising=False)
    monkeypatch.setenv("MRECD_STORE", str(tmp_path / "unused"))
    assert cli(["serve", str(tmp_path / "d"), "--host", "0.0.0.0"]) == 2
    assert "--insecure" in capsys.readouterr().err


def test_loopback_hosts() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")


def test_serve_answers_on_a_fresh_store(tmp_path: Path) -> None:
    port, store = _free_port(), tmp_path / "fresh"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mrecd.cli", "serve", str(store), "--port", str(port)],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "mrecd serve did not answer"
                time.sleep(0.1)
        assert r.status_code == 200 and store.is_dir()
        assert httpx.put(f"http://127.0.0.1:{port}/v1/records/a", json={}).status_code == 201
    finally:
        proc.terminate()
        proc.wait(10)
