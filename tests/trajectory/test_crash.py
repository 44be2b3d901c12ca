"""Crash safety with real processes: SIGKILL a writer at random moments, then check the store.

After each kill the store opens, ``nstep`` is at least the last durable flush
the child reported (and never goes back), every committed frame is
bit-identical to what was written, and a reopened writer appends on cleanly.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mrecd.api._trajectory import open_trajectory

from . import crash_child
from .conftest import make_root

CHILD = Path(crash_child.__file__)
KILLS = int(os.environ.get("MRECD_CRASH_KILLS", "50"))


def run_and_kill(root: Path, seed: int, rng: random.Random) -> int:
    """Start a writer, SIGKILL it after a random delay; the last durable nstep it reported."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(root), str(seed)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None
    ready = child.stdout.readline()
    assert ready.startswith("READY"), ready
    time.sleep(rng.uniform(0.0, 0.25))
    child.send_signal(signal.SIGKILL)
    output, _ = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    durable = [int(line.split()[1]) for line in output.splitlines() if line.startswith("DURABLE")]
    return max(durable, default=0)


def check_store(
    root: Path, floor: int, previous: int, sample: random.Random, expected_cache: list
) -> int:
    traj = open_trajectory(root)
    n = len(traj)
    assert n >= floor, f"nstep {n} below the last durable flush {floor}"
    assert n >= previous, f"nstep went back from {previous} to {n}"
    if len(expected_cache) < n:
        expected_cache[:] = crash_child.expected_frames(n + 200)
    ordinals = (
        set(range(max(0, n - 30), n)) | {sample.randrange(n) for _ in range(30)} if n else set()
    )
    for i in sorted(ordinals):
        if traj[i] != expected_cache[i]:
            pytest.fail(f"frame {i} of {n} differs after a crash; {_keep_evidence(root)}")
    return n


def _keep_evidence(root: Path) -> str:
    """Copy the store somewhere no later pytest run cleans up; where it went."""
    kept = Path(tempfile.mkdtemp(prefix="mrecd-crash-evidence-"))
    shutil.copytree(root, kept / root.name)
    return f"the store is kept at {kept / root.name}"


def test_sigkill_at_random_moments_loses_no_committed_frame(tmp_path: Path) -> None:
    root = make_root(tmp_path / "crash.mrec")
    rng = random.Random(int(os.environ.get("MRECD_CRASH_SEED", "20261129")))
    expected: list = []
    previous = 0
    for kill in range(KILLS):
        floor = run_and_kill(root, seed=kill, rng=rng)
        previous = check_store(root, floor, previous, rng, expected)
    assert previous > 0
    traj = open_trajectory(root)
    n = len(traj)
    expected = crash_child.expected_frames(n + 10)
    assert list(traj) == expected[:n]  # every committed frame, bit-identical
    for i in range(n, n + 10):  # a reopened writer appends on cleanly
        traj.append(crash_child.presented_frame(i))
    traj.close()
    assert list(open_trajectory(root)) == expected


@pytest.mark.slow
@pytest.mark.timeout(0)  # as long as the kills take: `make soak` sets how many
def test_soak_many_kills(tmp_path: Path) -> None:  # pragma: no cover - `make soak`
    root = make_root(tmp_path / "soak.mrec")
    rng = random.Random(7)
    previous, expected = 0, []
    for kill in range(int(os.environ.get("MRECD_SOAK_KILLS", "500"))):
        previous = check_store(root, run_and_kill(root, kill, rng), previous, rng, expected)
