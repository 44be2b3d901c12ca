"""Collections over HTTP (issue 13): batch reads of 256 records, served vs local ``read_many``.

Workload: ``MRECD_BENCH_HTTP_RECORDS`` small records (default 20,000; each
10-60 atoms, 1-20 frames of x/y/z with a per-step ``pe``), built with
``extend``. ``mrecd serve`` runs as a uvicorn subprocess on 127.0.0.1; in the
same run, interleaved, the same random batches of 256 ordinals are read:

* locally: ``Collection.read_many(batch)`` (one read transaction);
* over HTTP with ``mrecd_client``: ``RemoteCollection.read_many(batch)`` (one
  streamed ``GET …/records?r=`` answered as ``application/x-mrec-records``,
  decoded into ``mrecd.Record`` objects);
* over HTTP, the bytes only (httpx, no decoding): what the server and the
  loopback cost;
* both readers again, then every frame's ``x`` taken (each ``Frame`` built:
  both build frames on first use, so the plain rows leave that work out).

Goal (issue 13): the client's rate >= 0.5 of local ``read_many``.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

import mrecd
from mrecd_client import Client

from .service import free_port, spawn, table

RECORDS = int(os.environ.get("MRECD_BENCH_HTTP_RECORDS", "20000"))
BATCH = 256
ROUNDS = int(os.environ.get("MRECD_BENCH_HTTP_ROUNDS", "30"))
ELEMENTS = np.array(["C", "H", "N", "O", "S"])


def small_record(r: int) -> mrecd.Record:
    """Record ``r``: 10-60 atoms, 1-20 frames (its own random stream)."""
    rng = np.random.default_rng([7, r])
    n_atoms, n_frames = int(rng.integers(10, 61)), int(rng.integers(1, 21))
    system = mrecd.Frame({"atoms": {"element": ELEMENTS[rng.integers(0, 5, n_atoms)]}})
    xyz = rng.uniform(-8, 8, (3, n_atoms))
    frames = []
    for k in range(n_frames):
        xyz = xyz + rng.normal(0, 0.02, xyz.shape)
        atoms = {"x": xyz[0], "y": xyz[1], "z": xyz[2]}
        frames.append(mrecd.Frame({"atoms": atoms}, meta={"pe": float(-100 - k)}, step=k))
    return mrecd.Record({"source": "bench"}, system=system, trajectory=frames)


def build(store: Path) -> None:
    """The collection ``train`` of ``RECORDS`` records, appended 1,000 at a time."""
    catalog = mrecd.open(store)
    with catalog.create_collection("train", meta={"units": {"length": "angstrom"}}) as col:
        for start in range(0, RECORDS, 1000):
            col.extend([small_record(r) for r in range(start, min(RECORDS, start + 1000))])


LABELS: dict[str, str] = {
    "local": "local Collection.read_many",
    "client": "RemoteCollection.read_many (HTTP, decoded)",
    "bytes": "GET …/records?r= (HTTP, bytes only)",
    "local_x": "local read_many, then every frame's x",
    "client_x": "RemoteCollection.read_many, then every frame's x",
}


def _every_x(records: list[mrecd.Record]) -> list[Any]:
    """Every frame built and an array taken, as a loader uses them."""
    return [f["atoms"]["x"].values for rec in records for f in rec.trajectory or ()]


def measure(store: Path, url: str) -> dict[str, list[float]]:
    """Seconds per batch of each reader, the readers interleaved batch by batch."""
    rng = np.random.default_rng(11)
    batches = [rng.integers(0, RECORDS, BATCH).tolist() for _ in range(ROUNDS + 2)]
    times: dict[str, list[float]] = {k: [] for k in LABELS}
    local = mrecd.open(store).collection("train")
    with Client(url) as client, httpx.Client(timeout=60) as raw:
        remote = client.collection("train")
        path = f"{url}/v1/collections/train/records"
        readers = {
            "local": lambda b: local.read_many(b),
            "client": lambda b: remote.read_many(b),
            "bytes": lambda b: raw.get(path, params={"r": ",".join(map(str, b))}).content,
            "local_x": lambda b: _every_x(local.read_many(b)),
            "client_x": lambda b: _every_x(remote.read_many(b)),
        }
        for k, batch in enumerate(batches):
            for name, read in readers.items():
                started = time.perf_counter()
                read(batch)
                if k >= 2:  # the first two warm caches and connections
                    times[name].append(time.perf_counter() - started)
    local.close()
    return times


def main() -> None:
    """Build, serve, measure, print the table."""
    with tempfile.TemporaryDirectory(prefix="mrecd-bench-collection-http-") as name:
        tmp = Path(name)
        store = tmp / "store"
        started = time.perf_counter()
        build(store)
        print(f"(built {RECORDS:,} records in {time.perf_counter() - started:.0f} s)")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        serve = ["-m", "mrecd.cli", "serve", str(store), "--host", "127.0.0.1", "--port", str(port)]
        with spawn(serve, port, "/healthz", tmp / "mrecd.log"):
            times = measure(store, url)
    rows = []
    for name, label in LABELS.items():
        # each against the local reader doing the same work
        base = statistics.median(times["local_x" if name.endswith("_x") else "local"])
        median = statistics.median(times[name])
        rows.append(
            [label, f"{median * 1e3:.1f} ms", f"{BATCH / median:,.0f}", f"{base / median:.2f}"]
        )
    print(f"\n### Batch reads of {BATCH} random records ({RECORDS:,} in the collection)\n")
    print(table(["reader", "median per batch", "records/s", "rate / local"], rows))
    print(
        "\nGoal (issue 13): the client's rate >= 0.5 of local read_many. Ratios are from one"
        " run on one machine, readers interleaved batch by batch."
    )
