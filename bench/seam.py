"""The storage seam (issue 11): the same appends and reads on a directory, in RAM, on S3.

Workload: 3000-atom frames (x/y/z f64 at p = 1e-3, a 0.05 Å random walk),
one ``append`` per frame and a durable ``close``; then random ``traj[i]``.

* directory and memory stores: append frames/s and random-read median;
* S3 (moto on 127.0.0.1, read side): a record pushed whole, random reads
  cold and warm, with GETs and bytes per frame counted;
* a live reader: frame i read while a writer commits every 10 frames,
  against the same reads on the closed record (the goal is <= 1.2x).

``MRECD_BENCH_FRAMES`` sets the run length (default 3000). The directory
part runs on older trees too (``python -m bench seam`` with ``PYTHONPATH``
pointing at a checkout), which is how the before/after table is made.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

import mrecd
from mrecd.api._trajectory import create_trajectory, open_trajectory

N_ATOMS = 3000
N_FRAMES = int(os.environ.get("MRECD_BENCH_FRAMES", "3000"))
READS = 300
DECLARATION: dict[str, Any] = {
    "blocks": {
        "atoms": {
            "columns": {c: {"dtype": "f64", "trailing": [], "precision": 1e-3} for c in "xyz"}
        }
    },
    "meta": {},
}
ROOT_JSON = '{"zarr_format":3,"node_type":"group","attributes":{}}'
META_JSON = '{"zarr_format":3,"node_type":"group","attributes":{"molrec_version":2}}'


def frames(n: int) -> Iterator[mrecd.Frame]:
    rng = np.random.default_rng(0)
    pos = rng.uniform(0, 40.0, (3, N_ATOMS))
    for i in range(n):
        pos = pos + rng.normal(0, 0.05, pos.shape)
        yield mrecd.Frame({"atoms": {"x": pos[0], "y": pos[1], "z": pos[2]}}, step=i)


def make_root(root: Any) -> Any:
    """A record root (Path or Location) with the root group and stamped meta."""
    root.mkdir(parents=True)
    (root / "zarr.json").write_text(ROOT_JSON)
    (root / "meta").mkdir()
    (root / "meta" / "zarr.json").write_text(META_JSON)
    return root


def append_run(root: Any, n: int) -> float:
    """Frames/s of one-frame appends plus the durable close."""
    create_trajectory(root, DECLARATION)
    traj = open_trajectory(root)
    data = list(frames(n))
    start = time.perf_counter()
    for f in data:
        traj.append(f)
    traj.close()
    return n / (time.perf_counter() - start)


def read_median(traj: Any, n: int, seed: int = 3) -> float:
    """Median seconds of ``traj[i]`` over random i (the second pass: shard indexes warm)."""
    picks = np.random.default_rng(seed).integers(0, n, READS)
    for i in picks:
        traj[int(i)]
    times = []
    for i in picks:
        start = time.perf_counter()
        traj[int(i)]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def directory_and_memory(tmp: Path) -> list[list[str]]:
    rows = []
    for kind, root in (("directory", make_root(tmp / "dir.mrec")), ("memory", _memory_root())):
        if root is None:
            continue
        rate = append_run(root, N_FRAMES)
        reader = open_trajectory(root)
        median = read_median(reader, N_FRAMES)
        reader.close()
        rows.append([kind, f"{rate:,.0f}", f"{median * 1e3:.3f} ms"])
    return rows


def _memory_root() -> Any:
    try:
        from mrecd.storage import Location, memory_store
    except ImportError:  # a tree from before the seam
        return None
    return make_root(Location(memory_store(uuid.uuid4().hex), "mem.mrec"))


def s3_reads(tmp: Path) -> list[list[str]]:
    """Push a closed record to moto, then read frames through a counting store."""
    try:
        from mrecd.storage import CountingStore, open_store, push

        from ._moto import moto_bucket
    except ImportError:
        return []
    with moto_bucket():
        n = min(N_FRAMES, 1000)
        local = make_root(tmp / "s3src" / "run.mrec")
        append_run(local, n)
        push(local, "s3://bench/lab")
        counting = CountingStore(open_store("s3://bench/lab"))
        with mrecd.open(counting).record("run") as rec:
            traj = rec.trajectory
            assert traj is not None
            return _counted_reads(traj, counting, n)


def _counted_reads(traj: Any, counting: Any, n: int) -> list[list[str]]:
    rows = []
    picks = np.random.default_rng(5).integers(0, n, 60)
    for label in ("cold (first touch of each shard)", "warm (shard indexes cached)"):
        counting.reset()
        times = []
        for i in picks:
            start = time.perf_counter()
            traj.read(int(i), columns=["x", "y", "z"])
            times.append(time.perf_counter() - start)
        gets = counting.requests("get") / len(picks)
        nbytes = counting.nbytes("get") / len(picks)
        rows.append(
            [label, f"{statistics.median(times) * 1e3:.2f} ms", f"{gets:.2f}", f"{nbytes:,.0f}"]
        )
    return rows


def live_reads(tmp: Path) -> list[list[str]]:
    """Frame reads while a writer commits every 10 frames, against the closed record."""
    root = make_root(tmp / "live.mrec")
    create_trajectory(root, DECLARATION)
    writer = open_trajectory(root, flush_every=10)
    data = list(frames(N_FRAMES))
    writer.extend(data[:200])
    writer.flush()
    reader = open_trajectory(root)
    done = threading.Event()

    def write() -> None:
        for f in data[200:]:
            writer.append(f)
            time.sleep(0.0005)  # a simulation produces frames at a pace, not flat out
        writer.close()
        done.set()

    thread = threading.Thread(target=write)
    live = _follow(reader, thread, done)
    closed = open_trajectory(root)
    quiet = read_median_over(closed, len(closed))
    return [
        ["while a writer commits every 10 frames", f"{live * 1e3:.3f} ms"],
        ["the same record, closed", f"{quiet * 1e3:.3f} ms"],
        ["ratio (live / closed)", f"{live / quiet:.2f}"],
    ]


def _follow(reader: Any, thread: threading.Thread, done: threading.Event) -> float:
    """Median read latency of a dashboard that refreshes and reads recent and random frames."""
    rng = np.random.default_rng(9)
    times: list[float] = []
    thread.start()
    while not done.is_set():
        n = reader.refresh()
        for _ in range(20):
            i = int(rng.integers(0, n))
            start = time.perf_counter()
            reader[i]
            times.append(time.perf_counter() - start)
    thread.join()
    return statistics.median(times)


def read_median_over(traj: Any, n: int) -> float:
    rng = np.random.default_rng(9)
    for _ in range(200):
        traj[int(rng.integers(0, n))]
    times = []
    for _ in range(READS * 3):
        i = int(rng.integers(0, n))
        start = time.perf_counter()
        traj[i]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _section(title: str, header: list[str], make: Callable[[Path], list[list[str]]]) -> None:
    with tempfile.TemporaryDirectory(prefix="mrecd-bench-") as name:
        rows = make(Path(name))
    if rows:
        print(f"\n### {title}\n")
        print(_table(header, rows))


def main() -> None:
    print(f"{N_FRAMES:,} frames of {N_ATOMS} atoms, x/y/z at p = 1e-3")
    _section(
        "Append and read on each store",
        ["store", "append frames/s (one per call, durable close)", "random traj[i], median"],
        directory_and_memory,
    )
    _section(
        "S3 (moto on loopback), a pushed record read by ranges",
        ["frame read (x, y, z)", "median", "GETs per frame", "bytes GET per frame"],
        s3_reads,
    )
    if "MRECD_BENCH_SKIP_LIVE" not in os.environ:
        _section("A live reader keeps its caches", ["traj[i], random i", "median"], live_reads)


if __name__ == "__main__":
    main()
