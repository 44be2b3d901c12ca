"""The README's client example runs as written against a real server (read from the README)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import mrecd

README = Path(__file__).parents[2] / "README.md"


def client_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    return next(b for b in blocks if "from mrecd_client import Client" in b)


def test_the_client_example_runs(live_server: str, capsys: pytest.CaptureFixture[str]) -> None:
    frames = [
        mrecd.Frame(
            {"atoms": {c: np.arange(4.0) + step for c in "xyz"}},
            meta={"pe": -1.0 * step},
            step=step,
        )
        for step in range(5)
    ]
    exec(compile(client_example(), "README.md", "exec"), {"url": live_server, "frames": frames})
    first, second = capsys.readouterr().out.splitlines()
    assert first == "5 4 [0. 1.]"
    assert second == "[0 1 2] [-0. -1. -2.]"


def test_the_collection_example_runs(live_server: str, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    example = next(b for b in blocks if "mrecd_client" in b and "create_collection(" in b)
    records = [
        mrecd.Record(
            {"k": k},
            trajectory=[mrecd.Frame({"atoms": {"x": np.arange(3.0) + k}}, step=0)],
        )
        for k in range(300)
    ]
    seen: list[list[mrecd.Record]] = []
    namespace = {
        "url": live_server,
        "records": records,
        "heavy": list(range(300)),
        "train": seen.append,
    }
    exec(compile(example, "README.md", "exec"), namespace)
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("300 Frame(atoms: 3 rows; step=0) [0 1 2 3 4]")
    assert [len(b) for b in seen] == [256, 44]
    assert sorted(r.meta["k"] for b in seen for r in b) == list(range(300))
