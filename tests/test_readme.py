"""The README's ten-line example runs as written (it is read from the README itself)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def block_with(text: str) -> str:
    """The README's Python block that contains ``text``."""
    return next(b for b in python_blocks() if text in b)


def test_the_ten_line_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    example = python_blocks()[0]
    assert len(example.strip().splitlines()) <= 12
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "README.md", "exec"), {})
    assert (tmp_path / "data" / "run-42.mrec.zip").is_file()
    assert capsys.readouterr().out.startswith("990 ")


def test_the_precision_example_declares_what_it_says(tmp_path: Path) -> None:
    import mrecd

    namespace: dict[str, object] = {"store": mrecd.open(tmp_path), "mrecd": mrecd}
    exec(compile(block_with("run-43"), "README.md", "exec"), namespace)
    rec = namespace["rec"]
    assert isinstance(rec, mrecd.StoredRecord) and rec.trajectory is not None
    declaration = rec.trajectory.declaration
    assert declaration is not None and declaration.blocks["atoms"].columns["x"].precision == 1e-3
    rec.close()
    assert os.path.isdir(tmp_path / "run-43.mrec")


def test_the_unborn_run_example_runs(tmp_path: Path) -> None:
    import numpy as np

    import mrecd

    store = mrecd.open(tmp_path)
    first = mrecd.Frame({"atoms": {"x": np.zeros(3)}}, step=0)
    namespace: dict[str, object] = {"store": store, "first_frame": first}
    exec(compile(block_with("job-7"), "README.md", "exec"), namespace)
    namespace["rec"].close()  # type: ignore[attr-defined]
    assert store.records() == ["job-7"]
    second = mrecd.Frame({"atoms": {"x": np.ones(3)}}, step=1)
    namespace["first_frame"] = second
    exec(compile(block_with("job-7"), "README.md", "exec"), namespace)  # a restarted job
    rec = namespace["rec"]
    assert isinstance(rec, mrecd.StoredRecord) and rec.trajectory is not None
    assert len(rec.trajectory) == 2
    rec.close()
