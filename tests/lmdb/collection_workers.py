"""Worker processes for the concurrency tests: ``python collection_workers.py <role> ...``.

Record ``r`` (or ``i`` of a writer) has content derived from its ordinal only,
so any process can check that a record it reads is whole.
"""

from __future__ import annotations

import random
import sys
import time
from typing import Any

import numpy as np

import mrecd

DECLARATION = {
    "blocks": {"atoms": {"columns": {c: {"dtype": "f64", "trailing": []} for c in "xyz"}}},
    "meta": {"pe": {"dtype": "f64"}},
}


def record(tag: int, writer: int = 0) -> dict[str, Any]:
    """Record number ``tag``: ``tag % 4`` frames, a system on even tags."""
    n_atoms = 3 + tag % 5
    frames = []
    for k in range(tag % 4):
        x = np.arange(n_atoms, dtype=np.float64) + tag * 1000.0 + k
        frames.append(
            mrecd.Frame(
                {"atoms": {"x": x, "y": x + 0.5, "z": -x}}, meta={"pe": tag + k / 10}, step=k * 10
            )
        )
    system = None
    if tag % 2 == 0:
        system = mrecd.Frame({"atoms": {"element": ["C"] * n_atoms}}, meta={"tag": tag})
    return {"meta": {"tag": tag, "writer": writer}, "system": system, "trajectory": frames}


def check(rec: mrecd.Record, tag: int, writer: int = 0) -> None:
    """Raise AssertionError unless ``rec`` is record ``tag`` of ``writer``, whole."""
    want = record(tag, writer)
    assert rec.meta == want["meta"], (rec.meta, want["meta"])
    assert rec.system == want["system"], tag
    assert rec.trajectory is not None and len(rec.trajectory) == tag % 4, tag
    assert list(rec.trajectory) == want["trajectory"], tag
    if not isinstance(rec.trajectory, list):
        for k in range(len(rec.trajectory)):
            assert rec.trajectory[k] == want["trajectory"][k], (tag, k)


def reader(path: str, target: str) -> None:
    """Read while a writer appends, until ``target`` records exist; print what was seen."""
    n_target = int(target)
    rng = random.Random(0)
    lengths = set()
    last = 0
    deadline = time.monotonic() + 120
    with mrecd.open_collection(path) as col:
        print("ready", flush=True)
        while last < n_target:
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out at {last} records")
            n = len(col)
            assert n >= last, f"length went back from {last} to {n}"
            last = n
            lengths.add(n)
            if not n:
                continue
            for r in {n - 1, rng.randrange(n)}:  # the newest record is where a tear would show
                check(col[r], r)
            batch = [rng.randrange(n) for _ in range(4)]
            for r, rec in zip(batch, col.read_many(batch), strict=True):
                check(rec, r)
            assert (
                col.index["n_frames"].values.tolist()[:n]
                == [r % 4 for r in range(n)][: len(col.index["n_frames"].values)]
            )
        for r in range(len(col)):
            check(col[r], r)
    print(f"lengths {len(lengths)}", flush=True)


def snapshot_reader(path: str, target: str) -> None:
    """Check whole snapshots until ``target`` records exist: within one read
    transaction meta, index, the newest record and nothing past it agree."""
    from mrecd.bindings.lmdb import record_key

    n_target = int(target)
    rng = random.Random(1)
    snapshots = 0
    last = 0
    deadline = time.monotonic() + 600
    with mrecd.open_collection(path) as col:
        binding = col._binding
        print("ready", flush=True)
        while last < n_target:
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out at {last} records")
            with binding.reading() as txn:
                state = binding.state(txn)
                n = state.meta.n_records
                assert n >= last, f"length went back from {last} to {n}"
                assert state.table.n == n and state.table.total_frames == state.meta.n_frames
                assert txn.get(record_key(n)) is None, f"record {n} visible past n_records"
                for r in {n - 1, rng.randrange(n)} if n else ():
                    parts = binding.record(txn, state, r)
                    got = mrecd.Record(parts.meta, system=parts.system)
                    if parts.view is not None:
                        got.trajectory = binding.frames(txn, parts.view)
                    check(got, r)
                    assert state.table.row(r)[1] == r % 4
            last = n
            snapshots += 1
    print(f"snapshots {snapshots}", flush=True)


def bulk(path: str, count: str) -> None:
    """Create the collection with ``count`` records, by extends of 5,000."""
    n = int(count)
    with mrecd.create_collection(path, meta={"units": {}}, declaration=DECLARATION) as col:
        for start in range(0, n, 5000):
            col.extend([record(t) for t in range(start, min(n, start + 5000))])


def writer(path: str, start: str, count: str) -> None:
    """Append records ``start .. start + count``, one at a time or by extends of 3."""
    first, n = int(start), int(count)
    with mrecd.open_collection(path, "r+") as col:
        tag = first
        while tag < first + n:
            if tag % 5 == 0 and tag + 3 <= first + n:
                got = col.extend([record(t) for t in range(tag, tag + 3)])
                assert list(got) == list(range(tag, tag + 3)), got
                tag += 3
            else:
                assert col.append(record(tag)) == tag
                tag += 1


def rival(path: str, writer_id: str, count: str) -> None:
    """One of several writer processes: appends ``count`` records tagged by ``writer_id``."""
    w = int(writer_id)
    with mrecd.open_collection(path, "r+") as col:
        print("ready", flush=True)
        for i in range(int(count)):
            r = col.append(record(i, w))
            check(col[r], i, w)


if __name__ == "__main__":
    role, *args = sys.argv[1:]
    roles = {"reader": reader, "writer": writer, "rival": rival}
    roles |= {"snapshot_reader": snapshot_reader, "bulk": bulk}
    roles[role](*args)
