"""MRF1 encode/decode of a 3000-atom frame against the floor of moving the same arrays.

Frame: block ``atoms`` with ``x``, ``y``, ``z`` (f64), ``id`` (u64) and, in the
first case, ``element`` (string); meta ``pe`` and a trajectory ``step``.

Floors, on the same arrays:

- encode: ``ndarray.tobytes()`` of every numeric column, and for the string
  column ``json.dumps(element.tolist())`` -- the cheapest honest way to turn
  the in-memory strings into bytes (MRF1 carries strings in its JSON header);
- decode: ``np.frombuffer`` of every numeric buffer, and for the string column
  ``json.loads`` of that text into a list (MRF1 additionally builds the numpy
  ``StringDType`` array the model holds, which the floor does not).

Each figure is the median of repeated ``timeit`` runs. Targets: decode
within 2x of the floor, encode within 3x.

The decoder builds a string column's numpy array on first access of its
values (numeric columns are views, never copied): the ``decode+values`` row
decodes and then touches every column, so nothing is hidden by laziness.
The numeric-only frame is also shown at 100,000 atoms: at 3000 atoms its
floor is ~1-3 µs, less than parsing the ~300-byte JSON header alone, so the
ratio there measures MRF1's fixed per-value cost, which larger frames amortize.
"""

from __future__ import annotations

import json
import statistics
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

import mrecd
from mrecd.model import Frame

ATOMS = 3000
LARGE = 100_000
REPEATS = 15
TARGETS = {"encode": 3.0, "decode": 2.0, "decode+values": 2.0}


def make_frame(with_strings: bool, atoms: int = ATOMS) -> Frame:
    """The benchmark frame: random coordinates, sequential ids, element symbols."""
    rng = np.random.default_rng(0)
    columns: dict[str, Any] = {
        "x": rng.uniform(0, 40, atoms),
        "y": rng.uniform(0, 40, atoms),
        "z": rng.uniform(0, 40, atoms),
        "id": np.arange(atoms, dtype=np.uint64),
    }
    if with_strings:
        columns["element"] = rng.choice(["C", "H", "O", "N", "S", "Cl"], atoms)
    return Frame({"atoms": columns}, meta={"pe": -12.3}, step=1)


def median_seconds(fn: Callable[[], object]) -> float:
    """Median seconds per call over ``REPEATS`` timeit runs (each long enough to time)."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    runs = timer.repeat(repeat=REPEATS, number=number)
    return statistics.median(runs) / number


def floors(frame: Frame) -> tuple[Callable[[], object], Callable[[], object]]:
    """The floor encode and decode of the frame's arrays."""
    block = frame["atoms"]
    numeric = [c.values for c in block.values() if c.dtype != "string"]
    strings = [c.values for c in block.values() if c.dtype == "string"]
    dtypes = [a.dtype for a in numeric]
    buffers = [a.tobytes() for a in numeric]
    texts = [json.dumps(s.tolist()) for s in strings]

    def encode() -> object:
        return [a.tobytes() for a in numeric], [json.dumps(s.tolist()) for s in strings]

    def decode() -> object:
        arrays = [np.frombuffer(b, dtype=d) for b, d in zip(buffers, dtypes, strict=True)]
        return arrays, [json.loads(t) for t in texts]

    return encode, decode


def measure(frame: Frame) -> dict[str, tuple[float, float]]:
    """``{op: (mrf1 seconds, floor seconds)}`` for encode and decode."""
    data = mrecd.encode_frame(frame)
    assert mrecd.decode_frame(data, meta_types={"pe": "f64"}) == frame
    floor_encode, floor_decode = floors(frame)
    floor_decode_seconds = median_seconds(floor_decode)

    def decode_and_touch() -> object:
        decoded = mrecd.decode_frame(data)
        return [c.values for block in decoded.values() for c in block.values()]

    return {
        "encode": (median_seconds(lambda: mrecd.encode_frame(frame)), median_seconds(floor_encode)),
        "decode": (median_seconds(lambda: mrecd.decode_frame(data)), floor_decode_seconds),
        "decode+values": (median_seconds(decode_and_touch), floor_decode_seconds),
    }


def rows(label: str, frame: Frame) -> list[str]:
    """Markdown table rows for one frame."""
    size = len(mrecd.encode_frame(frame))
    out = []
    for op, (ours, floor) in measure(frame).items():
        ratio = ours / floor
        verdict = "ok" if ratio <= TARGETS[op] else "MISSED"
        out.append(
            f"| {label} | {op} | {size:,} | {ours * 1e6:,.1f} | {size / ours / 1e6:,.0f}"
            f" | {floor * 1e6:,.1f} | {ratio:.2f}x | ≤{TARGETS[op]:.0f}x {verdict} |"
        )
    return out


def main() -> None:
    """Print the table for the frame with and without the string column."""
    print(f"MRF1 frame bytes, median of {REPEATS} timeit runs (numpy {np.__version__})\n")
    print("| frame | op | bytes | MRF1 µs | MRF1 MB/s | floor µs | ratio | target |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    cases = (
        (f"{ATOMS} atoms: x,y,z,id,element", make_frame(True)),
        (f"{ATOMS} atoms: x,y,z,id (numeric only)", make_frame(False)),
        (f"{LARGE:,} atoms: x,y,z,id (numeric only)", make_frame(False, LARGE)),
    )
    for label, frame in cases:
        for row in rows(label, frame):
            print(row, flush=True)


if __name__ == "__main__":
    main()
