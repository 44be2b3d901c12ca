"""Live appends and reads on object storage (issue 14): mrecd against zarr-python alone.

Against moto on 127.0.0.1, everything through a counting store:

* appends: frames of ``MRECD_BENCH_ATOMS`` atoms (x/y/z f64 at p = 1e-3, a
  random walk) committed in batches of 1, 16 and 256 (one commit per batch);
  requests and bytes PUT per frame and the write amplification (bytes PUT /
  encoded frame bytes, the final size of the data chunks per frame). Against
  zarr-python appending the same coordinates to the same bucket, unsharded
  (chunks of 8 frames, like mrecd's live layout) and sharded (256-frame
  shards, what a closed record uses: each append rewrites the shard);
* reads of random frames of the live record: GETs and bytes per frame, cold
  (a fresh open) and warm, against zarr-python reading the same record.

``MRECD_BENCH_FRAMES`` (default 512) frames per batch size.
"""

from __future__ import annotations

import os
import statistics
import time
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np

import mrecd
from mrecd.storage import CountingStore, Store, open_store

from ._moto import moto_bucket

N_ATOMS = int(os.environ.get("MRECD_BENCH_ATOMS", "1000"))
N_FRAMES = int(os.environ.get("MRECD_BENCH_FRAMES", "512"))
BATCHES = (1, 16, 256)
READS = 40
DECLARATION = mrecd.Declaration.from_dict(
    {
        "blocks": {
            "atoms": {
                "columns": {c: {"dtype": "f64", "trailing": [], "precision": 1e-3} for c in "xyz"}
            }
        },
        "meta": {},
    }
)


def frames(n: int) -> Iterator[mrecd.Frame]:
    rng = np.random.default_rng(0)
    pos = rng.uniform(0, 40.0, (3, N_ATOMS))
    for i in range(n):
        pos = pos + rng.normal(0, 0.05, pos.shape)
        yield mrecd.Frame({"atoms": {"x": pos[0], "y": pos[1], "z": pos[2]}}, step=i)


def _chunk_bytes(store: Store, prefix: str) -> int:
    return sum(info.size for key, info in store.list_info(prefix).items() if "/c/" in key)


def _row(label: str, counting: CountingStore, data_bytes: int, n: int, secs: float) -> list[str]:
    puts, put_bytes = counting.requests("put"), counting.nbytes("put")
    return [
        label,
        f"{puts / n:.2f}",
        f"{put_bytes / n:,.0f}",
        f"{data_bytes / n:,.0f}",
        f"{put_bytes / data_bytes:.2f}",
        f"{n / secs:,.0f}",
    ]


def mrecd_appends(batch: int) -> tuple[list[str], str]:
    """Append N_FRAMES in commits of ``batch``; the row and the record's catalog URL."""
    url = f"s3://bench/mrecd-{batch}-{uuid.uuid4().hex[:6]}"
    counting = CountingStore(open_store(url))
    record = mrecd.open(counting).create_record("run", declaration=DECLARATION)
    traj = record.trajectory
    assert traj is not None
    counting.reset()
    all_frames = list(frames(N_FRAMES))
    start = time.perf_counter()
    for first in range(0, N_FRAMES, batch):
        traj.extend(all_frames[first : first + batch])
        traj.flush()
    secs = time.perf_counter() - start
    data = _chunk_bytes(open_store(url), "run.mrec/trajectory/atoms")
    row = _row(f"mrecd, batch {batch}", counting, data, N_FRAMES, secs)
    record.close()
    return row, url


def zarr_appends(batch: int, *, sharded: bool) -> list[str]:
    """zarr-python alone: ``Array.append`` of the same coordinates, one append per batch."""
    import zarr

    from mrecd.bindings.zarr._zarr_store import ZarrAdapter

    url = f"s3://bench/zarr-{batch}-{int(sharded)}-{uuid.uuid4().hex[:6]}"
    counting = CountingStore(open_store(url))
    group = zarr.open_group(ZarrAdapter(counting), mode="w")
    chunk = 8 * N_ATOMS
    arrays = {
        c: group.create_array(
            c,
            shape=(0,),
            dtype="f8",
            chunks=(chunk,),
            shards=(32 * chunk,) if sharded else None,
        )
        for c in "xyz"
    }
    counting.reset()
    all_frames = list(frames(N_FRAMES))
    start = time.perf_counter()
    for first in range(0, N_FRAMES, batch):
        part = all_frames[first : first + batch]
        for c, array in arrays.items():
            values = np.concatenate([mrecd.quantize(f["atoms"][c].values, 1e-3) for f in part])
            array.append(values)
    secs = time.perf_counter() - start
    data = _chunk_bytes(open_store(url), "")
    kind = "sharded (256-frame shards)" if sharded else "chunks of 8 frames"
    return _row(f"zarr-python, {kind}, batch {batch}", counting, data, N_FRAMES, secs)


def reads(url: str) -> list[list[str]]:
    """Random frames of the live record: mrecd, then zarr-python on the same objects."""
    import zarr

    from mrecd.bindings.zarr._zarr_store import ZarrAdapter

    picks = [int(i) for i in np.random.default_rng(5).integers(0, N_FRAMES, READS)]
    rows = []
    counting = CountingStore(open_store(url))
    with mrecd.open(counting).record("run") as rec:
        traj = rec.trajectory
        assert traj is not None
        rows.append(_reads("mrecd, cold (open + first frame)", counting, traj, picks[:1]))
        rows.append(_reads("mrecd, warm", counting, traj, picks[1:]))
    counting = CountingStore(open_store(url))
    group = zarr.open_group(ZarrAdapter(counting), path="run.mrec/trajectory/atoms", mode="r")

    def read_zarr(i: int) -> None:
        for c in "xyz":
            group[c][i * N_ATOMS : (i + 1) * N_ATOMS]

    rows.append(_reads("zarr-python, cold", counting, read_zarr, picks[:1]))
    arrays = {c: group[c] for c in "xyz"}

    def read_open(i: int) -> None:
        for array in arrays.values():
            array[i * N_ATOMS : (i + 1) * N_ATOMS]

    counting.reset()
    rows.append(_reads("zarr-python, warm (arrays open)", counting, read_open, picks[1:]))
    return rows


def _reads(label: str, counting: CountingStore, source: Any, picks: list[int]) -> list[str]:
    if label.startswith("mrecd, warm"):
        counting.reset()
    times = []
    for i in picks:
        started = time.perf_counter()
        if callable(source) and not hasattr(source, "read"):
            source(i)
        else:
            source.read(i, columns=["x", "y", "z"])
        times.append(time.perf_counter() - started)
    gets = counting.requests("get") / len(picks)
    return [
        label,
        f"{gets:.2f}",
        f"{gets / 3:.2f}",
        f"{counting.nbytes('get') / len(picks):,.0f}",
        f"{statistics.median(times) * 1e3:.2f} ms",
    ]


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def main() -> None:
    print(f"{N_FRAMES:,} frames of {N_ATOMS} atoms per run, x/y/z f64 at p = 1e-3, moto")
    with moto_bucket():
        rows, urls = [], {}
        for batch in BATCHES:
            row, urls[batch] = mrecd_appends(batch)
            rows.append(row)
        for batch in BATCHES:
            rows.append(zarr_appends(batch, sharded=False))
        for batch in (16, 256):
            rows.append(zarr_appends(batch, sharded=True))
        header = [
            "appends",
            "PUTs/frame",
            "bytes PUT/frame",
            "encoded bytes/frame",
            "write amplification",
            "frames/s",
        ]
        print("\n### Appends (one commit per batch)\n")
        print(_table(header, rows))
        print("\n### Frame reads of the live record (x, y, z)\n")
        header = ["frame read", "GETs/frame", "GETs/array", "bytes GET/frame", "median"]
        print(_table(header, reads(urls[16])))


if __name__ == "__main__":
    main()
