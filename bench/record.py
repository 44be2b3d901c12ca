"""Record binding: size and speed of a 3000-atom system frame, with and without declared precision.

Workload (notes/measured.md): 3000 atoms, f64 x/y/z uniformly random in a
40 Å box (worst-case atom order), plus element strings and masses. Each case
is written as the ``system`` section of a fresh record and read back whole.

Columns: bytes per atom of the x/y/z chunk files; bytes per atom of the whole
record on disk; write and read time, median and best. The floor writes and reads the
same three coordinate arrays with plain zarr-python and the same codecs (no
mrecd): the gap is mrecd's own cost (validation, metadata, staging, rename).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import zarr

import mrecd
from mrecd.bindings.zarr._codecs import inner_codecs

ATOMS = 3000
PRECISION = 1e-3
REPEATS = 31


def _system(precision: float | None) -> mrecd.Frame:
    rng = np.random.default_rng(42)
    xyz = rng.random((3, ATOMS)) * 40.0
    atoms = {name: mrecd.Column(xyz[i], precision=precision) for i, name in enumerate("xyz")}
    atoms["element"] = mrecd.Column(np.array(["O", "H", "H"] * (ATOMS // 3)), "string")
    atoms["mass"] = mrecd.Column(np.tile([15.999, 1.008, 1.008], ATOMS // 3))
    return mrecd.Frame({"atoms": atoms}, box=mrecd.Box(np.eye(3) * 40.0))


def _bytes(root: Path, pattern: str = "*") -> int:
    return sum(p.stat().st_size for p in root.glob(pattern) if p.is_file())


def _timed_ms(fn: Callable[[int], object]) -> str:
    """``"median / best"`` milliseconds over ``REPEATS`` calls (the machine is shared and noisy)."""
    times = []
    for i in range(REPEATS):
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    return f"{statistics.median(times) * 1e3:.1f} / {min(times) * 1e3:.1f}"


def _mrecd_case(work: Path, precision: float | None) -> tuple[float, float, str, str]:
    system = _system(precision)
    path = work / f"p{precision}-0.mrec"

    def write(i: int) -> None:  # a fresh path each time: creation only, no replacement
        mrecd.create_record(work / f"p{precision}-{i}.mrec", system=system).close()

    def read(i: int) -> None:
        with mrecd.open_record(path) as record:
            assert record.system is not None

    write_ms = _timed_ms(write)
    read_ms = _timed_ms(read)
    coords = sum(_bytes(path / "system" / "atoms" / c, "c/**/*") for c in "xyz")
    return coords / ATOMS, _bytes(path, "**/*") / ATOMS, write_ms, read_ms


def _floor_case(work: Path, precision: float) -> tuple[float, float, str, str]:
    system = _system(precision)
    values = {c: system["atoms"][c].values for c in "xyz"}
    root = work / "floor-0.zarr"
    codecs = inner_codecs("f64", precision=precision)

    def write(i: int) -> None:
        group = zarr.open_group(work / f"floor-{i}.zarr", mode="w")
        for name, data in values.items():
            array = group.create_array(
                name,
                shape=data.shape,
                dtype="float64",
                chunks=data.shape,
                serializer=codecs[0],
                compressors=codecs[1:],
                attributes={"precision": precision},
            )
            array[...] = data

    def read(i: int) -> None:
        group = zarr.open_group(root, mode="r")
        for name in values:
            group[name][...]

    write_ms = _timed_ms(write)
    read_ms = _timed_ms(read)
    coords = sum(_bytes(root / c, "c/**/*") for c in "xyz")
    return coords / ATOMS, _bytes(root, "**/*") / ATOMS, write_ms, read_ms


def main() -> None:
    """Print the markdown table."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows = [
            (f"mrecd, x/y/z at p = {PRECISION:g}", _mrecd_case(work, PRECISION)),
            ("mrecd, x/y/z without precision", _mrecd_case(work, None)),
            (
                f"floor: plain zarr-python, x/y/z only, p = {PRECISION:g}",
                _floor_case(work, PRECISION),
            ),
        ]
    print(f"{ATOMS} atoms, random order in a 40 Å box; times are median / best of {REPEATS} runs\n")
    print("| case | x/y/z bytes/atom | record bytes/atom | write ms | read ms |")
    print("|---|---:|---:|---:|---:|")
    for label, (coords, total, write_ms, read_ms) in rows:
        print(f"| {label} | {coords:.2f} | {total:.2f} | {write_ms} | {read_ms} |")
