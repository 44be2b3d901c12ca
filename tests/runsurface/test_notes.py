"""The README's run-record example runs as written and prints what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NOTES = Path(__file__).parents[2] / "README.md"


def test_the_notes_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", NOTES.read_text(), flags=re.DOTALL)
    example = next(b for b in blocks if "metrics.log" in b)
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out == ["[1, 2, 3] [1.         0.5        0.33333333]", "e*angstrom"]
