"""Without Chromium the browser tests skip locally, and fail under CI (never a silent pass)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import _unavailable, chromium_path


def test_a_missing_chromium_is_not_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MRECD_CHROMIUM", str(tmp_path / "no-such-chromium"))
    assert chromium_path() is None


def test_without_ci_the_browser_tests_skip_and_say_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"no chromium found.*apt-get install"):
        _unavailable("no chromium found on PATH")


@pytest.mark.parametrize("ci", ["true", "1", "yes"])
def test_under_ci_a_missing_chromium_fails(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        _unavailable("no chromium found on PATH")


def test_ci_false_is_not_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception):
        _unavailable("no chromium found on PATH")
