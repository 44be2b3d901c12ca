"""A metrics writer killed with SIGKILL leaves a WAL the next writer continues (§4.3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mrecd

CHILD = """
import sys, mrecd
rec = mrecd.create_record(sys.argv[1], status={"state": "running"})
step = 0
while True:
    rec.metrics.log(step, loss=1.0 / (step + 1))
    step += 1
    if step == 50:
        print("ready", flush=True)
"""


def test_a_killed_writer_is_continued_after_its_last_complete_line(tmp_path: Path) -> None:
    path = tmp_path / "run.mrec"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
    finally:
        child.kill()  # SIGKILL: no close, no densify
        child.wait()
    wal = path / "metrics" / "metrics.jsonl"
    with wal.open("ab") as f:
        f.write(b'{"t":"scalar","k":"loss","s":')  # as if killed mid-line
    steps = mrecd.open_record(path).metrics.series("loss").steps
    assert len(steps) >= 50 and steps == list(range(len(steps)))
    with mrecd.open_record(path, "r+") as rec:
        rec.metrics.log(10_000, loss=0.0)
    series = mrecd.open_record(path).metrics.series("loss")
    assert series.steps == [*steps, 10_000]
    assert mrecd.validate_record(path) == []
