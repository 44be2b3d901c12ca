"""Trajectory benchmarks (issue 4): density, append rate, frame-read latency.

Workload of seed 004 F1.3: 3000 atoms uniform in a 40 Å box, a 0.05 Å random
walk per frame, x/y/z at a declared precision, plus an unchanging ``bonds``
block presented every frame. Baselines run in the same process, same
machine, same moment: an XTC writer (MDAnalysis), zarr-python writing the
same frames with resize + write, and zarr-python reading a frame.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

import mrecd
from mrecd.api._trajectory import create_trajectory, open_trajectory
from mrecd.bindings.zarr import _shard
from mrecd.bindings.zarr._tree import Tree
from mrecd.storage import DirectoryStore

N_ATOMS = 3000
BOX = 40.0
STEP = 0.05


def _root(tmp: Path, name: str) -> Path:
    root = tmp / f"{name}.mrec"
    root.mkdir()
    (root / "zarr.json").write_text('{"zarr_format":3,"node_type":"group","attributes":{}}')
    (root / "meta").mkdir()
    (root / "meta" / "zarr.json").write_text(
        '{"zarr_format":3,"node_type":"group","attributes":{"molrec_version":2}}'
    )
    return root


def _declaration(precision: float | None) -> dict[str, Any]:
    column: dict[str, Any] = {"dtype": "f64", "trailing": []}
    if precision is not None:
        column["precision"] = precision
    return {
        "blocks": {
            "atoms": {"columns": {c: dict(column) for c in "xyz"}},
            "bonds": {
                "columns": {
                    "atomi": {"dtype": "u64", "trailing": []},
                    "atomj": {"dtype": "u64", "trailing": []},
                }
            },
        },
        "meta": {},
    }


def walk(n_frames: int, n_atoms: int = N_ATOMS, seed: int = 0) -> Iterator[np.ndarray]:
    """Positions ``[3, n_atoms]`` of a random walk, one array per frame."""
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0, BOX, (3, n_atoms))
    for _ in range(n_frames):
        pos = pos + rng.normal(0, STEP, pos.shape)
        yield pos


BONDS = {
    "atomi": np.arange(0, N_ATOMS - 1, 2, dtype=np.uint64),
    "atomj": np.arange(1, N_ATOMS, 2, dtype=np.uint64),
}


def frames(n: int, *, bonds: bool = True, seed: int = 0) -> list[mrecd.Frame]:
    out = []
    for i, pos in enumerate(walk(n, seed=seed)):
        blocks: dict[str, Any] = {"atoms": {"x": pos[0], "y": pos[1], "z": pos[2]}}
        if bonds:
            blocks["bonds"] = BONDS
        out.append(mrecd.Frame(blocks, step=i))
    return out


def _column_bytes(root: Path, columns: str = "xyz") -> tuple[int, int]:
    """(bytes of the encoded chunks, bytes of the shard files) of the coordinate columns."""
    chunks = files = 0
    for c in columns:
        for shard in (root / "trajectory" / "atoms" / c / "c").rglob("*"):
            if not shard.is_file():
                continue
            files += shard.stat().st_size
            raw = shard.read_bytes()
            meta = json.loads((shard.parents[1] / "zarr.json").read_text())
            conf = meta["codecs"][0]["configuration"]
            n = meta["chunk_grid"]["configuration"]["chunk_shape"][0] // conf["chunk_shape"][0]
            index = np.frombuffer(raw[: 16 * n], dtype="<u8").reshape(n, 2)
            chunks += int(index[index[:, 0] != 2**64 - 1][:, 1].sum())
    return chunks, files


def density(tmp: Path) -> list[list[str]]:
    rows = []
    n_frames = 400
    data = frames(n_frames)
    for p in (1e-3, 1e-2, None):
        root = _root(tmp, f"density-{p}")
        create_trajectory(root, _declaration(p))
        traj = open_trajectory(root)
        traj.extend(data)
        traj.close()
        chunks, files = _column_bytes(root)
        atom_frames = N_ATOMS * n_frames
        rows.append(
            [
                f"random walk, p = {p}" if p else "random walk, no precision",
                f"{chunks / atom_frames:.2f}",
                f"{files / atom_frames:.2f}",
                "24.00",
            ]
        )
    rows += _adk_density(tmp)
    return rows


def _adk_density(tmp: Path) -> list[list[str]]:
    try:
        import MDAnalysis as mda  # noqa: N813 - the package's own convention
        from MDAnalysisTests.datafiles import GRO, XTC
    except ImportError:
        return [["adk (MDAnalysisTests)", "n/a: pip install '.[bench]'", "", ""]]
    universe = mda.Universe(GRO, XTC)
    n_atoms = universe.atoms.n_atoms
    positions = [ts.positions.astype(np.float64) for ts in universe.trajectory]
    xtc_size = os.path.getsize(XTC)
    atom_frames = n_atoms * len(positions)
    rows = []
    for p in (1e-2, 1e-3):
        root = _root(tmp, f"adk-{p}")
        create_trajectory(
            root,
            {
                "blocks": {
                    "atoms": {
                        "columns": {
                            c: {"dtype": "f64", "trailing": [], "precision": p} for c in "xyz"
                        }
                    }
                },
                "meta": {},
            },
        )
        traj = open_trajectory(root)
        traj.extend(
            mrecd.Frame({"atoms": dict(zip("xyz", pos.T, strict=True))}, step=i)
            for i, pos in enumerate(positions)
        )
        traj.close()
        chunks, files = _column_bytes(root)
        rows.append(
            [
                f"adk protein ({n_atoms} atoms, {len(positions)} frames), p = {p} Å",
                f"{chunks / atom_frames:.2f}",
                f"{files / atom_frames:.2f}",
                f"XTC file: {xtc_size / atom_frames:.2f} (0.01 Å grid)",
            ]
        )
    return rows


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


POOL = 512  # distinct frames the long runs cycle through (37 MB, not 7 GB at 10^5 frames)


def _pool_frame(pool: list[np.ndarray], i: int) -> mrecd.Frame:
    """Frame ``i`` of a run cycling through ``pool``, built as a user builds it."""
    pos = pool[i % len(pool)]
    return mrecd.Frame({"atoms": {"x": pos[0], "y": pos[1], "z": pos[2]}, "bonds": BONDS}, step=i)


def _append_frames(traj: Any, pool: list[np.ndarray], n: int, batch: int) -> np.ndarray:
    """Append ``n`` frames of ``pool`` (cycled), building each ``Frame`` in the loop.

    Returns the clock after each call (``[0]``: before the first).
    """
    stamps = np.empty(-(-n // batch) + 1)
    stamps[0] = time.perf_counter()
    if batch == 1:
        for i in range(n):
            traj.append(_pool_frame(pool, i))
            stamps[i + 1] = time.perf_counter()
        return stamps
    for k, first in enumerate(range(0, n, batch)):
        traj.extend(_pool_frame(pool, i) for i in range(first, min(n, first + batch)))
        stamps[k + 1] = time.perf_counter()
    return stamps


def _bare_rate(tmp: Path, pool: list[np.ndarray], n: int = 2000) -> float:
    """The work of an append done inline: quantize, shuffle + zstd 3 per column, one file, fsync.

    The floor issue 17 holds the writer to: no admission, no index, no metadata.
    ``n`` frames of ``pool`` (cycled), as the mrecd runs take them.
    """
    from numcodecs import Zstd

    zstd = Zstd(level=3)
    path = tmp / "bare.bin"

    def write() -> None:
        with path.open("wb") as out:
            for i in range(n):
                pos = pool[i % len(pool)]
                for c in range(3):
                    rounded = mrecd.quantize(pos[c], 1e-3)
                    out.write(zstd.encode(rounded.view(np.uint8).reshape(-1, 8).T.tobytes()))
            out.flush()
            os.fsync(out.fileno())

    rate = n / _timed(write)
    path.unlink()
    return rate


def _mrecd_rate(
    tmp: Path, name: str, pool: list[np.ndarray], n: int, batch: int
) -> tuple[float, Any]:
    root = _root(tmp, name)
    create_trajectory(root, _declaration(1e-3))
    traj = open_trajectory(root)
    stamps = _append_frames(traj, pool, n, batch)
    close = _timed(traj.close)
    assert traj._writer is None
    shutil.rmtree(root)  # a 10^5-frame run is 2.3 GB
    return n / (stamps[-1] - stamps[0] + close), stamps


def _window_median(stamps: Any, starts: list[int], window: int) -> float:
    """Median per-append time over windows of ``window`` appends starting at ``starts``.

    Three windows, not one: a single window catches a page-cache writeback stall
    (one 500-append window in 16 takes 4x the others on this machine) and would
    report it as growth with nstep.
    """
    return statistics.median((stamps[a + window] - stamps[a]) / window for a in starts)


EXTEND_ROUNDS = 3  # extend(64) runs, each right after a bare run of its own


def _extend_pairs(tmp: Path, pool: list[np.ndarray], n: int) -> tuple[float, float, list[float]]:
    """``EXTEND_ROUNDS`` rounds of a bare run then an ``extend(64)`` run of ``n`` frames.

    Returns the median extend rate, the median of the rounds' extend/bare ratios and
    the bare rates. A ratio of two runs seconds apart cancels most of the machine's
    drift (the bare loop alone ranges over 1.5x within minutes on a shared VM), which
    one extend run against bare runs a minute away does not.
    """
    rates, ratios, bare = [], [], []
    for _ in range(EXTEND_ROUNDS):
        bare.append(_bare_rate(tmp, pool))
        rate, _ = _mrecd_rate(tmp, "extend", pool, n, 64)
        rates.append(rate)
        ratios.append(rate / bare[-1])
    return statistics.median(rates), statistics.median(ratios), bare


def append_rate(tmp: Path) -> tuple[list[list[str]], list[list[str]], dict[str, float]]:
    n = int(os.environ.get("MRECD_BENCH_FRAMES", "100000"))
    pool = list(walk(POOL))
    # bare work before and after the run it is compared with (the machine is shared)
    bare = [_bare_rate(tmp, pool)]
    one, stamps = _mrecd_rate(tmp, "append", pool, n, 1)
    bare.append(_bare_rate(tmp, pool))
    many, many_ratio, paired = _extend_pairs(tmp, pool, min(n, 8192))
    floor = statistics.median(bare + paired)
    one_ratio = one / statistics.median(bare)
    k = 59  # the default K of this frame size (chunking.md §6); windows are whole multiples of it
    window = 8 * k
    early = _window_median(stamps, [100 + j * window for j in range(3)], window)
    late = _window_median(stamps, [n - (j + 1) * window for j in range(3)], window)
    rows = [
        [
            f"mrecd append, {n:,} frames (Frame built in the loop, durable close; against the"
            " bare runs before and after it)",
            f"{one:,.0f}",
            f"{one_ratio:.2f}",
        ],
        [
            f"mrecd extend of 64 frames (median of {EXTEND_ROUNDS} rounds, each against the"
            " bare run just before it)",
            f"{many:,.0f}",
            f"{many_ratio:.2f}",
        ],
        [
            "bare work inline (quantize, shuffle + zstd 3, one file, fsync; median of"
            f" {len(bare) + len(paired)} runs)",
            f"{floor:,.0f}",
            "1.00",
        ],
    ]
    data = frames(2000)
    baselines = [_xtc_rate(tmp, data), _zarr_rate(tmp, data[:200])]
    for name, rate in baselines:
        if rate is not None:
            rows.append([name, f"{rate:,.0f}", f"{rate / floor:.2f}"])
    flat = [
        ["per append from nstep 100 (median of 3 windows)", f"{early * 1e6:.0f} µs"],
        [f"per append up to nstep {n:,} (median of 3 windows)", f"{late * 1e6:.0f} µs"],
        [f"ratio ({n:,} / 100)", f"{late / early:.2f}"],
    ]
    goals = {"append": one_ratio, "extend": many_ratio, "flat": late / early, "n": n}
    return rows, flat, goals


def _xtc_rate(tmp: Path, data: list[mrecd.Frame]) -> tuple[str, float | None]:
    try:
        import MDAnalysis as mda  # noqa: N813 - the package's own convention
        from MDAnalysis.coordinates.XTC import XTCWriter
    except ImportError:
        return ("XTC writer (MDAnalysis): not installed", None)
    universe = mda.Universe.empty(N_ATOMS, trajectory=True)
    path = tmp / "walk.xtc"
    arrays = [
        np.stack([f["atoms"][c].values for c in "xyz"], axis=1).astype(np.float32) for f in data
    ]

    def write() -> None:
        with XTCWriter(str(path), N_ATOMS) as writer:
            for pos in arrays:
                universe.atoms.positions = pos
                writer.write(universe.atoms)

    return ("XTC writer (MDAnalysis, float32 input)", len(arrays) / _timed(write))


def _zarr_rate(tmp: Path, data: list[mrecd.Frame]) -> tuple[str, float | None]:
    import zarr
    from zarr.codecs import Crc32cCodec, ZstdCodec

    shuffle = zarr.registry.get_codec_class("numcodecs.shuffle")(elementsize=8)
    group = zarr.open_group(str(tmp / "plain.zarr"), mode="w")
    arrays = {
        c: group.create_array(
            c,
            shape=(0,),
            dtype="f8",
            chunks=(N_ATOMS,),
            shards=(N_ATOMS * 1024,),
            compressors=[shuffle, ZstdCodec(level=3), Crc32cCodec()],
        )
        for c in "xyz"
    }

    def write() -> None:
        for i, f in enumerate(data):
            for c, array in arrays.items():
                array.resize(((i + 1) * N_ATOMS,))
                array[i * N_ATOMS :] = mrecd.quantize(f["atoms"][c].values, 1e-3)

    return ("zarr-python alone (resize + write per frame)", len(data) / _timed(write))


def _read_nsteps() -> list[int]:
    return [int(v) for v in os.environ.get("MRECD_BENCH_READ", "1000,10000,100000").split(",")]


def _build_read_store(tmp: Path, n: int) -> Path:
    root = _root(tmp, f"read-{n}")
    declaration = _declaration(1e-3)
    declaration["blocks"]["sites"] = {"columns": {"atomi": {"dtype": "u64", "trailing": []}}}
    create_trajectory(root, declaration)
    traj = open_trajectory(root)
    batch: list[mrecd.Frame] = []
    for i, pos in enumerate(walk(n, seed=1)):
        blocks: dict[str, Any] = {"atoms": {"x": pos[0], "y": pos[1], "z": pos[2]}}
        if i % 10 == 0:  # an indexed block: a binary search over its step_index
            blocks["sites"] = {"atomi": np.arange(1 + i % 7, dtype=np.uint64)}
        batch.append(mrecd.Frame(blocks, step=i))
        if len(batch) == 2000:
            traj.extend(batch)
            batch = []
    traj.extend(batch)
    traj.close()
    return root


def read_latency(
    tmp: Path,
) -> tuple[list[list[str]], list[list[str]], dict[int, tuple[float, ...]]]:
    rows = []
    bytes_rows = []
    medians: dict[int, tuple[float, float]] = {}
    goals: dict[int, tuple[float, ...]] = {}
    nsteps = _read_nsteps()
    for n in nsteps:
        root = _build_read_store(tmp, n)
        reader = open_trajectory(root)
        rng = np.random.default_rng(3)
        picks = rng.integers(0, n, 400)
        first = _latencies(reader, picks)  # most picks touch a shard for the first time
        steady = _latencies(reader, picks)  # the same frames again: shard indexes cached
        medians[n] = (statistics.median(first), statistics.median(steady))
        shards = len(list((root / "trajectory" / "atoms" / "x" / "c").iterdir()))
        xtc = _xtc_reader(tmp, n, picks)
        ratio = ""
        if xtc is not None:
            # Both in the page cache, read the same way just before the rounds: the
            # 2.3 GB store at 10^5 was written before the XTC file and had partly
            # left the cache by the time it was timed (and the host reclaims idle pages).
            _warm(root, tmp / f"read-{n}.xtc")
            # rounds alternate XTC, traj[i] and read(i, ["x"]): each ratio within one round
            rounds = [_read_round(reader, xtc, picks) for _ in range(5)]
            goals[n] = (
                statistics.median(r[0] for r in rounds),
                statistics.median(r[1] for r in rounds),
            )
            ratio = f"{goals[n][0]:.2f}"
        rows.append(
            [
                f"mrecd traj[i], nstep {n:,} ({shards} shards per column)",
                f"{medians[n][0] * 1e3:.3f} ms",
                f"{medians[n][1] * 1e3:.3f} ms",
                ratio,
            ]
        )
        if xtc is not None:
            one_ms = statistics.median(r[2] for r in rounds)
            base_ms = statistics.median(r[3] for r in rounds)
            rows.append(
                [
                    f"mrecd traj.read(i, columns=['x']), nstep {n:,}",
                    "",
                    f"{one_ms * 1e3:.3f} ms",
                    f"{goals[n][1]:.2f}",
                ]
            )
            rows.append(
                [
                    f"XTC u.trajectory[i] (MDAnalysis, file kept open), nstep {n:,}",
                    "",
                    f"{base_ms * 1e3:.3f} ms",
                    "1.00",
                ]
            )
        if n == nsteps[0]:
            zarr_ms = f"{_zarr_read(root, picks) * 1e3:.3f} ms"
            rows.append(["zarr-python, x/y/z rows of frame i (same store)", zarr_ms, zarr_ms, ""])
        bytes_rows.append(_bytes_read(root, n, int(picks[-1])))
        reader.close()
        shutil.rmtree(root)
    if len(nsteps) > 1:
        lo, hi = nsteps[0], nsteps[-1]
        ratios = [medians[hi][k] / medians[lo][k] for k in (0, 1)]
        rows.append([f"ratio ({hi:,} / {lo:,})", f"{ratios[0]:.2f}", f"{ratios[1]:.2f}", ""])
    return rows, bytes_rows, goals


def _warm(*paths: Path) -> None:
    """Read every file under ``paths`` end to end once (into the page cache)."""
    for path in paths:
        for name in [path] if path.is_file() else sorted(path.rglob("*")):
            if name.is_file():
                with name.open("rb") as f:
                    while f.read(1 << 20):
                        pass


def _read_round(reader: Any, xtc: Any, picks: np.ndarray) -> tuple[float, ...]:
    """Medians of one round: (traj[i] / XTC, read(i, ["x"]) / XTC, read x s, XTC s)."""
    base = statistics.median(_xtc_latencies(xtc, picks))
    full = statistics.median(_latencies(reader, picks))
    one = statistics.median(_latencies(reader, picks, columns=["x"]))
    return full / base, one / base, one, base


def _xtc_reader(tmp: Path, n: int, picks: np.ndarray) -> Any:
    """An open MDAnalysis XTC reader of the same coordinates, offsets built (``None``: no MDA)."""
    try:
        import MDAnalysis as mda  # noqa: N813 - the package's own convention
        from MDAnalysis.coordinates.XTC import XTCWriter
    except ImportError:
        return None
    path = tmp / f"read-{n}.xtc"
    universe = mda.Universe.empty(N_ATOMS, trajectory=True)
    with XTCWriter(str(path), N_ATOMS) as writer:
        for pos in walk(n, seed=1):
            universe.atoms.positions = pos.T.astype(np.float32)
            writer.write(universe.atoms)
    reader = mda.Universe.empty(N_ATOMS)
    reader.load_new(str(path))
    trajectory = reader.trajectory
    trajectory[int(picks[0])]  # offsets built: what an open XTC keeps
    _xtc_latencies(trajectory, picks)  # warm, as the mrecd reader is
    return trajectory


def _xtc_latencies(trajectory: Any, picks: np.ndarray) -> list[float]:
    times = []
    for i in picks:
        start = time.perf_counter()
        trajectory[int(i)]
        times.append(time.perf_counter() - start)
    return times


def _latencies(reader: Any, picks: np.ndarray, columns: list[str] | None = None) -> list[float]:
    out = []
    for i in picks:
        start = time.perf_counter()
        if columns is None:
            reader[int(i)]
        else:
            reader.read(int(i), columns=columns)
        out.append(time.perf_counter() - start)
    return out


def _zarr_read(root: Path, picks: np.ndarray) -> float:
    import zarr

    arrays = [zarr.open_array(str(root / "trajectory" / "atoms" / c), mode="r") for c in "xyz"]
    times = []
    for i in picks[:100]:
        start = time.perf_counter()
        for a in arrays:
            a[int(i) * N_ATOMS : (int(i) + 1) * N_ATOMS]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _bytes_read(root: Path, n: int, i: int) -> list[str]:
    reads: list[int] = []
    real = _shard._pread_counted

    def counting(source: Any, offset: int, size: int) -> bytes:
        data = real(source, offset, size)
        reads.append(len(data))
        return data

    _shard._pread_counted = counting  # type: ignore[assignment]
    try:
        reader = open_trajectory(root)
        reader[i]
        cold = sum(reads)
        reads.clear()
        reader[max(0, i - 1)]
        warm = sum(reads)
    finally:
        _shard._pread_counted = real  # type: ignore[assignment]
    chunk_bytes = 0
    for c in "xyz":
        meta = json.loads((root / "trajectory" / "atoms" / c / "zarr.json").read_text())
        arr = _shard.ArrayReader(Tree(DirectoryStore(root / "trajectory" / "atoms" / c)), "", meta)
        index = arr._shard_index(i * N_ATOMS // arr.outer_rows)
        assert index is not None
        chunk_bytes += int(index[(i * N_ATOMS // arr.inner_rows) % arr.per_shard, 1])
    return [f"nstep {n:,}, frame {i}", f"{chunk_bytes:,}", f"{warm:,}", f"{cold:,}"]


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _goals(append: dict[str, float] | None, read: dict[int, tuple[float, ...]]) -> list[list[str]]:
    """Issue 17's goals beside what this run measured (``None``: the append part did not run)."""

    def met(ok: bool) -> str:
        return "yes" if ok else "no"

    rows = (
        []
        if append is None
        else [
            [
                "one-frame append incl. durable close / bare work",
                f"{append['append']:.2f}",
                "≥ 1.0",
                met(append["append"] >= 1.0),
            ],
            [
                f"flat: per append at nstep {append['n']:,.0f} / at nstep 100",
                f"{append['flat']:.2f}",
                "≈ 1",
                met(append["flat"] <= 1.15),
            ],
            [
                "extend of 64 frames / bare work",
                f"{append['extend']:.2f}",
                "≥ 1.5",
                met(append["extend"] >= 1.5),
            ],
        ]
    )
    for n, (full, one) in read.items():
        rows.append(
            [f"traj[i] / XTC seek+read, nstep {n:,}", f"{full:.2f}", "≤ 1.0", met(full <= 1.0)]
        )
        rows.append(
            [f"read(i, columns=['x']) / XTC, nstep {n:,}", f"{one:.2f}", "≈ 0.33", met(one <= 0.4)]
        )
    return rows


def _parts() -> set[str]:
    """The parts to run: ``MRECD_BENCH_PARTS`` (comma-separated: density, append, read; all)."""
    return set(os.environ.get("MRECD_BENCH_PARTS", "density,append,read").split(","))


def main() -> None:
    parts = _parts()
    append_goals: dict[str, float] | None = None
    read_goals: dict[int, tuple[float, ...]] = {}
    with tempfile.TemporaryDirectory(prefix="mrecd-bench-") as name:
        tmp = Path(name)
        if "density" in parts:
            print("### Density: bytes per atom per frame, x/y/z columns\n")
            print(
                _table(
                    ["case", "encoded chunks", "shard files (with index)", "raw / XTC"],
                    density(tmp),
                )
            )
        if "append" in parts:
            rates, flat, append_goals = append_rate(tmp)
            print("\n### Append: 3000-atom frames, one at a time (frames/s)\n")
            print(_table(["writer", "frames/s", "/ bare work"], rates))
            print()
            print(_table(["flat as the run grows", ""], flat))
        if "read" in parts:
            read_goals = _print_reads(tmp)
        print("\n### Issue 17: ratios measured in this run against its goals\n")
        print(_table(["metric", "this run", "goal", "met"], _goals(append_goals, read_goals)))


def _print_reads(tmp: Path) -> dict[int, tuple[float, ...]]:
    latency, bytes_rows, read_goals = read_latency(tmp)
    print("\n### Read: median latency of frame i (random i)\n")
    print(
        _table(
            ["read", "median, first touch", "median, shard indexes cached", "/ XTC read"],
            latency,
        )
    )
    print("\n### Bytes read for one frame (x, y, z, bonds, an indexed block)\n")
    print(
        _table(
            [
                "store",
                "bytes of x/y/z chunks",
                "bytes read (warm)",
                "bytes read (cold: + shard indexes)",
            ],
            bytes_rows,
        )
    )
    return read_goals
