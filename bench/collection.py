"""Collections on LMDB (issue 5): random frame reads, batch reads, appends, density.

A synthetic training set (20,000 records of 10-60 atoms with 1-20 frames each:
a system with elements and a formula, a trajectory of x/y/z at declared
precision 1e-3 Å with a per-step energy, two derived index columns). Every
figure is set against a floor measured in the same run on the same data:

- reads: a raw ``txn.get`` of the value(s) holding the frame plus
  ``np.frombuffer`` of each column at offsets known in advance;
- appends: raw ``txn.put`` of the same encoded values (records, index, meta)
  in one synced transaction, into a scratch file on the same disk.

The machine is shared and noisy: each read figure is the best of several
rounds; read the ratios. ``MRECD_BENCH_RECORDS`` changes the size.
Run: ``python -m bench collection``.
"""

from __future__ import annotations

import gc
import os
import random
import shutil
import statistics
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import lmdb
import mrecd
from mrecd.bindings.lmdb import frame_key, record_key, system_key

N_RECORDS = int(os.environ.get("MRECD_BENCH_RECORDS", "20000"))
ROUNDS = 5
READS_PER_ROUND = 4000
BATCH = 256
N_BATCHES = 20
ELEMENTS = np.array(["C", "H", "N", "O", "S"])
DECLARATION = {
    "blocks": {
        "atoms": {
            "columns": {c: {"dtype": "f64", "trailing": [], "precision": 1e-3} for c in "xyz"}
        }
    },
    "meta": {"pe": {"dtype": "f64"}},
}
INDEX = {
    "formula": {"dtype": "string", "derive": lambda rec: rec.system.meta["formula"]},
    "pe_min": {"dtype": "f64", "derive": lambda rec: min(f.meta["pe"] for f in rec.trajectory)},
}
UNITS = {"units": {"length": "angstrom", "energy": "kcal/mol"}}
Row = tuple[str, ...]


def _records(n: int, seed: int = 0) -> tuple[list[mrecd.Record], int]:
    rng = np.random.default_rng(seed)
    out = []
    atom_frames = 0
    for _ in range(n):
        n_atoms = int(rng.integers(10, 61))
        n_frames = int(rng.integers(1, 21))
        elements = ELEMENTS[rng.integers(0, len(ELEMENTS), n_atoms)]
        counts = {e: int((elements == e).sum()) for e in ELEMENTS}
        formula = "".join(f"{e}{c}" for e, c in counts.items() if c)
        system = mrecd.Frame({"atoms": {"element": elements}}, meta={"formula": formula})
        xyz = rng.uniform(-8, 8, (3, n_atoms))
        frames = []
        for k in range(n_frames):
            xyz = xyz + rng.normal(0, 0.02, xyz.shape)
            frames.append(
                mrecd.Frame(
                    {"atoms": {"x": xyz[0], "y": xyz[1], "z": xyz[2]}},
                    meta={"pe": float(-100 - rng.random())},
                    step=k,
                )
            )
        out.append(mrecd.Record({"source": "bench"}, system=system, trajectory=frames))
        atom_frames += n_atoms * n_frames
    return out, atom_frames


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _best(fn: Callable[[int], Any], rounds: int = ROUNDS) -> float:
    """Best time of ``fn(round)`` over ``rounds`` rounds."""
    return min(_timed(lambda k=k: fn(k)) for k in range(rounds))


def _table(header: Row, rows: list[Row]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()


# -- appends --------------------------------------------------------------------------------


def _values_of(env: Any, first: int, n_frames: int, r: int) -> list[tuple[bytes, bytes]]:
    with env.begin() as txn:
        out = [
            (record_key(r), bytes(txn.get(record_key(r)))),
            (system_key(r), bytes(txn.get(system_key(r)))),
        ]
        out += [
            (frame_key(j), bytes(txn.get(frame_key(j)))) for j in range(first, first + n_frames)
        ]
        return out


def _raw_floor(scratch: Path, batches: list[list[tuple[bytes, bytes]]], index_size: int) -> float:
    """Synced transactions putting the same values plus an index- and a meta-sized value."""
    env = lmdb.open(str(scratch), subdir=False, map_size=2**40)
    index, meta = os.urandom(index_size), os.urandom(400)

    def run() -> None:
        for items in batches:
            with env.begin(write=True) as txn:
                txn.cursor().putmulti(sorted(items))
                txn.put(b"index", index)
                txn.put(b"meta", meta)

    seconds = _timed(run)
    env.close()
    os.unlink(scratch)
    return seconds


def _appends(workdir: Path, records: list[mrecd.Record]) -> list[Row]:
    path = workdir / "bench.mrec.lmdb"
    col = mrecd.create_collection(path, meta=UNITS, declaration=DECLARATION, index_columns=INDEX)
    n = len(records)
    head = tail = min(500, n // 10)
    middle = records[head : n - tail]
    t_head = _timed(lambda: [col.append(rec) for rec in records[:head]])
    size_head = len(col._binding.cached().table.encode())
    t_middle = _timed(
        lambda: [col.extend(middle[k : k + 1000]) for k in range(0, len(middle), 1000)]
    )
    size_tail = len(col._binding.cached().table.encode())
    t_tail = _timed(lambda: [col.append(rec) for rec in records[n - tail :]])
    col.close()

    col = mrecd.open_collection(path)
    env, table = col._binding._live().env, col._binding.cached().table
    values = [_values_of(env, *table.row(r)[:2], r) for r in range(n)]
    col.close()
    scratch = workdir / "scratch.lmdb"
    f_head = _raw_floor(scratch, values[:head], size_head)
    f_middle = _raw_floor(
        scratch,
        [[kv for rec in values[k : k + 1000] for kv in rec] for k in range(head, n - tail, 1000)],
        (size_head + size_tail) // 2,
    )
    f_tail = _raw_floor(scratch, values[n - tail :], size_tail)

    print(
        f"The index value is rewritten in every commit: {size_head:,} bytes at R = {head},"
        f" {size_tail:,} bytes at R = {n - tail:,}.\n"
    )

    def row(label: str, count: int, seconds: float, floor: float) -> Row:
        return (
            label,
            f"{count / seconds:,.0f}",
            f"{seconds / count * 1e3:.2f}",
            f"{floor / count * 1e3:.2f}",
            f"{seconds / floor:.1f}",
        )

    return [
        row(f"append, one per transaction (R = 0..{head})", head, t_head, f_head),
        row("extend, 1000 per transaction", len(middle), t_middle, f_middle),
        row(f"append, one per transaction (R = {n - tail:,}..{n:,})", tail, t_tail, f_tail),
    ]


def _density(path: Path, atom_frames: int) -> list[Row]:
    env = lmdb.open(str(path), subdir=False, readonly=True, lock=False)
    with env.begin() as txn:
        payload = sum(len(k) + len(v) for k, v in txn.cursor())
        frames = sum(len(v) for k, v in txn.cursor() if k[:1] == b"f" and len(k) == 9)
    stat, info = env.stat(), env.info()
    env.close()
    size = path.stat().st_size
    used = (info["last_pgno"] + 1) * stat["psize"]
    return [
        ("file on disk", f"{size:,}", f"{size / atom_frames:.1f}"),
        ("pages in use (last page number x page size)", f"{used:,}", f"{used / atom_frames:.1f}"),
        ("keys + values", f"{payload:,}", f"{payload / atom_frames:.1f}"),
        ("frame values (f keys) only", f"{frames:,}", f"{frames / atom_frames:.1f}"),
        ("x, y, z as raw f64", f"{24 * atom_frames:,}", "24.0"),
    ]


# -- reads ----------------------------------------------------------------------------------


def _targets(n_frames: np.ndarray, n_reads: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n_reads):
        r = rng.randrange(len(n_frames))
        out.append((r, rng.randrange(int(n_frames[r]))))
    return out


def _plan(
    env: Any, first: np.ndarray, targets: list[tuple[int, int]]
) -> list[tuple[bytes, int, list[int]]]:
    """For each read: the key holding the frame's atoms, the rows and the column offsets."""
    plan = []
    with env.begin() as txn:
        for r, i in targets:
            key = frame_key(int(first[r]) + i)  # atoms change at every frame in this set
            value = txn.get(key)
            length = struct.unpack_from("<I", value, 4)[0]
            start = 8 + length + (-(8 + length) % 8)
            n = (len(value) - start) // 24
            plan.append((key, n, [start, start + 8 * n, start + 16 * n]))
    return plan


def _floor(env: Any, plans: list[list[tuple[bytes, int, list[int]]]]) -> float:
    def run(k: int) -> None:
        for key, n, offsets in plans[k]:
            with env.begin() as txn:
                value = txn.get(key)
                for offset in offsets:
                    np.frombuffer(value, np.float64, n, offset)

    return _best(run)


def _single_reads(path: Path) -> list[Row]:
    col = mrecd.open_collection(path)
    env = col._binding._live().env
    first, counts = col.index["first_frame"].values.copy(), col.index["n_frames"].values.copy()
    rounds = [_targets(counts, READS_PER_ROUND, seed) for seed in range(ROUNDS)]
    floor = _floor(env, [_plan(env, first, targets) for targets in rounds])
    col.close()

    def cold(k: int) -> float:
        fresh = mrecd.open_collection(path)  # new process state: nothing cached
        seconds = _timed(lambda: [fresh[r].trajectory[i] for r, i in rounds[k]])
        fresh.close()
        return seconds

    col = mrecd.open_collection(path)
    t_cold = min(cold(k) for k in range(ROUNDS))
    for targets in rounds:  # fill the caches
        [col[r].trajectory[i] for r, i in targets]
    t_warm = _best(lambda k: [col[r].trajectory[i] for r, i in rounds[k]])
    held = [[col[r].trajectory for r, _ in targets] for targets in rounds]
    t_held = _best(lambda k: [t[i] for t, (_, i) in zip(held[k], rounds[k], strict=True)])
    t_record = _best(lambda k: [col[r] for r, _ in rounds[k]])
    t_proj = _best(
        lambda k: [t.read(i, columns=["x"]) for t, (_, i) in zip(held[k], rounds[k], strict=True)]
    )
    col.close()
    n = READS_PER_ROUND

    def row(label: str, seconds: float) -> Row:
        return (label, f"{n / seconds:,.0f}", f"{seconds / n * 1e6:.1f}", f"{seconds / floor:.1f}")

    return [
        row("floor: txn.get + np.frombuffer x, y, z", floor),
        row("col[r].trajectory[i], nothing cached (fresh open)", t_cold),
        row("col[r].trajectory[i], record layouts and systems cached", t_warm),
        row("trajectory[i] on a held trajectory", t_held),
        row("trajectory.read(i, columns=['x']) on a held trajectory", t_proj),
        row("col[r] alone (meta + system, cached)", t_record),
    ]


def _batch_reads(path: Path) -> list[Row]:
    col = mrecd.open_collection(path)
    env = col._binding._live().env
    first, counts = col.index["first_frame"].values.copy(), col.index["n_frames"].values.copy()
    rng = random.Random(7)
    batches = [[rng.randrange(len(counts)) for _ in range(BATCH)] for _ in range(N_BATCHES)]
    with env.begin() as txn:  # offsets of every column of every value, known in advance
        plans = []
        for batch in batches:
            plan = []
            for r in batch:
                keys = [record_key(r), system_key(r)]
                keys += [frame_key(j) for j in range(int(first[r]), int(first[r] + counts[r]))]
                for key in keys:
                    value = txn.get(key)
                    length = struct.unpack_from("<I", value, 4)[0] if key[:1] != b"r" else 0
                    start = 8 + length + (-(8 + length) % 8)
                    n = (len(value) - start) // 24 if key[:1] == b"f" else 0
                    plan.append((key, n, [start, start + 8 * n, start + 16 * n] if n else []))
            plans.append(plan)

    def floor_batch(plan: list[tuple[bytes, int, list[int]]]) -> None:
        with env.begin() as txn:
            for key, n, offsets in plan:
                value = txn.get(key)
                for offset in offsets:
                    np.frombuffer(value, np.float64, n, offset)

    floor = statistics.median(_timed(lambda p=p: floor_batch(p)) for p in plans)
    loaded = statistics.median(_timed(lambda b=b: col.read_many(b)) for b in batches)
    lazy = statistics.median(_timed(lambda b=b: col.read_many(b, frames=False)) for b in batches)
    frames = statistics.mean(sum(int(counts[r]) for r in b) for b in batches)
    col.close()

    def row(label: str, seconds: float, with_frames: bool = True) -> Row:
        rate = f"{frames / seconds:,.0f}" if with_frames else "-"
        return (label, f"{seconds * 1e3:.2f}", rate, f"{seconds / floor:.1f}")

    return [
        row("floor: txn.get of every value + np.frombuffer of every column", floor),
        row("read_many(256 records): every frame resolved", loaded),
        row("read_many(256 records, frames=False): meta + system", lazy, with_frames=False),
    ]


def main() -> None:
    """Build the synthetic collection, then print the tables."""
    workdir = Path(tempfile.mkdtemp(prefix="mrecd-bench-"))
    try:
        started = time.perf_counter()
        records, atom_frames = _records(N_RECORDS)
        n_frames = sum(len(r.trajectory or ()) for r in records)
        print(
            f"{N_RECORDS:,} records, {n_frames:,} frames, {atom_frames:,} atom-frames"
            f" (generated in {time.perf_counter() - started:.1f} s)\n"
        )
        print("### Appends (every transaction synced to disk)\n")
        _table(
            ("operation", "records/s", "ms/record", "floor ms/record", "ratio"),
            _appends(workdir, records),
        )
        del records
        gc.collect()
        path = workdir / "bench.mrec.lmdb"
        packed = workdir / "packed.mrec.lmdb"
        with mrecd.open_collection(path) as col:
            t_compact = _timed(lambda: col.compact(packed))
        density = _density(path, atom_frames)
        size = packed.stat().st_size
        density.insert(
            1,
            (f"after col.compact() ({t_compact:.1f} s)", f"{size:,}", f"{size / atom_frames:.1f}"),
        )
        print("### File size\n")
        _table(("what", "bytes", "bytes per atom-frame"), density)
        print(
            f"### Random frame reads (best of {ROUNDS} rounds of {READS_PER_ROUND:,},"
            " one process)\n"
        )
        _table(("read", "reads/s", "µs/read", "ratio to floor"), _single_reads(path))
        print(f"### Batch reads ({BATCH} random records; median of {N_BATCHES} batches)\n")
        _table(("read", "ms/batch", "frames/s", "ratio to floor"), _batch_reads(path))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
