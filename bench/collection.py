"""Collections on LMDB (issues 5, 13): appends as the file grows, density, random reads.

A synthetic training set (records of 10-60 atoms with 1-20 frames each: a
system with elements and a formula, a trajectory of x/y/z at declared
precision 1e-3 Å with a per-step energy, two derived index columns), built
with ``extend`` in batches of 1,000 and generated as it is written, so any
size fits in memory. Every figure is set against a floor measured in the
same run on the same data:

- reads: a raw ``txn.get`` of the value(s) holding the frame plus
  ``np.frombuffer`` of each column at offsets known in advance;
- appends: raw ``txn.put`` of the same encoded values (records, the index
  bytes the commit rewrites, meta) in one synced transaction, into a scratch
  file on the same disk, timed right after each append.

Appends are timed one per synced transaction twice, around R = 1,000 and at
the end of the file, as the median append (a shared disk's sync stalls hit
single commits). Then, the issue's comparison side by side: single appends
taking turns between a fresh 1,000-record collection and the grown file, so
both see the same disk and load. The machine is shared and noisy: each single-read figure is
the median of rounds taking turns with the floor (same loop shape: one call
per read, results kept; a warm-up round first; the collector on for both,
run between timings); read the ratios. ``MRECD_BENCH_RECORDS`` sets the
size (default 20,000; ``1000000`` for the issue-13 run: 50 minutes on the
shared 2-core machine at a load of 5-11, a 24 GB file plus 15 GB for the
compacted copy, 175 MB of heap). Run: ``python -m bench collection``.
"""

from __future__ import annotations

import gc
import os
import random
import resource
import shutil
import statistics
import struct
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

import lmdb
import mrecd
from mrecd.bindings.lmdb import frame_key, record_key, system_key

N_RECORDS = int(os.environ.get("MRECD_BENCH_RECORDS", "20000"))
#: Where the first single appends are timed, and how many are timed at each place.
SMALL_R = 1000
APPENDS = 300
CHUNK = 1000
ROUNDS = 7
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


def _record(r: int, seed: int = 0) -> tuple[mrecd.Record, int]:
    """Record ``r`` (its own random stream, so any range is generated alone) and
    its atom-frames."""
    rng = np.random.default_rng([seed, r])
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
    record = mrecd.Record({"source": "bench"}, system=system, trajectory=frames)
    return record, n_atoms * n_frames


def _records(start: int, stop: int) -> tuple[list[mrecd.Record], int]:
    made = [_record(r) for r in range(start, stop)]
    return [rec for rec, _ in made], sum(n for _, n in made)


def _timed(fn: Callable[[], Any]) -> float:
    """Seconds of ``fn()``; what it returns is dropped after the clock stops (freeing a
    batch of frames is not part of reading them)."""
    start = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - start
    del out
    return seconds


def _table(header: Row, rows: list[Row]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()


# -- building and appends ---------------------------------------------------------------------


class _Build:
    """The collection as it is built: chunks by ``extend``, two windows of single appends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.atom_frames = 0
        self.generate = 0.0
        #: (first R, median append seconds, median floor seconds, index bytes)
        self.windows: list[tuple[int, float, float, int]] = []
        self.extend = (0, 0.0)  #: (records, seconds)

    def run(self) -> None:
        col = mrecd.create_collection(
            self.path, meta=UNITS, declaration=DECLARATION, index_columns=INDEX
        )
        small = min(SMALL_R, N_RECORDS // 4)
        self._extend(col, 0, small - APPENDS)
        self._appends(col, small - APPENDS, small)
        self._extend(col, small, N_RECORDS - APPENDS, timed=True)
        self._appends(col, N_RECORDS - APPENDS, N_RECORDS)
        col.close()

    def _chunks(self, start: int, stop: int) -> Iterator[list[mrecd.Record]]:
        for first in range(start, stop, CHUNK):
            began = time.perf_counter()
            records, atom_frames = _records(first, min(stop, first + CHUNK))
            self.generate += time.perf_counter() - began
            self.atom_frames += atom_frames
            yield records

    def _extend(self, col: mrecd.Collection, start: int, stop: int, timed: bool = False) -> None:
        seconds = 0.0
        progress = _Progress(start)
        for chunk in self._chunks(start, stop):
            seconds += _timed(lambda chunk=chunk: col.extend(chunk))
            if timed and (stop - start) >= 20 * CHUNK and len(col) % (stop // 10) < CHUNK:
                progress.report(len(col), seconds)
        if timed:
            self.extend = (stop - start, seconds)

    def _appends(self, col: mrecd.Collection, start: int, stop: int) -> None:
        """Single appends, each followed by its floor: a raw synced transaction putting
        the same values (read back from the file) into a scratch file on the same disk.

        Interleaved, so a stretch of slow syncs on the shared disk hits both; the
        median of each (a shared disk's sync stalls hit single commits).
        """
        (records,) = list(self._chunks(start, stop))
        table = col._binding.cached().table
        page = table.encode_page(table.n // 512, 512) if table.n > 512 else table.encode()
        scratch = _Scratch(self.path.parent / "scratch.lmdb", len(page))
        env = col._binding._live().env
        appends, floors = [], []
        for rec in records:
            appends.append(_timed(lambda rec=rec: col.append(rec)))
            r = len(col) - 1
            values = _values_of(env, *col._binding.cached().table.row(r)[:2], r)
            floors.append(_timed(lambda values=values: scratch.commit(values)))
        scratch.close()
        self.windows.append(
            (start, statistics.median(appends), statistics.median(floors), len(page))
        )


def _side_by_side(path: Path) -> tuple[float, float]:
    """Median single-append seconds into a fresh ``SMALL_R``-record collection and into
    the grown one at ``path``, taking turns record by record (the same record goes to
    both, the order flips each turn), so the issue's R = 10^6 against R = 10^3
    comparison sees the same disk and the same load. Returns (small, grown)."""
    small_path = path.parent / "small.mrec.lmdb"
    small = mrecd.create_collection(
        small_path, meta=UNITS, declaration=DECLARATION, index_columns=INDEX
    )
    grown = mrecd.open_collection(path, "r+")
    try:
        small.extend(_records(0, SMALL_R)[0])
        times: dict[str, list[float]] = {"small": [], "grown": []}
        for turn, r in enumerate(range(N_RECORDS + APPENDS, N_RECORDS + 2 * APPENDS)):
            rec, _ = _record(r)
            # The reopened file has no derive callables: both get the values outright.
            index = {name: spec["derive"](rec) for name, spec in INDEX.items()}
            order = [("small", small), ("grown", grown)]
            for name, col in order if turn % 2 else order[::-1]:
                times[name].append(_timed(partial(col.append, rec, index=index)))
        return statistics.median(times["small"]), statistics.median(times["grown"])
    finally:
        small.close()
        grown.close()
        small_path.unlink()


class _Scratch:
    """The raw-put floor of an append: the same values, an index- and a meta-sized value,
    one synced transaction, into a file of its own."""

    def __init__(self, path: Path, index_size: int) -> None:
        self.path = path
        self.env = lmdb.open(str(path), subdir=False, map_size=2**40)
        self.index, self.meta = os.urandom(index_size), os.urandom(400)

    def commit(self, items: list[tuple[bytes, bytes]]) -> None:
        with self.env.begin(write=True) as txn:
            txn.cursor().putmulti(sorted(items))
            txn.put(b"i" + bytes(8), self.index)
            txn.put(b"meta", self.meta)

    def close(self) -> None:
        self.env.close()
        os.unlink(self.path)


def _heap_mib() -> str:
    """The process's anonymous resident memory (its heap, not LMDB's mapped file
    pages, which the kernel may drop at will); the peak RSS where /proc is absent."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return f"resident heap {int(line.split()[1]) / 1024:,.0f} MiB"
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return f"peak RSS {peak:,.0f} MiB (with mapped file pages)"


class _Progress:
    """Progress lines of a long build: the extend rate of the last stretch (does it
    hold as the file grows?) and the process's heap (does it stay bounded?)."""

    def __init__(self, start: int) -> None:
        self.began = time.perf_counter()
        self.last = (start, 0.0)  #: (records, extend seconds) at the previous line

    def report(self, records: int, seconds: float) -> None:
        done, before = self.last
        rate = (records - done) / max(seconds - before, 1e-9)
        print(
            f"  ... {records:,} records, {time.perf_counter() - self.began:.0f} s;"
            f" extend {rate:,.0f} records/s since {done:,}; {_heap_mib()}",
            flush=True,
        )
        self.last = (records, seconds)


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


def _append_rows(build: _Build) -> list[Row]:
    rows = [
        (
            f"append, one per synced transaction (R = {start:,}..{start + APPENDS:,}; median)",
            f"{1 / seconds:,.0f}",
            f"{seconds * 1e3:.2f}",
            f"{floor * 1e3:.2f}",
            f"{seconds / floor:.1f}",
            f"{index_bytes:,}",
        )
        for start, seconds, floor, index_bytes in build.windows
    ]
    count, seconds = build.extend
    rows.insert(
        1,
        (
            f"extend, {CHUNK} per transaction (R = {SMALL_R:,}..{N_RECORDS - APPENDS:,})",
            f"{count / seconds:,.0f}",
            f"{seconds / count * 1e3:.2f}",
            "-",
            "-",
            "-",
        ),
    )
    return rows


def _density(path: Path, atom_frames: int) -> list[Row]:
    env = lmdb.open(str(path), subdir=False, readonly=True, lock=False)
    payload = frames = 0
    with env.begin() as txn:
        for k, v in txn.cursor():
            payload += len(k) + len(v)
            if k[:1] == b"f" and len(k) == 9:
                frames += len(v)
    stat, info = env.stat(), env.info()
    env.close()
    size = path.stat().st_size
    used = (info["last_pgno"] + 1) * stat["psize"]
    return [
        ("file on disk, as grown", f"{size:,}", f"{size / atom_frames:.1f}"),
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


def _floor_round(env: Any, plan: list[tuple[bytes, int, list[int]]]) -> list[Any]:
    def read(key: bytes, n: int, offsets: list[int]) -> tuple[Any, ...]:
        with env.begin() as txn:
            value = txn.get(key)
            return tuple(np.frombuffer(value, np.float64, n, at) for at in offsets)

    # The loop of the mrecd cases: one call per read, the results kept in a list.
    return [read(key, n, offsets) for key, n, offsets in plan]


def _floor_dropped(env: Any, plan: list[tuple[bytes, int, list[int]]]) -> None:
    """The floor of earlier sessions: each array dropped at once (its memory reused
    by the next, which no caller that keeps its frames gets)."""
    for key, n, offsets in plan:
        with env.begin() as txn:
            value = txn.get(key)
            for offset in offsets:
                np.frombuffer(value, np.float64, n, offset)


def _interleaved(cases: dict[str, Callable[[int], Any]]) -> dict[str, float]:
    """Median time of each case over the rounds, after a warm-up round, the cases
    taking turns within a round so that a change of load on the shared machine
    hits them alike. The collector runs between timings, never inside one's
    garbage of the case before (it stays on: a loader runs with it)."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for k in range(-1, ROUNDS):
        for name, fn in cases.items():
            gc.collect()
            seconds = _timed(lambda fn=fn, k=k: fn(max(k, 0)))
            if k >= 0:
                times[name].append(seconds)
    return {name: statistics.median(t) for name, t in times.items()}


def _single_reads(path: Path) -> list[Row]:
    col = mrecd.open_collection(path)
    env = col._binding._live().env
    first, counts = col.index["first_frame"].values.copy(), col.index["n_frames"].values.copy()
    rounds = [_targets(counts, READS_PER_ROUND, seed) for seed in range(ROUNDS)]
    plans = [_plan(env, first, targets) for targets in rounds]

    def cold(k: int) -> float:
        fresh = mrecd.open_collection(path)  # new process state: nothing cached
        seconds = _timed(lambda: [fresh[r].trajectory[i] for r, i in rounds[k]])
        fresh.close()
        return seconds

    col.close()
    t_cold = min(cold(k) for k in range(ROUNDS))
    col = mrecd.open_collection(path)
    env = col._binding._live().env
    for targets in rounds:  # fill the caches
        [col[r].trajectory[i] for r, i in targets]
    held = [[col[r].trajectory for r, _ in targets] for targets in rounds]

    def pairs(k: int) -> Any:
        return zip(held[k], rounds[k], strict=True)

    t = _interleaved(
        {
            "floor": lambda k: _floor_round(env, plans[k]),
            "dropped": lambda k: _floor_dropped(env, plans[k]),
            "warm": lambda k: [col[r].trajectory[i] for r, i in rounds[k]],
            "held": lambda k: [tr[i] for tr, (_, i) in pairs(k)],
            "record": lambda k: [col[r] for r, _ in rounds[k]],
            "proj": lambda k: [tr.read(i, columns=["x"]) for tr, (_, i) in pairs(k)],
        }
    )
    col.close()
    n, floor = READS_PER_ROUND, t["floor"]

    def row(label: str, seconds: float) -> Row:
        return (label, f"{n / seconds:,.0f}", f"{seconds / n * 1e6:.1f}", f"{seconds / floor:.1f}")

    return [
        row("floor: txn.get + np.frombuffer x, y, z (arrays kept)", floor),
        row("floor, each array dropped at once (earlier sessions' floor)", t["dropped"]),
        row("col[r].trajectory[i], nothing cached (fresh open)", t_cold),
        row("col[r].trajectory[i], record layouts and systems cached", t["warm"]),
        row("trajectory[i] on a held trajectory", t["held"]),
        row("trajectory.read(i, columns=['x']) on a held trajectory", t["proj"]),
        row("col[r] alone (meta + system, cached)", t["record"]),
    ]


def _forget_records(col: mrecd.Collection) -> None:
    """Empty the process's caches of record views, layouts and systems (a first
    read), keeping the file mapped as the floor has it (no page faults timed)."""
    caches = col._binding.cached().caches
    with caches.lock:
        caches.views.clear()
        caches.layouts.clear()
        caches.systems.clear()
        caches.system_bytes = 0


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

    def floor_batch(plan: list[tuple[bytes, int, list[int]]]) -> list[Any]:
        with env.begin() as txn:  # the arrays kept, as read_many's records are
            return [
                np.frombuffer(txn.get(key), np.float64, n, at)
                for key, n, offsets in plan
                for at in offsets
            ]

    def touched(batch: list[int]) -> list[Any]:
        # Every Frame built and an array taken, as a loader uses them.
        return [f["atoms"]["x"].values for rec in col.read_many(batch) for f in rec.trajectory]

    def dropped_batch(plan: list[tuple[bytes, int, list[int]]]) -> None:
        with env.begin() as txn:
            for key, n, offsets in plan:
                value = txn.get(key)
                for offset in offsets:
                    np.frombuffer(value, np.float64, n, offset)

    names = ("floor", "loaded", "again", "touched", "lazy", "dropped")
    times: dict[str, list[float]] = {k: [] for k in names}

    def turn(fn: Callable[[], Any]) -> float:
        gc.collect()  # not inside a timing: the garbage of the one before
        return _timed(fn)

    for plan, batch in zip(plans, batches, strict=True):  # taking turns, as _interleaved
        times["floor"].append(turn(lambda p=plan: floor_batch(p)))
        times["dropped"].append(turn(lambda p=plan: dropped_batch(p)))
        _forget_records(col)  # nothing of these records is known: every update is checked
        times["loaded"].append(turn(lambda b=batch, c=col: c.read_many(b)))
        times["again"].append(turn(lambda b=batch, c=col: c.read_many(b)))
        times["touched"].append(turn(lambda b=batch: touched(b)))
        times["lazy"].append(turn(lambda b=batch, c=col: c.read_many(b, frames=False)))
    floor, loaded, again, touch, lazy, dropped = (statistics.median(times[k]) for k in names)
    frames = statistics.mean(sum(int(counts[r]) for r in b) for b in batches)
    col.close()

    def row(label: str, seconds: float, with_frames: bool = True) -> Row:
        rate = f"{frames / seconds:,.0f}" if with_frames else "-"
        return (label, f"{seconds * 1e3:.2f}", rate, f"{seconds / floor:.1f}")

    return [
        row("floor: txn.get of every value + np.frombuffer of every column (arrays kept)", floor),
        row("floor, arrays dropped at once (earlier sessions' floor)", dropped),
        row("read_many(256 records): first read in this process, every update checked", loaded),
        row("read_many(256 records) again: read and checked before (sizes checked)", again),
        row("read_many(256 records) again, then every frame's x (each Frame built)", touch),
        row("read_many(256 records, frames=False): meta + system", lazy, with_frames=False),
    ]


def main() -> None:
    """Build the synthetic collection, then print the tables."""
    workdir = Path(tempfile.mkdtemp(prefix="mrecd-bench-"))
    try:
        path = workdir / "bench.mrec.lmdb"
        build = _Build(path)
        started = time.perf_counter()
        build.run()
        with mrecd.open_collection(path) as col:
            n_frames = col.n_frames
        print(
            f"{N_RECORDS:,} records, {n_frames:,} frames, {build.atom_frames:,} atom-frames"
            f" (built in {time.perf_counter() - started:.0f} s, {build.generate:.0f} s of it"
            " generating records)\n"
        )
        print("### Appends (every transaction synced to disk)\n")
        _table(
            ("operation", "records/s", "ms/record", "floor ms/record", "ratio", "index bytes"),
            _append_rows(build),
        )
        (_, first, first_floor, _), (_, last, last_floor, _) = build.windows[0], build.windows[-1]
        print(
            f"The median append at R = {N_RECORDS:,} takes {last / first:.2f}x the time of one"
            f" around R = {min(SMALL_R, N_RECORDS // 4):,}; {last / last_floor:.2f} against"
            f" {first / first_floor:.2f} times its floor, measured beside it"
            f" ({(last / last_floor) / (first / first_floor):.2f}x).\n"
        )
        small, grown = _side_by_side(path)
        print(
            f"Taking turns, one append into a fresh {SMALL_R:,}-record collection and one into"
            f" this {N_RECORDS:,}-record file, {APPENDS} each: {small * 1e3:.2f} ms against"
            f" {grown * 1e3:.2f} ms (median), {grown / small:.2f}x (goal: within 1.5x).\n"
        )
        gc.collect()
        density = _density(path, build.atom_frames)
        print(
            f"### Random frame reads (median of {ROUNDS} rounds of {READS_PER_ROUND:,},"
            " one process)\n"
        )
        _table(("read", "reads/s", "µs/read", "ratio to floor"), _single_reads(path))
        print(f"### Batch reads ({BATCH} random records; median of {N_BATCHES} batches)\n")
        _table(("read", "ms/batch", "frames/s", "ratio to floor"), _batch_reads(path))
        with mrecd.open_collection(path, "r+") as col:
            t_compact = _timed(col.compact)  # in place
        size = path.stat().st_size
        density.insert(
            1,
            (
                f"after col.compact() in place ({t_compact:.1f} s)",
                f"{size:,}",
                f"{size / build.atom_frames:.1f}",
            ),
        )
        print("### File size\n")
        _table(("what", "bytes", "bytes per atom-frame"), density)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
