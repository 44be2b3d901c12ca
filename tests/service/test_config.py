"""``mrecd serve --config FILE``: settings from TOML, the environment winning, bad files refused."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from mrecd.cli import main as cli
from mrecd.errors import InvalidRecord
from mrecd.service import Settings
from mrecd.service.settings import check_config

from .conftest import _free_port
from .test_serve import ENV

CONFIG = """
store = "{store}"
anonymous_read = false
max_frames_per_request = 10

[[tokens]]
token = "s3cret"
scope = "admin"
prefix = ""
"""


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No MRECD_* setting leaks in, and whatever ``serve`` exports is undone afterwards."""
    for name in ("MRECD_CONFIG", "MRECD_STORE", "MRECD_TOKENS", "MRECD_ANONYMOUS_READ"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    return monkeypatch


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mrecd.toml"
    path.write_text(text)
    return path


def test_settings_come_from_the_file_and_the_environment_wins(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("MRECD_CONFIG", str(write(tmp_path, CONFIG.format(store="/srv/data"))))
    settings = Settings()
    assert settings.store == "/srv/data" and settings.max_frames_per_request == 10
    assert [g.token.get_secret_value() for g in settings.tokens] == ["s3cret"]
    assert settings.tokens[0].scope == "admin" and not settings.anonymous_read
    clean_env.setenv("MRECD_ANONYMOUS_READ", "true")
    clean_env.setenv("MRECD_STORE", "/elsewhere")
    settings = Settings()
    assert settings.anonymous_read and settings.store == "/elsewhere"
    assert Settings(store="/argument").store == "/argument"


@pytest.mark.parametrize(
    ("text", "path", "words"),
    [
        ("stroe = 'x'\n", "stroe", "names no setting 'stroe'"),
        ("store = \n", "--config", "is not TOML"),
        ("[[tokens]]\ntoken = 't'\nscope = 'root'\n", "tokens.0.scope", "Input should be"),
        ("max_body_bytes = -1\n", "max_body_bytes", "greater than 0"),
    ],
)
def test_a_bad_file_is_refused_naming_the_key(
    tmp_path: Path, text: str, path: str, words: str
) -> None:
    with pytest.raises(InvalidRecord, match=words) as refused:
        check_config(write(tmp_path, text))
    assert refused.value.path == path


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidRecord, match="cannot read") as refused:
        check_config(tmp_path / "absent.toml")
    assert refused.value.path == "--config"


def test_serve_refuses_a_bad_file_before_starting(
    tmp_path: Path, clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(tmp_path, "tokens = 'not a list'\n")
    assert cli(["serve", str(tmp_path / "d"), "--config", str(bad)]) == 2
    assert "tokens" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_tokens_from_the_file_guard_a_real_server(tmp_path: Path) -> None:
    port, store = _free_port(), tmp_path / "data"
    config = write(tmp_path, CONFIG.format(store=store))
    command = [sys.executable, "-m", "mrecd.cli", "serve", "--config", str(config)]
    env = {k: v for k, v in ENV.items() if not k.startswith("MRECD_")}
    proc = subprocess.Popen(
        [*command, "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}/v1/records"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                anonymous = httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "mrecd serve did not answer"
                time.sleep(0.1)
        assert anonymous.status_code == 401
        granted = httpx.get(url, headers={"Authorization": "Bearer s3cret"}, timeout=5)
        assert granted.status_code == 200 and store.is_dir()
    finally:
        proc.terminate()
        proc.wait(10)
