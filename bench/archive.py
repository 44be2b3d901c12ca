"""Archive benchmark (issue 15): live vs archival layout of the adk protein, against its XTC.

The adk XTC of MDAnalysisTests (47,681 atoms, 10 frames, 0.01 Å grid) is
stored at p = 1e-2 Å (binary grid 2^-7 Å, so every XTC value stays distinct)
in the live layout (one frame per inner chunk, shuffle + zstd 3), then
archived (``mrecd.archive_record``): one frame per chunk at zstd 19, and the
default of about 4 MiB of values per chunk (all 10 frames here). Baselines
run in the same process: MDAnalysis writing the same float32 coordinates as
XTC and reading frame i of that file.

Reported per layout: bytes per atom-frame of x/y/z (chunks and shard
indexes) and of the whole record; the largest coordinate difference from
what MDAnalysis reads out of the XTC; write time; and a random frame read
through a fresh handle (open, then x/y/z of frame i), with the bytes it
fetched from storage.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import mrecd
from mrecd.storage import CountingStore, DirectoryStore

PRECISION = 1e-2
READS = 15
LIVE, ONE_FRAME, DEFAULT = "live", "archive, 1 frame per chunk", "archive, default (4 MiB chunks)"


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _tree_bytes(path: Path, under: str = "") -> int:
    return sum(p.stat().st_size for p in (path / under).rglob("*") if p.is_file())


def _frames(positions: list[np.ndarray], steps: list[int], times: list[float]) -> list[mrecd.Frame]:
    return [
        mrecd.Frame({"atoms": dict(zip("xyz", pos.T.copy(), strict=True))}, step=s, time=t)
        for pos, s, t in zip(positions, steps, times, strict=True)
    ]


def _write_live(root: Path, frames: list[mrecd.Frame]) -> float:
    declaration = mrecd.Declaration.from_dict(
        {
            "blocks": {
                "atoms": {
                    "columns": {
                        c: {"dtype": "f64", "trailing": [], "precision": PRECISION} for c in "xyz"
                    }
                }
            },
            "meta": {},
        }
    )

    def write() -> None:
        with mrecd.open(root).create_record("adk", declaration=declaration) as rec:
            assert rec.trajectory is not None
            rec.trajectory.extend(frames)

    return _timed(write)


def _max_error(record: Path, positions: list[np.ndarray]) -> float:
    worst = 0.0
    with mrecd.open_record(record) as rec:
        assert rec.trajectory is not None
        for i, pos in enumerate(positions):
            atoms = rec.trajectory.read(i, columns=["x", "y", "z"])["atoms"]
            got = np.stack([atoms[c].values for c in "xyz"], axis=1)
            worst = max(worst, float(np.abs(got - pos).max()))
    return worst


def _random_reads(record: Path, picks: np.ndarray) -> tuple[float, float]:
    """Median seconds to open ``record`` and read x/y/z of frame i, and median bytes fetched."""
    counting = CountingStore(DirectoryStore(record.parent))
    seconds, fetched = [], []
    for i in picks:
        counting.reset()
        start = time.perf_counter()
        with mrecd.open(counting).record(record.name.removesuffix(".mrec")) as rec:
            assert rec.trajectory is not None
            rec.trajectory.read(int(i), columns=["x", "y", "z"])
        seconds.append(time.perf_counter() - start)
        fetched.append(counting.nbytes("get"))
    return statistics.median(seconds), statistics.median(fetched)


def _xtc(tmp: Path, positions: list[np.ndarray], picks: np.ndarray) -> tuple[float, float]:
    """Seconds to write the coordinates as XTC; median fresh-reader read of frame i."""
    import MDAnalysis as mda  # noqa: N813 - the package's own convention
    from MDAnalysis.coordinates.XTC import XTCReader, XTCWriter

    n_atoms = positions[0].shape[0]
    path = tmp / "adk-again.xtc"
    universe = mda.Universe.empty(n_atoms, trajectory=True)

    def write() -> None:
        with XTCWriter(str(path), n_atoms) as writer:
            for pos in positions:
                universe.atoms.positions = pos.astype(np.float32)
                writer.write(universe.atoms)

    written = _timed(write)
    XTCReader(str(path)).close()  # offsets built and saved beside the file, as MDAnalysis does
    reads = []
    for i in picks:
        start = time.perf_counter()
        reader = XTCReader(str(path))
        reader[int(i)]
        reader.close()
        reads.append(time.perf_counter() - start)
    return written, statistics.median(reads)


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    try:
        import MDAnalysis as mda  # noqa: N813 - the package's own convention
        from MDAnalysisTests.datafiles import GRO, XTC
    except ImportError:
        print("archive: needs MDAnalysis and MDAnalysisTests (pip install '.[bench]')")
        return
    universe = mda.Universe(GRO, XTC)
    positions = [ts.positions.astype(np.float64) for ts in universe.trajectory]
    steps = [int(ts.data.get("step", ts.frame)) for ts in universe.trajectory]
    times = [float(ts.time) for ts in universe.trajectory]
    n_atoms, n_frames = positions[0].shape[0], len(positions)
    atom_frames = n_atoms * n_frames
    picks = np.random.default_rng(0).integers(0, n_frames, READS)
    with tempfile.TemporaryDirectory(prefix="mrecd-bench-archive-") as name:
        tmp = Path(name)
        live = tmp / "adk.mrec"
        written = {LIVE: _write_live(tmp, _frames(positions, steps, times))}
        targets = {ONE_FRAME: (tmp / "adk-k1.mrec", 1), DEFAULT: (tmp / "adk-default.mrec", None)}
        for label, (path, k) in targets.items():
            written[label] = _timed(
                lambda path=path, k=k: mrecd.archive_record(live, path, frames_per_chunk=k)
            )
        paths = {LIVE: live, **{label: path for label, (path, _) in targets.items()}}
        xtc_write, xtc_read = _xtc(tmp, positions, picks)
        xtc_density = os.path.getsize(XTC) / atom_frames
        rows = []
        for label, path in paths.items():
            assert mrecd.validate_record(path) == [], label
            xyz = sum(_tree_bytes(path, f"trajectory/atoms/{c}") for c in "xyz") / atom_frames
            read_s, read_bytes = _random_reads(path, picks)
            rows.append(
                [
                    label,
                    f"{xyz:.2f}",
                    f"{xyz / xtc_density:.2f}",
                    f"{_tree_bytes(path) / atom_frames:.2f}",
                    f"{_max_error(path, positions):.4f}",
                    f"{written[label]:.2f}",
                    f"{read_s * 1e3:.1f}",
                    f"{read_bytes / 1e6:.2f}",
                ]
            )
        rows.append(
            [
                "XTC file (MDAnalysis)",
                f"{xtc_density:.2f}",
                "1.00",
                f"{xtc_density:.2f}",
                "0.0050 (its 0.01 Å grid)",
                f"{xtc_write:.2f}",
                f"{xtc_read * 1e3:.1f}",
                "",
            ]
        )
    print(
        f"### adk protein ({n_atoms:,} atoms, {n_frames} frames), p = {PRECISION} Å (grid 2^-7 Å)\n"
    )
    header = [
        "layout",
        "x/y/z B per atom-frame",
        "/ XTC",
        "whole record B per atom-frame",
        "max error vs XTC values, Å",
        "write s",
        "random frame i, fresh handle, ms",
        "MB fetched",
    ]
    print(_table(header, rows))
    print(
        "\nLive write: the 10 frames appended (durable close). Archive write: archive_record"
        " from the live record. XTC write: MDAnalysis's XTCWriter, float32 input. Reads:"
        " median over random frames, opening the record (or XTC reader, offsets cached) each time."
    )
